#include <string.h>

#include "agent/coder.h"

/*
 * Python templates, one per shape of docs/agent.md. Data from the task
 * enters the code only as JSON literals (json_lit), which are valid Python
 * literals for the strings and numbers the planner extracts: task text is
 * never pasted into code as code.
 */

#define EMAIL_PY "r\"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}\""

static void py_stats(struct hutch_buf *b, const struct coder_in *in)
{
	static const char *const std[][2] = {
		{"mean", "statistics.mean(xs)"},
		{"median", "statistics.median(xs)"},
		{"mode", "statistics.mode(xs)"},
		{"stdev", "statistics.stdev(xs)"},
		{"variance", "statistics.variance(xs)"},
		{"sum", "sum(xs)"},
		{"min", "min(xs)"},
		{"max", "max(xs)"},
		{"range", "max(xs) - min(xs)"},
		{NULL, NULL},
	};
	static const char *const np[][2] = {
		{"mean", "np.mean(xs)"},
		{"median", "np.median(xs)"},
		{"mode", "statistics.mode(xs)"},
		{"stdev", "np.std(xs, ddof=1)"},
		{"variance", "np.var(xs, ddof=1)"},
		{"sum", "np.sum(xs)"},
		{"min", "np.min(xs)"},
		{"max", "np.max(xs)"},
		{"range", "np.ptp(xs)"},
		{NULL, NULL},
	};
	bool numpy = coder_use_dep(in, "numpy");
	const char *const(*table)[2] = numpy ? np : std;
	char *xs = coder_param_lit(in, "numbers");
	json_t *e;
	size_t i;

	hutch_buf_printf(b, "import statistics\n%s\nxs = %s\n", numpy ? "import numpy as np" : "",
			 xs);
	json_array_foreach(json_object_get(in->plan->params, "stats"), i, e)
	{
		for (int k = 0; table[k][0]; k++) {
			if (strcmp(table[k][0], json_string_value(e)) == 0)
				hutch_buf_printf(b, "print(f\"%s: {float(%s):.2f}\")\n",
						 table[k][0], table[k][1]);
		}
	}
	free(xs);
}

static void py_fib(struct hutch_buf *b, const struct coder_in *in)
{
	long n = coder_param_int(in, "n");
	bool first = json_is_true(json_object_get(in->plan->params, "first"));

	if (coder_param_bool(in, "recursive")) {
		bool memo = json_is_true(json_object_get(in->variant, "memo"));
		hutch_buf_printf(
			b,
			"import sys\n%s\nsys.setrecursionlimit(20000)\n\n%s"
			"def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n",
			memo ? "import functools" : "",
			memo ? "@functools.lru_cache(maxsize=None)\n" : "");
	} else {
		hutch_buf_puts(b, "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
				  "        a, b = b, a + b\n    return a\n\n");
	}
	if (first)
		hutch_buf_printf(b, "print(\" \".join(str(fib(i)) for i in range(%ld)))\n", n);
	else
		hutch_buf_printf(b, "print(fib(%ld))\n", n);
}

static void py_primes(struct hutch_buf *b, const struct coder_in *in)
{
	long n = coder_param_int(in, "n");
	const char *mode = coder_param_str(in, "mode");

	hutch_buf_puts(b, "def primes_below(n):\n"
			  "    if n < 3:\n        return []\n"
			  "    sieve = bytearray([1]) * n\n    sieve[0] = sieve[1] = 0\n"
			  "    for i in range(2, int(n ** 0.5) + 1):\n"
			  "        if sieve[i]:\n"
			  "            sieve[i * i::i] = bytearray(len(range(i * i, n, i)))\n"
			  "    return [i for i, v in enumerate(sieve) if v]\n\n");
	if (strcmp(mode, "first") == 0)
		hutch_buf_printf(
			b,
			"limit = 16\nwhile len(primes_below(limit)) < %ld:\n"
			"    limit *= 2\nprint(\" \".join(map(str, primes_below(limit)[:%ld])))\n",
			n, n);
	else if (strcmp(mode, "sum") == 0)
		hutch_buf_printf(b, "print(sum(primes_below(%ld)))\n", n);
	else if (strcmp(mode, "is") == 0)
		hutch_buf_printf(b,
				 "n = %ld\nprime = n > 1 and all(n %% d for d in range(2, int(n ** "
				 "0.5) + 1))\n"
				 "print(f\"{n} is {'prime' if prime else 'not prime'}\")\n",
				 n);
	else
		hutch_buf_printf(b, "print(\" \".join(map(str, primes_below(%ld))))\n", n);
}

static void py_text(struct hutch_buf *b, const struct coder_in *in)
{
	static const char *const bodies[][2] = {
		{"reverse", "print(text[::-1])"},
		{"upper", "print(text.upper())"},
		{"lower", "print(text.lower())"},
		{"palindrome",
		 "norm = \"\".join(c.lower() for c in text if c.isalnum())\n"
		 "print(\"palindrome: yes\" if norm == norm[::-1] else \"palindrome: no\")"},
		{"count_vowels", "print(sum(c in \"aeiouAEIOU\" for c in text))"},
		{"count_words", "print(len(text.split()))"},
		{"sort_words", "print(\" \".join(sorted(text.split())))"},
		{"word_freq",
		 "from collections import Counter\n"
		 "counts = Counter(text.lower().split())\n"
		 "for word, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):\n"
		 "    print(f\"{word}: {n}\")"},
		{NULL, NULL},
	};
	char *text = coder_param_lit(in, "text");

	hutch_buf_printf(b, "text = %s\n", text);
	free(text);
	if (strcmp(in->plan->shape, "extract_emails") == 0) {
		hutch_buf_printf(b, "import re\nfor m in re.findall(%s, text):\n    print(m)\n",
				 EMAIL_PY);
		return;
	}
	for (int i = 0; bodies[i][0]; i++) {
		if (strcmp(bodies[i][0], in->plan->shape) == 0)
			hutch_buf_printf(b, "%s\n", bodies[i][1]);
	}
}

static void py_sort(struct hutch_buf *b, const struct coder_in *in)
{
	char *xs = coder_param_lit(in, "numbers");

	hutch_buf_printf(b, "xs = %s\nprint(\" \".join(sorted(xs, key=float, reverse=%s)))\n", xs,
			 coder_param_bool(in, "descending") ? "True" : "False");
	free(xs);
}

static void py_factorial(struct hutch_buf *b, const struct coder_in *in)
{
	hutch_buf_printf(b, "import math\nprint(math.factorial(%ld))\n", coder_param_int(in, "n"));
}

static void py_csv(struct hutch_buf *b, const struct coder_in *in)
{
	char *file = coder_param_lit(in, "file");
	char *col = coder_param_lit(in, "column");

	hutch_buf_printf(b,
			 "import csv\nwith open(%s, newline=\"\") as f:\n"
			 "    rows = list(csv.DictReader(f))\n",
			 file);
	if (strcmp(in->plan->shape, "csv_column") == 0) {
		hutch_buf_printf(b,
				 "col = %s\nvals = [float(r[col]) for r in rows if r.get(col, "
				 "\"\").strip()]\n"
				 "print(f\"sum of {col}: {sum(vals):g}\")\n"
				 "print(f\"mean of {col}: {sum(vals) / len(vals):.2f}\")\n"
				 "print(f\"min of {col}: {min(vals):g}\")\n"
				 "print(f\"max of {col}: {max(vals):g}\")\n",
				 col);
	} else {
		hutch_buf_puts(b, "cols = list(rows[0].keys()) if rows else []\n"
				  "print(f\"rows: {len(rows)}\")\n"
				  "print(f\"columns: {', '.join(cols)}\")\n"
				  "for c in cols:\n"
				  "    try:\n        vals = [float(r[c]) for r in rows]\n"
				  "    except (TypeError, ValueError):\n        continue\n"
				  "    print(f\"{c}: min {min(vals):g} max {max(vals):g} mean "
				  "{sum(vals) / len(vals):.2f}\")\n");
	}
	free(file);
	free(col);
}

static void py_json(struct hutch_buf *b, const struct coder_in *in)
{
	char *file = coder_param_lit(in, "file");
	char *key = coder_param_lit(in, "key");

	hutch_buf_printf(b,
			 "%s\nwith open(%s) as f:\n    data = json.load(f)\n"
			 "groups = {}\nfor rec in data:\n"
			 "    groups.setdefault(str(rec.get(%s)), []).append(rec)\n"
			 "print(json.dumps({k: {\"count\": len(v), \"items\": v} for k, v in "
			 "sorted(groups.items())}, indent=2))\n",
			 coder_use_dep(in, "simplejson") ? "import simplejson as json"
							 : "import json",
			 file, key);
	free(file);
	free(key);
}

static void py_table(struct hutch_buf *b, const struct coder_in *in)
{
	long lo = coder_param_int(in, "from");
	long hi = coder_param_int(in, "to");

	hutch_buf_printf(b, "rows = [(n, n * n) for n in range(%ld, %ld)]\n", lo, hi + 1);
	if (coder_use_dep(in, "tabulate")) {
		hutch_buf_puts(b, "from tabulate import tabulate\n"
				  "print(tabulate(rows, headers=[\"n\", \"n^2\"]))\n");
		return;
	}
	hutch_buf_puts(b, "w = max(len(str(rows[-1][1])), 3)\n"
			  "print(f\"{'n':>{w}} {'n^2':>{w}}\")\n"
			  "for n, sq in rows:\n    print(f\"{n:>{w}} {sq:>{w}}\")\n");
}

static void py_fetch(struct hutch_buf *b, const struct coder_in *in)
{
	char *url = coder_param_lit(in, "url");

	hutch_buf_printf(b,
			 "import urllib.request\n"
			 "with urllib.request.urlopen(%s, timeout=10) as r:\n"
			 "    print(r.read().decode(\"utf-8\", \"replace\").splitlines()[0])\n",
			 url);
	free(url);
}

static const struct coder_shape py_shapes[] = {
	{"stats", py_stats},	     {"fibonacci", py_fib},
	{"primes", py_primes},	     {"sort", py_sort},
	{"factorial", py_factorial}, {"csv_summary", py_csv},
	{"csv_column", py_csv},	     {"json_group", py_json},
	{"squares_table", py_table}, {"fetch_url", py_fetch},
	{"reverse", py_text},	     {"upper", py_text},
	{"lower", py_text},	     {"palindrome", py_text},
	{"count_vowels", py_text},   {"count_words", py_text},
	{"sort_words", py_text},     {"word_freq", py_text},
	{"extract_emails", py_text}, {NULL, NULL},
};

const struct coder_shape *coder_python_shapes(void)
{
	return py_shapes;
}

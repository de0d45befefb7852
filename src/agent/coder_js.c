#include <string.h>

#include "agent/coder.h"

/*
 * JavaScript (node) templates, the same shapes and output formats as the
 * Python ones (coder_python.c), so one oracle checks both. Big integers use
 * BigInt, whose toString prints every digit.
 */

static void js_stats(struct hutch_buf *b, const struct coder_in *in)
{
	static const char *const names[] = {"mean", "median", "mode", "stdev", "variance",
					    "sum",  "min",    "max",  "range", NULL};
	bool lodash = coder_use_dep(in, "lodash");
	char *xs = coder_param_lit(in, "numbers");
	json_t *e;
	size_t i;

	hutch_buf_printf(b, "%sconst xs = %s;\n", lodash ? "const _ = require('lodash');\n" : "",
			 xs);
	hutch_buf_printf(b,
			 "const sorted = [...xs].sort((a, b) => a - b);\n"
			 "const sum = %s;\nconst mean = %s;\n",
			 lodash ? "_.sum(xs)" : "xs.reduce((a, b) => a + b, 0)",
			 lodash ? "_.mean(xs)" : "sum / xs.length");
	hutch_buf_puts(
		b,
		"const h = xs.length >> 1;\n"
		"const median = xs.length % 2 ? sorted[h] : (sorted[h - 1] + sorted[h]) / 2;\n"
		"const counts = new Map();\nlet mode = xs[0];\n"
		"for (const x of xs) {\n  counts.set(x, (counts.get(x) || 0) + 1);\n"
		"  if (counts.get(x) > counts.get(mode)) mode = x;\n}\n"
		"const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);\n"
		"const stdev = Math.sqrt(variance);\n"
		"const min = sorted[0];\nconst max = sorted[sorted.length - 1];\n"
		"const range = max - min;\n"
		"const stats = { mean, median, mode, stdev, variance, sum, min, max, range };\n");
	json_array_foreach(json_object_get(in->plan->params, "stats"), i, e)
	{
		for (int k = 0; names[k]; k++) {
			if (strcmp(names[k], json_string_value(e)) == 0)
				hutch_buf_printf(b, "console.log(`%s: ${stats.%s.toFixed(2)}`);\n",
						 names[k], names[k]);
		}
	}
	free(xs);
}

static void js_fib(struct hutch_buf *b, const struct coder_in *in)
{
	long n = coder_param_int(in, "n");
	bool first = coder_param_bool(in, "first");

	if (coder_param_bool(in, "recursive")) {
		if (json_is_true(json_object_get(in->variant, "memo")))
			hutch_buf_puts(b,
				       "const memo = new Map();\nfunction fib(n) {\n"
				       "  if (n < 2) return BigInt(n);\n"
				       "  if (!memo.has(n)) memo.set(n, fib(n - 1) + fib(n - 2));\n"
				       "  return memo.get(n);\n}\n");
		else
			hutch_buf_puts(
				b, "function fib(n) {\n"
				   "  return n < 2 ? BigInt(n) : fib(n - 1) + fib(n - 2);\n}\n");
	} else {
		hutch_buf_puts(
			b, "function fib(n) {\n  let a = 0n, b = 1n;\n"
			   "  for (let i = 0; i < n; i++) [a, b] = [b, a + b];\n  return a;\n}\n");
	}
	if (first)
		hutch_buf_printf(b,
				 "console.log(Array.from({ length: %ld }, (_, i) => "
				 "fib(i).toString()).join(' '));\n",
				 n);
	else
		hutch_buf_printf(b, "console.log(fib(%ld).toString());\n", n);
}

static void js_primes(struct hutch_buf *b, const struct coder_in *in)
{
	long n = coder_param_int(in, "n");
	const char *mode = coder_param_str(in, "mode");

	hutch_buf_puts(
		b, "function primesBelow(n) {\n  if (n < 3) return [];\n"
		   "  const sieve = new Uint8Array(n).fill(1);\n  sieve[0] = sieve[1] = 0;\n"
		   "  for (let i = 2; i * i < n; i++)\n"
		   "    if (sieve[i]) for (let j = i * i; j < n; j += i) sieve[j] = 0;\n"
		   "  const out = [];\n  for (let i = 2; i < n; i++) if (sieve[i]) out.push(i);\n"
		   "  return out;\n}\n");
	if (strcmp(mode, "first") == 0)
		hutch_buf_printf(
			b,
			"let limit = 16;\nwhile (primesBelow(limit).length < %ld) limit *= 2;\n"
			"console.log(primesBelow(limit).slice(0, %ld).join(' '));\n",
			n, n);
	else if (strcmp(mode, "sum") == 0)
		hutch_buf_printf(b, "console.log(primesBelow(%ld).reduce((a, b) => a + b, 0));\n",
				 n);
	else if (strcmp(mode, "is") == 0)
		hutch_buf_printf(b,
				 "const n = %ld;\nlet prime = n > 1;\n"
				 "for (let d = 2; d * d <= n && prime; d++) if (n %% d === 0) "
				 "prime = false;\n"
				 "console.log(`${n} is ${prime ? 'prime' : 'not prime'}`);\n",
				 n);
	else
		hutch_buf_printf(b, "console.log(primesBelow(%ld).join(' '));\n", n);
}

static void js_text(struct hutch_buf *b, const struct coder_in *in)
{
	static const char *const bodies[][2] = {
		{"reverse", "console.log([...text].reverse().join(''));"},
		{"upper", "console.log(text.toUpperCase());"},
		{"lower", "console.log(text.toLowerCase());"},
		{"palindrome", "const norm = text.toLowerCase().replace(/[^a-z0-9]/g, '');\n"
			       "console.log(norm === [...norm].reverse().join('') ? 'palindrome: "
			       "yes' : 'palindrome: no');"},
		{"count_vowels",
		 "console.log([...text].filter((c) => 'aeiouAEIOU'.includes(c)).length);"},
		{"count_words", "console.log(text.split(/\\s+/).filter(Boolean).length);"},
		{"sort_words", "console.log(text.split(/\\s+/).filter(Boolean).sort().join(' '));"},
		{"word_freq", "const counts = new Map();\n"
			      "for (const w of text.toLowerCase().split(/\\s+/).filter(Boolean))\n"
			      "  counts.set(w, (counts.get(w) || 0) + 1);\n"
			      "[...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))\n"
			      "  .forEach(([w, n]) => console.log(`${w}: ${n}`));"},
		{"extract_emails",
		 "for (const m of text.match(/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}/g) "
		 "|| [])\n"
		 "  console.log(m);"},
		{NULL, NULL},
	};
	char *text = coder_param_lit(in, "text");

	hutch_buf_printf(b, "const text = %s;\n", text);
	free(text);
	for (int i = 0; bodies[i][0]; i++) {
		if (strcmp(bodies[i][0], in->plan->shape) == 0)
			hutch_buf_printf(b, "%s\n", bodies[i][1]);
	}
}

static void js_sort(struct hutch_buf *b, const struct coder_in *in)
{
	char *xs = coder_param_lit(in, "numbers");
	bool lodash = coder_use_dep(in, "lodash");

	hutch_buf_printf(b, "%sconst xs = %s;\nconst out = %s;\n",
			 lodash ? "const _ = require('lodash');\n" : "", xs,
			 lodash ? "_.sortBy(xs, Number)"
				: "[...xs].sort((a, b) => Number(a) - Number(b))");
	hutch_buf_printf(b, "console.log((%s).join(' '));\n",
			 coder_param_bool(in, "descending") ? "out.reverse()" : "out");
	free(xs);
}

static void js_factorial(struct hutch_buf *b, const struct coder_in *in)
{
	hutch_buf_printf(b,
			 "let f = 1n;\nfor (let i = 2n; i <= %ldn; i++) f *= i;\n"
			 "console.log(f.toString());\n",
			 coder_param_int(in, "n"));
}

/* Comma-separated, no quoted fields: the plan's note says so. */
static void js_csv(struct hutch_buf *b, const struct coder_in *in)
{
	char *file = coder_param_lit(in, "file");
	char *col = coder_param_lit(in, "column");

	hutch_buf_printf(b,
			 "const fs = require('fs');\n"
			 "const lines = fs.readFileSync(%s, 'utf8').split(/\\r?\\n/).filter((l) => "
			 "l.trim());\n"
			 "const cols = lines[0].split(',').map((c) => c.trim());\n"
			 "const rows = lines.slice(1).map((l) => l.split(','));\n",
			 file);
	if (strcmp(in->plan->shape, "csv_column") == 0) {
		hutch_buf_printf(
			b,
			"const col = %s;\nconst i = cols.indexOf(col);\n"
			"const vals = rows.map((r) => Number(r[i])).filter((v) => "
			"!Number.isNaN(v));\n"
			"const sum = vals.reduce((a, v) => a + v, 0);\n"
			"console.log(`sum of ${col}: ${sum}`);\n"
			"console.log(`mean of ${col}: ${(sum / vals.length).toFixed(2)}`);\n"
			"console.log(`min of ${col}: ${Math.min(...vals)}`);\n"
			"console.log(`max of ${col}: ${Math.max(...vals)}`);\n",
			col);
	} else {
		hutch_buf_puts(b, "console.log(`rows: ${rows.length}`);\n"
				  "console.log(`columns: ${cols.join(', ')}`);\n"
				  "cols.forEach((c, i) => {\n"
				  "  const vals = rows.map((r) => Number(r[i]));\n"
				  "  if (vals.some(Number.isNaN)) return;\n"
				  "  const mean = vals.reduce((a, v) => a + v, 0) / vals.length;\n"
				  "  console.log(`${c}: min ${Math.min(...vals)} max "
				  "${Math.max(...vals)} mean ${mean.toFixed(2)}`);\n"
				  "});\n");
	}
	free(file);
	free(col);
}

static void js_json(struct hutch_buf *b, const struct coder_in *in)
{
	char *file = coder_param_lit(in, "file");
	char *key = coder_param_lit(in, "key");

	hutch_buf_printf(
		b,
		"const fs = require('fs');\nconst data = JSON.parse(fs.readFileSync(%s, 'utf8'));\n"
		"const groups = {};\n"
		"for (const rec of data) (groups[String(rec[%s])] ||= []).push(rec);\n"
		"const out = {};\n"
		"for (const k of Object.keys(groups).sort()) out[k] = { count: groups[k].length, "
		"items: groups[k] };\n"
		"console.log(JSON.stringify(out, null, 2));\n",
		file, key);
	free(file);
	free(key);
}

static void js_table(struct hutch_buf *b, const struct coder_in *in)
{
	bool lodash = coder_use_dep(in, "lodash");

	hutch_buf_printf(b, "%sconst rows = %s(%ld, %ld).map((n) => [n, n * n]);\n",
			 lodash ? "const _ = require('lodash');\n" : "",
			 lodash ? "_.range"
				: "((a, b) => Array.from({ length: b - a }, (_, i) => a + i))",
			 coder_param_int(in, "from"), coder_param_int(in, "to") + 1);
	hutch_buf_puts(b, "const w = Math.max(String(rows[rows.length - 1][1]).length, 3);\n"
			  "console.log(`${'n'.padStart(w)} ${'n^2'.padStart(w)}`);\n"
			  "for (const [n, sq] of rows) console.log(`${String(n).padStart(w)} "
			  "${String(sq).padStart(w)}`);\n");
}

static void js_fetch(struct hutch_buf *b, const struct coder_in *in)
{
	char *url = coder_param_lit(in, "url");

	hutch_buf_printf(b,
			 "fetch(%s, { signal: AbortSignal.timeout(10000) })\n"
			 "  .then((r) => r.text())\n"
			 "  .then((t) => console.log(t.split('\\n')[0]))\n"
			 "  .catch((e) => { console.error(e.cause || e); process.exit(1); });\n",
			 url);
	free(url);
}

static const struct coder_shape js_shapes[] = {
	{"stats", js_stats},	     {"fibonacci", js_fib},
	{"primes", js_primes},	     {"sort", js_sort},
	{"factorial", js_factorial}, {"csv_summary", js_csv},
	{"csv_column", js_csv},	     {"json_group", js_json},
	{"squares_table", js_table}, {"fetch_url", js_fetch},
	{"reverse", js_text},	     {"upper", js_text},
	{"lower", js_text},	     {"palindrome", js_text},
	{"count_vowels", js_text},   {"count_words", js_text},
	{"sort_words", js_text},     {"word_freq", js_text},
	{"extract_emails", js_text}, {NULL, NULL},
};

const struct coder_shape *coder_js_shapes(void)
{
	return js_shapes;
}

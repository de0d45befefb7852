#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/buf.h"
#include "util/mem.h"

/*
 * The heuristic planner: keywords -> one of the documented task shapes
 * (docs/agent.md), with its parameters pulled out of the task (numbers,
 * quoted text, N, the attached file) and, where an answer can be computed
 * here, the exact expected output. A task no shape fits gets a plan of shape
 * "unknown" and an honest refusal; guessing would only produce code that
 * does something else.
 */

struct words {
	const char *lower; /* the task, lowercased */
	const char *orig;
	const struct agent_options *opt;
};

static bool has(const struct words *w, const char *kw)
{
	return strstr(w->lower, kw) != NULL;
}

/* Every number in the task, skipping ordinals ("20th") and words with
 * letters glued on ("md5", "3d"). */
static json_t *numbers_of(const char *s)
{
	json_t *a = json_array();
	const char *p = s;

	while (*p) {
		char *end;
		bool starts = (isdigit((unsigned char)*p) ||
			       (*p == '-' && isdigit((unsigned char)p[1]))) &&
			      (p == s || !isalnum((unsigned char)p[-1]));
		if (!starts) {
			p++;
			continue;
		}
		double v = strtod(p, &end);
		if (end > p && end[-1] == '.')
			end--; /* "42." ends a sentence */
		if (!isalpha((unsigned char)*end))
			json_array_append_new(a, json_real(v));
		p = end;
		while (isalnum((unsigned char)*p))
			p++;
	}
	return a;
}

/* The same numbers as the user wrote them (for sorting, which prints them). */
static json_t *number_tokens(const char *s)
{
	json_t *a = json_array();
	const char *p = s;

	while (*p) {
		char *end;
		if (!((isdigit((unsigned char)*p) || (*p == '-' && isdigit((unsigned char)p[1]))) &&
		      (p == s || !isalnum((unsigned char)p[-1])))) {
			p++;
			continue;
		}
		(void)strtod(p, &end);
		if (end > p && end[-1] == '.')
			end--;
		if (!isalpha((unsigned char)*end))
			json_array_append_new(a, json_stringn(p, (size_t)(end - p)));
		p = end;
		while (isalnum((unsigned char)*p))
			p++;
	}
	return a;
}

/* The first integer of the task, ordinals included ("the 20th"); -1 if none. */
static long first_int(const char *s)
{
	for (const char *p = s; *p; p++) {
		if (isdigit((unsigned char)*p) && (p == s || !isalnum((unsigned char)p[-1])))
			return strtol(p, NULL, 10);
	}
	return -1;
}

/* Text between the first pair of matching quotes, or NULL. */
static char *quoted(const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p != '\'' && *p != '"')
			continue;
		/* an apostrophe inside a word ("don't") is not a quote */
		if (*p == '\'' && p > s && isalpha((unsigned char)p[-1]))
			continue;
		const char *q = strchr(p + 1, *p);
		if (q)
			return hutch_xstrndup(p + 1, (size_t)(q - p - 1));
	}
	return NULL;
}

static const char *attached(const struct words *w, const char *suffix)
{
	for (int i = 0; i < w->opt->nfiles; i++) {
		const char *f = w->opt->files[i];
		size_t n = strlen(f);
		size_t k = strlen(suffix);
		if (n >= k && strcmp(f + n - k, suffix) == 0) {
			const char *slash = strrchr(f, '/');
			return slash ? slash + 1 : f;
		}
	}
	return NULL;
}

static void add_check(struct agent_plan *p, const char *type, const char *value)
{
	json_array_append_new(p->checks, json_pack("{s:s, s:s}", "type", type, "value", value));
}

static void step(struct agent_plan *p, const char *s)
{
	json_array_append_new(p->steps, json_string(s));
}

/* Third-party modules the task names. Templates that can use one say so
 * with a "use_dep" variant; the others fall back to the standard library
 * and the plan's note says why. */
static void find_deps(const struct words *w, struct agent_plan *p)
{
	static const char *const py[] = {"numpy",      "pandas",   "tabulate",
					 "simplejson", "requests", NULL};
	static const char *const js[] = {"lodash", "axios", "mathjs", NULL};
	const char *const *list = strcmp(p->language, "python") == 0 ? py : js;

	for (int i = 0; list[i]; i++) {
		if (has(w, list[i]))
			json_array_append_new(p->dependencies, json_string(list[i]));
	}
}

/* kw as a word of the task (a plural allowed): "sum" is not in "summary",
 * nor "mode" in "model". */
static bool has_word(const struct words *w, const char *kw)
{
	size_t n = strlen(kw);

	for (const char *p = strstr(w->lower, kw); p; p = strstr(p + 1, kw)) {
		const char *end = p + n;
		if (*end == 's')
			end++;
		if ((p == w->lower || !isalpha((unsigned char)p[-1])) &&
		    !isalpha((unsigned char)*end))
			return true;
	}
	return false;
}

/* --- the shapes --- */

static bool plan_stats(const struct words *w, struct agent_plan *p)
{
	static const char *const names[][2] = {
		{"mean", "mean"},
		{"average", "mean"},
		{"median", "median"},
		{"mode", "mode"},
		{"standard deviation", "stdev"},
		{"stdev", "stdev"},
		{"variance", "variance"},
		{"sum", "sum"},
		{"total", "sum"},
		{"minimum", "min"},
		{"smallest", "min"},
		{"maximum", "max"},
		{"largest", "max"},
		{"range", "range"},
		{NULL, NULL},
	};
	json_t *which = json_array();
	json_t *nums = numbers_of(w->orig);

	for (int i = 0; names[i][0]; i++) {
		if (!has_word(w, names[i][0]))
			continue;
		bool dup = false;
		json_t *e;
		size_t k;
		json_array_foreach(which, k, e) dup |=
			strcmp(json_string_value(e), names[i][1]) == 0;
		if (!dup)
			json_array_append_new(which, json_string(names[i][1]));
	}
	if (json_array_size(which) == 0 || json_array_size(nums) < 2) {
		json_decref(which);
		json_decref(nums);
		return false;
	}
	p->shape = hutch_xstrdup("stats");
	json_object_set_new(p->params, "numbers", nums);
	json_object_set_new(p->params, "stats", which);
	p->expected_output = agent_oracle_stats(nums, which);
	step(p, "parse the numbers from the task");
	step(p, "compute each statistic, print one 'name: value' line (2 decimals)");
	return true;
}

static bool plan_fib(const struct words *w, struct agent_plan *p)
{
	long n = first_int(w->orig);

	if (!has(w, "fibonacci") || n < 0 || n > 5000)
		return false;
	p->shape = hutch_xstrdup("fibonacci");
	json_object_set_new(p->params, "n", json_integer(n));
	json_object_set_new(p->params, "recursive", json_boolean(has(w, "recursi")));
	if (has(w, "first ")) {
		struct hutch_buf b = HUTCH_BUF_INIT;
		json_object_set_new(p->params, "first", json_true());
		for (long i = 0; i < n && i < 500; i++) {
			char *f = agent_oracle_fib((unsigned)i);
			hutch_buf_printf(&b, "%s%s", i ? " " : "", f ? f : "?");
			free(f);
		}
		p->expected_output = hutch_buf_detach(&b, NULL);
	} else {
		p->expected_output = agent_oracle_fib((unsigned)n);
	}
	step(p, "compute Fibonacci numbers with F(0)=0, F(1)=1 in exact integers");
	step(p, "print the answer");
	return true;
}

static bool plan_factorial(const struct words *w, struct agent_plan *p)
{
	long n = first_int(w->orig);

	if (!has(w, "factorial") || n < 0 || n > 1000)
		return false;
	p->shape = hutch_xstrdup("factorial");
	json_object_set_new(p->params, "n", json_integer(n));
	p->expected_output = agent_oracle_factorial((unsigned)n);
	step(p, "multiply 1..n in exact integers and print the product");
	return true;
}

#define PRIME_LIMIT 2000000

static bool plan_primes(const struct words *w, struct agent_plan *p)
{
	long n = first_int(w->orig);
	const char *mode = has_word(w, "sum") ? "sum"
			   : has(w, "first")  ? "first"
			   : has(w, "is ")    ? "is"
					      : "below";
	struct hutch_buf b = HUTCH_BUF_INIT;

	if (!has(w, "prime") || n < 0 || n > PRIME_LIMIT)
		return false;
	p->shape = hutch_xstrdup("primes");
	json_object_set_new(p->params, "n", json_integer(n));
	json_object_set_new(p->params, "mode", json_string(mode));
	/* trial division is plenty for the oracle's bounded n */
	long count = 0;
	long long sum = 0;
	bool n_prime = false;
	for (long k = 2; strcmp(mode, "first") == 0 ? count < n : k <= n; k++) {
		bool prime = true;
		for (long d = 2; d * d <= k && prime; d++)
			prime = k % d != 0;
		if (!prime)
			continue;
		if (k == n)
			n_prime = true;
		if ((strcmp(mode, "below") == 0 || strcmp(mode, "sum") == 0) && k >= n)
			break;
		count++;
		sum += k;
		if (strcmp(mode, "below") == 0 || strcmp(mode, "first") == 0)
			hutch_buf_printf(&b, "%s%ld", count > 1 ? " " : "", k);
	}
	if (strcmp(mode, "sum") == 0)
		hutch_buf_printf(&b, "%lld", sum);
	else if (strcmp(mode, "is") == 0)
		hutch_buf_printf(&b, "%ld is %s", n, n_prime ? "prime" : "not prime");
	p->expected_output = hutch_buf_detach(&b, NULL);
	step(p, "find primes with a sieve (trial division for a single number)");
	return true;
}

static int cmp_tok(const void *a, const void *b)
{
	double x = strtod(json_string_value(*(json_t *const *)a), NULL);
	double y = strtod(json_string_value(*(json_t *const *)b), NULL);

	return x < y ? -1 : x > y;
}

static bool plan_sort(const struct words *w, struct agent_plan *p)
{
	json_t *toks = number_tokens(w->orig);
	size_t n = json_array_size(toks);
	bool desc = has(w, "descending") || has(w, "largest first") || has(w, "reverse order");
	struct hutch_buf b = HUTCH_BUF_INIT;

	if (!has(w, "sort") || n < 2) {
		json_decref(toks);
		return false;
	}
	json_t **v = hutch_xcalloc(n, sizeof(json_t *));
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(toks, i);
	qsort(v, n, sizeof(json_t *), cmp_tok);
	for (size_t i = 0; i < n; i++)
		hutch_buf_printf(&b, "%s%s", i ? " " : "",
				 json_string_value(v[desc ? n - 1 - i : i]));
	free(v);
	p->shape = hutch_xstrdup("sort");
	json_object_set_new(p->params, "numbers", toks);
	json_object_set_new(p->params, "descending", json_boolean(desc));
	p->expected_output = hutch_buf_detach(&b, NULL);
	step(p, "sort numerically, print the numbers as written, space-separated");
	return true;
}

static bool plan_text(const struct words *w, struct agent_plan *p)
{
	char *text = quoted(w->orig);
	bool ok = text && agent_plan_text(w->lower, text, p);

	free(text);
	return ok;
}

/* rows: the attached CSV's non-empty lines less the header. A line count,
 * not a CSV parse: the file is the user's, the parse is the program's job. */
static void add_rows_check(const struct words *w, struct agent_plan *p)
{
	char buf[64];
	long lines = 0;
	int c;
	int prev = '\n';
	FILE *f = NULL;

	for (int i = 0; i < w->opt->nfiles && !f; i++) {
		const char *name = w->opt->files[i];
		if (strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".csv") == 0)
			f = fopen(name, "re");
	}
	if (!f)
		return;
	while ((c = getc(f)) != EOF) {
		if (c != '\n' && prev == '\n')
			lines++;
		prev = c;
	}
	fclose(f);
	snprintf(buf, sizeof(buf), "rows: %ld", lines > 0 ? lines - 1 : 0);
	add_check(p, "contains", buf);
}

static bool plan_files(const struct words *w, struct agent_plan *p)
{
	const char *csv = attached(w, ".csv");
	const char *jsn = attached(w, ".json");
	const char *py = attached(w, ".py");
	const char *js = attached(w, ".js");

	if ((py || js) && (has(w, "run") || has(w, "execute"))) {
		p->shape = hutch_xstrdup("run_file");
		json_object_set_new(p->params, "file", json_string(py ? py : js));
		for (int i = 0; i < w->opt->nfiles; i++) {
			const char *f = w->opt->files[i];
			size_t n = strlen(f);
			size_t k = strlen(py ? py : js);
			if (n >= k && strcmp(f + n - k, py ? py : js) == 0)
				json_object_set_new(p->params, "path", json_string(f));
		}
		snprintf(p->language, sizeof(p->language), "%s", py ? "python" : "javascript");
		add_check(p, "exit_code", "0");
		step(p, "run the attached program as it is; fix known error classes if it fails");
		return true;
	}
	if (csv) {
		char *col = NULL;
		const char *c = strstr(w->lower, "column ");
		if (c) {
			c += strlen("column ");
			size_t n = strcspn(c, " ,.;'\"");
			col = hutch_xstrndup(w->orig + (c - w->lower), n);
		}
		p->shape = hutch_xstrdup(col ? "csv_column" : "csv_summary");
		json_object_set_new(p->params, "file", json_string(csv));
		if (col)
			json_object_set_new(p->params, "column", json_string(col));
		add_check(p, "regex", col ? "^(sum|mean|min|max) of .*: -?[0-9]" : "^rows: [0-9]+");
		if (!col)
			add_rows_check(w, p);
		step(p, "read the CSV with the standard csv module / a line split");
		step(p, col ? "sum, mean, min and max of the column"
			    : "rows, columns, numeric ranges");
		free(col);
		return true;
	}
	if (jsn && (has(w, "group") || has(w, "count") || has(w, "by "))) {
		const char *by = strstr(w->lower, " by ");
		char *key = by ? hutch_xstrndup(w->orig + (by - w->lower) + 4,
						strcspn(by + 4, " ,.;'\""))
			       : hutch_xstrdup("type");
		p->shape = hutch_xstrdup("json_group");
		json_object_set_new(p->params, "file", json_string(jsn));
		json_object_set_new(p->params, "key", json_string(key));
		add_check(p, "json", "");
		step(p, "load the JSON array of records, group them by the key, print JSON");
		free(key);
		return true;
	}
	return false;
}

static bool plan_network(const struct words *w, struct agent_plan *p)
{
	const char *u = strstr(w->orig, "http://");

	if (!u)
		u = strstr(w->orig, "https://");
	if (!u)
		return false;
	p->shape = hutch_xstrdup("fetch_url");
	json_object_set_new(p->params, "url", json_stringn(u, strcspn(u, " '\"")));
	add_check(p, "nonempty", "");
	step(p, "fetch the URL and print the first line of the body");
	return true;
}

static bool plan_table(const struct words *w, struct agent_plan *p)
{
	long n = first_int(w->orig);
	long last = -1;
	char buf[32];

	for (const char *s = w->orig; *s; s++) {
		if (isdigit((unsigned char)*s) && (s == w->orig || !isalnum((unsigned char)s[-1])))
			last = strtol(s, NULL, 10);
	}
	if (!has(w, "table") || !has(w, "square") || n < 0 || last < n || last > 1000)
		return false;
	p->shape = hutch_xstrdup("squares_table");
	json_object_set_new(p->params, "from", json_integer(n));
	json_object_set_new(p->params, "to", json_integer(last));
	snprintf(buf, sizeof(buf), "%ld", last * last);
	add_check(p, "contains", buf);
	step(p, "print a two-column table: n and n squared");
	return true;
}

static void choose_language(const struct words *w, struct agent_plan *p)
{
	const char *l = w->opt->language;
	bool js = (l && (strcmp(l, "node") == 0 || strcmp(l, "javascript") == 0 ||
			 strcmp(l, "js") == 0)) ||
		  (!l && (has(w, "javascript") || has(w, "node.js") || has(w, " in node")));

	snprintf(p->language, sizeof(p->language), "%s", js ? "javascript" : "python");
}

int agent_plan_heuristic(const struct agent_options *opt, struct agent_plan *p,
			 struct hutch_err *err)
{
	static bool (*const shapes[])(const struct words *, struct agent_plan *) = {
		plan_network, plan_files, plan_table, plan_fib,	  plan_factorial,
		plan_primes,  plan_sort,  plan_text,  plan_stats, NULL,
	};
	char *lower = hutch_xstrdup(opt->task);
	struct words w = {lower, opt->task, opt};

	for (char *s = lower; *s; s++)
		*s = (char)tolower((unsigned char)*s);
	memset(p, 0, sizeof(*p));
	p->task = hutch_xstrdup(opt->task);
	p->params = json_object();
	p->dependencies = json_array();
	p->steps = json_array();
	p->checks = json_array();
	choose_language(&w, p);
	for (int i = 0; shapes[i] && !p->shape; i++)
		shapes[i](&w, p);
	/* a given program imports what it imports: the debugger installs it */
	if (p->shape && strcmp(p->shape, "run_file") != 0)
		find_deps(&w, p);
	free(lower);
	if (!p->shape) {
		p->shape = hutch_xstrdup("unknown");
		p->note = hutch_xstrdup("no template fits this task; heuristic mode only knows the "
					"shapes in docs/agent.md (try --llm)");
		return hutch_err_setx(err, ENOTSUP, "%s", p->note);
	}
	if (json_array_size(p->dependencies) > 0)
		p->note = hutch_xstrdup("the task names a third-party module: the coder uses it "
					"and the executor installs it; if it cannot be installed, "
					"the debugger switches to the standard library");
	else
		p->note = hutch_xstrdup("standard library only: nothing to install");
	return 0;
}

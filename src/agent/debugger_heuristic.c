#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/buf.h"
#include "util/mem.h"

/*
 * The heuristic debugger: classify a failed attempt from the ExecResults
 * (status, the error's type and message, stderr, egress), then apply the
 * first rule that knows a fix for that class. A rule either flips a variant
 * switch and lets the coder regenerate, or edits the code; either way the
 * new artifact differs from the old one, or there is no fix. The history's
 * rule for a signature seen before is tried first.
 */

struct fix_in {
	const struct agent_plan *plan;
	const struct agent_artifact *cur;
	struct agent_diagnosis *d;
	const char *subject; /* the module or name the signature is about */
};

/* The text after prefix in s, up to the first quote or newline. */
static char *after(const char *s, const char *prefix)
{
	const char *p = s ? strstr(s, prefix) : NULL;

	if (!p)
		return NULL;
	p += strlen(prefix);
	return hutch_xstrndup(p, strcspn(p, "'\"\n "));
}

static void set(struct agent_diagnosis *d, const char *cat, char *sig, char *cause)
{
	snprintf(d->category, sizeof(d->category), "%s", cat);
	d->signature = sig;
	d->root_cause = cause;
}

/* The last non-empty line of s (an error's summary line). */
static char *last_line(const char *s)
{
	const char *end = s ? s + strlen(s) : NULL;
	const char *start;

	if (!s)
		return hutch_xstrdup("");
	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	start = end;
	while (start > s && start[-1] != '\n')
		start--;
	return hutch_xstrndup(start, (size_t)(end - start));
}

static const char *denied_host(const json_t *run)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(run, "egress"), i, e)
	{
		if (strcmp(agent_jstr(e, "verdict") ?: "", "denied") == 0)
			return agent_jstr(e, "host") ?: agent_jstr(e, "address") ?: "?";
	}
	return NULL;
}

static bool classify_error(const char *err, struct agent_diagnosis *d)
{
	static const char *const simple[][2] = {
		{"TypeError", "type"},		{"ValueError", "value"},
		{"ZeroDivisionError", "value"}, {"KeyError", "value"},
		{"IndexError", "value"},	{"RangeError", "value"},
		{"SyntaxError", "syntax"},	{"IndentationError", "syntax"},
		{"TabError", "syntax"},		{NULL, NULL},
	};
	char *m;

	if ((m = after(err, "No module named '")) || (m = after(err, "Cannot find module '"))) {
		set(d, "import", hutch_xasprintf("import:%s", m),
		    hutch_xasprintf("module '%s' is not installed in the sandbox", m));
		free(m);
		return true;
	}
	if ((m = after(err, "NameError: name '")) || (m = after(err, "ReferenceError: "))) {
		set(d, "name", hutch_xasprintf("name:%s", m),
		    hutch_xasprintf("'%s' is used but never defined or imported", m));
		free(m);
		return true;
	}
	if (err && strstr(err, "Missing parentheses in call to 'print'")) {
		set(d, "syntax", hutch_xstrdup("syntax:print-statement"),
		    hutch_xstrdup("Python 2 print statements (print without parentheses)"));
		return true;
	}
	if (err && strstr(err, "TabError")) {
		set(d, "syntax", hutch_xstrdup("syntax:tabs"),
		    hutch_xstrdup("indentation mixes tabs and spaces"));
		return true;
	}
	for (int i = 0; simple[i][0]; i++) {
		if (err && strstr(err, simple[i][0])) {
			set(d, simple[i][1], hutch_xasprintf("%s:%s", simple[i][1], simple[i][0]),
			    last_line(err));
			return true;
		}
	}
	return false;
}

void agent_debug_classify(const struct agent_plan *plan, const json_t *install, const json_t *run,
			  const json_t *verdict, struct agent_diagnosis *d)
{
	const char *status = agent_jstr(run, "status") ?: "";
	const char *err = agent_jstr(run, "stderr");
	const char *host = denied_host(run);

	memset(d, 0, sizeof(*d));
	if (install && strcmp(agent_jstr(install, "status") ?: "", "ok") != 0) {
		char *line = last_line(agent_jstr(install, "stderr"));
		char *mods = json_array_size(plan->dependencies)
				     ? json_dumps(plan->dependencies, JSON_COMPACT)
				     : hutch_xstrdup("the missing module");
		set(d, "import", hutch_xasprintf("import:install:%s", mods),
		    hutch_xasprintf("installing %s failed (network allow: the registry only): %s",
				    mods, line));
		free(line);
		free(mods);
	} else if (!run || strcmp(status, "sandbox_error") == 0) {
		set(d, "sandbox", hutch_xstrdup("sandbox"),
		    hutch_xstrdup("the sandbox failed to run the program"));
	} else if (strcmp(status, "timeout") == 0) {
		set(d, "timeout", hutch_xasprintf("timeout:%s", plan->shape),
		    hutch_xasprintf(
			    "the run step passed its deadline (%lld ms)",
			    (long long)json_integer_value(json_object_get(run, "wall_ms"))));
	} else if (strcmp(status, "oom") == 0) {
		set(d, "oom", hutch_xasprintf("oom:%s", plan->shape),
		    hutch_xstrdup("the program ran out of memory"));
	} else if (host) {
		set(d, "network", hutch_xasprintf("network:denied:%s", host),
		    hutch_xasprintf("the program reached for '%s', and the run step has network "
				    "none by policy (egress denied)",
				    host));
	} else if (err && (strstr(err, "name resolution") || strstr(err, "EAI_AGAIN") ||
			   strstr(err, "ENOTFOUND") || strstr(err, "ENETUNREACH"))) {
		set(d, "network", hutch_xstrdup("network:dns"),
		    hutch_xstrdup("the program needs the network, and the run step has network "
				  "none by policy (no DNS, no route)"));
	} else if (classify_error(err, d)) {
		/* set by the error's own words */
	} else if (strcmp(status, "ok") == 0 && verdict &&
		   !json_is_true(json_object_get(verdict, "passed"))) {
		char *why = json_dumps(json_object_get(verdict, "failures"), JSON_COMPACT);
		set(d, "wrong_output", hutch_xasprintf("wrong_output:%s", plan->shape), why);
	} else {
		set(d, "unknown", hutch_xstrdup("unknown"), last_line(err));
	}
}

/* --- rules --- */

static const char *stdlib_for(const char *module)
{
	static const char *const alt[][2] = {
		{"numpy", "statistics"}, {"tabulate", "str formatting"},
		{"simplejson", "json"},	 {"lodash", "built-in Array methods"},
		{"pandas", "csv"},	 {NULL, NULL},
	};
	for (int i = 0; alt[i][0]; i++) {
		if (strstr(module, alt[i][0]))
			return alt[i][1];
	}
	return "the standard library";
}

static bool rule_stdlib(struct fix_in *in, struct agent_artifact *out)
{
	json_t *v;
	struct hutch_err err;

	if (strcmp(in->d->category, "import") != 0 || !in->cur->install_command ||
	    strcmp(in->plan->shape, "run_file") == 0)
		return false;
	v = json_deep_copy(in->cur->variant);
	json_object_set_new(v, "use_dep", json_false());
	int rc = agent_code_template(in->plan, v, out, &err);
	json_decref(v);
	if (rc < 0)
		return false;
	in->d->fix = hutch_xasprintf("the module cannot be installed here: use %s instead "
				     "(same output, nothing to install)",
				     stdlib_for(in->d->signature));
	return true;
}

/* The pip name of an importable module, where they differ. */
static const char *pip_name(const char *module)
{
	static const char *const names[][2] = {
		{"yaml", "pyyaml"},	     {"cv2", "opencv-python"},	{"PIL", "pillow"},
		{"sklearn", "scikit-learn"}, {"bs4", "beautifulsoup4"}, {NULL, NULL},
	};
	for (int i = 0; names[i][0]; i++) {
		if (strcmp(names[i][0], module) == 0)
			return names[i][1];
	}
	return module;
}

static bool plain_name(const char *s)
{
	if (!*s || *s == '-' || *s == '.')
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && !strchr("-_.@/", *s))
			return false;
	}
	return true;
}

/* A module the program imports is missing and nothing installed it yet:
 * install it (under allow: the registry) before the next run. */
static bool rule_install(struct fix_in *in, struct agent_artifact *out)
{
	bool is_py = strcmp(in->plan->language, "python") == 0;
	char *top;
	const char *pkg;

	if (strcmp(in->d->category, "import") != 0 || !in->subject || in->cur->install_command ||
	    strncmp(in->d->signature, "import:install:", 15) == 0 || !plain_name(in->subject))
		return false;
	/* "a.b" imports come from package a; node's "./x" is a file, not a package */
	top = hutch_xstrndup(in->subject, strcspn(in->subject, is_py ? "." : "/"));
	pkg = is_py ? pip_name(top) : top;
	if (!is_py && (in->subject[0] == '.' || in->subject[0] == '/')) {
		free(top);
		return false;
	}
	agent_artifact_copy(out, in->cur);
	out->install_command =
		is_py ? hutch_xasprintf("python3 -m pip install --user --break-system-packages "
					"--no-input --disable-pip-version-check --retries 0 "
					"--timeout 10 %s",
					pkg)
		      : hutch_xasprintf("npm install --no-audit --no-fund --fetch-retries 0 "
					"--fetch-timeout 10000 %s",
					pkg);
	in->d->fix = hutch_xasprintf("install '%s' in an install step (network: the registry "
				     "only), then run again",
				     pkg);
	free(top);
	return true;
}

static bool rule_memo(struct fix_in *in, struct agent_artifact *out)
{
	json_t *v;
	struct hutch_err err;

	if (strcmp(in->d->category, "timeout") != 0 ||
	    !json_is_true(json_object_get(in->plan->params, "recursive")) ||
	    json_is_true(json_object_get(in->cur->variant, "memo")))
		return false;
	v = json_deep_copy(in->cur->variant);
	json_object_set_new(v, "memo", json_true());
	int rc = agent_code_template(in->plan, v, out, &err);
	json_decref(v);
	if (rc < 0)
		return false;
	in->d->fix = hutch_xstrdup("the naive recursion is exponential: memoise it (same "
				   "recursion, each value computed once)");
	return true;
}

/* Known imports for a NameError/ReferenceError: stdlib modules only. */
static bool rule_add_import(struct fix_in *in, struct agent_artifact *out)
{
	static const char *const py[] = {"math",      "os",	   "sys",	  "re",
					 "json",      "csv",	   "statistics",  "random",
					 "time",      "itertools", "collections", "datetime",
					 "functools", "string",	   NULL};
	static const char *const js[] = {"fs", "path", "os", "util", "crypto", "assert", NULL};
	bool is_py = strcmp(in->plan->language, "python") == 0;
	const char *const *list = is_py ? py : js;
	const char *name = in->subject;

	if (strcmp(in->d->category, "name") != 0 || !name)
		return false;
	for (int i = 0; list[i]; i++) {
		if (strcmp(list[i], name) != 0)
			continue;
		agent_artifact_copy(out, in->cur);
		free(out->code);
		out->code = is_py ? hutch_xasprintf("import %s\n%s", name, in->cur->code)
				  : hutch_xasprintf("const %s = require('%s');\n%s", name, name,
						    in->cur->code);
		in->d->fix = hutch_xasprintf("add the missing import of '%s'", name);
		return true;
	}
	return false;
}

/* print x -> print(x), line by line; other lines unchanged. */
static bool rule_print(struct fix_in *in, struct agent_artifact *out)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	const char *p;

	if (!in->d->signature || strcmp(in->d->signature, "syntax:print-statement") != 0)
		return false;
	for (p = in->cur->code; *p;) {
		size_t n = strcspn(p, "\n");
		size_t ws = strspn(p, " \t");
		const char *rest = p + ws;
		if (ws < n && strncmp(rest, "print", 5) == 0 && n - ws > 5 &&
		    (rest[5] == ' ' || rest[5] == '\t')) {
			const char *arg = rest + 5 + strspn(rest + 5, " \t");
			hutch_buf_printf(&b, "%.*sprint(%.*s)", (int)ws, p,
					 (int)(n - (size_t)(arg - p)), arg);
		} else {
			hutch_buf_append(&b, p, n);
		}
		p += n;
		if (*p == '\n') {
			hutch_buf_puts(&b, "\n");
			p++;
		}
	}
	agent_artifact_copy(out, in->cur);
	free(out->code);
	out->code = hutch_buf_detach(&b, NULL);
	in->d->fix = hutch_xstrdup("rewrite Python 2 print statements as print() calls");
	return true;
}

static bool rule_tabs(struct fix_in *in, struct agent_artifact *out)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	if (!in->d->signature || strcmp(in->d->signature, "syntax:tabs") != 0)
		return false;
	for (const char *p = in->cur->code; *p; p++) {
		if (*p == '\t')
			hutch_buf_puts(&b, "        "); /* Python's own tab width: 8 */
		else
			hutch_buf_append(&b, p, 1);
	}
	agent_artifact_copy(out, in->cur);
	free(out->code);
	out->code = hutch_buf_detach(&b, NULL);
	in->d->fix = hutch_xstrdup("expand tabs to spaces so the indentation is consistent");
	return true;
}

struct rule {
	const char *name;
	bool (*apply)(struct fix_in *in, struct agent_artifact *out);
};

static const struct rule rules[] = {
	{"stdlib_alternative", rule_stdlib},
	{"install_module", rule_install},
	{"memoize", rule_memo},
	{"add_import", rule_add_import},
	{"print_function", rule_print},
	{"expand_tabs", rule_tabs},
	{NULL, NULL},
};

/* Why no rule applies, for the classes that have no fix by design. */
static const char *no_fix(const char *category)
{
	if (strcmp(category, "network") == 0)
		return "none: the run step has no network by policy; give the data with --file";
	if (strcmp(category, "timeout") == 0)
		return "none known: a smaller input or a faster algorithm is needed";
	if (strcmp(category, "import") == 0)
		return "none: the module cannot be installed here, and no standard-library "
		       "alternative is known for this program";
	if (strcmp(category, "wrong_output") == 0)
		return "none known: the template's output does not meet the plan";
	return "none known for this error class in heuristic mode";
}

static bool try_rule(const struct rule *r, struct fix_in *in, struct agent_artifact *out)
{
	if (!r->apply(in, out))
		return false;
	in->d->rule = hutch_xstrdup(r->name);
	return true;
}

int agent_debug_heuristic(const struct agent_plan *plan, const struct agent_artifact *cur,
			  const json_t *install, const json_t *run, const char *known_rule,
			  struct agent_diagnosis *d, struct agent_artifact *out)
{
	json_t *verdict = run ? agent_verify(plan, run) : NULL;
	struct fix_in in = {plan, cur, d, NULL};
	const char *colon;

	agent_debug_classify(plan, install, run, verdict, d);
	json_decref(verdict);
	colon = d->signature ? strrchr(d->signature, ':') : NULL;
	in.subject = colon ? colon + 1 : NULL;
	memset(out, 0, sizeof(*out));
	for (int i = 0; known_rule && rules[i].name; i++) {
		if (strcmp(rules[i].name, known_rule) == 0 && try_rule(&rules[i], &in, out)) {
			d->from_history = true;
			return 1;
		}
	}
	for (int i = 0; rules[i].name; i++) {
		if (try_rule(&rules[i], &in, out))
			return 1;
	}
	d->fix = hutch_xstrdup(no_fix(d->category));
	return 0;
}

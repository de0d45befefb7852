/* The agent's pure parts: oracles, the heuristic planner, the verifier,
 * the debugger's classes and rules, and the messages' JSON forms. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "tap.h"

static struct agent_options options(const char *task, const char *lang)
{
	struct agent_options o = {0};

	o.task = task;
	o.language = lang;
	o.max_attempts = 3;
	return o;
}

static json_t *result(const char *status, int code, const char *out, const char *err)
{
	return json_pack("{s:s, s:i, s:s, s:s, s:[]}", "status", status, "exit_code", code,
			 "stdout", out, "stderr", err, "egress");
}

static void test_agent_oracle_big_numbers(void)
{
	char *f = agent_oracle_fib(100);
	char *g = agent_oracle_factorial(25);
	char *z = agent_oracle_fib(0);

	ASSERT_STREQ(f, "354224848179261915075");
	ASSERT_STREQ(g, "15511210043330985984000000");
	ASSERT_STREQ(z, "0");
	free(f);
	free(g);
	free(z);
}

static void test_agent_oracle_stats(void)
{
	json_t *xs = json_pack("[f, f, f, f, f, f]", 4.0, 8.0, 15.0, 16.0, 23.0, 42.0);
	json_t *which = json_pack("[s, s, s, s]", "mean", "median", "range", "stdev");
	char *s = agent_oracle_stats(xs, which);

	ASSERT_STREQ(s, "mean: 18.00\nmedian: 15.50\nrange: 38.00\nstdev: 13.49");
	free(s);
	json_decref(xs);
	json_decref(which);
}

static void test_agent_planner_shapes(void)
{
	static const char *const cases[][3] = {
		{"compute the mean and median of 4 8 15 16 23 42", "stats", "python"},
		{"print the 20th Fibonacci number", "fibonacci", "python"},
		{"sort the words of 'b a' alphabetically", "sort_words", "python"},
		{"count the words in 'a b c'", "count_words", "python"},
		{"is 91 prime", "primes", "python"},
		{"factorial of 5 in javascript", "factorial", "javascript"},
		{"fetch https://example.com/", "fetch_url", "python"},
		{NULL, NULL, NULL},
	};
	for (int i = 0; cases[i][0]; i++) {
		struct agent_options o = options(cases[i][0], NULL);
		struct agent_plan p;
		struct hutch_err err;
		ASSERT_OK(agent_plan_heuristic(&o, &p, &err));
		ASSERT_STREQ(p.shape, cases[i][1]);
		ASSERT_STREQ(p.language, cases[i][2]);
		agent_plan_release(&p);
	}
}

static void test_agent_planner_refuses_unknown(void)
{
	struct agent_options o = options("write a web server", NULL);
	struct agent_plan p;
	struct hutch_err err;

	ASSERT_ERR(agent_plan_heuristic(&o, &p, &err), err, ENOTSUP);
	ASSERT_STREQ(p.shape, "unknown");
	agent_plan_release(&p);
}

static void test_agent_planner_ordinals_are_not_numbers(void)
{
	struct agent_options o = options("the 3rd and the mean of 2 4", NULL);
	struct agent_plan p;
	struct hutch_err err;

	ASSERT_OK(agent_plan_heuristic(&o, &p, &err));
	ASSERT_EQ(json_array_size(json_object_get(p.params, "numbers")), 2);
	ASSERT_STREQ(p.expected_output, "mean: 3.00");
	agent_plan_release(&p);
}

static void test_agent_planner_whole_words(void)
{
	struct agent_options o = options("the sum and the model average of 1 2 3 in summary", NULL);
	struct agent_plan p;
	struct hutch_err err;

	ASSERT_OK(agent_plan_heuristic(&o, &p, &err));
	ASSERT_STREQ(p.expected_output, "mean: 2.00\nsum: 6.00");
	agent_plan_release(&p);
}

static void test_agent_verifier(void)
{
	struct agent_options o = options("print the 10th Fibonacci number", NULL);
	struct agent_plan p;
	struct hutch_err err;
	json_t *good = result("ok", 0, "55\n", "");
	json_t *bad = result("ok", 0, "54\n", "");
	json_t *v1;
	json_t *v2;

	ASSERT_OK(agent_plan_heuristic(&o, &p, &err));
	v1 = agent_verify(&p, good);
	v2 = agent_verify(&p, bad);
	ASSERT(json_is_true(json_object_get(v1, "passed")));
	ASSERT(json_is_false(json_object_get(v2, "passed")));
	ASSERT_CONTAINS(json_string_value(json_array_get(json_object_get(v2, "failures"), 0)),
			"not the expected '55'");
	json_decref(v1);
	json_decref(v2);
	json_decref(good);
	json_decref(bad);
	agent_plan_release(&p);
}

/* A run_file-like plan with code of our own. */
static void debug_case(const char *lang, const char *code, const char *stderr_text,
		       const char *want_cat, const char *want_rule, const char *want_in_code)
{
	struct agent_plan p = {0};
	struct agent_artifact cur = {0};
	struct agent_artifact out;
	struct agent_diagnosis d = {0};
	json_t *run = result("error", 1, "", stderr_text);

	snprintf(p.language, sizeof(p.language), "%s", lang);
	p.shape = strdup("run_file");
	p.params = json_object();
	p.dependencies = json_array();
	p.checks = json_array();
	cur.filename = strdup("main");
	cur.code = strdup(code);
	cur.run_command = strdup("run");
	cur.variant = json_object();
	int rc = agent_debug_heuristic(&p, &cur, NULL, run, NULL, &d, &out);
	ASSERT_STREQ(d.category, want_cat);
	if (want_rule) {
		ASSERT_EQ(rc, 1);
		ASSERT_STREQ(d.rule, want_rule);
		ASSERT_CONTAINS(out.code, want_in_code);
		ASSERT(strcmp(out.code, cur.code) != 0);
		agent_artifact_release(&out);
	} else {
		ASSERT_EQ(rc, 0);
		ASSERT(d.fix != NULL);
	}
	agent_diagnosis_release(&d);
	agent_artifact_release(&cur);
	agent_plan_release(&p);
	json_decref(run);
}

static void test_agent_debugger_rules(void)
{
	debug_case("python", "print(math.pi)\n",
		   "Traceback...\nNameError: name 'math' is not defined\n", "name", "add_import",
		   "import math\n");
	debug_case("javascript", "fs.readFileSync('x')\n", "ReferenceError: fs is not defined\n",
		   "name", "add_import", "const fs = require('fs');");
	debug_case("python", "if 1:\n    print 'a', 2\n",
		   "SyntaxError: Missing parentheses in call to 'print'. Did you mean print(...)?",
		   "syntax", "print_function", "    print('a', 2)\n");
	debug_case("python", "print(int('x'))\n", "ValueError: invalid literal for int()", "value",
		   NULL, NULL);
	/* a made-up name has no import to add */
	debug_case("python", "print(nosuch)\n", "NameError: name 'nosuch' is not defined", "name",
		   NULL, NULL);
}

static void test_agent_debugger_installs_a_missing_module(void)
{
	struct agent_plan p = {0};
	struct agent_artifact cur = {0};
	struct agent_artifact out;
	struct agent_diagnosis d = {0};
	json_t *run = result("error", 1, "", "ModuleNotFoundError: No module named 'yaml'\n");

	snprintf(p.language, sizeof(p.language), "python");
	p.shape = strdup("run_file");
	p.params = json_object();
	p.dependencies = json_array();
	cur.filename = strdup("main.py");
	cur.code = strdup("import yaml\n");
	cur.run_command = strdup("python3 main.py");
	cur.variant = json_object();
	ASSERT_EQ(agent_debug_heuristic(&p, &cur, NULL, run, NULL, &d, &out), 1);
	ASSERT_STREQ(d.rule, "install_module");
	ASSERT_STREQ(d.signature, "import:yaml");
	ASSERT_CONTAINS(out.install_command, "pip install");
	ASSERT_CONTAINS(out.install_command, " pyyaml");
	ASSERT_STREQ(out.code, cur.code);
	agent_artifact_release(&out);
	agent_diagnosis_release(&d);
	agent_artifact_release(&cur);
	agent_plan_release(&p);
	json_decref(run);
}

static void test_agent_artifact_json_is_checked(void)
{
	struct agent_artifact a;
	struct hutch_err err;
	json_t *slash = json_pack("{s:s, s:s, s:s}", "filename", "../x.py", "code", "1",
				  "run_command", "python3 x.py");
	json_t *typed = json_pack("{s:s, s:i, s:s}", "filename", "x.py", "code", 1, "run_command",
				  "python3 x.py");
	json_t *fine = json_pack("{s:s, s:s, s:s, s:s}", "filename", "x.py", "code", "1",
				 "run_command", "python3 x.py", "install_command", "");

	ASSERT_ERR(agent_artifact_from_json(&a, slash, &err), err, EINVAL);
	ASSERT_ERR(agent_artifact_from_json(&a, typed, &err), err, EINVAL);
	ASSERT_OK(agent_artifact_from_json(&a, fine, &err));
	ASSERT(a.install_command == NULL);
	agent_artifact_release(&a);
	json_decref(slash);
	json_decref(typed);
	json_decref(fine);
}

static void test_agent_diagnosis_json_categories(void)
{
	struct agent_diagnosis d;
	struct hutch_err err;
	json_t *bad = json_pack("{s:s, s:s}", "category", "cosmic-rays", "root_cause", "x");
	json_t *ok = json_pack("{s:s, s:s, s:s}", "category", "timeout", "root_cause", "slow",
			       "fix", "memoise");

	ASSERT_ERR(agent_diagnosis_from_json(&d, bad, &err), err, EINVAL);
	ASSERT_OK(agent_diagnosis_from_json(&d, ok, &err));
	ASSERT_STREQ(d.fix, "memoise");
	agent_diagnosis_release(&d);
	json_decref(bad);
	json_decref(ok);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_agent_oracle_big_numbers),
	TAP_CASE(test_agent_oracle_stats),
	TAP_CASE(test_agent_planner_shapes),
	TAP_CASE(test_agent_planner_refuses_unknown),
	TAP_CASE(test_agent_planner_ordinals_are_not_numbers),
	TAP_CASE(test_agent_planner_whole_words),
	TAP_CASE(test_agent_verifier),
	TAP_CASE(test_agent_debugger_rules),
	TAP_CASE(test_agent_debugger_installs_a_missing_module),
	TAP_CASE(test_agent_artifact_json_is_checked),
	TAP_CASE(test_agent_diagnosis_json_categories),
	TAP_END,
};

TAP_MAIN(cases)

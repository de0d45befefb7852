#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/mem.h"

/*
 * The verifier: a run is done only when it exited 0 and its output meets
 * the plan (the exact expected output when the planner could compute one,
 * and every check). A program that runs but prints the wrong thing is a
 * failure the debugger sees as "wrong_output".
 */

/* Add msg (taken) to the failures. */
static void fail(json_t *failures, char *msg)
{
	json_array_append_new(failures, json_string(msg));
	free(msg);
}

/* A multi-line regex check: any line of out matches. REG_NEWLINE makes ^
 * and $ match at line ends. */
static bool regex_matches(const char *pattern, const char *out, bool *bad)
{
	regex_t re;
	bool hit;

	*bad = regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0;
	if (*bad)
		return false;
	hit = regexec(&re, out, 0, NULL, 0) == 0;
	regfree(&re);
	return hit;
}

static void run_check(const json_t *check, const char *out, const json_t *run, json_t *failures)
{
	const char *type = agent_jstr(check, "type");
	const char *value = agent_jstr(check, "value") ?: "";
	bool bad = false;

	if (strcmp(type, "contains") == 0) {
		if (!strstr(out, value))
			fail(failures, hutch_xasprintf("output lacks '%s'", value));
	} else if (strcmp(type, "regex") == 0) {
		if (!regex_matches(value, out, &bad))
			fail(failures,
			     hutch_xasprintf(bad ? "bad regex '%s'" : "no line matches /%s/",
					     value));
	} else if (strcmp(type, "nonempty") == 0) {
		if (!*out)
			fail(failures, hutch_xstrdup("output is empty"));
	} else if (strcmp(type, "json") == 0) {
		json_t *j = json_loads(out, JSON_DECODE_ANY, NULL);
		if (!j)
			fail(failures, hutch_xstrdup("output is not JSON"));
		json_decref(j);
	} else if (strcmp(type, "exit_code") == 0) {
		json_t *code = json_object_get(run, "exit_code");
		if (!json_is_integer(code) || json_integer_value(code) != strtol(value, NULL, 10))
			fail(failures, hutch_xasprintf("exit code is not %s", value));
	} else {
		fail(failures, hutch_xasprintf("unknown check type '%s'", type));
	}
}

json_t *agent_verify(const struct agent_plan *plan, const json_t *run)
{
	json_t *failures = json_array();
	const char *status = agent_jstr(run, "status") ?: "none";
	char *out = agent_result_stdout(run);
	json_t *c;
	size_t i;

	if (!run)
		fail(failures, hutch_xstrdup("the program did not run"));
	else if (strcmp(status, "ok") != 0)
		fail(failures, hutch_xasprintf("status is '%s', not ok", status));
	if (run && plan->expected_output && strcmp(out, plan->expected_output) != 0)
		fail(failures, hutch_xasprintf("output '%.200s' is not the expected '%.200s'", out,
					       plan->expected_output));
	json_array_foreach(plan->checks, i, c)
	{
		run_check(c, out, run, failures);
	}
	free(out);
	return json_pack("{s:b, s:o}", "passed", json_array_size(failures) == 0, "failures",
			 failures);
}

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "util/buf.h"
#include "util/mem.h"

/*
 * The LLM roles: planner, coder and debugger as structured chat
 * completions whose JSON schemas are the messages of docs/agent.md. The
 * system prompt is one fixed text shared by every role and attempt, so
 * providers that cache prompt prefixes reuse it; what varies comes after.
 * The coder sees the plan without the raw task.
 */

#define OUTPUT_CAP 4000 /* bytes of stdout/stderr shown to the debugger */

static const char system_prompt[] =
	"You are one role in hutch's coding agent. hutch runs the code you write in an isolated "
	"Linux sandbox: Debian 12 with python3 (3.11; numpy, pandas, scipy, matplotlib "
	"installed) and node 20. The working directory /workspace holds the user's files. The "
	"run step has NO network at all. An install step, run before it, may reach only the "
	"language's package registry (pypi.org, registry.npmjs.org); prefer the standard "
	"library. Reply with exactly one JSON object matching the schema, nothing else. Code "
	"must be complete and runnable as it is: no TODO, no placeholders, no ellipses standing "
	"for code, nothing left for the user to fill in. Print results to stdout.";

static json_t *str_t(void)
{
	return json_pack("{s:s}", "type", "string");
}

static json_t *nullable_str(void)
{
	return json_pack("{s:[s, s]}", "type", "string", "null");
}

static json_t *strings_t(void)
{
	return json_pack("{s:s, s:o}", "type", "array", "items", str_t());
}

static json_t *object_t(json_t *props)
{
	json_t *req = json_array();
	const char *k;
	json_t *v;

	json_object_foreach(props, k, v)
	{
		json_array_append_new(req, json_string(k));
	}
	return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required",
			 req, "additionalProperties", 0);
}

static json_t *plan_schema(void)
{
	json_t *check = object_t(json_pack("{s:{s:s, s:[s, s, s, s, s]}, s:o}", "type", "type",
					   "string", "enum", "contains", "regex", "nonempty",
					   "json", "exit_code", "value", str_t()));

	return object_t(json_pack("{s:{s:s, s:[s, s]}, s:o, s:o, s:o, s:{s:s, s:o}, s:o}",
				  "language", "type", "string", "enum", "python", "javascript",
				  "dependencies", strings_t(), "steps", strings_t(),
				  "expected_output", nullable_str(), "checks", "type", "array",
				  "items", check, "note", str_t()));
}

static json_t *artifact_schema(void)
{
	return object_t(json_pack("{s:o, s:o, s:o, s:o}", "filename", str_t(), "code", str_t(),
				  "install_command", nullable_str(), "run_command", str_t()));
}

static json_t *diagnosis_schema(void)
{
	return object_t(json_pack("{s:{s:s, s:[s, s, s, s, s, s, s, s, s, s, s]}, s:o, s:o, s:o}",
				  "category", "type", "string", "enum", "syntax", "import", "name",
				  "type", "value", "timeout", "oom", "wrong_output", "network",
				  "sandbox", "unknown", "root_cause", str_t(), "fix", str_t(),
				  "artifact", artifact_schema()));
}

/* One call; its usage joins step.llm. */
static json_t *ask(struct agent_ctx *c, const char *role, const char *user, const char *name,
		   json_t *schema, json_t *step, struct hutch_err *err)
{
	json_t *usage = NULL;
	json_t *out;
	json_t *calls = json_object_get(step, "llm");

	agent_progress(c, role, "asking %s for %s", agent_llm_model(c->llm, role), name);
	out = agent_llm_chat(c->llm, role, system_prompt, user, name, schema, &usage, err);
	json_decref(schema);
	if (!calls) {
		calls = json_array();
		json_object_set_new(step, "llm", calls);
	}
	agent_log(c, role,
		  "%s: %lld prompt + %lld completion tokens (%lld cached), %lld retries, $%.6f",
		  out ? "answer" : "no answer",
		  (long long)json_integer_value(json_object_get(usage, "prompt")),
		  (long long)json_integer_value(json_object_get(usage, "completion")),
		  (long long)json_integer_value(json_object_get(usage, "cached")),
		  (long long)json_integer_value(json_object_get(usage, "retries")),
		  json_real_value(json_object_get(usage, "cost_usd")));
	json_array_append_new(calls, usage);
	return out;
}

static int parse_plan(void *out, const json_t *o, struct hutch_err *err)
{
	return agent_plan_from_json(out, o, err);
}

static int parse_artifact(void *out, const json_t *o, struct hutch_err *err)
{
	return agent_artifact_from_json(out, o, err);
}

/* ask, then parse the reply into out; a reply that does not fit (a field
 * missing, a bad file name) is asked for once more, saying what was wrong. */
static int ask_parsed(struct agent_ctx *c, const char *role, const char *user, const char *name,
		      json_t *(*schema)(void), json_t *step,
		      int (*parse)(void *, const json_t *, struct hutch_err *), void *out,
		      struct hutch_err *err)
{
	char *prompt = hutch_xstrdup(user);
	int rc = -1;

	for (int i = 0; i < 2 && rc < 0; i++) {
		json_t *o = ask(c, role, prompt, name, schema(), step, err);
		if (!o)
			break;
		rc = parse(out, o, err);
		json_decref(o);
		if (rc == 0)
			break;
		agent_log(c, role, "the reply does not fit %s: %s", name, err->msg);
		free(prompt);
		prompt = hutch_xasprintf("%sYour previous reply was rejected: %s. Reply again with "
					 "every field of the schema.\n",
					 user, err->msg);
	}
	free(prompt);
	return rc;
}

int agent_plan_llm(struct agent_ctx *c, struct agent_plan *plan, json_t *step,
		   struct hutch_err *err)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	int rc;

	hutch_buf_printf(&b,
			 "Role: planner. Turn the task into an execution plan: the language "
			 "(python unless the task or the requested language says javascript), "
			 "third-party dependencies (empty when the standard library will do), "
			 "steps, the exact expected stdout when it can be known in advance (else "
			 "null), and checks on the output.\nRequested language: %s\nFiles in "
			 "/workspace:",
			 c->opt->language ? c->opt->language : "any");
	for (int i = 0; i < c->opt->nfiles; i++) {
		const char *base = strrchr(c->opt->files[i], '/');
		hutch_buf_printf(&b, " %s", base ? base + 1 : c->opt->files[i]);
	}
	hutch_buf_printf(&b, "\nTask: %s\n", c->opt->task);
	rc = ask_parsed(c, "Planner", b.data, "execution_plan", plan_schema, step, parse_plan, plan,
			err);
	hutch_buf_release(&b);
	if (rc == 0)
		plan->task = hutch_xstrdup(c->opt->task);
	return rc;
}

int agent_code_llm(struct agent_ctx *c, const struct agent_plan *plan, struct agent_artifact *out,
		   json_t *step, struct hutch_err *err)
{
	json_t *pj = agent_plan_to_json(plan);
	char *text;
	char *user;
	int rc;

	json_object_del(pj, "task"); /* the coder works from the plan */
	text = json_dumps(pj, JSON_INDENT(1));
	json_decref(pj);
	user = hutch_xasprintf("Role: coder. Write the program that carries out this plan; "
			       "filename is a plain name in /workspace; run_command runs it "
			       "(python3 FILE or node FILE); install_command is null unless the "
			       "plan's dependencies must be installed.\nPlan:\n%s\n",
			       text);
	free(text);
	rc = ask_parsed(c, "Coder", user, "code_artifact", artifact_schema, step, parse_artifact,
			out, err);
	free(user);
	return rc;
}

/* An ExecResult cut down for the prompt: status, exit, output tails, error. */
static json_t *brief(const json_t *r)
{
	const char *keys[] = {"stdout", "stderr"};
	json_t *o;

	if (!r)
		return json_null();
	o = json_pack("{s:O?, s:O?, s:O?, s:O?}", "status", json_object_get(r, "status"),
		      "exit_code", json_object_get(r, "exit_code"), "error",
		      json_object_get(r, "error"), "egress", json_object_get(r, "egress"));
	for (int i = 0; i < 2; i++) {
		const char *s = agent_jstr(r, keys[i]) ?: "";
		size_t n = strlen(s);
		json_object_set_new(o, keys[i],
				    json_string(n > OUTPUT_CAP ? s + n - OUTPUT_CAP : s));
	}
	return o;
}

static char *debug_prompt(struct agent_ctx *c, const struct agent_plan *plan,
			  const struct agent_artifact *cur, const json_t *install,
			  const json_t *run, const json_t *verdict, const char *signature)
{
	json_t *ctx = json_pack("{s:o, s:o, s:o, s:o, s:O?}", "plan", agent_plan_to_json(plan),
				"artifact", agent_artifact_to_json(cur), "install", brief(install),
				"run", brief(run), "verifier", verdict);
	char *known = NULL;
	int times = 0;
	char *text = json_dumps(ctx, JSON_INDENT(1));
	char *user;

	known = agent_history_known_fix(c->history, signature, &times);
	user = hutch_xasprintf(
		"Role: debugger. The attempt failed. Classify the failure, give its root cause "
		"and the fix, and return the corrected artifact, whose code must differ from the "
		"failed one.%s%s%s\nAttempt:\n%s\n",
		known ? " History: this error signature was fixed before by '" : "",
		known ? known : "", known ? "'." : "", text);
	free(known);
	free(text);
	json_decref(ctx);
	return user;
}

int agent_debug_llm(struct agent_ctx *c, const struct agent_plan *plan,
		    const struct agent_artifact *cur, const json_t *install, const json_t *run,
		    const json_t *verdict, struct agent_diagnosis *d, struct agent_artifact *out,
		    json_t *step)
{
	struct agent_diagnosis guess;
	struct hutch_err err;
	char *user;
	json_t *o;
	int rc;

	/* the signature (for the history) comes from the same classifier as
	 * in heuristic mode, so both modes share what they learn */
	agent_debug_classify(plan, install, run, verdict, &guess);
	user = debug_prompt(c, plan, cur, install, run, verdict, guess.signature);
	o = ask(c, "Debugger", user, "diagnosis", diagnosis_schema(), step, &err);
	free(user);
	memset(out, 0, sizeof(*out));
	if (!o || agent_diagnosis_from_json(d, o, &err) < 0) {
		*d = guess;
		memset(&guess, 0, sizeof(guess));
		free(d->fix);
		d->fix = hutch_xasprintf("none: the debugger model gave no usable answer (%s)",
					 err.msg);
		json_decref(o);
		return 0;
	}
	d->signature = guess.signature;
	guess.signature = NULL;
	agent_diagnosis_release(&guess);
	rc = agent_artifact_from_json(out, json_object_get(o, "artifact"), &err);
	json_decref(o);
	if (rc < 0) {
		free(d->fix);
		d->fix = hutch_xasprintf("none: the corrected artifact is unusable (%s)", err.msg);
		return 0;
	}
	return 1;
}

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "util/id.h"
#include "util/mem.h"
#include "util/time.h"

/*
 * The orchestrator: plan once, then code -> execute -> verify -> debug for
 * at most max_attempts attempts. It stops at the first verified success;
 * every retry runs code that differs from everything run before (a fix that
 * reproduces old code ends the pipeline), and a failure is reported with
 * the last diagnosis.
 */

struct loop {
	struct agent_ctx *c;
	struct agent_plan plan;
	struct agent_artifact art;
	json_t *seen; /* every (code, install command) run so far */
	json_t *output;
	json_t *last_diagnosis;
};

static uint64_t ms_since(uint64_t t0)
{
	return (hutch_now_us() - t0) / 1000;
}

static int make_plan(struct loop *l, struct hutch_err *err)
{
	struct agent_ctx *c = l->c;
	uint64_t t0 = hutch_now_us();
	json_t *step = json_object();
	int rc;

	if (c->llm)
		rc = agent_plan_llm(c, &l->plan, step, err);
	else
		rc = agent_plan_heuristic(c->opt, &l->plan, err);
	json_object_set_new(step, "elapsed_ms", json_integer((json_int_t)ms_since(t0)));
	if (l->plan.shape)
		json_object_set_new(c->trace, "plan", agent_plan_to_json(&l->plan));
	agent_trace_step(c, "Planner", step);
	if (rc < 0) {
		agent_log(c, "Planner", "no plan: %s", err->msg);
		return -1;
	}
	agent_log(c, "Planner", "%s, shape %s, %zu dependencies, %s", l->plan.language,
		  l->plan.shape, json_array_size(l->plan.dependencies),
		  l->plan.expected_output ? "expected output known" : "checks only");
	return 0;
}

static int make_code(struct loop *l, json_t *attempt, struct hutch_err *err)
{
	struct agent_ctx *c = l->c;
	uint64_t t0 = hutch_now_us();
	int rc;

	if (c->llm)
		rc = agent_code_llm(c, &l->plan, &l->art, attempt, err);
	else
		rc = agent_code_template(&l->plan, NULL, &l->art, err);
	json_object_set_new(attempt, "code_ms", json_integer((json_int_t)ms_since(t0)));
	if (rc == 0)
		agent_log(c, "Coder", "%s (%zu bytes)%s%s", l->art.filename, strlen(l->art.code),
			  l->art.install_command ? ", install: " : "",
			  l->art.install_command ? l->art.install_command : "");
	return rc;
}

static const char *exit_text(const json_t *run)
{
	static char buf[16];
	json_t *code = json_object_get(run, "exit_code");

	if (!json_is_integer(code))
		return "-";
	snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(code));
	return buf;
}

/* Execute and verify; true when the attempt passed. */
static bool execute(struct loop *l, json_t *attempt, json_t **install, json_t **run,
		    struct hutch_err *err, bool *broke)
{
	struct agent_ctx *c = l->c;
	uint64_t t0 = hutch_now_us();
	json_t *verdict;

	json_object_set_new(attempt, "artifact", agent_artifact_to_json(&l->art));
	json_array_append_new(l->seen, json_pack("[s, s?]", l->art.code, l->art.install_command));
	agent_progress(c, "Executor", "%s%s", l->art.install_command ? "installing, then " : "",
		       l->art.run_command);
	*broke = agent_exec_artifact(c->exec, c->opt, &l->plan, &l->art, install, run, err) < 0;
	json_object_set_new(attempt, "exec_ms", json_integer((json_int_t)ms_since(t0)));
	json_object_set_new(attempt, "network", agent_exec_policies(c->exec));
	json_object_set_new(attempt, "install", *install ? json_incref(*install) : json_null());
	json_object_set_new(attempt, "run", *run ? json_incref(*run) : json_null());
	if (*broke) {
		agent_log(c, "Executor", "sandbox failure: %s", err->msg);
		return false;
	}
	if (*install)
		agent_log(c, "Executor", "install step (%s): %s",
			  agent_jstr(json_object_get(attempt, "network"), "install") ?: "?",
			  agent_jstr(*install, "status") ?: "?");
	if (*run)
		agent_log(c, "Executor", "run step (network none): %s, exit %s, %lld ms",
			  agent_jstr(*run, "status") ?: "?", exit_text(*run),
			  (long long)json_integer_value(json_object_get(*run, "wall_ms")));
	verdict = agent_verify(&l->plan, *run);
	json_object_set_new(attempt, "verdict", verdict);
	bool passed = json_is_true(json_object_get(verdict, "passed"));
	agent_log(c, "Verifier", "%s",
		  passed ? "output meets the plan" : "output does not meet the plan");
	if (passed) {
		json_decref(l->output);
		l->output = json_string(agent_jstr(*run, "stdout") ?: "");
	}
	return passed;
}

/* A retry must change the code or what is installed for it. */
static bool seen_before(const struct loop *l, const struct agent_artifact *a)
{
	json_t *e;
	size_t i;

	json_array_foreach(l->seen, i, e)
	{
		const char *inst = json_string_value(json_array_get(e, 1));
		if (strcmp(json_string_value(json_array_get(e, 0)), a->code) == 0 &&
		    (inst ? a->install_command && strcmp(inst, a->install_command) == 0
			  : !a->install_command))
			return true;
	}
	return false;
}

/* Diagnose and fix; true when there is a new artifact to run. */
static bool debug(struct loop *l, json_t *attempt, const json_t *install, const json_t *run)
{
	struct agent_ctx *c = l->c;
	struct agent_diagnosis d;
	struct agent_artifact next;
	uint64_t t0 = hutch_now_us();
	char *known = NULL;
	int times = 0;
	int rc;

	if (c->llm) {
		rc = agent_debug_llm(c, &l->plan, &l->art, install, run,
				     json_object_get(attempt, "verdict"), &d, &next, attempt);
	} else {
		agent_debug_classify(&l->plan, install, run, json_object_get(attempt, "verdict"),
				     &d);
		known = agent_history_known_fix(c->history, d.signature, &times);
		agent_diagnosis_release(&d);
		if (known)
			agent_log(c, "Debugger",
				  "history: this error was fixed %d time(s) by rule %s", times,
				  known);
		rc = agent_debug_heuristic(&l->plan, &l->art, install, run, known, &d, &next);
		free(known);
	}
	if (rc == 1 && seen_before(l, &next)) {
		free(d.fix);
		d.fix = hutch_xstrdup("none: the only fix found reproduces code already run");
		agent_artifact_release(&next);
		rc = 0;
	}
	json_object_set_new(attempt, "debug_ms", json_integer((json_int_t)ms_since(t0)));
	json_decref(l->last_diagnosis);
	l->last_diagnosis = agent_diagnosis_to_json(&d);
	json_object_set_new(attempt, "diagnosis", json_incref(l->last_diagnosis));
	agent_log(c, "Debugger", "%s: %s; fix: %s", d.category, d.root_cause ? d.root_cause : "?",
		  d.fix ? d.fix : "none");
	agent_diagnosis_release(&d);
	if (rc != 1)
		return false;
	agent_artifact_release(&l->art);
	l->art = next;
	return true;
}

/* The attempts; returns the final status. */
static const char *attempts(struct loop *l, struct hutch_err *err)
{
	struct agent_ctx *c = l->c;

	for (c->attempt = 1; c->attempt <= c->opt->max_attempts; c->attempt++) {
		json_t *attempt = json_pack("{s:i}", "attempt", c->attempt);
		json_t *install = NULL;
		json_t *run = NULL;
		bool broke = false;
		bool go_on = false;

		if (c->attempt == 1 && make_code(l, attempt, err) < 0) {
			agent_log(c, "Coder", "no code: %s", err->msg);
			json_decref(l->last_diagnosis);
			l->last_diagnosis = json_pack("{s:s, s:s}", "category", "unknown",
						      "root_cause", err->msg);
			agent_trace_step(c, "Coder", attempt);
			return "failed";
		}
		bool passed = execute(l, attempt, &install, &run, err, &broke);
		if (!passed && !broke && c->attempt < c->opt->max_attempts)
			go_on = debug(l, attempt, install, run);
		else if (!passed && !broke)
			(void)debug(l, attempt, install, run); /* the last diagnosis, reported */
		json_decref(install);
		json_decref(run);
		agent_trace_step(c, "Attempt", attempt);
		if (passed)
			return "success";
		if (broke || !go_on)
			return broke ? "error" : "failed";
	}
	c->attempt = c->opt->max_attempts;
	return "failed";
}

static int open_ctx(struct agent_ctx *c, const struct agent_options *opt, struct hutch_err *err)
{
	struct hutch_err herr;

	memset(c, 0, sizeof(*c));
	c->opt = opt;
	hutch_id_new(c->id, sizeof(c->id), "pipe");
	c->trace = agent_trace_new(c->id, opt, opt->use_llm ? "llm" : "heuristic");
	c->history = agent_history_open(opt->state_dir, &herr);
	if (!c->history && !opt->quiet)
		fprintf(stderr, "hutch agent: no history: %s\n", herr.msg);
	if (opt->use_llm && !(c->llm = agent_llm_open(opt, err)))
		return -1;
	return 0;
}

static void close_ctx(struct agent_ctx *c)
{
	agent_exec_close(c->exec);
	agent_history_close(c->history);
	agent_llm_close(c->llm);
}

json_t *hutch_agent_run(const struct agent_options *opt, struct hutch_err *err)
{
	struct agent_ctx c;
	struct loop l = {&c, {0}, {0}, json_array(), NULL, NULL};
	uint64_t t0 = hutch_now_us();
	const char *status = "failed";

	if (open_ctx(&c, opt, err) < 0) {
		close_ctx(&c);
		json_decref(c.trace);
		json_decref(l.seen);
		return NULL;
	}
	if (make_plan(&l, err) < 0) {
		l.last_diagnosis = json_pack("{s:s, s:s, s:s}", "category", "unknown", "root_cause",
					     err->msg, "fix", "none: no plan, so no code was run");
	} else if (!(c.exec = agent_exec_open(opt, c.id, err))) {
		status = "error";
	} else {
		json_object_set_new(c.trace, "executor", json_string(agent_exec_mode(c.exec)));
		status = attempts(&l, err);
	}
	json_object_set_new(c.trace, "output", l.output ? l.output : json_null());
	json_object_set_new(c.trace, "last_diagnosis",
			    l.last_diagnosis ? l.last_diagnosis : json_null());
	if (strcmp(status, "error") == 0)
		json_object_set_new(c.trace, "error", json_string(err->msg));
	agent_trace_finish(&c, strcmp(status, "success") == 0 ? "success" : "failed", t0);
	agent_log(&c, "Orchestrator", "%s after %zu attempt(s)",
		  strcmp(status, "success") == 0 ? "success" : "failed",
		  json_array_size(json_object_get(c.trace, "attempts")));
	if (c.history)
		(void)agent_history_record(c.history, c.trace);
	close_ctx(&c);
	agent_plan_release(&l.plan);
	agent_artifact_release(&l.art);
	json_decref(l.seen);
	return c.trace;
}

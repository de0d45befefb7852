/*
 * The agent loop (docs/agent.md): planner -> coder -> executor -> verifier
 * -> debugger, bounded retries. Internal to libhutch; the CLI reaches it
 * through hutch_agent_run(). Messages are C structs with a JSON form
 * (messages.c); lists and free-form parameters stay jansson values.
 */
#ifndef HUTCH_AGENT_AGENT_H
#define HUTCH_AGENT_AGENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#define AGENT_LANG_MAX 16

/* Planner -> coder. Owns every pointer. */
struct agent_plan {
	char *task;
	char language[AGENT_LANG_MAX]; /* "python" or "javascript" */
	char *shape;		       /* template name, or "unknown" */
	json_t *params;		       /* object: numbers, text, n, file... */
	json_t *dependencies;	       /* array of third-party module names */
	json_t *steps;		       /* array of strings */
	char *expected_output;	       /* exact stdout (trimmed), or NULL */
	json_t *checks;		       /* array of {type, value} (verifier.c) */
	char *note;		       /* why this plan, what was preferred */
};

/* Coder/debugger -> executor. */
struct agent_artifact {
	char *filename;
	char *code;
	char *install_command; /* NULL: nothing to install */
	char *run_command;
	json_t *variant; /* object of template switches: use_dep, memo... */
};

/* Debugger's verdict on a failed attempt. */
struct agent_diagnosis {
	char category[24]; /* syntax, import, name, type, value, timeout, oom,
			      wrong_output, network, sandbox, unknown */
	char *signature;   /* stable key for the history, e.g. "import:tabulate" */
	char *root_cause;
	char *fix;  /* what the new artifact changes; NULL: no fix known */
	char *rule; /* which debugger rule produced the fix */
	bool from_history;
};

void agent_plan_release(struct agent_plan *p);
void agent_artifact_release(struct agent_artifact *a);
void agent_diagnosis_release(struct agent_diagnosis *d);
json_t *agent_plan_to_json(const struct agent_plan *p);
json_t *agent_artifact_to_json(const struct agent_artifact *a);
json_t *agent_diagnosis_to_json(const struct agent_diagnosis *d);
/* From JSON (the LLM's structured replies): -1 with err on a missing or
 * mistyped field; the struct is left released. */
int agent_plan_from_json(struct agent_plan *p, const json_t *o, struct hutch_err *err);
int agent_artifact_from_json(struct agent_artifact *a, const json_t *o, struct hutch_err *err);
int agent_diagnosis_from_json(struct agent_diagnosis *d, const json_t *o, struct hutch_err *err);
void agent_artifact_copy(struct agent_artifact *dst, const struct agent_artifact *src);

/* --- pipeline options and context --- */

struct agent_llm;
struct agent_history;
struct agent_exec;

struct agent_options {
	const char *task;
	const char *language; /* "python" (default) or "node"/"javascript" */
	int max_attempts;     /* default 3 */
	uint64_t run_timeout_ms;
	uint64_t install_timeout_ms;
	const char *const *files; /* local paths copied into the workspace */
	int nfiles;
	bool use_llm;
	const char *model;	 /* --model: every role */
	const char *coder_model; /* --coder-model */
	const char *state_dir;
	bool quiet; /* no progress lines */
	/* hutch serve: its own sessions manager (borrowed; else the daemon or
	 * a manager of the pipeline's own), and each step as a JSON object
	 * {"pipeline_id", "role", "attempt", "max_attempts", "message"} */
	struct hutch_sessions *sessions;
	void (*on_step)(void *ctx, const char *json, size_t len);
	void *step_ctx;
};

struct agent_ctx {
	char id[40];
	const struct agent_options *opt;
	json_t *trace; /* the pipeline's trace (trace.c) */
	struct agent_exec *exec;
	struct agent_history *history;
	struct agent_llm *llm; /* NULL in heuristic mode */
	int attempt;
};

/* Run one pipeline. Returns the trace (caller decrefs), whose "status" is
 * "success" or "failed"; NULL with err only when hutch itself failed. */
json_t *hutch_agent_run(const struct agent_options *opt, struct hutch_err *err);

/* hutch serve's POST /v1/agent (service.c): the entry the CLI hands the
 * daemon as hutch_daemon_opts.agent. */
struct hutch_service;
char *hutch_agent_serve(struct hutch_service *svc, const char *json,
			const struct hutch_run_hooks *hooks);

/* --- roles --- */

/* Heuristic planner: -1 with err (and a plan of shape "unknown") when no
 * template fits the task. */
int agent_plan_heuristic(const struct agent_options *opt, struct agent_plan *plan,
			 struct hutch_err *err);
/* The string-transform shapes of quoted text (planner_text.c). */
bool agent_plan_text(const char *lower, const char *text, struct agent_plan *p);
/* Heuristic coder: the plan's shape and the artifact's variant pick the code. */
int agent_code_template(const struct agent_plan *plan, const json_t *variant,
			struct agent_artifact *out, struct hutch_err *err);
/* Heuristic debugger: fills d; returns 1 with a changed artifact in out, 0
 * when no fix is known (d says why). known_rule: a rule the history says
 * fixed this signature before, tried first (may be NULL). */
int agent_debug_heuristic(const struct agent_plan *plan, const struct agent_artifact *cur,
			  const json_t *install, const json_t *run, const char *known_rule,
			  struct agent_diagnosis *d, struct agent_artifact *out);
/* Classify a failed result: category and signature only (d->signature set). */
void agent_debug_classify(const struct agent_plan *plan, const json_t *install, const json_t *run,
			  const json_t *verdict, struct agent_diagnosis *d);
/* Verifier: {"passed": bool, "failures": [...]} for a run result. */
json_t *agent_verify(const struct agent_plan *plan, const json_t *run);

/* Oracles: what the heuristic planner expects, computed here in C so the
 * verifier never trusts the generated code's own arithmetic. Caller frees. */
char *agent_oracle_fib(unsigned n);
char *agent_oracle_factorial(unsigned n);
char *agent_oracle_stats(const json_t *numbers, const json_t *which);

/* --- executor: a hutch session per pipeline --- */

/* The daemon when reachable (frames J), else sessions in this process under
 * state_dir. */
struct agent_exec *agent_exec_open(const struct agent_options *opt, const char *pipeline_id,
				   struct hutch_err *err);
void agent_exec_close(struct agent_exec *x);
const char *agent_exec_mode(const struct agent_exec *x);
/* Run an artifact: place files, install (network allow: the registry),
 * switch to network none, run. *install and *run receive the ExecResults
 * (or NULL when that step did not happen); *net receives the policies. */
int agent_exec_artifact(struct agent_exec *x, const struct agent_options *opt,
			const struct agent_plan *plan, const struct agent_artifact *a,
			json_t **install, json_t **run, struct hutch_err *err);
/* The policy each phase of the last artifact ran under, for the trace:
 * {"session", "install", "run"} (caller decrefs). */
json_t *agent_exec_policies(const struct agent_exec *x);

/* --- observability --- */

void agent_log(const struct agent_ctx *c, const char *role, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A step under way: on a terminal, a line the next log line replaces;
 * nothing otherwise. */
void agent_progress(const struct agent_ctx *c, const char *role, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
json_t *agent_trace_new(const char *id, const struct agent_options *opt, const char *mode);
void agent_trace_step(struct agent_ctx *c, const char *role, json_t *step);
void agent_trace_finish(struct agent_ctx *c, const char *status, uint64_t started_us);

/* History (SQLite under the state dir). */
struct agent_history *agent_history_open(const char *state_dir, struct hutch_err *err);
void agent_history_close(struct agent_history *h);
int agent_history_record(struct agent_history *h, const json_t *trace);
/* A rule that fixed this signature before (caller frees), or NULL. */
char *agent_history_known_fix(struct agent_history *h, const char *signature, int *times);
json_t *agent_history_list(struct agent_history *h, int limit);
json_t *agent_history_show(struct agent_history *h, const char *id);
json_t *agent_history_stats(struct agent_history *h);

/* --- LLM mode (llm.c, llm_roles.c) --- */

struct agent_llm *agent_llm_open(const struct agent_options *opt, struct hutch_err *err);
void agent_llm_close(struct agent_llm *l);
/* The model a role uses. */
const char *agent_llm_model(const struct agent_llm *l, const char *role);
/* One structured chat completion for role: the parsed JSON object the
 * model returned (caller decrefs); usage (tokens, cost, retries) lands in
 * *usage (caller decrefs). NULL with err. */
json_t *agent_llm_chat(struct agent_llm *l, const char *role, const char *system, const char *user,
		       const char *schema_name, const json_t *schema, json_t **usage,
		       struct hutch_err *err);
/* The LLM roles (llm_roles.c): as their heuristic peers; each records its
 * usage (model, tokens, cost, retries) into step, the trace's entry. */
int agent_plan_llm(struct agent_ctx *c, struct agent_plan *plan, json_t *step,
		   struct hutch_err *err);
int agent_code_llm(struct agent_ctx *c, const struct agent_plan *plan, struct agent_artifact *out,
		   json_t *step, struct hutch_err *err);
int agent_debug_llm(struct agent_ctx *c, const struct agent_plan *plan,
		    const struct agent_artifact *cur, const json_t *install, const json_t *run,
		    const json_t *verdict, struct agent_diagnosis *d, struct agent_artifact *out,
		    json_t *step);

/* Small helpers shared by the roles (messages.c). */
char *agent_strdup_or_null(const char *s);
const char *agent_jstr(const json_t *o, const char *key);
/* The trimmed stdout of a result ("" when absent). Caller frees. */
char *agent_result_stdout(const json_t *run);

#endif

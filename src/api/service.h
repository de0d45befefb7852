/* What the daemon serves, shared by its unix socket and its HTTP listener:
 * one pool, one sessions manager, one code path (docs/daemon.md). */
#ifndef HUTCH_API_SERVICE_H
#define HUTCH_API_SERVICE_H

#include <stddef.h>

#include "hutch.h"

struct hutch_service {
	struct hutch_pool *pool;	 /* NULL: the cold path only */
	struct hutch_sessions *sessions; /* NULL: no state directory */
	const char *state_dir;
	/* POST /v1/agent: a task -> the pipeline's trace JSON (or {"error"}),
	 * each step through hooks' on_output as stream 3 (an SSE "step").
	 * Set by the CLI to the agent layer's entry (NULL: not offered). */
	char *(*agent)(struct hutch_service *svc, const char *json,
		       const struct hutch_run_hooks *hooks);
};

/* An ExecRequest (JSON) run on the fast path when the pool can serve it,
 * else the cold path. Returns the ExecResult JSON or {"error": ...}; never
 * NULL except on OOM. Caller frees. Thread-safe. */
char *hutch_service_run(struct hutch_service *svc, const char *json, size_t len,
			const struct hutch_run_hooks *hooks);

/* A session operation (docs/sessions.md, "JSON operations"). As above. */
char *hutch_service_session(struct hutch_service *svc, const char *json, size_t len,
			    const struct hutch_run_hooks *hooks);

/* {"error": {"code": "EINVAL", "message": ...}} for err (caller frees). */
char *hutch_service_error_json(const struct hutch_err *err);

#endif

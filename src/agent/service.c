#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "api/service.h"
#include "util/err.h"

/*
 * POST /v1/agent (docs/agent.md, docs/http.md): one pipeline inside hutch
 * serve, on the server's own sessions manager, each step streamed to the
 * client as an SSE "step" event when it asked for a stream. The request was
 * checked by the route decoder (api/http_routes.c). The LLM key comes from
 * the server's environment, never from the request.
 */

static void step_out(void *ctx, const char *json, size_t len)
{
	const struct hutch_run_hooks *hooks = ctx;

	if (hooks && hooks->on_output)
		hooks->on_output(hooks->ctx, 3, json, len);
}

static const char *str(json_t *o, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : dflt;
}

char *hutch_agent_serve(struct hutch_service *svc, const char *json,
			const struct hutch_run_hooks *hooks)
{
	json_t *req = json_loads(json, 0, NULL);
	struct hutch_err err = {0, ""};
	json_t *v;

	if (!req) {
		hutch_err_setx(&err, EINVAL, "the agent request is not JSON");
		return hutch_service_error_json(&err);
	}
	struct agent_options opt = {
		.task = str(req, "task", ""),
		.language = str(req, "language", "python"),
		.max_attempts = 3,
		.run_timeout_ms = 10000,
		.install_timeout_ms = 60000,
		.use_llm = json_is_true(json_object_get(req, "llm")),
		.model = str(req, "model", NULL),
		.coder_model = str(req, "coder_model", NULL),
		.state_dir = svc->state_dir,
		.quiet = true,
		.sessions = svc->sessions,
		.on_step = step_out,
		.step_ctx = (void *)hooks,
	};
	if ((v = json_object_get(req, "max_attempts")))
		opt.max_attempts = (int)json_integer_value(v);
	if ((v = json_object_get(req, "timeout_ms")))
		opt.run_timeout_ms = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(req, "install_timeout_ms")))
		opt.install_timeout_ms = (uint64_t)json_integer_value(v);
	json_t *trace = svc->sessions ? hutch_agent_run(&opt, &err) : NULL;
	if (!svc->sessions)
		hutch_err_setx(&err, ENOTSUP,
			       "the agent needs sessions: start serve with a state "
			       "directory");
	json_decref(req);
	if (!trace)
		return hutch_service_error_json(&err);
	char *text = json_dumps(trace, JSON_COMPACT);
	json_decref(trace);
	return text;
}

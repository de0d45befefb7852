#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/service.h"
#include "run/fast.h"
#include "util/err.h"
#include "util/log.h"

/*
 * The daemon's two operations, independent of the transport: the unix
 * socket's frames (daemon.c) and HTTP (http.c) both end here.
 */

char *hutch_service_error_json(const struct hutch_err *err)
{
	json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", hutch_errno_name(err->code),
			      "message", err->msg);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

char *hutch_service_run(struct hutch_service *svc, const char *json, size_t len,
			const struct hutch_run_hooks *hooks)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err = {0, ""};
	char *out;
	int rc;

	hutch_request_init(&req);
	if (hutch_request_from_json(&req, json, len, &err) < 0) {
		hutch_request_release(&req);
		return hutch_service_error_json(&err);
	}
	if (!req.want_cold && svc->pool && hutch_pool_can_serve(svc->pool, &req))
		rc = hutch_run_fast(svc->pool, &req, hooks, &res, &err);
	else
		rc = hutch_run(&req, hooks, &res, &err);
	hutch_request_release(&req);
	if (rc < 0)
		return hutch_service_error_json(&err);
	hutch_log(HUTCH_LOG_INFO, "run %s path=%s status=%s setup_us=%llu run_us=%llu", res.id,
		  res.path, hutch_status_name(res.status), (unsigned long long)res.timings.setup_us,
		  (unsigned long long)res.timings.run_us);
	out = hutch_result_to_json(&res);
	hutch_result_release(&res);
	return out;
}

char *hutch_service_session(struct hutch_service *svc, const char *json, size_t len,
			    const struct hutch_run_hooks *hooks)
{
	struct hutch_err err = {0, ""};

	if (!svc->sessions) {
		hutch_err_setx(&err, ENOTSUP, "this daemon has no state directory for sessions");
		return hutch_service_error_json(&err);
	}
	return hutch_session_call(svc->sessions, json, len, hooks);
}

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http_internal.h"
#include "api/metrics.h"
#include "api/reqlog.h"
#include "api/sse.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/text.h"

/*
 * A decoded, authenticated request: ownership and quotas, then the op
 * through the daemon's service (the same call the unix socket makes), then
 * the reply shaped for HTTP (status from the error code, raw bytes for
 * files, SSE for streams) and one log line.
 */

static const char fork_why[] =
	"fork of a live session is not supported: the forked kernel would have to enter new "
	"mount, pid and network namespaces, which needs CAP_SYS_ADMIN the unprivileged kernel "
	"does not have, and a checkpoint/restore (CRIU) from outside costs far more than a "
	"fork should; snapshot the session and restore the snapshot instead (files, not "
	"process memory)";

/* Metrics of a reply: an agent's trace, or an ExecResult (or op reply). */
static void count(const struct hutch_route *route, json_t *reply)
{
	if (route->kind == HUTCH_ROUTE_AGENT)
		hutch_metrics_agent(reply);
	else
		hutch_metrics_result(reply);
}

static char *call_service(struct hutch_http_req *r, const struct hutch_run_hooks *hooks)
{
	const char *op = r->call.op_json;

	if (r->call.route->kind == HUTCH_ROUTE_RUN)
		return hutch_service_run(r->h->svc, op, strlen(op), hooks);
	if (r->call.route->kind == HUTCH_ROUTE_AGENT) {
		struct hutch_err err = {ENOTSUP, "this server offers no agent"};
		return r->h->svc->agent ? r->h->svc->agent(r->h->svc, op, hooks)
					: hutch_service_error_json(&err);
	}
	return hutch_service_session(r->h->svc, op, strlen(op), hooks);
}

static void log_reply(struct hutch_http_req *r, int status, json_t *reply)
{
	json_t *e = json_object_get(json_object_get(reply, "error"), "code");
	struct hutch_reqlog log = {r->id,  r->method,	  r->call.route->pattern,
				   status, r->caller.key, r->call.id,
				   reply,  r->started_us, json_string_value(e)};

	hutch_reqlog_write(&log);
}

/* Only the caller's own sessions and snapshots in a list reply. */
static void filter_list(struct hutch_http_req *r, json_t *reply, const char *member, char kind)
{
	json_t *arr = json_object_get(reply, member);

	if (kind == 's')
		hutch_quota_prune(r->h->quota, arr);
	for (size_t i = json_array_size(arr); i-- > 0;) {
		json_t *item = json_array_get(arr, i);
		const char *id =
			json_string_value(json_object_get(item, kind == 's' ? "id" : "name"));
		if (!id || !hutch_quota_owns(r->h->quota, kind, r->caller.key, id))
			json_array_remove(arr, i);
	}
}

/* Ownership bookkeeping after a successful op. */
static void after_ok(struct hutch_http_req *r, json_t *reply, struct hutch_quota_slot **slot)
{
	const char *op = r->call.route->op ? r->call.route->op : "";
	json_t *op_json = json_loads(r->call.op_json ? r->call.op_json : "{}", 0, NULL);
	const char *name = json_string_value(json_object_get(op_json, "name"));
	const char *sid =
		json_string_value(json_object_get(json_object_get(reply, "session"), "id"));

	if (*slot && sid) {
		hutch_quota_claim(r->h->quota, *slot, sid);
		*slot = NULL;
	}
	if (strcmp(op, "session.kill") == 0)
		hutch_quota_forget(r->h->quota, 's', r->call.id);
	else if (strcmp(op, "snapshot.delete") == 0)
		hutch_quota_forget(r->h->quota, 'n', r->call.name);
	else if (strcmp(op, "session.snapshot") == 0 && name)
		hutch_quota_add(r->h->quota, 'n', r->caller.key, name);
	else if (strcmp(op, "session.list") == 0)
		filter_list(r, reply, "sessions", 's');
	else if (strcmp(op, "snapshot.list") == 0)
		filter_list(r, reply, "snapshots", 'n');
	json_decref(op_json);
}

static struct MHD_Response *json_response(json_t *reply)
{
	char *text = json_dumps(reply, JSON_COMPACT);
	struct MHD_Response *resp;

	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	return resp;
}

/* Files and archives: the reply's base64 member as the body. */
static struct MHD_Response *raw_response(json_t *reply)
{
	const char *b64 = json_string_value(json_object_get(reply, "data_base64"));
	size_t len = 0;
	unsigned char *data;
	struct MHD_Response *resp;

	if (!b64)
		b64 = json_string_value(json_object_get(reply, "tar_base64"));
	data = hutch_base64_decode(b64 ? b64 : "", b64 ? strlen(b64) : 0, &len);
	if (!data)
		return NULL;
	resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type",
				json_object_get(reply, "tar_base64") ? "application/x-tar"
								     : "application/octet-stream");
	return resp;
}

static enum MHD_Result reply_with(struct hutch_http_req *r, char *text,
				  struct hutch_quota_slot **slot)
{
	json_t *reply = text ? json_loads(text, 0, NULL) : NULL;
	const char *code =
		json_string_value(json_object_get(json_object_get(reply, "error"), "code"));
	int status = code ? hutch_http_status_of(code) : 200;
	struct MHD_Response *resp = NULL;
	enum MHD_Result rc;

	free(text);
	if (!reply)
		return hutch_http_error(r, 500, "EIO", "the daemon gave no reply");
	if (!code) {
		after_ok(r, reply, slot);
		count(r->call.route, reply);
		if (r->call.route->flags & HUTCH_ROUTE_RAW_OUT)
			resp = raw_response(reply);
	}
	if (!resp)
		resp = json_response(reply);
	log_reply(r, status, reply);
	rc = MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	json_decref(reply);
	return rc;
}

/* --- streaming --- */

struct stream_ctx {
	struct hutch_http_req r; /* a copy: the request outlives the handler */
	char *op_json;
};

static char *stream_work(void *ctx, const struct hutch_run_hooks *hooks)
{
	struct stream_ctx *s = ctx;

	return call_service(&s->r, hooks);
}

static void stream_done(void *ctx, const char *json)
{
	struct stream_ctx *s = ctx;
	json_t *reply = json ? json_loads(json, 0, NULL) : NULL;

	/* a refusal is {"error": {"code"...}}; an ExecResult's "error" is the program's */
	if (reply && !json_object_get(json_object_get(reply, "error"), "code"))
		count(s->r.call.route, reply);
	log_reply(&s->r, 200, reply);
	json_decref(reply);
}

static void stream_free(void *ctx)
{
	struct stream_ctx *s = ctx;

	free(s->op_json);
	free(s);
}

static enum MHD_Result start_stream(struct hutch_http_req *r)
{
	struct stream_ctx *s = hutch_xcalloc(1, sizeof(*s));
	struct hutch_err err = {0, ""};
	struct MHD_Response *resp;
	enum MHD_Result rc;

	s->r = *r;
	s->op_json = r->call.op_json; /* the stream owns it now */
	r->call.op_json = NULL;
	s->r.call.op_json = s->op_json;
	s->r.conn = NULL;
	s->r.method = r->call.route->method; /* static: outlives the request */
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	resp = hutch_sse_start(stream_work, stream_done, s, stream_free, ci ? ci->connect_fd : -1,
			       &err);
	if (!resp)
		return hutch_http_error(r, 500, hutch_errno_name(err.code), err.msg);
	rc = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	return rc;
}

static bool wants_stream(struct hutch_http_req *r)
{
	const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
	const char *action;
	json_t *op;
	bool bg;

	if (!(r->call.route->flags & HUTCH_ROUTE_STREAM) || !accept ||
	    !strstr(accept, "text/event-stream"))
		return false;
	op = json_loads(r->call.op_json, 0, NULL);
	/* a background command answers with its handle at once; of the actions
	 * on a command, only attach has output to stream */
	action = json_string_value(json_object_get(op, "action"));
	bg = json_is_true(json_object_get(op, "background")) ||
	     (r->call.route->op && strcmp(r->call.route->op, "session.command") == 0 &&
	      (!action || strcmp(action, "attach") != 0));
	json_decref(op);
	return !bg;
}

/* --- checks before the op --- */

static enum MHD_Result not_found(struct hutch_http_req *r, const char *what, const char *id)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "no %s '%s'", what, id);
	return hutch_http_error(r, 404, "ENOENT", msg);
}

/* Whether the snapshot named in a session.snapshot body belongs to another key. */
static bool snapshot_name_taken(struct hutch_http_req *r)
{
	json_t *op = json_loads(r->call.op_json, 0, NULL);
	const char *name = json_string_value(json_object_get(op, "name"));
	bool taken = false;

	if (name && strcmp(r->call.route->op, "session.snapshot") == 0)
		taken = hutch_quota_taken(r->h->quota, 'n', r->caller.key, name);
	json_decref(op);
	return taken;
}

/* 0 to go on, or -1 with a response queued in *rc. */
static int admit(struct hutch_http_req *r, struct hutch_quota_slot **slot, enum MHD_Result *rc)
{
	const struct hutch_route *rt = r->call.route;
	struct hutch_err err = {0, ""};
	unsigned retry = 0;

	if (r->call.id[0] && !hutch_quota_owns(r->h->quota, 's', r->caller.key, r->call.id))
		return *rc = not_found(r, "session", r->call.id), -1;
	if ((rt->flags & HUTCH_ROUTE_SNAP) &&
	    !hutch_quota_owns(r->h->quota, 'n', r->caller.key, r->call.name))
		return *rc = not_found(r, "snapshot", r->call.name), -1;
	if (rt->op && snapshot_name_taken(r))
		return *rc = hutch_http_error(r, 409, "EEXIST", "that snapshot name is taken"), -1;
	if ((rt->flags & HUTCH_ROUTE_EXEC) &&
	    hutch_quota_take_exec(r->h->quota, r->caller.key, &r->caller.limits, &retry) < 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "key '%s' is over its %llu executions per minute",
			 r->caller.key, (unsigned long long)r->caller.limits.rate_per_min);
		r->retry_after = retry;
		return *rc = hutch_http_error(r, 429, "EAGAIN", msg), -1;
	}
	if (rt->flags & HUTCH_ROUTE_NEW) {
		*slot = hutch_quota_reserve(r->h->quota, r->caller.key, &r->caller.limits,
					    r->call.memory_bytes, &err);
		if (!*slot)
			return *rc = hutch_http_error(r, 429, "EDQUOT", err.msg), -1;
	}
	return 0;
}

static enum MHD_Result simple(struct hutch_http_req *r)
{
	static const char health[] = "{\"ok\":true}";
	struct MHD_Response *resp;
	enum MHD_Result rc;
	char *text;

	if (r->call.route->kind == HUTCH_ROUTE_HEALTH) {
		resp = MHD_create_response_from_buffer(sizeof(health) - 1, (void *)health,
						       MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(resp, "Content-Type", "application/json");
	} else {
		text = hutch_metrics_text(r->h->svc);
		resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
	}
	rc = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	struct hutch_reqlog log = {r->id, r->method, r->call.route->pattern, 200, r->caller.key,
				   "",	  NULL,	     r->started_us,	     NULL};
	hutch_reqlog_write(&log);
	return rc;
}

enum MHD_Result hutch_http_dispatch(struct hutch_http_req *r)
{
	struct hutch_quota_slot *slot = NULL;
	enum MHD_Result rc;

	if (r->call.route->kind == HUTCH_ROUTE_HEALTH || r->call.route->kind == HUTCH_ROUTE_METRICS)
		return simple(r);
	if (admit(r, &slot, &rc) < 0)
		return rc;
	if (r->call.route->kind == HUTCH_ROUTE_FORK)
		return hutch_http_error(r, 501, "ENOTSUP", fork_why);
	if (wants_stream(r))
		return start_stream(r);
	/* a client whose connection is gone entirely (POLLHUP) ends its run */
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct hutch_run_hooks hooks = {NULL, NULL, ci ? ci->connect_fd : -1};
	rc = reply_with(r, call_service(r, &hooks), &slot);
	if (slot)
		hutch_quota_cancel(r->h->quota, slot); /* the session was not made */
	return rc;
}

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http_internal.h"
#include "api/mcp.h"
#include "api/reqlog.h"
#include "util/err.h"

/*
 * MCP over streamable HTTP at /mcp (docs/mcp.md): one JSON-RPC message or
 * batch per POST, answered with application/json (a notification or a
 * response gets 202 and no body). No stream is offered on GET (405 from the
 * route table), and no Mcp-Session-Id: the handler keeps no state.
 *
 * Two checks come first, against DNS rebinding (a web page that makes the
 * browser talk to 127.0.0.1 under a name the attacker controls): the Host
 * header must name this server (a loopback name or the address we listen
 * on, with our port), and an Origin, when a browser sends one, must be
 * http:// of such a host. The key is checked before, as for every route.
 *
 * Tool calls keep the rules of the REST routes: a key sees and touches only
 * its own sessions, runs count against its executions per minute, and a new
 * session is reserved against its quotas.
 */

struct caller_ctx {
	struct hutch_http_req *r;
};

static unsigned our_port(struct hutch_http *h)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);

	return di ? di->port : 0;
}

/* "HOST:PORT" (HOST may be [v6]) names this server. */
static bool is_our_host(struct hutch_http *h, const char *hostport)
{
	char want[300];
	char listen_host[256];
	const char *colon = strrchr(h->opts.listen, ':');
	unsigned port = our_port(h);
	static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};

	if (!hostport || !colon || (size_t)(colon - h->opts.listen) >= sizeof(listen_host))
		return false;
	snprintf(listen_host, sizeof(listen_host), "%.*s", (int)(colon - h->opts.listen),
		 h->opts.listen);
	snprintf(want, sizeof(want), "%s:%u", listen_host, port);
	if (strcasecmp(hostport, want) == 0)
		return true;
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		snprintf(want, sizeof(want), "%s:%u", loopback[i], port);
		if (strcasecmp(hostport, want) == 0)
			return true;
	}
	return false;
}

/* NULL when Host and Origin are ours, else why not. */
static const char *rebinding_check(struct hutch_http_req *r)
{
	const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
	const char *origin = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");

	if (!is_our_host(r->h, host))
		return "the Host header does not name this server (DNS rebinding?)";
	if (origin && (strncmp(origin, "http://", 7) != 0 || !is_our_host(r->h, origin + 7)))
		return "the Origin is not this server's";
	return NULL;
}

static char *error_text(const char *code, const char *message)
{
	json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return text;
}

static int take_exec(struct hutch_http_req *r, struct hutch_err *err)
{
	unsigned retry = 0;

	if (hutch_quota_take_exec(r->h->quota, r->caller.key, &r->caller.limits, &retry) < 0)
		return hutch_err_setx(
			err, EAGAIN,
			"key '%s' is over its %llu executions per minute (retry in %u s)",
			r->caller.key, (unsigned long long)r->caller.limits.rate_per_min, retry);
	return 0;
}

static char *mcp_run(void *ctx, const char *json, struct hutch_err *err)
{
	struct hutch_http_req *r = ((struct caller_ctx *)ctx)->r;

	if (take_exec(r, err) < 0)
		return NULL;
	return hutch_service_run(r->h->svc, json, strlen(json), NULL);
}

/* session.new under the key's quotas; the new session becomes the key's */
static char *new_session(struct hutch_http_req *r, json_t *op, const char *json,
			 struct hutch_err *err)
{
	json_t *mem = json_object_get(json_object_get(op, "limits"), "memory_bytes");
	uint64_t memory = json_is_integer(mem) && json_integer_value(mem) > 0
				  ? (uint64_t)json_integer_value(mem)
				  : 512ull << 20;
	struct hutch_quota_slot *slot =
		hutch_quota_reserve(r->h->quota, r->caller.key, &r->caller.limits, memory, err);

	if (!slot)
		return NULL;
	char *reply = hutch_service_session(r->h->svc, json, strlen(json), NULL);
	json_t *o = reply ? json_loads(reply, 0, NULL) : NULL;
	const char *id = json_string_value(json_object_get(json_object_get(o, "session"), "id"));
	if (id)
		hutch_quota_claim(r->h->quota, slot, id);
	else
		hutch_quota_cancel(r->h->quota, slot);
	json_decref(o);
	return reply;
}

/* session.list, with only the key's own sessions */
static char *own_list(struct hutch_http_req *r, const char *json)
{
	char *reply = hutch_service_session(r->h->svc, json, strlen(json), NULL);
	json_t *o = reply ? json_loads(reply, 0, NULL) : NULL;
	json_t *arr = json_object_get(o, "sessions");

	if (!json_is_array(arr)) {
		json_decref(o);
		return reply;
	}
	hutch_quota_prune(r->h->quota, arr);
	for (size_t i = json_array_size(arr); i-- > 0;) {
		const char *id = json_string_value(json_object_get(json_array_get(arr, i), "id"));
		if (!id || !hutch_quota_owns(r->h->quota, 's', r->caller.key, id))
			json_array_remove(arr, i);
	}
	free(reply);
	reply = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return reply;
}

static char *mcp_session_call(void *ctx, const char *json, struct hutch_err *err)
{
	struct hutch_http_req *r = ((struct caller_ctx *)ctx)->r;
	json_t *op = json_loads(json, 0, NULL);
	const char *name = json_string_value(json_object_get(op, "op"));
	const char *id = json_string_value(json_object_get(op, "id"));
	char *reply = NULL;
	char msg[160];

	if (!name) {
		hutch_err_setx(err, EINVAL, "a session operation without an op");
	} else if (strcmp(name, "session.new") == 0) {
		reply = new_session(r, op, json, err);
	} else if (strcmp(name, "session.list") == 0) {
		reply = own_list(r, json);
	} else if (id && !hutch_quota_owns(r->h->quota, 's', r->caller.key, id)) {
		snprintf(msg, sizeof(msg), "no session '%.64s'", id); /* as for a missing one */
		reply = error_text("ENOENT", msg);
	} else if ((strcmp(name, "session.exec") == 0 || strcmp(name, "session.sh") == 0) &&
		   take_exec(r, err) < 0) {
		reply = NULL;
	} else {
		reply = hutch_service_session(r->h->svc, json, strlen(json), NULL);
		if (reply && strcmp(name, "session.kill") == 0 && id && !strstr(reply, "\"error\""))
			hutch_quota_forget(r->h->quota, 's', id);
	}
	json_decref(op);
	return reply;
}

/* A response that is a JSON-RPC error with no id: the input was refused. */
static bool refused_input(const char *text)
{
	json_t *o = json_loads(text, 0, NULL);
	bool refused = json_is_object(o) && json_object_get(o, "error") &&
		       json_is_null(json_object_get(o, "id"));

	json_decref(o);
	return refused;
}

enum MHD_Result hutch_http_mcp(struct hutch_http_req *r, const char *body, size_t len)
{
	const char *why = rebinding_check(r);
	struct caller_ctx ctx = {r};
	struct hutch_mcp_backend backend = {mcp_run, mcp_session_call, &ctx, "http"};
	struct MHD_Response *resp;
	enum MHD_Result rc;
	int status = 200;

	if (why)
		return hutch_http_error(r, 403, "EACCES", why);
	struct hutch_mcp *m = hutch_mcp_new(&backend);
	char *text = hutch_mcp_handle(m, body ? body : "", len);
	hutch_mcp_free(m);
	if (!text) {
		status = 202; /* notifications and responses: accepted, no body */
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		if (refused_input(text))
			status = 400;
		resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(resp, "Content-Type", "application/json");
	}
	rc = MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	struct hutch_reqlog log = {r->id, r->method, "/mcp",	    status, r->caller.key,
				   "",	  NULL,	     r->started_us, NULL};
	hutch_reqlog_write(&log);
	return rc;
}

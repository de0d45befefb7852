#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http_routes.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/text.h"

/*
 * Route + query + body -> the daemon's JSON op. The HTTP layer adds nothing
 * of its own to the data model: a route names the op, path parameters and
 * query parameters become its fields, and the JSON body supplies the rest
 * (the op itself rejects unknown fields, naming them).
 */

#define MAX_TIMEOUT_MS (24ull * 3600 * 1000) /* the server's cap on any timeout_ms */
#define DEFAULT_MEMORY (512ull << 20)	     /* an ExecRequest's default memory_bytes */

#define S "/v1/sessions/{id}"
const struct hutch_route hutch_routes[] = {
	{"GET", "/v1/health", HUTCH_ROUTE_HEALTH, NULL, NULL, "",
	 HUTCH_ROUTE_NOAUTH | HUTCH_ROUTE_NOBODY, "liveness"},
	{"GET", "/metrics", HUTCH_ROUTE_METRICS, NULL, NULL, "", HUTCH_ROUTE_NOBODY,
	 "Prometheus metrics"},
	{"POST", "/v1/agent", HUTCH_ROUTE_AGENT, NULL, NULL, "",
	 HUTCH_ROUTE_STREAM | HUTCH_ROUTE_EXEC,
	 "a task in English for the agent: planned, coded, run, verified (docs/agent.md)"},
	{"POST", "/mcp", HUTCH_ROUTE_MCP, NULL, NULL, "", HUTCH_ROUTE_RAW_IN,
	 "MCP over streamable HTTP: one JSON-RPC message or batch (docs/mcp.md)"},
	{"POST", "/v1/run", HUTCH_ROUTE_RUN, NULL, NULL, "", HUTCH_ROUTE_STREAM | HUTCH_ROUTE_EXEC,
	 "run an ExecRequest in a fresh sandbox"},
	{"POST", "/v1/sessions", HUTCH_ROUTE_OP, "session.new", NULL, "", HUTCH_ROUTE_NEW,
	 "create a session"},
	{"GET", "/v1/sessions", HUTCH_ROUTE_OP, "session.list", NULL, "", HUTCH_ROUTE_NOBODY,
	 "list your sessions"},
	{"GET", S, HUTCH_ROUTE_OP, "session.info", NULL, "", HUTCH_ROUTE_NOBODY, "session info"},
	{"DELETE", S, HUTCH_ROUTE_OP, "session.kill", NULL, "", HUTCH_ROUTE_NOBODY,
	 "kill a session"},
	{"POST", S "/exec", HUTCH_ROUTE_OP, "session.exec", NULL, "",
	 HUTCH_ROUTE_STREAM | HUTCH_ROUTE_EXEC, "run code in the session's kernel"},
	{"POST", S "/commands", HUTCH_ROUTE_OP, "session.sh", NULL, "",
	 HUTCH_ROUTE_STREAM | HUTCH_ROUTE_EXEC, "run a shell command"},
	{"GET", S "/commands", HUTCH_ROUTE_OP, "session.commands", NULL, "", HUTCH_ROUTE_NOBODY,
	 "list background commands"},
	{"POST", S "/commands/{cid}", HUTCH_ROUTE_OP, "session.command", NULL, "",
	 HUTCH_ROUTE_STREAM, "act on a background command (attach streams)"},
	{"POST", S "/pause", HUTCH_ROUTE_OP, "session.pause", NULL, "", 0, "pause (freeze)"},
	{"POST", S "/resume", HUTCH_ROUTE_OP, "session.resume", NULL, "", 0, "resume"},
	{"POST", S "/reset", HUTCH_ROUTE_OP, "session.reset", NULL, "", 0, "restart the kernel"},
	{"POST", S "/snapshot", HUTCH_ROUTE_OP, "session.snapshot", NULL, "", 0,
	 "snapshot the workspace"},
	{"POST", S "/fork", HUTCH_ROUTE_FORK, NULL, NULL, "", 0, "fork (not supported: 501)"},
	{"PUT", S "/network", HUTCH_ROUTE_OP, "session.net", NULL, "", 0,
	 "change the network policy"},
	{"GET", S "/files", HUTCH_ROUTE_OP, "session.files", "read", "path,offset,length",
	 HUTCH_ROUTE_NOBODY | HUTCH_ROUTE_RAW_OUT, "read a file (raw bytes)"},
	{"PUT", S "/files", HUTCH_ROUTE_OP, "session.files", "write", "path", HUTCH_ROUTE_RAW_IN,
	 "write a file (raw bytes)"},
	{"DELETE", S "/files", HUTCH_ROUTE_OP, "session.files", "remove", "path,recursive",
	 HUTCH_ROUTE_NOBODY, "remove a file or directory"},
	{"GET", S "/files/list", HUTCH_ROUTE_OP, "session.files", "list", "path",
	 HUTCH_ROUTE_NOBODY, "list a directory"},
	{"GET", S "/files/stat", HUTCH_ROUTE_OP, "session.files", "stat", "path",
	 HUTCH_ROUTE_NOBODY, "stat a path"},
	{"POST", S "/files/mkdir", HUTCH_ROUTE_OP, "session.files", "mkdir", "path",
	 HUTCH_ROUTE_NOBODY, "make a directory (and its parents)"},
	{"PUT", S "/archive", HUTCH_ROUTE_OP, "session.files", "upload", "path", HUTCH_ROUTE_RAW_IN,
	 "extract a tar under a directory"},
	{"GET", S "/archive", HUTCH_ROUTE_OP, "session.files", "download", "path",
	 HUTCH_ROUTE_NOBODY | HUTCH_ROUTE_RAW_OUT, "a tar of a directory"},
	{"POST", "/v1/snapshots/{name}/restore", HUTCH_ROUTE_OP, "snapshot.restore", NULL, "",
	 HUTCH_ROUTE_NEW | HUTCH_ROUTE_SNAP, "a new session from a snapshot"},
	{"GET", "/v1/snapshots", HUTCH_ROUTE_OP, "snapshot.list", NULL, "", HUTCH_ROUTE_NOBODY,
	 "list your snapshots"},
	{"DELETE", "/v1/snapshots/{name}", HUTCH_ROUTE_OP, "snapshot.delete", NULL, "",
	 HUTCH_ROUTE_NOBODY | HUTCH_ROUTE_SNAP, "delete a snapshot"},
	{NULL, NULL, HUTCH_ROUTE_HEALTH, NULL, NULL, NULL, 0, NULL},
};
#undef S

static int fail(struct hutch_http_call *call, int status, struct hutch_err *err, int code,
		const char *msg)
{
	call->status = status;
	return hutch_err_setx(err, code, "%s", msg);
}

/* A path parameter: an id or a name, never a path of its own. */
static bool param_ok(const char *s, size_t n)
{
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
			    s[i]) ||
		    !s[i])
			return false;
	return !(n <= 2 && s[0] == '.' && (n == 1 || s[1] == '.'));
}

/* Whether path matches pattern; path parameters are copied into call. */
static bool match(const char *pattern, const char *path, struct hutch_http_call *call, bool *bad)
{
	const char *p = pattern;
	const char *q = path;

	while (*p && *q) {
		if (*p != '{') {
			if (*p++ != *q++)
				return false;
			continue;
		}
		const char *pe = strchr(p, '}');
		size_t n = strcspn(q, "/");
		char *dst = strncmp(p, "{name}", 6) == 0 ? call->name : call->id;
		if (strncmp(p, "{cid}", 5) == 0)
			dst = NULL; /* the command id rides in the body */
		if (!param_ok(q, n))
			*bad = true;
		else if (dst)
			snprintf(dst, 65, "%.*s", (int)n, q);
		p = pe + 1;
		q += n;
	}
	return *p == '\0' && *q == '\0';
}

static const char *segment_after(const char *path, const char *pattern, const char *name)
{
	/* the value of {cid}: the segment of path at the position of name */
	const char *at = strstr(pattern, name);
	size_t slashes = 0;

	for (const char *c = pattern; c < at; c++)
		slashes += *c == '/';
	for (; *path && slashes; path++)
		slashes -= *path == '/';
	return path;
}

/* Find the route; 404 when no pattern matches, 405 when only the method is wrong. */
static int find_route(const struct hutch_http_in *in, struct hutch_http_call *call,
		      struct hutch_err *err)
{
	bool bad = false;

	for (const struct hutch_route *r = hutch_routes; r->method; r++) {
		bool b = false;
		call->id[0] = call->name[0] = '\0';
		if (!match(r->pattern, in->path, call, &b))
			continue;
		if (strcmp(r->method, in->method) != 0) {
			size_t n = strlen(call->allow);
			if (n + strlen(r->method) + 3 < sizeof(call->allow))
				snprintf(call->allow + n, sizeof(call->allow) - n, "%s%s",
					 n ? ", " : "", r->method);
			continue;
		}
		if (b) {
			bad = true;
			continue;
		}
		call->route = r;
		return 0;
	}
	if (bad)
		return fail(call, 400, err, EINVAL,
			    "a path parameter (session id, command id or snapshot name) may hold "
			    "only letters, digits, '_', '.' and '-' (at most 64)");
	if (call->allow[0]) {
		call->status = 405;
		return hutch_err_setx(err, EINVAL, "method %s is not allowed here (allowed: %s)",
				      in->method, call->allow);
	}
	call->status = 404;
	return hutch_err_setx(err, ENOENT, "no route %s %s", in->method, in->path);
}

static bool listed(const char *list, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = list; *p;) {
		size_t m = strcspn(p, ",");
		if (m == n && strncmp(p, key, n) == 0)
			return true;
		p += m + (p[m] == ',');
	}
	return false;
}

static int parse_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || strlen(s) > 19)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Query parameters -> fields of op: path (string), offset/length (integers),
 * recursive (true/false). Unknown ones are refused by name. */
static int query_fields(const struct hutch_http_in *in, struct hutch_http_call *call, json_t *op,
			struct hutch_err *err)
{
	const char *key;
	json_t *v;
	uint64_t n;

	json_object_foreach(in->query, key, v)
	{
		const char *s = json_string_value(v);
		if (!listed(call->route->query, key) || !s) {
			call->status = 400;
			return hutch_err_setx(err, EINVAL, "unknown query parameter '%.64s'", key);
		}
		if (strcmp(key, "path") == 0) {
			json_object_set_new(op, "path", json_string(s));
		} else if (strcmp(key, "recursive") == 0) {
			if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
				return fail(call, 400, err, EINVAL,
					    "query parameter 'recursive' must be true or false");
			json_object_set_new(op, key, json_boolean(s[0] == 't'));
		} else if (parse_uint(s, &n) < 0 || n > (1ull << 53)) {
			call->status = 400;
			return hutch_err_setx(err, EINVAL,
					      "query parameter '%s' must be a non-negative integer",
					      key);
		} else {
			json_object_set_new(op, key, json_integer((json_int_t)n));
		}
	}
	if (call->route->action && !json_object_get(op, "path"))
		return fail(call, 400, err, EINVAL, "query parameter 'path' is required");
	return 0;
}

/* The JSON body as an object ({} when empty); malformed JSON names where. */
static json_t *body_object(const struct hutch_http_in *in, struct hutch_http_call *call,
			   struct hutch_err *err)
{
	json_error_t jerr;
	json_t *o;

	if (in->body_len == 0)
		return json_object();
	o = json_loadb(in->body, in->body_len, JSON_REJECT_DUPLICATES, &jerr);
	call->status = 400;
	if (!o) {
		hutch_err_setx(err, EINVAL, "malformed JSON at line %d column %d (byte %d): %s",
			       jerr.line, jerr.column, jerr.position, jerr.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		hutch_err_setx(err, EINVAL, "the body must be a JSON object");
		return NULL;
	}
	call->status = 0;
	return o;
}

/* Fields that come from the URL may not come from the body too. */
static int set_from_url(json_t *op, const char *key, const char *value,
			struct hutch_http_call *call, struct hutch_err *err)
{
	if (json_object_get(op, key)) {
		call->status = 400;
		return hutch_err_setx(err, EINVAL, "unknown field '%s' (it comes from the URL)",
				      key);
	}
	json_object_set_new(op, key, json_string(value));
	return 0;
}

/* Server caps the ops do not check themselves. */
static int check_caps(json_t *op, struct hutch_http_call *call, struct hutch_err *err)
{
	static const char *const ms[] = {"timeout_ms", "idle_timeout_ms", "ttl_ms",
					 "idle_output_timeout_ms", NULL};
	json_t *mem = json_object_get(json_object_get(op, "limits"), "memory_bytes");

	for (size_t i = 0; ms[i]; i++) {
		json_t *v = json_object_get(op, ms[i]);
		if (json_is_integer(v) && json_integer_value(v) > (json_int_t)MAX_TIMEOUT_MS) {
			call->status = 400;
			return hutch_err_setx(err, EINVAL,
					      "field '%s': %lld is above the server's cap %llu",
					      ms[i], (long long)json_integer_value(v),
					      (unsigned long long)MAX_TIMEOUT_MS);
		}
	}
	call->memory_bytes = DEFAULT_MEMORY;
	if (json_is_integer(mem) && json_integer_value(mem) > 0)
		call->memory_bytes = (uint64_t)json_integer_value(mem);
	return 0;
}

/* The raw body as the op's data_base64. */
static void raw_body(const struct hutch_http_in *in, json_t *op)
{
	char *b64 = hutch_base64_encode(in->body ? in->body : "", in->body_len);

	json_object_set_new(op, "data_base64", json_string(b64));
	free(b64);
}

static int build_op(const struct hutch_http_in *in, struct hutch_http_call *call,
		    struct hutch_err *err)
{
	const struct hutch_route *r = call->route;
	json_t *op = r->flags & HUTCH_ROUTE_RAW_IN ? json_object() : body_object(in, call, err);
	int rc = op ? 0 : -1;

	if (rc == 0 && (r->flags & HUTCH_ROUTE_RAW_IN))
		raw_body(in, op);
	if (rc == 0 && r->op)
		rc = set_from_url(op, "op", r->op, call, err);
	if (rc == 0 && call->id[0])
		rc = set_from_url(op, "id", call->id, call, err);
	if (rc == 0 && call->name[0])
		rc = set_from_url(op, "name", call->name, call, err);
	if (rc == 0 && strstr(r->pattern, "{cid}"))
		rc = set_from_url(op, "command_id", segment_after(in->path, r->pattern, "{cid}"),
				  call, err);
	if (rc == 0 && r->action)
		rc = set_from_url(op, "action", r->action, call, err);
	if (rc == 0 && in->query)
		rc = query_fields(in, call, op, err);
	else if (rc == 0 && r->action)
		rc = fail(call, 400, err, EINVAL, "query parameter 'path' is required");
	if (rc == 0)
		rc = check_caps(op, call, err);
	if (rc == 0)
		call->op_json = json_dumps(op, JSON_COMPACT);
	json_decref(op);
	return rc;
}

/* /v1/run: the body is an ExecRequest; decode it here so a bad one is a
 * 400 naming the field before anything runs. */
static int build_run(const struct hutch_http_in *in, struct hutch_http_call *call,
		     struct hutch_err *err)
{
	struct hutch_exec_request req;
	int rc;

	hutch_request_init(&req);
	rc = hutch_request_from_json(&req, in->body ? in->body : "", in->body_len, err);
	if (rc == 0)
		rc = hutch_request_validate(&req, err);
	if (rc == 0) {
		call->memory_bytes = req.limits.memory_bytes;
		call->op_json = hutch_xmalloc(in->body_len + 1); /* the body has no NUL */
		if (in->body && in->body_len)
			memcpy(call->op_json, in->body, in->body_len);
		call->op_json[in->body_len] = '\0';
	}
	hutch_request_release(&req);
	if (rc < 0)
		call->status = 400;
	return rc;
}

/* One field of an agent request: its check. NULL: fine. */
static const char *agent_field_error(const char *key, json_t *v)
{
	if (strcmp(key, "task") == 0)
		return json_is_string(v) && json_string_length(v) > 0 &&
				       json_string_length(v) <= 8192
			       ? NULL
			       : "must be a string of 1 to 8192 bytes";
	if (strcmp(key, "language") == 0)
		return json_is_string(v) && (strcmp(json_string_value(v), "python") == 0 ||
					     strcmp(json_string_value(v), "node") == 0 ||
					     strcmp(json_string_value(v), "javascript") == 0)
			       ? NULL
			       : "must be python, node or javascript";
	if (strcmp(key, "max_attempts") == 0)
		return json_is_integer(v) && json_integer_value(v) >= 1 &&
				       json_integer_value(v) <= 20
			       ? NULL
			       : "must be an integer from 1 to 20";
	if (strcmp(key, "timeout_ms") == 0 || strcmp(key, "install_timeout_ms") == 0)
		return json_is_integer(v) && json_integer_value(v) >= 1 &&
				       json_integer_value(v) <= 3600000
			       ? NULL
			       : "must be an integer from 1 to 3600000";
	if (strcmp(key, "llm") == 0)
		return json_is_boolean(v) ? NULL : "must be true or false";
	if (strcmp(key, "model") == 0 || strcmp(key, "coder_model") == 0)
		return json_is_string(v) && json_string_length(v) <= 200 ? NULL
									 : "must be a string";
	return "is unknown";
}

/* /v1/agent: {"task", "language", "max_attempts", "timeout_ms",
 * "install_timeout_ms", "llm", "model", "coder_model"}, checked here. */
static int build_agent(const struct hutch_http_in *in, struct hutch_http_call *call,
		       struct hutch_err *err)
{
	json_t *o = body_object(in, call, err);
	const char *key;
	json_t *v;

	if (!o)
		return -1;
	call->status = 400;
	json_object_foreach(o, key, v)
	{
		const char *why = agent_field_error(key, v);
		if (why) {
			hutch_err_setx(err, EINVAL, "field '%.64s' %s", key, why);
			json_decref(o);
			return -1;
		}
	}
	if (!json_object_get(o, "task")) {
		json_decref(o);
		return hutch_err_setx(err, EINVAL, "field 'task' is missing");
	}
	call->status = 0;
	call->op_json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return 0;
}

int hutch_route_decode(const struct hutch_http_in *in, struct hutch_http_call *call,
		       struct hutch_err *err)
{
	memset(call, 0, sizeof(*call));
	if (find_route(in, call, err) < 0)
		return -1;
	if ((call->route->flags & HUTCH_ROUTE_NOBODY) && in->body_len)
		return fail(call, 400, err, EINVAL, "this route takes no body");
	if (call->route->query[0] == '\0' && in->query && json_object_size(in->query)) {
		const char *key = json_object_iter_key(json_object_iter(in->query));
		call->status = 400;
		return hutch_err_setx(err, EINVAL, "unknown query parameter '%.64s'", key);
	}
	switch (call->route->kind) {
	case HUTCH_ROUTE_RUN:
		if (!in->body_len)
			return fail(call, 400, err, EINVAL, "the body must be an ExecRequest");
		return build_run(in, call, err);
	case HUTCH_ROUTE_OP:
		return build_op(in, call, err);
	case HUTCH_ROUTE_AGENT:
		return build_agent(in, call, err);
	case HUTCH_ROUTE_HEALTH:
	case HUTCH_ROUTE_METRICS:
	case HUTCH_ROUTE_FORK:
	case HUTCH_ROUTE_MCP:
		return 0;
	}
	return 0;
}

void hutch_http_call_release(struct hutch_http_call *call)
{
	free(call->op_json);
	call->op_json = NULL;
}

char *hutch_routes_text(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	for (const struct hutch_route *r = hutch_routes; r->method; r++)
		hutch_buf_printf(&b, "%s %s\n", r->method, r->pattern);
	return hutch_buf_detach(&b, NULL);
}

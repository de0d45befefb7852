#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/mcp_internal.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mem.h"

/*
 * The MCP server's protocol layer: JSON-RPC 2.0 framing (requests,
 * notifications, batches, errors) and the methods of the MCP lifecycle and
 * of tools (https://modelcontextprotocol.io/specification). Tools live in
 * mcp_tools.c. Transports hand each message to hutch_mcp_handle.
 */

/* Newest first: what we answer when the client asks for one we don't know. */
static const char *const protocol_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05", NULL};

static const char instructions[] =
	"hutch runs untrusted code in isolated Linux sandboxes. run_code and run_command start a "
	"fresh sandbox per call; for state that persists (variables, files), create a session "
	"with session_create and use session_exec and the session_files tools, then session_kill.";

struct hutch_mcp {
	struct hutch_mcp_backend backend;
};

struct hutch_mcp *hutch_mcp_new(const struct hutch_mcp_backend *b)
{
	struct hutch_mcp *m = hutch_xcalloc(1, sizeof(*m));

	m->backend = *b;
	return m;
}

void hutch_mcp_free(struct hutch_mcp *m)
{
	free(m);
}

static json_t *error_object(json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static json_t *error_object(json_t *id, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			 "error", "code", code, "message", msg);
}

char *hutch_mcp_error_response(int code, const char *message)
{
	json_t *o = error_object(NULL, code, "%s", message);
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return text;
}

/* --- methods: each returns the result (new reference), or NULL with a
 * JSON-RPC error code in *code and the message in err --- */

static json_t *m_initialize(struct hutch_mcp *m, json_t *params, int *code, struct hutch_err *err)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = protocol_versions[0];

	(void)m;
	if (!asked) {
		*code = MCP_INVALID_PARAMS;
		hutch_err_setx(err, EINVAL, "field 'params.protocolVersion' %s",
			       json_object_get(params, "protocolVersion") ? "must be a string"
									  : "is required");
		return NULL;
	}
	for (size_t i = 0; protocol_versions[i]; i++)
		if (strcmp(asked, protocol_versions[i]) == 0)
			version = protocol_versions[i];
	return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", version,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "hutch",
			 "title", "hutch sandbox", "version", HUTCH_VERSION, "instructions",
			 instructions);
}

static json_t *m_ping(struct hutch_mcp *m, json_t *params, int *code, struct hutch_err *err)
{
	(void)m, (void)params, (void)code, (void)err;
	return json_object();
}

static json_t *m_tools_list(struct hutch_mcp *m, json_t *params, int *code, struct hutch_err *err)
{
	json_t *cursor = json_object_get(params, "cursor");

	(void)m;
	if (cursor && !json_is_string(cursor)) {
		*code = MCP_INVALID_PARAMS;
		hutch_err_setx(err, EINVAL, "field 'params.cursor' must be a string");
		return NULL;
	}
	return hutch_mcp_tools_list(); /* one page: there is never a nextCursor */
}

static json_t *m_tools_call(struct hutch_mcp *m, json_t *params, int *code, struct hutch_err *err)
{
	json_t *name = json_object_get(params, "name");
	json_t *args = json_object_get(params, "arguments");
	json_t *empty = NULL;
	json_t *res;

	*code = MCP_INVALID_PARAMS;
	if (!json_is_string(name))
		return hutch_err_setx(err, EINVAL, "field 'params.name' %s",
				      name ? "must be a string" : "is required"),
		       NULL;
	if (args && !json_is_object(args))
		return hutch_err_setx(err, EINVAL, "field 'params.arguments' must be an object"),
		       NULL;
	if (!args)
		args = empty = json_object();
	res = hutch_mcp_tools_call(&m->backend, json_string_value(name), args, err);
	json_decref(empty);
	if (!res && err->code != EINVAL && err->code != ENOENT)
		*code = MCP_INTERNAL_ERROR;
	else if (!res && err->code == EINVAL)
		hutch_err_prefix(err, "invalid arguments for tool '%s'", json_string_value(name));
	return res;
}

struct method {
	const char *name;
	json_t *(*fn)(struct hutch_mcp *m, json_t *params, int *code, struct hutch_err *err);
};

static const struct method methods[] = {
	{"initialize", m_initialize},
	{"ping", m_ping},
	{"tools/list", m_tools_list},
	{"tools/call", m_tools_call},
};

/* --- JSON-RPC framing --- */

static bool valid_id(json_t *id)
{
	return json_is_string(id) || json_is_integer(id) || json_is_real(id) || json_is_null(id);
}

/* Check the envelope of one message; an error response, or NULL if fine. */
static json_t *check_envelope(json_t *msg, json_t *id)
{
	json_t *method = json_object_get(msg, "method");
	json_t *params = json_object_get(msg, "params");

	if (!json_is_object(msg))
		return error_object(NULL, MCP_INVALID_REQUEST,
				    "invalid request: a message must be a JSON object");
	if (id && !valid_id(id))
		return error_object(NULL, MCP_INVALID_REQUEST,
				    "invalid request: field 'id' must be a string or a number");
	if (strcmp(json_string_value(json_object_get(msg, "jsonrpc")) ?: "", "2.0") != 0)
		return error_object(id, MCP_INVALID_REQUEST,
				    "invalid request: field 'jsonrpc' must be \"2.0\"");
	if (!json_is_string(method))
		return error_object(id, MCP_INVALID_REQUEST, "invalid request: field 'method' %s",
				    method ? "must be a string" : "is required");
	if (params && !json_is_object(params))
		return error_object(id, MCP_INVALID_PARAMS, "field 'params' must be an object");
	return NULL;
}

static json_t *call_method(struct hutch_mcp *m, const char *name, json_t *params, json_t *id)
{
	struct hutch_err err = {0, ""};
	json_t *empty = NULL;
	json_t *res = NULL;
	int code = MCP_INTERNAL_ERROR;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strcmp(methods[i].name, name) != 0)
			continue;
		if (!params)
			params = empty = json_object();
		res = methods[i].fn(m, params, &code, &err);
		json_decref(empty);
		if (!res)
			return error_object(id, code, "%s", err.msg);
		return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", res);
	}
	return error_object(id, MCP_METHOD_NOT_FOUND, "method '%s' not found", name);
}

/* One message: the response, or NULL for notifications and responses. */
static json_t *handle_one(struct hutch_mcp *m, json_t *msg)
{
	json_t *id = json_is_object(msg) ? json_object_get(msg, "id") : NULL;
	json_t *bad;
	const char *method;

	/* we send no requests, so a response from the client is unexpected:
	 * it gets no answer (JSON-RPC never answers a response) */
	if (json_is_object(msg) && !json_object_get(msg, "method") &&
	    (json_object_get(msg, "result") || json_object_get(msg, "error")))
		return NULL;
	bad = check_envelope(msg, id);
	if (bad)
		return bad;
	method = json_string_value(json_object_get(msg, "method"));
	if (!id) {
		/* notifications (initialized, cancelled, ...) need nothing from
		 * us: calls are answered before the next message is read */
		hutch_log(HUTCH_LOG_DEBUG, "mcp: notification '%s'", method);
		return NULL;
	}
	hutch_log(HUTCH_LOG_DEBUG, "mcp: request '%s'", method);
	return call_method(m, method, json_object_get(msg, "params"), id);
}

static json_t *handle_batch(struct hutch_mcp *m, json_t *batch)
{
	json_t *out = json_array();
	json_t *item;
	size_t i;

	if (json_array_size(batch) == 0) {
		json_decref(out);
		return error_object(NULL, MCP_INVALID_REQUEST, "invalid request: an empty batch");
	}
	json_array_foreach(batch, i, item)
	{
		json_t *r = handle_one(m, item);
		if (r)
			json_array_append_new(out, r);
	}
	if (json_array_size(out) == 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

char *hutch_mcp_handle(struct hutch_mcp *m, const char *msg, size_t len)
{
	json_error_t je;
	json_t *in;
	json_t *out;
	char *text;

	if (len > HUTCH_MCP_MAX_MESSAGE)
		out = error_object(NULL, MCP_INVALID_REQUEST,
				   "message of %zu bytes is over the limit of %u bytes", len,
				   HUTCH_MCP_MAX_MESSAGE);
	else if (!(in = json_loadb(msg, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je)))
		out = error_object(NULL, MCP_PARSE_ERROR, "parse error: %s (line %d, column %d)",
				   je.text, je.line, je.column);
	else {
		out = json_is_array(in) ? handle_batch(m, in) : handle_one(m, in);
		json_decref(in);
	}
	if (!out)
		return NULL;
	text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	return text;
}

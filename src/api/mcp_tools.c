#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/mcp_internal.h"
#include "util/err.h"
#include "util/text.h"

/*
 * The tools hutch offers over MCP: their input tables (mcp_schema.c turns
 * them into JSON Schemas and checks), output schemas, and what each call
 * does. Every call becomes an ExecRequest or a session operation — the
 * same JSON as the daemon's frames — and goes to the backend.
 */

struct mcp_tool {
	const char *name;
	const char *title;
	const char *description;
	const struct mcp_field *input;
	const char *output_schema; /* JSON text, or NULL */
	const char *annotations;   /* JSON text of the hints */
	json_t *(*call)(const struct hutch_mcp_backend *b, json_t *args, struct hutch_err *err);
};

/* --- input fields --- */

static const struct mcp_field limits_fields[] = {
	{"wall_ms", MCP_INTEGER, false, "wall-clock limit in ms (default 30000)", NULL, NULL},
	{"cpu_ms", MCP_INTEGER, false, "CPU time limit in ms, user+sys (0: none)", NULL, NULL},
	{"memory_bytes", MCP_INTEGER, false, "memory limit in bytes (default 512 MiB)", NULL, NULL},
	{"pids", MCP_INTEGER, false, "processes and threads (default 128)", NULL, NULL},
	{"output_bytes", MCP_INTEGER, false, "bytes kept per stream, head and tail (default 1 MiB)",
	 NULL, NULL},
	{"file_bytes", MCP_INTEGER, false, "largest file the program may write", NULL, NULL},
	{"disk_bytes", MCP_INTEGER, false, "writable space of /workspace and /tmp (default 1 GiB)",
	 NULL, NULL},
	{"idle_output_ms", MCP_INTEGER, false, "stop after this long without output (0: never)",
	 NULL, NULL},
	{"cpus", MCP_NUMBER, false, "CPU bandwidth in cores (0: no cap)", NULL, NULL},
	{"output_limit_kill", MCP_BOOLEAN, false, "kill the run when output passes the limit", NULL,
	 NULL},
	{NULL, MCP_STRING, false, NULL, NULL, NULL},
};

static const char *const run_languages[] = {"python",	  "python3", "node", "js",
					    "javascript", "bash",    "sh",   NULL};
static const char *const session_languages[] = {"python", "node", "bash", NULL};

/* Fields several tools share (a macro: C has no constant struct values) */
#define LIMITS_TEXT "resource limits; absent fields keep their defaults"
#define NETWORK_TEXT                                                                               \
	"'none' (default: loopback only) or 'allow:DOMAIN,*.DOMAIN,...' (egress through hutch's "  \
	"proxy, every attempt logged)"
#define ENV_TEXT "environment variables (nothing of the host is inherited)"
#define LIMITS                                                                                     \
	{                                                                                          \
		"limits", MCP_OBJECT, false, LIMITS_TEXT, limits_fields, NULL                      \
	}
#define NETWORK                                                                                    \
	{                                                                                          \
		"network", MCP_STRING, false, NETWORK_TEXT, NULL, NULL                             \
	}
#define ENV                                                                                        \
	{                                                                                          \
		"env", MCP_MAP, false, ENV_TEXT, NULL, NULL                                        \
	}
#define STDIN                                                                                      \
	{                                                                                          \
		"stdin", MCP_STRING, false, "the program's stdin (default empty)", NULL, NULL      \
	}
#define SESSION_ID                                                                                 \
	{                                                                                          \
		"session_id", MCP_STRING, true, "the id session_create returned", NULL, NULL       \
	}
#define END                                                                                        \
	{                                                                                          \
		NULL, MCP_STRING, false, NULL, NULL, NULL                                          \
	}

static const struct mcp_field run_code_in[] = {
	{"language", MCP_STRING, true, "python, node, bash or sh", NULL, run_languages},
	{"code", MCP_STRING, true, "the program (placed at /workspace/main.py, .js or .sh)", NULL,
	 NULL},
	STDIN,
	LIMITS,
	NETWORK,
	ENV,
	END,
};

static const struct mcp_field run_command_in[] = {
	{"command", MCP_STRING, false, "a shell command line, run with sh -c (or give argv)", NULL,
	 NULL},
	{"argv", MCP_STRINGS, false, "the command and its arguments, looked up in PATH", NULL,
	 NULL},
	{"workdir", MCP_STRING, false, "working directory under /workspace", NULL, NULL},
	STDIN,
	LIMITS,
	NETWORK,
	ENV,
	END,
};

static const struct mcp_field session_create_in[] = {
	{"language", MCP_STRING, true, "the session's kernel: python, node or bash", NULL,
	 session_languages},
	LIMITS,
	NETWORK,
	ENV,
	{"idle_timeout_ms", MCP_INTEGER, false, "pause the session after this long without calls",
	 NULL, NULL},
	{"ttl_ms", MCP_INTEGER, false, "kill the session this long after it was created", NULL,
	 NULL},
	END,
};

static const struct mcp_field session_exec_in[] = {
	SESSION_ID,
	{"code", MCP_STRING, true,
	 "code in the session's language; state persists and a final expression's value comes back",
	 NULL, NULL},
	{"timeout_ms", MCP_INTEGER, false,
	 "interrupt the call after this long (state is kept; default the session's wall_ms)", NULL,
	 NULL},
	END,
};

static const struct mcp_field files_read_in[] = {
	SESSION_ID,
	{"path", MCP_STRING, true, "a file under /workspace (relative or absolute)", NULL, NULL},
	END,
};

static const struct mcp_field files_write_in[] = {
	SESSION_ID,
	{"path", MCP_STRING, true, "a file under /workspace; parent directories are created", NULL,
	 NULL},
	{"content", MCP_STRING, false, "the text to write (or give content_base64)", NULL, NULL},
	{"content_base64", MCP_STRING, false, "the bytes to write, base64", NULL, NULL},
	END,
};

static const struct mcp_field session_id_in[] = {SESSION_ID, END};
static const struct mcp_field no_input[] = {END};

/* --- output schemas: the main fields; results carry more (docs/api.md) --- */

#define EXEC_PROPS                                                                                 \
	"\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"timeout\",\"oom\","          \
	"\"output_limit\",\"killed\",\"sandbox_error\"]},"                                         \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},"                                         \
	"\"signal\":{\"type\":[\"integer\",\"null\"]},"                                            \
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                       \
	"\"wall_ms\":{\"type\":\"integer\"},\"id\":{\"type\":\"string\"}"

static const char exec_out[] = "{\"type\":\"object\",\"properties\":{" EXEC_PROPS
			       "},\"required\":[\"status\",\"stdout\",\"stderr\"]}";
static const char session_exec_out[] =
	"{\"type\":\"object\",\"properties\":{" EXEC_PROPS
	",\"session_id\":{\"type\":\"string\"},\"value\":{\"type\":[\"object\",\"null\"]},"
	"\"display\":{\"type\":\"array\"}},\"required\":[\"status\",\"stdout\",\"stderr\"]}";
static const char session_out[] =
	"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"session\":{\"type\":\"object\"}},\"required\":[\"session_id\",\"session\"]}";
static const char read_out[] =
	"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"size\":{\"type\":\"integer\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\","
	"\"base64\"]},\"text\":{\"type\":\"string\"},\"content_base64\":{\"type\":\"string\"}},"
	"\"required\":[\"path\",\"size\",\"encoding\"]}";
static const char write_out[] =
	"{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},"
	"\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
	"\"required\":[\"ok\",\"path\",\"bytes\"]}";
static const char list_out[] =
	"{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":"
	"\"array\",\"items\":{\"type\":\"object\"}}},\"required\":[\"sessions\"]}";
static const char kill_out[] =
	"{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},"
	"\"required\":[\"ok\"]}";

#define READ_ONLY "{\"readOnlyHint\":true,\"openWorldHint\":false}"
#define WRITES	  "{\"readOnlyHint\":false,\"destructiveHint\":false,\"openWorldHint\":false}"
#define DESTROYS  "{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":false}"

/* --- calls --- */

/* An ExecRequest (owned) through the backend: checked here first, so bad
 * values read the same on both backends and never reach a daemon. */
static json_t *run_request(const struct hutch_mcp_backend *b, json_t *req, struct hutch_err *err)
{
	struct hutch_exec_request parsed;
	char *text = json_dumps(req, JSON_COMPACT);
	char *reply = NULL;
	json_t *res;
	int rc;

	json_decref(req);
	hutch_request_init(&parsed);
	rc = hutch_request_from_json(&parsed, text, strlen(text), err);
	if (rc == 0)
		rc = hutch_request_validate(&parsed, err);
	hutch_request_release(&parsed);
	if (rc < 0) {
		free(text);
		err->code = EINVAL;
		return NULL;
	}
	struct hutch_err run_err = {0, ""};
	reply = b->run(b->ctx, text, &run_err);
	free(text);
	if (!reply)
		return hutch_mcp_error_result("hutch could not run it: %s", run_err.msg);
	res = json_loads(reply, 0, NULL);
	free(reply);
	if (!json_is_object(res)) {
		json_decref(res);
		return hutch_mcp_error_result("hutch returned a result that is not JSON");
	}
	return hutch_mcp_result(
		hutch_mcp_exec_content(res), res,
		strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok") != 0);
}

/* Copy the named optional members of args into req. */
static void copy_fields(json_t *req, json_t *args, const char *const *names)
{
	for (size_t i = 0; names[i]; i++) {
		json_t *v = json_object_get(args, names[i]);
		if (v)
			json_object_set(req, names[i], v);
	}
}

static json_t *call_run_code(const struct hutch_mcp_backend *b, json_t *args, struct hutch_err *err)
{
	static const char *const names[] = {"language", "code", "stdin", "limits",
					    "network",	"env",	NULL};
	json_t *req = json_object();

	copy_fields(req, args, names);
	return run_request(b, req, err);
}

static json_t *call_run_command(const struct hutch_mcp_backend *b, json_t *args,
				struct hutch_err *err)
{
	static const char *const names[] = {"argv",    "workdir", "stdin", "limits",
					    "network", "env",	  NULL};
	json_t *command = json_object_get(args, "command");
	json_t *argv = json_object_get(args, "argv");
	json_t *req;

	if (!command == !argv) {
		hutch_err_setx(err, EINVAL,
			       "exactly one of the fields 'command' and 'argv' is required");
		return NULL;
	}
	if (argv && json_array_size(argv) == 0) {
		hutch_err_setx(err, EINVAL, "field 'argv' must not be empty");
		return NULL;
	}
	req = json_object();
	copy_fields(req, args, names);
	if (command)
		json_object_set_new(req, "argv", json_pack("[s,s,O]", "sh", "-c", command));
	return run_request(b, req, err);
}

/* A session operation (owned); its reply, or a tool error result in *fail. */
static json_t *session_op(const struct hutch_mcp_backend *b, json_t *op, json_t **fail)
{
	struct hutch_err err = {0, ""};
	char *text = json_dumps(op, JSON_COMPACT);
	char *reply = b->session_call(b->ctx, text, &err);
	json_t *o = reply ? json_loads(reply, 0, NULL) : NULL;
	json_t *e = json_object_get(o, "error");

	free(text);
	free(reply);
	*fail = NULL;
	if (!reply)
		*fail = hutch_mcp_error_result(
			"%s failed: %s", json_string_value(json_object_get(op, "op")), err.msg);
	else if (!json_is_object(o))
		*fail = hutch_mcp_error_result("the session reply is not JSON");
	/* a refusal has only "error"; an ExecResult has a status as well */
	else if (json_is_object(e) && !json_object_get(o, "status"))
		*fail = hutch_mcp_error_result(
			"%s: %s", json_string_value(json_object_get(e, "code")) ?: "error",
			json_string_value(json_object_get(e, "message")) ?: "refused");
	json_decref(op);
	if (*fail) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *call_session_create(const struct hutch_mcp_backend *b, json_t *args,
				   struct hutch_err *err)
{
	json_t *op = json_deep_copy(args);
	json_t *fail;
	json_t *reply;
	json_t *info;
	char text[256];

	(void)err;
	json_object_set_new(op, "op", json_string("session.new"));
	reply = session_op(b, op, &fail);
	if (!reply)
		return fail;
	info = json_object_get(reply, "session");
	const char *id = json_string_value(json_object_get(info, "id")) ?: "";
	snprintf(text, sizeof(text), "session_id: %s (%s, %s)", id,
		 json_string_value(json_object_get(info, "language")) ?: "?",
		 json_string_value(json_object_get(info, "state")) ?: "?");
	json_object_set_new(reply, "session_id", json_string(id));
	return hutch_mcp_result(json_pack("[o]", hutch_mcp_text(text)), reply, false);
}

static json_t *call_session_exec(const struct hutch_mcp_backend *b, json_t *args,
				 struct hutch_err *err)
{
	json_t *op = json_pack("{s:s,s:O,s:O}", "op", "session.exec", "id",
			       json_object_get(args, "session_id"), "code",
			       json_object_get(args, "code"));
	json_t *fail;
	json_t *res;

	(void)err;
	if (json_object_get(args, "timeout_ms"))
		json_object_set(op, "timeout_ms", json_object_get(args, "timeout_ms"));
	res = session_op(b, op, &fail);
	if (!res)
		return fail;
	return hutch_mcp_result(
		hutch_mcp_exec_content(res), res,
		strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok") != 0);
}

static json_t *files_op(json_t *args, const char *action)
{
	return json_pack("{s:s,s:O,s:s,s:O}", "op", "session.files", "id",
			 json_object_get(args, "session_id"), "action", action, "path",
			 json_object_get(args, "path"));
}

static json_t *call_files_read(const struct hutch_mcp_backend *b, json_t *args,
			       struct hutch_err *err)
{
	json_t *fail;
	json_t *reply = session_op(b, files_op(args, "read"), &fail);
	const char *b64 = json_string_value(json_object_get(reply, "data_base64"));
	const char *path = json_string_value(json_object_get(args, "path"));
	unsigned char *data;
	size_t len = 0;
	json_t *out;
	json_t *content;

	(void)err;
	if (!reply)
		return fail;
	data = b64 ? hutch_base64_decode(b64, strlen(b64), &len) : NULL;
	if (!data) {
		json_decref(reply);
		return hutch_mcp_error_result("the files API sent no data for '%s'", path);
	}
	out = json_pack("{s:s,s:I}", "path", path, "size", (json_int_t)len);
	if (hutch_utf8_valid((const char *)data, len) && !memchr(data, 0, len)) {
		json_object_set_new(out, "encoding", json_string("utf-8"));
		json_object_set_new(out, "text", json_stringn((const char *)data, len));
		/* the decoded bytes are not NUL-terminated */
		content =
			json_pack("[{s:s,s:s%}]", "type", "text", "text", (const char *)data, len);
	} else {
		char note[300];
		json_object_set_new(out, "encoding", json_string("base64"));
		json_object_set_new(out, "content_base64", json_string(b64));
		snprintf(note, sizeof(note), "'%s' is binary, %zu bytes; base64:\n", path, len);
		content = json_pack("[o]",
				    json_pack("{s:s,s:s+}", "type", "text", "text", note, b64));
	}
	free(data);
	json_decref(reply);
	return hutch_mcp_result(content, out, false);
}

static json_t *call_files_write(const struct hutch_mcp_backend *b, json_t *args,
				struct hutch_err *err)
{
	const char *text = json_string_value(json_object_get(args, "content"));
	const char *b64 = json_string_value(json_object_get(args, "content_base64"));
	json_t *fail;
	json_t *op;
	json_t *reply;
	char *enc = NULL;
	size_t len = 0;
	char msg[300];

	if (!text == !b64) {
		hutch_err_setx(
			err, EINVAL,
			"exactly one of the fields 'content' and 'content_base64' is required");
		return NULL;
	}
	if (b64) {
		unsigned char *data = hutch_base64_decode(b64, strlen(b64), &len);
		if (!data) {
			hutch_err_setx(err, EINVAL, "field 'content_base64' is not valid base64");
			return NULL;
		}
		free(data);
	} else {
		len = json_string_length(json_object_get(args, "content"));
		enc = hutch_base64_encode(text, len);
	}
	op = files_op(args, "write");
	json_object_set_new(op, "data_base64", json_string(enc ? enc : b64));
	free(enc);
	reply = session_op(b, op, &fail);
	if (!reply)
		return fail;
	json_decref(reply);
	snprintf(msg, sizeof(msg), "wrote %zu bytes to '%s'", len,
		 json_string_value(json_object_get(args, "path")));
	return hutch_mcp_result(json_pack("[o]", hutch_mcp_text(msg)),
				json_pack("{s:b,s:O,s:I}", "ok", 1, "path",
					  json_object_get(args, "path"), "bytes", (json_int_t)len),
				false);
}

static json_t *call_session_list(const struct hutch_mcp_backend *b, json_t *args,
				 struct hutch_err *err)
{
	json_t *fail;
	json_t *reply = session_op(b, json_pack("{s:s}", "op", "session.list"), &fail);
	char *text;
	json_t *s;
	size_t i;

	(void)args;
	(void)err;
	if (!reply)
		return fail;
	json_t *content = json_array();
	json_array_foreach(json_object_get(reply, "sessions"), i, s)
	{
		text = NULL;
		if (asprintf(&text, "%s %s %s, %lld calls",
			     json_string_value(json_object_get(s, "id")) ?: "?",
			     json_string_value(json_object_get(s, "language")) ?: "?",
			     json_string_value(json_object_get(s, "state")) ?: "?",
			     (long long)json_integer_value(json_object_get(s, "calls"))) > 0)
			json_array_append_new(content, hutch_mcp_text(text));
		free(text);
	}
	if (json_array_size(content) == 0)
		json_array_append_new(content, hutch_mcp_text("no sessions"));
	return hutch_mcp_result(content, reply, false);
}

static json_t *call_session_kill(const struct hutch_mcp_backend *b, json_t *args,
				 struct hutch_err *err)
{
	json_t *fail;
	json_t *reply = session_op(b,
				   json_pack("{s:s,s:O}", "op", "session.kill", "id",
					     json_object_get(args, "session_id")),
				   &fail);
	char text[200];

	(void)err;
	if (!reply)
		return fail;
	json_decref(reply);
	snprintf(text, sizeof(text), "killed %s; its files are gone",
		 json_string_value(json_object_get(args, "session_id")));
	return hutch_mcp_result(json_pack("[o]", hutch_mcp_text(text)), json_pack("{s:b}", "ok", 1),
				false);
}

static const struct mcp_tool tools[] = {
	{"run_code", "Run code in a fresh sandbox",
	 "Run a program in a new, isolated Linux sandbox (no network by default, no host "
	 "files, limits on time, memory, processes and disk) and return its output, exit code "
	 "and status. Nothing persists between calls: use a session for state.",
	 run_code_in, exec_out,
	 "{\"readOnlyHint\":false,\"destructiveHint\":false,"
	 "\"idempotentHint\":false,\"openWorldHint\":false}",
	 call_run_code},
	{"run_command", "Run a command in a fresh sandbox",
	 "Run one command line (sh -c) or argv in a new, isolated Linux sandbox with the host's "
	 "tools read-only (python3, node, bash, coreutils...) and return its output and status.",
	 run_command_in, exec_out, WRITES, call_run_command},
	{"session_create", "Create a stateful session",
	 "Start a long-lived sandbox with a python, node or bash kernel: variables, imports and "
	 "files persist between session_exec calls. Returns the session_id.",
	 session_create_in, session_out, WRITES, call_session_create},
	{"session_exec", "Run code in a session",
	 "Run code in a session's kernel. State persists; the value of a final expression comes "
	 "back (REPL-style), matplotlib figures as images; an exception is an error result with "
	 "its traceback. A call past its timeout is interrupted and the state kept.",
	 session_exec_in, session_exec_out, WRITES, call_session_exec},
	{"session_files_read", "Read a file of a session",
	 "Read a file of a session's /workspace: its text, or base64 when it is binary.",
	 files_read_in, read_out, READ_ONLY, call_files_read},
	{"session_files_write", "Write a file into a session",
	 "Write a file into a session's /workspace (atomically; parent directories created).",
	 files_write_in, write_out, WRITES, call_files_write},
	{"session_list", "List sessions", "List the sessions with their state and number of calls.",
	 no_input, list_out, READ_ONLY, call_session_list},
	{"session_kill", "Kill a session",
	 "Kill a session: its processes end and its files are removed.", session_id_in, kill_out,
	 DESTROYS, call_session_kill},
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static json_t *tool_json(const struct mcp_tool *t)
{
	json_t *o =
		json_pack("{s:s,s:s,s:s,s:o}", "name", t->name, "title", t->title, "description",
			  t->description, "inputSchema", hutch_mcp_schema(t->input));

	if (t->output_schema)
		json_object_set_new(o, "outputSchema", json_loads(t->output_schema, 0, NULL));
	json_t *ann = json_loads(t->annotations, 0, NULL);
	json_object_set_new(ann, "title", json_string(t->title));
	json_object_set_new(o, "annotations", ann);
	return o;
}

json_t *hutch_mcp_tools_list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; i < NTOOLS; i++)
		json_array_append_new(list, tool_json(&tools[i]));
	return json_pack("{s:o}", "tools", list);
}

json_t *hutch_mcp_tools_call(const struct hutch_mcp_backend *b, const char *name, json_t *args,
			     struct hutch_err *err)
{
	for (size_t i = 0; i < NTOOLS; i++) {
		if (strcmp(tools[i].name, name) != 0)
			continue;
		if (hutch_mcp_check(tools[i].input, args, NULL, err) < 0)
			return NULL;
		return tools[i].call(b, args, err);
	}
	hutch_err_setx(err, ENOENT, "unknown tool '%s'", name);
	return NULL;
}

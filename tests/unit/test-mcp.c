/* The MCP handler against a fake backend: JSON-RPC framing, the protocol
 * methods, argument checks, what reaches the backend and how its replies
 * become tool results. No sandbox runs here (tests/mcp/ runs real ones). */
#include <errno.h>
#include <jansson.h>

#include "api/mcp.h"
#include "tap.h"
#include "util/err.h"

struct fake {
	char *last_run;	    /* the ExecRequest JSON the handler sent */
	char *last_session; /* the session op it sent */
	const char *reply;  /* what the backend answers; NULL: it fails */
};

static char *fake_run(void *ctx, const char *json, struct hutch_err *err)
{
	struct fake *f = ctx;

	free(f->last_run);
	f->last_run = strdup(json);
	if (!f->reply)
		return hutch_err_setx(err, ECONNREFUSED, "the daemon went away"), NULL;
	return strdup(f->reply);
}

static char *fake_session(void *ctx, const char *json, struct hutch_err *err)
{
	struct fake *f = ctx;

	free(f->last_session);
	f->last_session = strdup(json);
	if (!f->reply)
		return hutch_err_setx(err, ECONNREFUSED, "the daemon went away"), NULL;
	return strdup(f->reply);
}

static struct fake fake;

static struct hutch_mcp *new_handler(const char *reply)
{
	struct hutch_mcp_backend b = {fake_run, fake_session, &fake, "fake"};

	fake.reply = reply;
	return hutch_mcp_new(&b);
}

/* The response to msg, parsed (NULL when there is none). */
static json_t *ask(struct hutch_mcp *m, const char *msg)
{
	char *text = hutch_mcp_handle(m, msg, strlen(msg));
	json_t *o = text ? json_loads(text, 0, NULL) : NULL;

	ASSERT(!text || o);
	free(text);
	return o;
}

static json_t *tool_call(struct hutch_mcp *m, const char *name, const char *args)
{
	char msg[4096];

	snprintf(msg, sizeof(msg),
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
		 name, args);
	return ask(m, msg);
}

static long long error_code(json_t *r)
{
	return json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

static const char *error_message(json_t *r)
{
	return json_string_value(json_object_get(json_object_get(r, "error"), "message"));
}

static json_t *result(json_t *r)
{
	return json_object_get(r, "result");
}

static const char *first_text(json_t *r)
{
	return json_string_value(
		json_object_get(json_array_get(json_object_get(result(r), "content"), 0), "text"));
}

static void test_mcp_initialize_negotiates_the_version(void)
{
	struct hutch_mcp *m = new_handler("{}");
	json_t *r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\",\"params\":"
			   "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}}");

	ASSERT_STREQ(json_string_value(json_object_get(result(r), "protocolVersion")),
		     "2025-03-26");
	ASSERT_STREQ(json_string_value(json_object_get(r, "id")), "a");
	ASSERT(json_is_object(
		json_object_get(json_object_get(result(r), "capabilities"), "tools")));
	json_decref(r);
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":"
		   "{\"protocolVersion\":\"2099-01-01\"}}");
	ASSERT_STREQ(json_string_value(json_object_get(result(r), "protocolVersion")),
		     "2025-06-18");
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_framing_errors(void)
{
	struct hutch_mcp *m = new_handler("{}");
	json_t *r = ask(m, "{\"jsonrpc\":");

	ASSERT_EQ(error_code(r), -32700);
	ASSERT(json_is_null(json_object_get(r, "id")));
	json_decref(r);
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}");
	ASSERT_EQ(error_code(r), -32601);
	ASSERT_CONTAINS(error_message(r), "'nope'");
	json_decref(r);
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
	ASSERT_EQ(error_code(r), -32600);
	json_decref(r);
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}");
	ASSERT_EQ(error_code(r), -32700); /* duplicate keys are refused */
	json_decref(r);
	r = ask(m, "42");
	ASSERT_EQ(error_code(r), -32600);
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_notifications_and_responses_get_no_answer(void)
{
	struct hutch_mcp *m = new_handler("{}");

	ASSERT(!ask(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	ASSERT(!ask(m, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{}}"));
	ASSERT(!ask(m, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"));
	ASSERT(!ask(m, "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]"));
	ASSERT(!fake.last_run); /* a tools/call without an id ran nothing */
	hutch_mcp_free(m);
}

static void test_mcp_oversized_message(void)
{
	struct hutch_mcp *m = new_handler("{}");
	size_t len = HUTCH_MCP_MAX_MESSAGE + 1;
	char *big = calloc(1, len);
	char *text;

	memset(big, ' ', len);
	text = hutch_mcp_handle(m, big, len);
	ASSERT_CONTAINS(text, "-32600");
	ASSERT_CONTAINS(text, "over the limit");
	free(text);
	free(big);
	hutch_mcp_free(m);
}

static void test_mcp_tools_list_schemas(void)
{
	struct hutch_mcp *m = new_handler("{}");
	json_t *r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	json_t *tools = json_object_get(result(r), "tools");
	json_t *t;
	size_t i;

	ASSERT_EQ(json_array_size(tools), 8);
	json_array_foreach(tools, i, t)
	{
		json_t *in = json_object_get(t, "inputSchema");
		ASSERT_STREQ(json_string_value(json_object_get(in, "type")), "object");
		ASSERT(json_is_false(json_object_get(in, "additionalProperties")));
		ASSERT(json_is_object(json_object_get(t, "outputSchema")));
	}
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_run_code_forwards_a_request(void)
{
	struct hutch_mcp *m = new_handler("{\"status\":\"ok\",\"exit_code\":0,\"stdout\":\"42\\n\","
					  "\"stderr\":\"\",\"wall_ms\":5}");
	json_t *r = tool_call(m, "run_code",
			      "{\"language\":\"python\",\"code\":\"print(42)\","
			      "\"limits\":{\"wall_ms\":2000}}");
	json_t *sent = json_loads(fake.last_run, 0, NULL);

	ASSERT_STREQ(json_string_value(json_object_get(sent, "code")), "print(42)");
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(sent, "limits"), "wall_ms")),
		  2000);
	ASSERT(json_is_false(json_object_get(result(r), "isError")));
	ASSERT_STREQ(first_text(r), "[stdout]\n42\n[status: ok, exit code 0, 5 ms]\n");
	ASSERT_STREQ(json_string_value(json_object_get(
			     json_object_get(result(r), "structuredContent"), "status")),
		     "ok");
	json_decref(sent);
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_run_command_uses_sh(void)
{
	struct hutch_mcp *m = new_handler("{\"status\":\"error\",\"exit_code\":3,\"stdout\":\"\","
					  "\"stderr\":\"no\\n\",\"wall_ms\":1}");
	json_t *r = tool_call(m, "run_command", "{\"command\":\"exit 3\"}");

	ASSERT_CONTAINS(fake.last_run, "\"argv\":[\"sh\",\"-c\",\"exit 3\"]");
	ASSERT(json_is_true(json_object_get(result(r), "isError")));
	ASSERT_CONTAINS(first_text(r), "[stderr]\nno\n");
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_bad_arguments_name_the_field(void)
{
	struct hutch_mcp *m = new_handler("{}");
	static const char *const cases[][3] = {
		{"run_code", "{\"language\":\"python\"}", "field 'code' is required"},
		{"run_code", "{\"language\":\"python\",\"code\":1}",
		 "field 'code' must be a string"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"limits\":{\"pids\":-1}}",
		 "field 'limits.pids' must be an integer >= 0"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"env\":{\"A\":1}}",
		 "field 'env.A' must be a string"},
		{"run_code", "{\"language\":\"cobol\",\"code\":\"\"}", "field 'language'"},
		{"run_command", "{\"argv\":[\"ls\",2]}", "field 'argv[1]' must be a string"},
		{"run_command", "{\"argv\":[]}", "field 'argv' must not be empty"},
		{"session_exec", "{\"code\":\"1\"}", "field 'session_id' is required"},
		{"session_list", "{\"x\":1}", "unknown field 'x'"},
		{"nope", "{}", "unknown tool 'nope'"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = tool_call(m, cases[i][0], cases[i][1]);
		ASSERT_EQ(error_code(r), -32602);
		ASSERT_CONTAINS(error_message(r), cases[i][2]);
		json_decref(r);
	}
	ASSERT(!fake.last_run);
	hutch_mcp_free(m);
}

static void test_mcp_session_exec_images(void)
{
	struct hutch_mcp *m = new_handler(
		"{\"status\":\"ok\",\"exit_code\":0,\"stdout\":\"\",\"stderr\":\"\",\"wall_ms\":0,"
		"\"timings\":{\"run_us\":7000},\"value\":{\"text/plain\":\"<Figure>\","
		"\"image/png\":\"iVBORw0KGgo=\"},\"display\":[{\"text/plain\":\"d\","
		"\"image/jpeg\":\"/9j/\"}]}");
	json_t *r = tool_call(m, "session_exec", "{\"session_id\":\"sess_1\",\"code\":\"fig\"}");
	json_t *content = json_object_get(result(r), "content");

	ASSERT_CONTAINS(fake.last_session, "\"op\":\"session.exec\"");
	ASSERT_CONTAINS(fake.last_session, "\"id\":\"sess_1\"");
	ASSERT_EQ(json_array_size(content), 3);
	ASSERT_STREQ(first_text(r),
		     "[display 1]\nd\n[value]\n<Figure>\n[status: ok, exit code 0, 7 ms]\n");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(content, 1), "mimeType")),
		     "image/jpeg");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(content, 2), "data")),
		     "iVBORw0KGgo=");
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_session_refusal_is_a_tool_error(void)
{
	struct hutch_mcp *m = new_handler(
		"{\"error\":{\"code\":\"ENOENT\",\"message\":\"no session 'sess_x'\"}}");
	json_t *r = tool_call(m, "session_kill", "{\"session_id\":\"sess_x\"}");

	ASSERT(json_is_true(json_object_get(result(r), "isError")));
	ASSERT_STREQ(first_text(r), "ENOENT: no session 'sess_x'");
	ASSERT(!json_object_get(result(r), "structuredContent"));
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_backend_failure_is_a_tool_error(void)
{
	struct hutch_mcp *m = new_handler(NULL);
	json_t *r = tool_call(m, "run_code", "{\"language\":\"sh\",\"code\":\"true\"}");

	ASSERT(json_is_true(json_object_get(result(r), "isError")));
	ASSERT_CONTAINS(first_text(r), "the daemon went away");
	json_decref(r);
	r = tool_call(m, "session_list", "{}");
	ASSERT(json_is_true(json_object_get(result(r), "isError")));
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_traceback_shown_once(void)
{
	struct hutch_mcp *m = new_handler(
		"{\"status\":\"error\",\"exit_code\":1,\"stdout\":\"\",\"stderr\":\"TB\\n\","
		"\"error\":{\"type\":\"E\",\"message\":\"m\",\"traceback\":\"TB\\n\"}}");
	json_t *r = tool_call(m, "run_code", "{\"language\":\"python\",\"code\":\"x\"}");

	ASSERT_STREQ(first_text(r),
		     "[stderr]\nTB\n[error] E: m\n[status: error, exit code 1, 0 ms]\n");
	json_decref(r);
	hutch_mcp_free(m);
}

static void test_mcp_files_write_and_read(void)
{
	struct hutch_mcp *m = new_handler("{\"ok\":true}");
	json_t *r = tool_call(m, "session_files_write",
			      "{\"session_id\":\"s\",\"path\":\"a.txt\",\"content\":\"hi\"}");

	ASSERT_CONTAINS(fake.last_session, "\"data_base64\":\"aGk=\"");
	ASSERT_EQ(json_integer_value(json_object_get(
			  json_object_get(result(r), "structuredContent"), "bytes")),
		  2);
	json_decref(r);
	hutch_mcp_free(m);
	m = new_handler("{\"data_base64\":\"aGk=\"}"); /* decoded: not NUL-terminated */
	r = tool_call(m, "session_files_read", "{\"session_id\":\"s\",\"path\":\"a.txt\"}");
	ASSERT_STREQ(first_text(r), "hi");
	json_decref(r);
	hutch_mcp_free(m);
	m = new_handler("{\"data_base64\":\"AP8=\"}");
	r = tool_call(m, "session_files_read", "{\"session_id\":\"s\",\"path\":\"b\"}");
	ASSERT_STREQ(json_string_value(json_object_get(
			     json_object_get(result(r), "structuredContent"), "encoding")),
		     "base64");
	json_decref(r);
	hutch_mcp_free(m);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_mcp_initialize_negotiates_the_version),
	TAP_CASE(test_mcp_framing_errors),
	TAP_CASE(test_mcp_notifications_and_responses_get_no_answer),
	TAP_CASE(test_mcp_oversized_message),
	TAP_CASE(test_mcp_tools_list_schemas),
	TAP_CASE(test_mcp_run_code_forwards_a_request),
	TAP_CASE(test_mcp_run_command_uses_sh),
	TAP_CASE(test_mcp_bad_arguments_name_the_field),
	TAP_CASE(test_mcp_session_exec_images),
	TAP_CASE(test_mcp_session_refusal_is_a_tool_error),
	TAP_CASE(test_mcp_backend_failure_is_a_tool_error),
	TAP_CASE(test_mcp_traceback_shown_once),
	TAP_CASE(test_mcp_files_write_and_read),
	TAP_END,
};

TAP_MAIN(cases)

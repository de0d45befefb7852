/* Unit tests for src/run/request.c and src/run/request_json.c: building,
 * decoding and validating an ExecRequest. */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>

#include "tap.h"
#include <time.h>

#include "hutch.h"
#include "util/buf.h"

/* Decode from an exact-size heap copy (no NUL after it), so a read past
 * `len` shows under ASan and valgrind. */
static int from_json(struct hutch_exec_request *req, const char *text, struct hutch_err *err)
{
	size_t len = strlen(text);
	char *copy = malloc(len ? len : 1);
	int rc;

	ASSERT(copy != NULL);
	memcpy(copy, text, len);
	rc = hutch_request_from_json(req, copy, len, err);
	free(copy);
	return rc;
}

/* The defaults: init gives template "host" and net "none"; release gives
 * NULL for both (meaning the same) so that it holds no memory. */
static void assert_defaults(const struct hutch_exec_request *req, bool released)
{
	ASSERT(req->language == NULL);
	ASSERT(req->argv == NULL);
	ASSERT(req->code == NULL);
	ASSERT_EQ(req->code_len, 0);
	ASSERT(req->stdin_data == NULL);
	ASSERT_EQ(req->stdin_len, 0);
	ASSERT(req->files == NULL);
	ASSERT_EQ(req->nfiles, 0);
	ASSERT(req->env == NULL);
	ASSERT_EQ(req->nenv, 0);
	ASSERT(req->labels == NULL);
	ASSERT_EQ(req->nlabels, 0);
	ASSERT(req->workdir == NULL);
	ASSERT(req->session_id == NULL);
	if (released) {
		ASSERT(req->template_name == NULL);
		ASSERT(req->net == NULL);
	} else {
		ASSERT_STREQ(req->template_name, "host");
		ASSERT_STREQ(req->net, "none");
	}
	ASSERT_EQ(req->limits.wall_ms, HUTCH_DEFAULT_WALL_MS);
	ASSERT_EQ(req->limits.cpu_ms, 0);
	ASSERT_EQ(req->limits.memory_bytes, HUTCH_DEFAULT_MEMORY);
	ASSERT_EQ(req->limits.pids, HUTCH_DEFAULT_PIDS);
	ASSERT_EQ(req->limits.output_bytes, HUTCH_DEFAULT_OUTPUT);
	ASSERT_EQ(req->limits.file_bytes, HUTCH_DEFAULT_FILE);
	ASSERT_EQ(req->limits.disk_bytes, HUTCH_DEFAULT_DISK);
	ASSERT(req->limits.cpus == 0);
	ASSERT(!req->limits.output_kill);
	ASSERT(!req->want_cold);
}

/* Decoding fails with `code` and a message containing `needle`; the request
 * is left released, holding no memory. */
static void json_fails(const char *text, int code, const char *needle)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	if (from_json(&req, text, &err) != -1)
		TAP_FAIL("accepted: %s", text);
	if (err.code != code)
		TAP_FAIL("code %d (%s), want %d, for: %s", err.code, err.msg, code, text);
	if (!strstr(err.msg, needle))
		TAP_FAIL("message \"%s\" lacks \"%s\", for: %s", err.msg, needle, text);
	assert_defaults(&req, true);
	hutch_request_release(&req);
}

static void json_ok(const char *text)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	if (from_json(&req, text, &err) != 0)
		TAP_FAIL("rejected (%s): %s", err.msg, text);
	hutch_request_release(&req);
}

static bool has_str(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static const char full_request[] =
	"{\n"
	"  \"language\": \"python\",\n"
	"  \"code\": \"print(input())\\n\",\n"
	"  \"stdin\": \"hi\\n\",\n"
	"  \"files\": [\n"
	"    {\"path\": \"data/in.txt\", \"content\": \"x,y\\n\", \"mode\": 420},\n"
	"    {\"path\": \"/workspace/bin.dat\", \"content_base64\": \"AAEC/w==\"},\n"
	"    {\"path\": \"run.sh\", \"mode\": 493}\n"
	"  ],\n"
	"  \"env\": {\"FOO\": \"bar\", \"EMPTY\": \"\", \"EQ\": \"a=b\"},\n"
	"  \"labels\": {\"team\": \"ml\", \"run\": \"7\"},\n"
	"  \"workdir\": \"/workspace/data\",\n"
	"  \"template\": \"host\",\n"
	"  \"network\": \"none\",\n"
	"  \"session_id\": \"sess_1\",\n"
	"  \"limits\": {\"wall_ms\": 5000, \"cpu_ms\": 2000, \"memory_bytes\": 268435456,\n"
	"             \"pids\": 64, \"output_bytes\": 65536, \"file_bytes\": 1048576,\n"
	"             \"disk_bytes\": 16777216, \"cpus\": 1.5, \"output_limit_kill\": true},\n"
	"  \"cold\": true\n"
	"}\n";

static void test_request_json_full_request(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	if (from_json(&req, full_request, &err) != 0)
		TAP_FAIL("rejected: %s", err.msg);
	ASSERT_STREQ(req.language, "python");
	ASSERT_EQ(req.code_len, 15);
	ASSERT_STREQ(req.code, "print(input())\n");
	ASSERT(req.argv == NULL);
	ASSERT_EQ(req.stdin_len, 3);
	ASSERT(memcmp(req.stdin_data, "hi\n", 3) == 0);
	ASSERT_EQ(req.nfiles, 3);
	ASSERT_STREQ(req.files[0].path, "data/in.txt");
	ASSERT_EQ(req.files[0].len, 4);
	ASSERT(memcmp(req.files[0].data, "x,y\n", 4) == 0);
	ASSERT_EQ(req.files[0].mode, 0644);
	ASSERT_STREQ(req.files[1].path, "/workspace/bin.dat");
	ASSERT_EQ(req.files[1].len, 4);
	ASSERT(memcmp(req.files[1].data, "\x00\x01\x02\xff", 4) == 0);
	ASSERT_EQ(req.files[1].mode, 0644); /* the default */
	ASSERT_STREQ(req.files[2].path, "run.sh");
	ASSERT_EQ(req.files[2].len, 0);
	ASSERT(req.files[2].data != NULL);
	ASSERT_EQ(req.files[2].mode, 0755);
	ASSERT_EQ(req.nenv, 3);
	ASSERT(has_str(req.env, req.nenv, "FOO=bar"));
	ASSERT(has_str(req.env, req.nenv, "EMPTY="));
	ASSERT(has_str(req.env, req.nenv, "EQ=a=b"));
	ASSERT_EQ(req.nlabels, 2);
	ASSERT(has_str(req.labels, req.nlabels, "team=ml"));
	ASSERT(has_str(req.labels, req.nlabels, "run=7"));
	ASSERT_STREQ(req.workdir, "/workspace/data");
	ASSERT_STREQ(req.template_name, "host");
	ASSERT_STREQ(req.net, "none");
	ASSERT_STREQ(req.session_id, "sess_1");
	ASSERT_EQ(req.limits.wall_ms, 5000);
	ASSERT_EQ(req.limits.cpu_ms, 2000);
	ASSERT_EQ(req.limits.memory_bytes, 256u << 20);
	ASSERT_EQ(req.limits.pids, 64);
	ASSERT_EQ(req.limits.output_bytes, 65536);
	ASSERT_EQ(req.limits.file_bytes, 1 << 20);
	ASSERT_EQ(req.limits.disk_bytes, 16 << 20);
	ASSERT(req.limits.cpus == 1.5);
	ASSERT(req.limits.output_kill);
	ASSERT(req.want_cold);
	ASSERT_OK(hutch_request_validate(&req, &err));
	hutch_request_release(&req);
	assert_defaults(&req, true);
}

static void test_request_json_argv_request(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	ASSERT_OK(from_json(&req, "{\"argv\": [\"python3\", \"-c\", \"print(1)\", \"\"]}", &err));
	ASSERT(req.language == NULL);
	ASSERT_STREQ(req.argv[0], "python3");
	ASSERT_STREQ(req.argv[1], "-c");
	ASSERT_STREQ(req.argv[2], "print(1)");
	ASSERT_STREQ(req.argv[3], "");
	ASSERT(req.argv[4] == NULL);
	/* defaults stay */
	ASSERT_EQ(req.limits.wall_ms, HUTCH_DEFAULT_WALL_MS);
	ASSERT_STREQ(req.template_name, "host");
	hutch_request_release(&req);
}

static void test_request_json_code_keeps_nul_free_bytes(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	ASSERT_OK(from_json(&req,
			    "{\"language\": \"python3\", \"code\": \"caf\\u00e9 \\ud83d\\ude00\"}",
			    &err));
	ASSERT_STREQ(req.code, "caf\xc3\xa9 \xf0\x9f\x98\x80");
	ASSERT_EQ(req.code_len, 10);
	hutch_request_release(&req);
}

static void test_request_json_input_need_not_be_terminated(void)
{
	static const char text[] = "{\"argv\": [\"true\"]}trailing garbage";
	struct hutch_exec_request req;
	struct hutch_err err = {0};
	size_t len = strlen("{\"argv\": [\"true\"]}");
	char *copy = malloc(len);

	memcpy(copy, text, len);
	hutch_request_init(&req);
	ASSERT_OK(hutch_request_from_json(&req, copy, len, &err));
	ASSERT_STREQ(req.argv[0], "true");
	hutch_request_release(&req);
	ASSERT_ERR(hutch_request_from_json(&req, text, sizeof(text) - 1, &err), err, EINVAL);
	free(copy);
}

static void test_request_json_malformed_gives_position(void)
{
	json_fails("{\"language\": \"python\",\n \"code\": }", EINVAL, "line 2, column");
	json_fails("{\"argv\": [\"x\",]}", EINVAL, "line 1, column");
	json_fails("", EINVAL, "malformed JSON");
	json_fails("{", EINVAL, "malformed JSON");
	json_fails("{} x", EINVAL, "malformed JSON");
	json_fails("{\"argv\": [\"\xff\"]}", EINVAL, "malformed JSON"); /* not UTF-8 */
	json_fails("{'argv': ['x']}", EINVAL, "malformed JSON");
}

static void test_request_json_rejects_non_objects(void)
{
	json_fails("[]", EINVAL, "must be a JSON object");
	json_fails("[{\"argv\": [\"x\"]}]", EINVAL, "must be a JSON object");
	json_fails("null", EINVAL, "");
	json_fails("\"argv\"", EINVAL, "");
}

static void test_request_json_unknown_fields_named(void)
{
	json_fails("{\"argv\": [\"x\"], \"timeout\": 5}", EINVAL, "unknown field 'timeout'");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"foo\": 1}}", EINVAL,
		   "unknown field 'limits.foo'");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"wall\": 1}}", EINVAL,
		   "unknown field 'limits.wall'");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"perm\": 1}]}", EINVAL,
		   "unknown field 'files[0].perm'");
	json_fails("{\"argv\": [\"x\"], \"Language\": \"python\"}", EINVAL,
		   "unknown field 'Language'");
}

static void test_request_json_wrong_types_named(void)
{
	json_fails("{\"language\": 1, \"code\": \"x\"}", EINVAL, "'language' must be a string");
	json_fails("{\"language\": \"python\", \"code\": [\"x\"]}", EINVAL,
		   "'code' must be a string");
	json_fails("{\"argv\": \"ls -l\"}", EINVAL, "'argv' must be an array");
	json_fails("{\"argv\": [\"ls\", 1]}", EINVAL, "'argv[1]' must be a string");
	json_fails("{\"argv\": [\"x\"], \"stdin\": 1}", EINVAL, "'stdin' must be a string");
	json_fails("{\"argv\": [\"x\"], \"env\": [\"A=b\"]}", EINVAL, "'env' must be an object");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"A\": 1}}", EINVAL, "'env.A' must be a string");
	json_fails("{\"argv\": [\"x\"], \"labels\": {\"k\": null}}", EINVAL,
		   "'labels.k' must be a string");
	json_fails("{\"argv\": [\"x\"], \"files\": {}}", EINVAL, "'files' must be an array");
	json_fails("{\"argv\": [\"x\"], \"files\": [\"a\"]}", EINVAL,
		   "'files[0]' must be an object");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": 3}]}", EINVAL,
		   "'files[0].path' must be a string");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"mode\": \"644\"}]}", EINVAL,
		   "'files[0].mode' must be an integer");
	json_fails("{\"argv\": [\"x\"], \"limits\": 5}", EINVAL, "'limits' must be an object");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": \"5s\"}}", EINVAL,
		   "'limits.wall_ms' must be an integer");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"pids\": 1.5}}", EINVAL,
		   "'limits.pids' must be an integer");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"cpus\": \"2\"}}", EINVAL,
		   "'limits.cpus' must be a number");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"output_limit_kill\": 1}}", EINVAL,
		   "'limits.output_limit_kill' must be true or false");
	json_fails("{\"argv\": [\"x\"], \"cold\": \"yes\"}", EINVAL,
		   "'cold' must be true or false");
	json_fails("{\"argv\": [\"x\"], \"workdir\": null}", EINVAL, "'workdir' must be a string");
	json_fails("{\"argv\": [\"x\"], \"network\": false}", EINVAL, "'network' must be a string");
}

static void test_request_json_negative_limits(void)
{
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": -1}}", EINVAL,
		   "'limits.wall_ms' may not be negative");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"memory_bytes\": -1048576}}", EINVAL,
		   "'limits.memory_bytes' may not be negative");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"mode\": -1}]}", EINVAL,
		   "'files[0].mode' may not be negative");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"cpus\": -0.5}}", EINVAL, "limits.cpus");
}

static void test_request_json_limits_out_of_range(void)
{
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": 0}}", EINVAL,
		   "limits.wall_ms: 0");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": 86400001}}", EINVAL,
		   "limits.wall_ms");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"memory_bytes\": 4194303}}", EINVAL,
		   "limits.memory_bytes");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"pids\": 0}}", EINVAL, "limits.pids");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"output_bytes\": 0}}", EINVAL,
		   "limits.output_bytes");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"disk_bytes\": 0}}", EINVAL,
		   "limits.disk_bytes");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"cpus\": 1025}}", EINVAL, "limits.cpus");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"mode\": 4096}]}", EINVAL,
		   "files[0].mode");
	/* beyond what a JSON integer holds here */
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": 18446744073709551616}}", EINVAL,
		   "malformed JSON");
	json_ok("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": 1, \"memory_bytes\": 4194304, "
		"\"pids\": 1, \"output_bytes\": 1, \"disk_bytes\": 65536, \"file_bytes\": 0, "
		"\"cpu_ms\": 0, \"cpus\": 0}}");
	json_ok("{\"argv\": [\"x\"], \"limits\": {\"wall_ms\": 86400000, \"cpus\": 1024}}");
}

static void test_request_json_duplicate_keys(void)
{
	json_fails("{\"argv\": [\"x\"], \"argv\": [\"y\"]}", EINVAL, "duplicate");
	json_fails("{\"argv\": [\"x\"], \"limits\": {\"pids\": 1, \"pids\": 2}}", EINVAL,
		   "duplicate");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"A\": \"1\", \"A\": \"2\"}}", EINVAL,
		   "duplicate");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"path\": \"b\"}]}", EINVAL,
		   "duplicate");
}

static void test_request_json_base64_content(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	ASSERT_OK(from_json(&req, "{\"argv\": [\"cat\"], \"stdin_base64\": \"AP8KAA==\"}", &err));
	ASSERT_EQ(req.stdin_len, 4);
	ASSERT(memcmp(req.stdin_data, "\x00\xff\n\x00", 4) == 0);
	hutch_request_release(&req);
	ASSERT_OK(from_json(&req, "{\"argv\": [\"cat\"], \"stdin_base64\": \"\"}", &err));
	ASSERT_EQ(req.stdin_len, 0);
	hutch_request_release(&req);
	json_fails("{\"argv\": [\"cat\"], \"stdin_base64\": \"AP8\"}", EINVAL,
		   "'stdin_base64' is not valid base64");
	json_fails("{\"argv\": [\"cat\"], \"stdin_base64\": \"AP8K AA==\"}", EINVAL,
		   "'stdin_base64' is not valid base64");
	json_fails(
		"{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"content_base64\": \"!!!!\"}]}",
		EINVAL, "'files[0].content_base64' is not valid base64");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\", \"content\": \"x\", "
		   "\"content_base64\": \"eA==\"}]}",
		   EINVAL, "not both");
}

static void test_request_json_stdin_and_stdin_base64_conflict(void)
{
	json_fails("{\"argv\": [\"cat\"], \"stdin\": \"a\", \"stdin_base64\": \"Yg==\"}", EINVAL,
		   "not both");
	json_fails("{\"argv\": [\"cat\"], \"stdin_base64\": \"Yg==\", \"stdin\": \"\"}", EINVAL,
		   "not both");
}

static void test_request_json_nul_bytes_rejected(void)
{
	json_fails("{\"argv\": [\"a\\u0000b\"]}", EINVAL, "");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"A\": \"1\\u0000\"}}", EINVAL, "");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"A\\u0000B\": \"1\"}}", EINVAL, "");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\\u0000b\"}]}", EINVAL, "");
	json_fails("{\"argv\": [\"x\"], \"workdir\": \"\\u0000\"}", EINVAL, "");
}

static void test_request_json_file_paths_stay_in_workspace(void)
{
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"../etc/passwd\"}]}", EINVAL,
		   "files[0]");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"/etc/passwd\"}]}", EINVAL,
		   "files[0]");
	json_fails(
		"{\"argv\": [\"x\"], \"files\": [{\"path\": \"ok\"}, {\"path\": \"a/../../b\"}]}",
		EINVAL, "files[1]");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"/workspacex/a\"}]}", EINVAL,
		   "files[0]");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"\"}]}", EINVAL, "files[0]");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"content\": \"x\"}]}", EINVAL,
		   "'files[0].path' is required");
	json_fails("{\"argv\": [\"x\"], \"files\": [{\"path\": \"a\"}, {\"path\": "
		   "\"/workspace/a\"}]}",
		   EINVAL, "given twice");
	json_fails("{\"language\": \"python\", \"code\": \"\", \"files\": [{\"path\": "
		   "\"main.py\"}]}",
		   EINVAL, "where the code goes");
	json_fails("{\"argv\": [\"x\"], \"workdir\": \"/tmp\"}", EINVAL, "workdir");
	json_fails("{\"argv\": [\"x\"], \"workdir\": \"..\"}", EINVAL, "workdir");
	json_ok("{\"argv\": [\"x\"], \"workdir\": \"/workspace\"}");
	json_ok("{\"argv\": [\"x\"], \"workdir\": \"sub/\"}");
}

static void test_request_json_policy_values(void)
{
	json_fails("{\"argv\": [\"x\"], \"network\": \"wide\"}", EINVAL, "'wide'");
	json_ok("{\"argv\": [\"x\"], \"network\": \"full\"}");
	json_ok("{\"argv\": [\"x\"], \"network\": \"full\", \"network_allow_private\": true}");
	json_fails("{\"argv\": [\"x\"], \"network_allow_private\": true}", EINVAL,
		   "applies only to network 'full'");
	json_fails("{\"argv\": [\"x\"], \"network\": \"full\", \"network_allow_private\": 1}",
		   EINVAL, "network_allow_private");
	json_fails("{\"argv\": [\"x\"], \"network\": \"allow:\"}", EINVAL, "at least one");
	json_fails("{\"argv\": [\"x\"], \"network\": \"allow:exa mple.com\"}", EINVAL,
		   "not a domain");
	json_fails("{\"argv\": [\"x\"], \"template\": \"python\"}", EINVAL,
		   "template 'python' does not exist");
	json_fails("{\"argv\": [\"x\"], \"template\": \"\"}", EINVAL, "template");
	json_fails("{\"language\": \"cobol\", \"code\": \"x\"}", EINVAL, "language 'cobol'");
	json_fails("{\"language\": \"python\"}", EINVAL, "needs code");
	json_fails("{\"code\": \"print(1)\", \"argv\": [\"x\"]}", EINVAL, "without a language");
	json_fails("{}", EINVAL, "nothing to run");
	json_fails("{\"argv\": []}", EINVAL, "nothing to run");
	json_fails("{\"argv\": [\"\"]}", EINVAL, "nothing to run");
}

static void test_request_json_env_names(void)
{
	json_fails("{\"argv\": [\"x\"], \"env\": {\"1A\": \"x\"}}", EINVAL, "1A=x");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"A-B\": \"x\"}}", EINVAL, "A-B=x");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"A=B\": \"x\"}}", EINVAL, "'env.A=B': bad name");
	json_fails("{\"argv\": [\"x\"], \"env\": {\"\": \"x\"}}", EINVAL, "bad name");
	json_fails("{\"argv\": [\"x\"], \"labels\": {\"a=b\": \"x\"}}", EINVAL, "bad name");
	json_ok("{\"argv\": [\"x\"], \"env\": {\"_a1\": \"x\"}, \"labels\": {\"a-b.c\": \"x\"}}");
}

static void test_request_json_too_many_entries(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	hutch_buf_puts(&b, "{\"argv\": [\"x\"");
	for (int i = 0; i < 65536; i++)
		hutch_buf_puts(&b, ",\"a\"");
	hutch_buf_puts(&b, "]}");
	json_fails(b.data, E2BIG, "'argv' has too many entries");
	hutch_buf_release(&b);

	hutch_buf_puts(&b, "{\"argv\": [\"x\"], \"files\": [{}");
	for (int i = 0; i < 4096; i++)
		hutch_buf_puts(&b, ",{}");
	hutch_buf_puts(&b, "]}");
	json_fails(b.data, E2BIG, "'files' has more than 4096 entries");
	hutch_buf_release(&b);
}

static void test_request_json_files_over_disk_limit(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	hutch_buf_puts(&b, "{\"argv\": [\"x\"], \"limits\": {\"disk_bytes\": 65536}, \"files\": "
			   "[{\"path\": \"a\", \"content\": \"");
	for (int i = 0; i < 65537; i++)
		hutch_buf_puts(&b, "x");
	hutch_buf_puts(&b, "\"}]}");
	json_fails(b.data, ENOSPC, "limits.disk_bytes");
	hutch_buf_release(&b);
}

static void test_request_json_deep_nesting_is_bounded(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	hutch_buf_puts(&b, "{\"argv\": [\"x\"], \"labels\": ");
	for (int i = 0; i < 100000; i++)
		hutch_buf_puts(&b, "[");
	for (int i = 0; i < 100000; i++)
		hutch_buf_puts(&b, "]");
	hutch_buf_puts(&b, "}");
	json_fails(b.data, EINVAL, "malformed JSON");
	hutch_buf_release(&b);
}

/* Failures half-way through leave nothing behind (LSan and valgrind check
 * the leaks; this checks the state). */
static void test_request_release_after_partial_parse(void)
{
	json_fails("{\"argv\": [\"a\", \"b\", 3]}", EINVAL, "argv[2]");
	json_fails("{\"argv\": [\"a\"], \"files\": [{\"path\": \"a\", \"content\": \"x\"}, "
		   "{\"path\": \"b\", \"content\": \"y\", \"mode\": true}]}",
		   EINVAL, "files[1].mode");
	json_fails("{\"argv\": [\"a\"], \"env\": {\"A\": \"1\", \"B\": \"2\", \"C\": 3}}", EINVAL,
		   "env.C");
	json_fails("{\"language\": \"python\", \"code\": \"x\", \"stdin\": \"in\", \"labels\": "
		   "{\"a\": \"b\"}, \"session_id\": \"s\", \"workdir\": \"w\", \"template\": "
		   "\"host\", \"network\": \"none\", \"bogus\": 1}",
		   EINVAL, "unknown field 'bogus'");
	/* validation fails after a complete parse */
	json_fails("{\"language\": \"python\", \"code\": \"x\", \"stdin\": \"in\", \"labels\": "
		   "{\"a\": \"b\"}, \"env\": {\"A\": \"1\"}, \"files\": [{\"path\": \"f\"}], "
		   "\"network\": \"wide\"}",
		   EINVAL, "network policy");
}

static void test_request_json_reuse_releases_previous(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	ASSERT_OK(from_json(&req, full_request, &err));
	ASSERT_OK(from_json(&req, "{\"argv\": [\"true\"]}", &err));
	ASSERT(req.language == NULL);
	ASSERT_EQ(req.nfiles, 0);
	ASSERT_EQ(req.nenv, 0);
	ASSERT_EQ(req.limits.wall_ms, HUTCH_DEFAULT_WALL_MS);
	ASSERT_OK(from_json(&req, full_request, &err));
	ASSERT_STREQ(req.template_name, "host"); /* decoding gives the defaults */
	ASSERT_STREQ(req.net, "none");
	ASSERT_ERR(from_json(&req, "{\"argv\": 1}", &err), err, EINVAL);
	assert_defaults(&req, true);
	hutch_request_release(&req);
	hutch_request_release(&req); /* twice is fine */
	assert_defaults(&req, true);
	/* a released request can be used again */
	ASSERT_OK(from_json(&req, "{\"argv\": [\"true\"], \"template\": \"host\"}", &err));
	ASSERT_STREQ(req.net, "none");
	hutch_request_release(&req);
}

static void test_request_api_builders(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};
	char *const argv[] = {"echo", "hi", NULL};

	hutch_request_init(&req);
	assert_defaults(&req, false);
	ASSERT_OK(hutch_request_set_code(&req, "python3", "print(1)\0junk", 8));
	ASSERT_STREQ(req.language, "python");
	ASSERT_STREQ(req.code, "print(1)");
	ASSERT_EQ(req.code_len, 8);
	ASSERT_OK(hutch_request_set_code(&req, "js", "1", 1));
	ASSERT_STREQ(req.language, "node");
	errno = 0;
	ASSERT_EQ(hutch_request_set_code(&req, "cobol", "x", 1), -1);
	ASSERT_EQ(errno, EINVAL);
	ASSERT_STREQ(req.language, "node"); /* unchanged */
	hutch_request_set_argv(&req, argv);
	hutch_request_set_argv(&req, argv);
	ASSERT_STREQ(req.argv[1], "hi");
	ASSERT(req.argv[2] == NULL);
	ASSERT_OK(hutch_request_add_env(&req, "A=b=c", &err));
	ASSERT_OK(hutch_request_add_env(&req, "_X=", &err));
	ASSERT_ERR(hutch_request_add_env(&req, "1X=y", &err), err, EINVAL);
	ASSERT_ERR(hutch_request_add_env(&req, "NOVALUE", &err), err, EINVAL);
	ASSERT_ERR(hutch_request_add_env(&req, "=x", &err), err, EINVAL);
	ASSERT_EQ(req.nenv, 2);
	hutch_request_add_file(&req, "data.bin", "\0\1", 2, 0600);
	ASSERT_EQ(req.nfiles, 1);
	ASSERT_EQ(req.files[0].len, 2);
	ASSERT(memcmp(req.files[0].data, "\0\1", 2) == 0);
	ASSERT_OK(hutch_request_validate(&req, &err));
	hutch_request_release(&req);
	assert_defaults(&req, true);
	/* released: NULL template and net are the defaults and validate */
	hutch_request_set_argv(&req, argv);
	ASSERT_OK(hutch_request_validate(&req, &err));
	hutch_request_release(&req);
}

/* init then release, over and over, leaves nothing allocated (this fails
 * without sanitizers too; LSan and valgrind check the rest of the file) */
static void test_request_release_holds_no_memory(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};
	struct mallinfo2 before;
	struct mallinfo2 after;

	/* warm up first: chunks glibc keeps in its per-thread cache count as
	 * in use; a leak of init's two strings costs >= 64 bytes a cycle */
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			before = mallinfo2();
		for (int i = 0; i < 1000; i++) {
			hutch_request_init(&req);
			hutch_request_release(&req);
			ASSERT(req.template_name == NULL && req.net == NULL);
			hutch_request_init(&req);
			ASSERT_OK(from_json(&req, full_request, &err));
			hutch_request_release(&req);
		}
	}
	after = mallinfo2();
	if (after.uordblks > before.uordblks + 16000)
		TAP_FAIL("%zu bytes more in use after 1000 init/release cycles",
			 after.uordblks - before.uordblks);
}

static void test_request_validate_direct(void)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};
	char *const argv[] = {"true", NULL};

	hutch_request_init(&req);
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "nothing to run");
	hutch_request_set_argv(&req, argv);
	ASSERT_OK(hutch_request_validate(&req, &err));

	req.stdin_len = HUTCH_MAX_STDIN + 1;
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EFBIG);
	req.stdin_len = 0;

	req.limits.cpus = NAN;
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "limits.cpus");
	req.limits.cpus = 0;

	req.limits.file_bytes = (1ull << 44) + 1;
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "limits.file_bytes");
	req.limits.file_bytes = HUTCH_DEFAULT_FILE;

	hutch_request_add_file(&req, "x", "", 0, 010000);
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "files[0]");
	req.files[0].mode = 0644;
	hutch_request_add_file(&req, "/workspace/x", "", 0, 0644);
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "given twice");
	hutch_request_release(&req);
}

static void test_request_files_clash_and_scale(void)
{
	struct hutch_exec_request req;
	struct hutch_err err;
	char *const argv[] = {"true", NULL};
	char path[32];
	struct timespec t0;
	struct timespec t1;

	hutch_request_init(&req);
	hutch_request_set_argv(&req, argv);
	hutch_request_add_file(&req, "dir", "", 0, 0644);
	hutch_request_add_file(&req, "dir/inner", "", 0, 0644);
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "is a file, so files[1] cannot be inside it");
	hutch_request_release(&req);

	/* 4096 files validate in well under a second (it used to be quadratic) */
	hutch_request_init(&req);
	hutch_request_set_argv(&req, argv);
	for (int i = 0; i < 4096; i++) {
		snprintf(path, sizeof(path), "d%d/f%d", i % 64, i);
		hutch_request_add_file(&req, path, "x", 1, 0644);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_OK(hutch_request_validate(&req, &err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
	hutch_request_add_file(&req, "d3/f3", "", 0, 0644);
	ASSERT_ERR(hutch_request_validate(&req, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "files[4096]: '/workspace/d3/f3' given twice");
	hutch_request_release(&req);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_request_files_clash_and_scale),
	TAP_CASE(test_request_json_full_request),
	TAP_CASE(test_request_json_argv_request),
	TAP_CASE(test_request_json_code_keeps_nul_free_bytes),
	TAP_CASE(test_request_json_input_need_not_be_terminated),
	TAP_CASE(test_request_json_malformed_gives_position),
	TAP_CASE(test_request_json_rejects_non_objects),
	TAP_CASE(test_request_json_unknown_fields_named),
	TAP_CASE(test_request_json_wrong_types_named),
	TAP_CASE(test_request_json_negative_limits),
	TAP_CASE(test_request_json_limits_out_of_range),
	TAP_CASE(test_request_json_duplicate_keys),
	TAP_CASE(test_request_json_base64_content),
	TAP_CASE(test_request_json_stdin_and_stdin_base64_conflict),
	TAP_CASE(test_request_json_nul_bytes_rejected),
	TAP_CASE(test_request_json_file_paths_stay_in_workspace),
	TAP_CASE(test_request_json_policy_values),
	TAP_CASE(test_request_json_env_names),
	TAP_CASE(test_request_json_too_many_entries),
	TAP_CASE(test_request_json_files_over_disk_limit),
	TAP_CASE(test_request_json_deep_nesting_is_bounded),
	TAP_CASE(test_request_release_after_partial_parse),
	TAP_CASE(test_request_json_reuse_releases_previous),
	TAP_CASE(test_request_release_holds_no_memory),
	TAP_CASE(test_request_api_builders),
	TAP_CASE(test_request_validate_direct),
	TAP_END,
};

TAP_MAIN(cases)

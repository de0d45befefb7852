/* Unit tests for src/run/result.c: the ExecResult's JSON form, parsed back
 * with jansson. */
#include <errno.h>
#include <jansson.h>

#include "tap.h"
#include "hutch.h"
#include "util/text.h"

static json_t *to_json(const struct hutch_exec_result *res)
{
	json_error_t jerr;
	char *text = hutch_result_to_json(res);
	json_t *o;

	ASSERT(text != NULL);
	o = json_loads(text, JSON_ALLOW_NUL, &jerr);
	if (!o)
		TAP_FAIL("result is not JSON (%s): %s", jerr.text, text);
	free(text);
	ASSERT(json_is_object(o));
	return o;
}

/* The value at a dotted path ("limits.wall_ms.value"); fails if missing. */
static json_t *at(json_t *o, const char *path)
{
	char buf[128];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		if (!json_is_object(o))
			TAP_FAIL("'%s': '%s' is not inside an object", path, k);
		o = json_object_get(o, k);
		if (!o)
			TAP_FAIL("field '%s' is missing", path);
	}
	return o;
}

static long long int_at(json_t *o, const char *path)
{
	json_t *v = at(o, path);

	if (!json_is_integer(v))
		TAP_FAIL("field '%s' is not an integer", path);
	return json_integer_value(v);
}

static const char *str_at(json_t *o, const char *path)
{
	json_t *v = at(o, path);

	if (!json_is_string(v))
		TAP_FAIL("field '%s' is not a string", path);
	return json_string_value(v);
}

static void set_output(struct hutch_output *out, const char *data, size_t len)
{
	out->data = malloc(len + 1);
	memcpy(out->data, data, len);
	out->data[len] = '\0';
	out->len = len;
	out->total = len;
}

/* A plausible finished run of `print("hello")`. */
static void make_result(struct hutch_exec_result *res)
{
	memset(res, 0, sizeof(*res));
	snprintf(res->id, sizeof(res->id), "exe_0123456789abcdef");
	snprintf(res->session_id, sizeof(res->session_id), "sess_1");
	snprintf(res->path, sizeof(res->path), "cold");
	res->status = HUTCH_STATUS_OK;
	set_output(&res->out, "hello\n", 6);
	set_output(&res->err, "", 0);
	res->wall_ms = 12;
	res->cpu_ms = 7;
	res->peak_memory_bytes = 1234567;
	res->bytes_written = 42;
	res->timings = (struct hutch_timings){101, 202, 303, 404};
	res->limits =
		(struct hutch_limits){30000, 0, 512u << 20, 128, 1u << 20, 1u << 30, 1u << 30};
	res->enforced.wall = HUTCH_MECH_SUPERVISOR;
	res->enforced.cpu = HUTCH_MECH_NONE;
	res->enforced.memory = HUTCH_MECH_CGROUP_V1;
	res->enforced.pids = HUTCH_MECH_CGROUP_V2;
	res->enforced.output = HUTCH_MECH_SUPERVISOR;
	res->enforced.file = HUTCH_MECH_RLIMIT;
	res->enforced.disk = HUTCH_MECH_TMPFS;
	res->labels = calloc(1, sizeof(char *));
	res->labels[0] = strdup("team=ml");
	res->nlabels = 1;
}

static void test_result_json_has_every_field(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "id"), "exe_0123456789abcdef");
	ASSERT_STREQ(str_at(o, "session_id"), "sess_1");
	ASSERT_STREQ(str_at(o, "path"), "cold");
	ASSERT_STREQ(str_at(o, "status"), "ok");
	ASSERT_EQ(int_at(o, "exit_code"), 0);
	ASSERT(json_is_null(at(o, "signal")));
	ASSERT(json_is_null(at(o, "limit_hit")));
	ASSERT_STREQ(str_at(o, "stdout"), "hello\n");
	ASSERT_STREQ(str_at(o, "stderr"), "");
	ASSERT(json_is_false(at(o, "stdout_truncated")));
	ASSERT(json_is_false(at(o, "stderr_truncated")));
	ASSERT_EQ(int_at(o, "stdout_bytes"), 6);
	ASSERT_EQ(int_at(o, "stderr_bytes"), 0);
	ASSERT_EQ(int_at(o, "wall_ms"), 12);
	ASSERT_EQ(int_at(o, "cpu_ms"), 7);
	ASSERT_EQ(int_at(o, "peak_memory_bytes"), 1234567);
	ASSERT_EQ(int_at(o, "bytes_written"), 42);
	ASSERT_EQ(int_at(o, "timings.acquire_us"), 101);
	ASSERT_EQ(int_at(o, "timings.setup_us"), 202);
	ASSERT_EQ(int_at(o, "timings.run_us"), 303);
	ASSERT_EQ(int_at(o, "timings.teardown_us"), 404);
	ASSERT_EQ(int_at(o, "limits.wall_ms.value"), 30000);
	ASSERT_STREQ(str_at(o, "limits.wall_ms.enforced_by"), "supervisor");
	ASSERT_EQ(int_at(o, "limits.cpu_ms.value"), 0);
	ASSERT_STREQ(str_at(o, "limits.cpu_ms.enforced_by"), "none");
	ASSERT_EQ(int_at(o, "limits.memory_bytes.value"), 512 << 20);
	ASSERT_STREQ(str_at(o, "limits.memory_bytes.enforced_by"), "cgroup v1");
	ASSERT_EQ(int_at(o, "limits.pids.value"), 128);
	ASSERT_STREQ(str_at(o, "limits.pids.enforced_by"), "cgroup v2");
	ASSERT_EQ(int_at(o, "limits.output_bytes.value"), 1 << 20);
	ASSERT_STREQ(str_at(o, "limits.output_bytes.enforced_by"), "supervisor");
	ASSERT_EQ(int_at(o, "limits.file_bytes.value"), 1 << 30);
	ASSERT_STREQ(str_at(o, "limits.file_bytes.enforced_by"), "rlimit");
	ASSERT_EQ(int_at(o, "limits.disk_bytes.value"), 1 << 30);
	ASSERT_STREQ(str_at(o, "limits.disk_bytes.enforced_by"), "tmpfs size");
	ASSERT(json_is_false(at(o, "limits.output_limit_kill")));
	ASSERT(json_object_get(at(o, "limits"), "cpus") == NULL);
	ASSERT(json_object_get(at(o, "limits"), "note") == NULL);
	ASSERT(json_is_array(at(o, "egress")));
	ASSERT_EQ(json_array_size(at(o, "egress")), 0);
	ASSERT(json_is_null(at(o, "error")));
	ASSERT_STREQ(str_at(o, "labels.team"), "ml");
	/* only when they apply */
	ASSERT(json_object_get(o, "sandbox_error") == NULL);
	ASSERT(json_object_get(o, "stdout_base64") == NULL);
	ASSERT(json_object_get(o, "stderr_base64") == NULL);
	ASSERT(json_object_get(o, "stdout_truncation") == NULL);
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_status_names(void)
{
	static const struct {
		enum hutch_status status;
		const char *name;
	} names[] = {
		{HUTCH_STATUS_OK, "ok"},
		{HUTCH_STATUS_ERROR, "error"},
		{HUTCH_STATUS_TIMEOUT, "timeout"},
		{HUTCH_STATUS_OOM, "oom"},
		{HUTCH_STATUS_OUTPUT_LIMIT, "output_limit"},
		{HUTCH_STATUS_KILLED, "killed"},
		{HUTCH_STATUS_SANDBOX_ERROR, "sandbox_error"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct hutch_exec_result res;
		json_t *o;

		ASSERT_STREQ(hutch_status_name(names[i].status), names[i].name);
		make_result(&res);
		res.status = names[i].status;
		o = to_json(&res);
		ASSERT_STREQ(str_at(o, "status"), names[i].name);
		ASSERT_EQ(json_object_get(o, "sandbox_error") != NULL,
			  names[i].status == HUTCH_STATUS_SANDBOX_ERROR);
		json_decref(o);
		hutch_result_release(&res);
	}
	ASSERT_STREQ(hutch_status_name((enum hutch_status)99), "unknown");
	ASSERT_STREQ(hutch_mech_name(HUTCH_MECH_NONE), "none");
	ASSERT_STREQ(hutch_mech_name((enum hutch_mech)99), "unknown");
}

static void test_result_json_killed_by_signal(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	res.status = HUTCH_STATUS_TIMEOUT;
	res.exit_code = -1;
	res.signal = 9;
	snprintf(res.limit_hit, sizeof(res.limit_hit), "wall_time");
	o = to_json(&res);
	ASSERT(json_is_null(at(o, "exit_code")));
	ASSERT_EQ(int_at(o, "signal"), 9);
	ASSERT_STREQ(str_at(o, "limit_hit"), "wall_time");
	ASSERT_STREQ(str_at(o, "status"), "timeout");
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_sandbox_error(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	res.status = HUTCH_STATUS_SANDBOX_ERROR;
	res.exit_code = -1;
	snprintf(res.failed_step, sizeof(res.failed_step), "mount");
	res.failed_errno = ENOENT;
	snprintf(res.failed_msg, sizeof(res.failed_msg), "mount '/x': No such file or directory");
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "status"), "sandbox_error");
	ASSERT_STREQ(str_at(o, "sandbox_error.step"), "mount");
	ASSERT_EQ(int_at(o, "sandbox_error.errno"), ENOENT);
	ASSERT_STREQ(str_at(o, "sandbox_error.code"), "ENOENT");
	ASSERT_STREQ(str_at(o, "sandbox_error.message"), "mount '/x': No such file or directory");
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_runtime_error(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	res.status = HUTCH_STATUS_ERROR;
	res.exit_code = 1;
	res.error_type = strdup("ZeroDivisionError");
	res.error_message = strdup("division by zero");
	res.error_traceback = strdup("Traceback (most recent call last):\nZeroDivisionError: "
				     "division by zero");
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "error.type"), "ZeroDivisionError");
	ASSERT_STREQ(str_at(o, "error.message"), "division by zero");
	ASSERT_CONTAINS(str_at(o, "error.traceback"), "Traceback");
	json_decref(o);
	free(res.error_message);
	res.error_message = NULL;
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "error.message"), "");
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_invalid_utf8_output_has_base64(void)
{
	static const char bytes[] = "a\xff\0b\xe2\x82";
	struct hutch_exec_result res;
	json_t *o;
	json_t *s;
	size_t len = 0;
	unsigned char *raw;

	make_result(&res);
	free(res.out.data);
	set_output(&res.out, bytes, sizeof(bytes) - 1);
	o = to_json(&res);
	s = at(o, "stdout");
	ASSERT(json_is_string(s));
	ASSERT_EQ(json_string_length(s), 12);
	ASSERT(memcmp(json_string_value(s), "a\xef\xbf\xbd\0b\xef\xbf\xbd\xef\xbf\xbd", 12) == 0);
	raw = hutch_base64_decode(str_at(o, "stdout_base64"), strlen(str_at(o, "stdout_base64")),
				  &len);
	ASSERT(raw != NULL);
	ASSERT_EQ(len, sizeof(bytes) - 1);
	ASSERT(memcmp(raw, bytes, len) == 0);
	ASSERT_EQ(int_at(o, "stdout_bytes"), 6);
	ASSERT(json_object_get(o, "stderr_base64") == NULL);
	free(raw);
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_valid_output_with_nul_is_a_string(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	free(res.err.data);
	set_output(&res.err, "x\0y\n", 4);
	o = to_json(&res);
	ASSERT_EQ(json_string_length(at(o, "stderr")), 4);
	ASSERT(memcmp(str_at(o, "stderr"), "x\0y\n", 4) == 0);
	ASSERT(json_object_get(o, "stderr_base64") == NULL);
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_missing_output_is_empty(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	free(res.out.data);
	free(res.err.data);
	memset(&res.out, 0, sizeof(res.out));
	memset(&res.err, 0, sizeof(res.err));
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "stdout"), "");
	ASSERT_STREQ(str_at(o, "stderr"), "");
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_truncated_output(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	free(res.out.data);
	set_output(&res.out, "abcde\n[hutch: 16 bytes omitted]\nvwxyz", 37);
	res.out.total = 26;
	res.out.head = 5;
	res.out.tail = 5;
	res.out.truncated = true;
	res.status = HUTCH_STATUS_OUTPUT_LIMIT;
	o = to_json(&res);
	ASSERT(json_is_true(at(o, "stdout_truncated")));
	ASSERT_EQ(int_at(o, "stdout_bytes"), 26);
	ASSERT_EQ(int_at(o, "stdout_truncation.head_bytes"), 5);
	ASSERT_EQ(int_at(o, "stdout_truncation.tail_bytes"), 5);
	ASSERT_EQ(int_at(o, "stdout_truncation.omitted_bytes"), 16);
	ASSERT_CONTAINS(str_at(o, "stdout"), "[hutch: 16 bytes omitted]");
	ASSERT(json_is_false(at(o, "stderr_truncated")));
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_cpus_and_note(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	res.limits.cpus = 1.5;
	res.limits.output_kill = true;
	res.enforced.cpus = HUTCH_MECH_CGROUP_V2;
	snprintf(res.enforced.note, sizeof(res.enforced.note), "no cgroup: running rootless");
	o = to_json(&res);
	ASSERT(json_real_value(at(o, "limits.cpus.value")) == 1.5);
	ASSERT_STREQ(str_at(o, "limits.cpus.enforced_by"), "cgroup v2");
	ASSERT_STREQ(str_at(o, "limits.note"), "no cgroup: running rootless");
	ASSERT(json_is_true(at(o, "limits.output_limit_kill")));
	json_decref(o);
	hutch_result_release(&res);
}

/* Text that comes from the program or the kernel may not be UTF-8: the
 * field must stay, with U+FFFD for the bad bytes. */
static void test_result_json_non_utf8_text_fields_stay(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	res.status = HUTCH_STATUS_SANDBOX_ERROR;
	res.error_type = strdup("ValueError");
	res.error_message = strdup("bad \xff byte");
	res.error_traceback = strdup("Traceback (most recent call last):\nValueError: bad \xff");
	snprintf(res.failed_step, sizeof(res.failed_step), "mount");
	snprintf(res.failed_msg, sizeof(res.failed_msg), "mount '/tmp/caf\xe9': No such file");
	/* a session id cut after the first byte of a 2-byte character */
	snprintf(res.session_id, sizeof(res.session_id), "%.38s\xc3", "sess_");
	snprintf(res.enforced.note, sizeof(res.enforced.note), "cgroup '\xfe'");
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "error.type"), "ValueError");
	ASSERT_STREQ(str_at(o, "error.message"), "bad \xef\xbf\xbd byte");
	ASSERT_CONTAINS(str_at(o, "error.traceback"), "ValueError: bad \xef\xbf\xbd");
	ASSERT_STREQ(str_at(o, "sandbox_error.message"),
		     "mount '/tmp/caf\xef\xbf\xbd': No such file");
	ASSERT_STREQ(str_at(o, "session_id"), "sess_\xef\xbf\xbd");
	ASSERT_STREQ(str_at(o, "limits.note"), "cgroup '\xef\xbf\xbd'");
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_json_labels(void)
{
	struct hutch_exec_result res;
	json_t *o;

	make_result(&res);
	res.labels = realloc(res.labels, 4 * sizeof(char *));
	res.labels[1] = strdup("k=v=w");
	res.labels[2] = strdup("no-equals");
	res.labels[3] = strdup("bad=\xff");
	res.nlabels = 4;
	o = to_json(&res);
	ASSERT_STREQ(str_at(o, "labels.team"), "ml");
	ASSERT_STREQ(str_at(o, "labels.k"), "v=w");
	ASSERT_EQ(json_object_size(at(o, "labels")), 2);
	json_decref(o);
	hutch_result_release(&res);
}

static void test_result_release_resets(void)
{
	struct hutch_exec_result res;

	make_result(&res);
	res.error_type = strdup("E");
	hutch_result_release(&res);
	ASSERT(res.out.data == NULL);
	ASSERT(res.err.data == NULL);
	ASSERT(res.error_type == NULL);
	ASSERT(res.labels == NULL);
	ASSERT_EQ(res.nlabels, 0);
	ASSERT_EQ(res.exit_code, -1);
	hutch_result_release(&res); /* twice is fine */
}

static const struct tap_case cases[] = {
	TAP_CASE(test_result_json_has_every_field),
	TAP_CASE(test_result_json_status_names),
	TAP_CASE(test_result_json_killed_by_signal),
	TAP_CASE(test_result_json_sandbox_error),
	TAP_CASE(test_result_json_runtime_error),
	TAP_CASE(test_result_json_invalid_utf8_output_has_base64),
	TAP_CASE(test_result_json_valid_output_with_nul_is_a_string),
	TAP_CASE(test_result_json_missing_output_is_empty),
	TAP_CASE(test_result_json_truncated_output),
	TAP_CASE(test_result_json_cpus_and_note),
	TAP_CASE(test_result_json_non_utf8_text_fields_stay),
	TAP_CASE(test_result_json_labels),
	TAP_CASE(test_result_release_resets),
	TAP_END,
};

TAP_MAIN(cases)

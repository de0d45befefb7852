#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "hutch.h"
#include "util/text.h"

/* The ExecResult's JSON form: the contract documented in docs/api.md. */

const char *hutch_status_name(enum hutch_status status)
{
	switch (status) {
	case HUTCH_STATUS_OK:
		return "ok";
	case HUTCH_STATUS_ERROR:
		return "error";
	case HUTCH_STATUS_TIMEOUT:
		return "timeout";
	case HUTCH_STATUS_OOM:
		return "oom";
	case HUTCH_STATUS_OUTPUT_LIMIT:
		return "output_limit";
	case HUTCH_STATUS_KILLED:
		return "killed";
	case HUTCH_STATUS_SANDBOX_ERROR:
		return "sandbox_error";
	}
	return "unknown";
}

const char *hutch_mech_name(enum hutch_mech mech)
{
	switch (mech) {
	case HUTCH_MECH_NONE:
		return "none";
	case HUTCH_MECH_CGROUP_V1:
		return "cgroup v1";
	case HUTCH_MECH_CGROUP_V2:
		return "cgroup v2";
	case HUTCH_MECH_RLIMIT:
		return "rlimit";
	case HUTCH_MECH_TMPFS:
		return "tmpfs size";
	case HUTCH_MECH_SUPERVISOR:
		return "supervisor";
	case HUTCH_MECH_IMAGE:
		return "ext4 image";
	}
	return "unknown";
}

/* Output as a JSON string; invalid UTF-8 becomes U+FFFD in the string and
 * the exact bytes also go, base64-encoded, in "<name>_base64". */
static void put_output(json_t *o, const char *name, const struct hutch_output *out)
{
	char key[64];

	if (hutch_utf8_valid(out->data ? out->data : "", out->len)) {
		json_object_set_new(o, name, json_stringn(out->data ? out->data : "", out->len));
	} else {
		size_t len;
		char *clean = hutch_utf8_sanitize(out->data, out->len, &len);
		char *b64 = hutch_base64_encode(out->data, out->len);
		json_object_set_new(o, name, json_stringn(clean, len));
		snprintf(key, sizeof(key), "%s_base64", name);
		json_object_set_new(o, key, json_string(b64));
		free(clean);
		free(b64);
	}
	snprintf(key, sizeof(key), "%s_truncated", name);
	json_object_set_new(o, key, json_boolean(out->truncated));
	snprintf(key, sizeof(key), "%s_bytes", name);
	json_object_set_new(o, key, json_integer((json_int_t)out->total));
	if (out->truncated) {
		snprintf(key, sizeof(key), "%s_truncation", name);
		json_object_set_new(o, key,
				    json_pack("{s:I,s:I,s:I}", "head_bytes", (json_int_t)out->head,
					      "tail_bytes", (json_int_t)out->tail, "omitted_bytes",
					      (json_int_t)(out->total - out->head - out->tail)));
	}
}

/* Text that may not be UTF-8 (a runtime's stderr, a kernel path, a copy cut
 * mid-character): json_string() would return NULL and the field would vanish,
 * so invalid bytes become U+FFFD. */
static json_t *text_json(const char *s)
{
	size_t len;
	char *clean;
	json_t *j;

	if (hutch_utf8_valid(s, strlen(s)))
		return json_string(s);
	clean = hutch_utf8_sanitize(s, strlen(s), &len);
	j = json_stringn(clean, len);
	free(clean);
	return j;
}

static json_t *limit_entry(uint64_t value, enum hutch_mech mech)
{
	return json_pack("{s:I,s:s}", "value", (json_int_t)value, "enforced_by",
			 hutch_mech_name(mech));
}

static json_t *limits_json(const struct hutch_exec_result *res)
{
	const struct hutch_limits *l = &res->limits;
	const struct hutch_enforced *e = &res->enforced;
	json_t *o = json_object();

	json_object_set_new(o, "wall_ms", limit_entry(l->wall_ms, e->wall));
	json_object_set_new(o, "cpu_ms", limit_entry(l->cpu_ms, e->cpu));
	json_object_set_new(o, "memory_bytes", limit_entry(l->memory_bytes, e->memory));
	json_object_set_new(o, "pids", limit_entry(l->pids, e->pids));
	json_object_set_new(o, "output_bytes", limit_entry(l->output_bytes, e->output));
	json_object_set_new(o, "file_bytes", limit_entry(l->file_bytes, e->file));
	json_object_set_new(o, "disk_bytes", limit_entry(l->disk_bytes, e->disk));
	if (l->cpus > 0)
		json_object_set_new(o, "cpus",
				    json_pack("{s:f,s:s}", "value", l->cpus, "enforced_by",
					      hutch_mech_name(e->cpus)));
	json_object_set_new(o, "output_limit_kill", json_boolean(l->output_kill));
	if (l->idle_output_ms)
		json_object_set_new(o, "idle_output_ms",
				    limit_entry(l->idle_output_ms, HUTCH_MECH_SUPERVISOR));
	/* the egress proxy's caps, when the request set them */
	if (l->net_connections)
		json_object_set_new(o, "net_connections",
				    limit_entry(l->net_connections, HUTCH_MECH_SUPERVISOR));
	if (l->net_bytes_out)
		json_object_set_new(o, "net_bytes_out",
				    limit_entry(l->net_bytes_out, HUTCH_MECH_SUPERVISOR));
	if (l->net_bytes_in)
		json_object_set_new(o, "net_bytes_in",
				    limit_entry(l->net_bytes_in, HUTCH_MECH_SUPERVISOR));
	if (e->note[0])
		json_object_set_new(o, "note", text_json(e->note));
	return o;
}

static json_t *nullable_int(long long v, long long none)
{
	return v == none ? json_null() : json_integer(v);
}

static json_t *nullable_str(const char *s)
{
	return s && *s ? text_json(s) : json_null();
}

static void put_errors(json_t *o, const struct hutch_exec_result *res)
{
	if (res->status == HUTCH_STATUS_SANDBOX_ERROR)
		json_object_set_new(o, "sandbox_error",
				    json_pack("{s:o,s:i,s:s,s:o}", "step",
					      text_json(res->failed_step), "errno",
					      res->failed_errno, "code",
					      strerrorname_np(res->failed_errno)
						      ? strerrorname_np(res->failed_errno)
						      : "",
					      "message", text_json(res->failed_msg)));
	if (res->error_type)
		json_object_set_new(
			o, "error",
			json_pack("{s:o,s:o,s:o}", "type", text_json(res->error_type), "message",
				  text_json(res->error_message ? res->error_message : ""),
				  "traceback",
				  text_json(res->error_traceback ? res->error_traceback : "")));
	else
		json_object_set_new(o, "error", json_null());
}

static json_t *labels_json(const struct hutch_exec_result *res)
{
	json_t *o = json_object();

	for (size_t i = 0; i < res->nlabels; i++) {
		const char *eq = strchr(res->labels[i], '=');
		if (!eq)
			continue;
		char *key = strndup(res->labels[i], (size_t)(eq - res->labels[i]));
		if (key && hutch_utf8_valid(key, strlen(key)) &&
		    hutch_utf8_valid(eq + 1, strlen(eq + 1)))
			json_object_set_new(o, key, json_string(eq + 1));
		free(key);
	}
	return o;
}

char *hutch_result_to_json(const struct hutch_exec_result *res)
{
	json_t *o = json_object();
	char *text;

	json_object_set_new(o, "id", json_string(res->id));
	json_object_set_new(o, "session_id", nullable_str(res->session_id));
	json_object_set_new(o, "path", json_string(res->path[0] ? res->path : "cold"));
	json_object_set_new(o, "status", json_string(hutch_status_name(res->status)));
	json_object_set_new(o, "exit_code", nullable_int(res->exit_code, -1));
	json_object_set_new(o, "signal", nullable_int(res->signal, 0));
	json_object_set_new(o, "limit_hit", nullable_str(res->limit_hit));
	put_output(o, "stdout", &res->out);
	put_output(o, "stderr", &res->err);
	json_object_set_new(o, "wall_ms", json_integer((json_int_t)res->wall_ms));
	json_object_set_new(o, "cpu_ms", json_integer((json_int_t)res->cpu_ms));
	json_object_set_new(o, "peak_memory_bytes",
			    json_integer((json_int_t)res->peak_memory_bytes));
	json_object_set_new(o, "bytes_written", json_integer((json_int_t)res->bytes_written));
	json_object_set_new(o, "timings",
			    json_pack("{s:I,s:I,s:I,s:I}", "acquire_us",
				      (json_int_t)res->timings.acquire_us, "setup_us",
				      (json_int_t)res->timings.setup_us, "run_us",
				      (json_int_t)res->timings.run_us, "teardown_us",
				      (json_int_t)res->timings.teardown_us));
	json_object_set_new(o, "limits", limits_json(res));
	json_t *egress = res->egress_json ? json_loads(res->egress_json, 0, NULL) : NULL;
	json_object_set_new(o, "egress", json_is_array(egress) ? egress : json_array());
	if (egress && !json_is_array(egress))
		json_decref(egress);
	put_errors(o, res);
	json_object_set_new(o, "labels", labels_json(res));
	if (res->extra_json) {
		json_t *extra = json_loads(res->extra_json, 0, NULL);
		if (json_is_object(extra))
			json_object_update(o, extra);
		json_decref(extra);
	}
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

void hutch_result_release(struct hutch_exec_result *res)
{
	free(res->out.data);
	free(res->err.data);
	free(res->error_type);
	free(res->error_message);
	free(res->error_traceback);
	free(res->extra_json);
	free(res->egress_json);
	for (size_t i = 0; i < res->nlabels; i++)
		free(res->labels[i]);
	free(res->labels);
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
}

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/reqlog.h"
#include "util/time.h"

static void copy_member(json_t *dst, json_t *src, const char *key, const char *as)
{
	json_t *v = json_object_get(src, key);

	if (v && !json_is_null(v))
		json_object_set(dst, as ? as : key, v);
}

/* What of a result may be logged: ids, status, labels, timings, usage. */
static void add_result(json_t *line, json_t *res)
{
	json_t *usage = json_object();

	copy_member(line, res, "id", "execution_id");
	copy_member(line, res, "status", "exec_status");
	copy_member(line, res, "labels", NULL);
	copy_member(line, res, "timings", NULL);
	copy_member(usage, res, "wall_ms", NULL);
	copy_member(usage, res, "cpu_ms", NULL);
	copy_member(usage, res, "peak_memory_bytes", NULL);
	copy_member(usage, res, "bytes_written", NULL);
	if (json_object_size(usage))
		json_object_set(line, "usage", usage);
	json_decref(usage);
	if (!json_object_get(line, "session_id")) {
		json_t *sess = json_object_get(res, "session");
		copy_member(line, json_is_object(sess) ? sess : res,
			    json_is_object(sess) ? "id" : "session_id", "session_id");
	}
}

void hutch_reqlog_write(const struct hutch_reqlog *r)
{
	json_t *line = json_pack(
		"{s:s,s:s,s:s,s:s,s:i,s:s,s:I}", "msg", "http", "request_id", r->request_id,
		"method", r->method, "route", r->route ? r->route : "", "status", r->status, "key",
		r->key ? r->key : "", "duration_us", (json_int_t)(hutch_now_us() - r->started_us));
	char *text;

	if (!line)
		return;
	if (r->session_id && *r->session_id)
		json_object_set_new(line, "session_id", json_string(r->session_id));
	if (r->error)
		json_object_set_new(line, "error", json_string(r->error));
	if (json_is_object(r->result))
		add_result(line, r->result);
	text = json_dumps(line, JSON_COMPACT);
	json_decref(line);
	if (text) {
		size_t n = strlen(text);
		text[n] = '\n'; /* one write: lines of concurrent requests never interleave */
		(void)!write(STDERR_FILENO, text, n + 1);
		free(text);
	}
}

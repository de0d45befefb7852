#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "hutch.h"
#include "util/text.h"

/* ExecRequest to JSON: the form hutch_request_from_json reads (docs/api.md).
 * Bytes that may not be UTF-8 (code, stdin, file contents) go base64'd when
 * they are not valid text. */

static void put_bytes(json_t *o, const char *key, const char *b64key, const void *data, size_t len)
{
	if (hutch_utf8_valid(data, len)) {
		json_object_set_new(o, key, json_stringn(data, len));
	} else {
		char *b = hutch_base64_encode(data, len);
		json_object_set_new(o, b64key, json_string(b));
		free(b);
	}
}

static json_t *kv_object(char **list, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(list[i], '=');
		if (!eq)
			continue;
		char *key = strndup(list[i], (size_t)(eq - list[i]));
		if (key)
			json_object_set_new(o, key, json_string(eq + 1));
		free(key);
	}
	return o;
}

static json_t *limits_json(const struct hutch_limits *l)
{
	json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "wall_ms",
			      (json_int_t)l->wall_ms, "cpu_ms", (json_int_t)l->cpu_ms,
			      "memory_bytes", (json_int_t)l->memory_bytes, "pids",
			      (json_int_t)l->pids, "output_bytes", (json_int_t)l->output_bytes,
			      "file_bytes", (json_int_t)l->file_bytes, "disk_bytes",
			      (json_int_t)l->disk_bytes, "output_limit_kill", l->output_kill);
	if (o && l->cpus > 0)
		json_object_set_new(o, "cpus", json_real(l->cpus));
	if (o && l->idle_output_ms)
		json_object_set_new(o, "idle_output_ms",
				    json_integer((json_int_t)l->idle_output_ms));
	if (o && l->net_connections)
		json_object_set_new(o, "net_connections",
				    json_integer((json_int_t)l->net_connections));
	if (o && l->net_bytes_out)
		json_object_set_new(o, "net_bytes_out", json_integer((json_int_t)l->net_bytes_out));
	if (o && l->net_bytes_in)
		json_object_set_new(o, "net_bytes_in", json_integer((json_int_t)l->net_bytes_in));
	return o;
}

char *hutch_request_to_json(const struct hutch_exec_request *req)
{
	json_t *o = json_object();
	char *text;

	if (req->language)
		json_object_set_new(o, "language", json_string(req->language));
	if (req->code && req->language)
		put_bytes(o, "code", "code_base64", req->code, req->code_len);
	if (req->argv) {
		json_t *a = json_array();
		for (size_t i = 0; req->argv[i]; i++)
			json_array_append_new(a, json_string(req->argv[i]));
		json_object_set_new(o, "argv", a);
	}
	if (req->stdin_len)
		put_bytes(o, "stdin", "stdin_base64", req->stdin_data, req->stdin_len);
	if (req->nfiles) {
		json_t *a = json_array();
		for (size_t i = 0; i < req->nfiles; i++) {
			json_t *f = json_pack("{s:s,s:i}", "path", req->files[i].path, "mode",
					      (int)req->files[i].mode);
			put_bytes(f, "content", "content_base64", req->files[i].data,
				  req->files[i].len);
			json_array_append_new(a, f);
		}
		json_object_set_new(o, "files", a);
	}
	if (req->nenv)
		json_object_set_new(o, "env", kv_object(req->env, req->nenv));
	if (req->nlabels)
		json_object_set_new(o, "labels", kv_object(req->labels, req->nlabels));
	if (req->workdir)
		json_object_set_new(o, "workdir", json_string(req->workdir));
	if (req->template_name)
		json_object_set_new(o, "template", json_string(req->template_name));
	if (req->net)
		json_object_set_new(o, "network", json_string(req->net));
	if (req->session_id)
		json_object_set_new(o, "session_id", json_string(req->session_id));
	if (req->net_allow_private)
		json_object_set_new(o, "network_allow_private", json_true());
	if (req->want_cold)
		json_object_set_new(o, "cold", json_true());
	json_object_set_new(o, "limits", limits_json(&req->limits));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "hutch.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/text.h"

/*
 * ExecRequest from JSON (docs/api.md). Pure: no I/O, no globals; jansson
 * bounds nesting depth. Every error names the field. Unknown fields are
 * errors, so a typo ("timeout" for "limits.wall_ms") is never ignored.
 */

static int type_error(struct hutch_err *err, const char *field, const char *want)
{
	return hutch_err_setx(err, EINVAL, "field '%s' must be %s", field, want);
}

/* A string without NUL bytes (for argv, env, paths). */
static int get_cstr(json_t *v, const char *field, char **out, struct hutch_err *err)
{
	if (!json_is_string(v))
		return type_error(err, field, "a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return hutch_err_setx(err, EINVAL, "field '%s' contains a NUL byte", field);
	free(*out);
	*out = hutch_xstrdup(json_string_value(v));
	return 0;
}

/* Bytes from "x" (UTF-8 text) or "x_base64". */
static int get_bytes(json_t *v, const char *field, bool is_b64, unsigned char **data, size_t *len,
		     struct hutch_err *err)
{
	if (!json_is_string(v))
		return type_error(err, field, "a string");
	if (is_b64) {
		unsigned char *d =
			hutch_base64_decode(json_string_value(v), json_string_length(v), len);
		if (!d)
			return hutch_err_setx(err, EINVAL, "field '%s' is not valid base64", field);
		free(*data);
		*data = d;
		return 0;
	}
	free(*data);
	*len = json_string_length(v);
	*data = hutch_xmemdup(json_string_value(v), *len);
	return 0;
}

static int get_u64(json_t *v, const char *field, uint64_t *out, struct hutch_err *err)
{
	if (!json_is_integer(v))
		return type_error(err, field, "an integer");
	if (json_integer_value(v) < 0)
		return hutch_err_setx(err, EINVAL, "field '%s' may not be negative", field);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_limits(json_t *o, struct hutch_limits *l, struct hutch_err *err)
{
	static const struct {
		const char *name;
		size_t offset;
	} ints[] = {
		{"wall_ms", offsetof(struct hutch_limits, wall_ms)},
		{"cpu_ms", offsetof(struct hutch_limits, cpu_ms)},
		{"memory_bytes", offsetof(struct hutch_limits, memory_bytes)},
		{"pids", offsetof(struct hutch_limits, pids)},
		{"output_bytes", offsetof(struct hutch_limits, output_bytes)},
		{"file_bytes", offsetof(struct hutch_limits, file_bytes)},
		{"disk_bytes", offsetof(struct hutch_limits, disk_bytes)},
		{"idle_output_ms", offsetof(struct hutch_limits, idle_output_ms)},
		{"net_connections", offsetof(struct hutch_limits, net_connections)},
		{"net_bytes_out", offsetof(struct hutch_limits, net_bytes_out)},
		{"net_bytes_in", offsetof(struct hutch_limits, net_bytes_in)},
	};
	const char *key;
	json_t *v;
	char field[64];

	if (!json_is_object(o))
		return type_error(err, "limits", "an object");
	json_object_foreach(o, key, v)
	{
		bool known = false;
		snprintf(field, sizeof(field), "limits.%.40s", key);
		for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
			if (strcmp(key, ints[i].name) != 0)
				continue;
			known = true;
			if (get_u64(v, field, (uint64_t *)((char *)l + ints[i].offset), err) < 0)
				return -1;
		}
		if (strcmp(key, "cpus") == 0) {
			known = true;
			if (!json_is_number(v) || !isfinite(json_number_value(v)))
				return type_error(err, field, "a number");
			l->cpus = json_number_value(v);
		} else if (strcmp(key, "output_limit_kill") == 0) {
			known = true;
			if (!json_is_boolean(v))
				return type_error(err, field, "true or false");
			l->output_kill = json_is_true(v);
		}
		if (!known)
			return hutch_err_setx(err, EINVAL, "unknown field '%s'", field);
	}
	return 0;
}

static int parse_string_map(json_t *o, const char *name, char ***list, size_t *n,
			    struct hutch_err *err)
{
	const char *key;
	json_t *v;
	char field[96];

	if (!json_is_object(o))
		return type_error(err, name, "an object of strings");
	json_object_foreach(o, key, v)
	{
		char *value = NULL;
		snprintf(field, sizeof(field), "%s.%.64s", name, key);
		if (strchr(key, '=') || !*key)
			return hutch_err_setx(err, EINVAL, "field '%s': bad name", field);
		if (get_cstr(v, field, &value, err) < 0)
			return -1;
		*list = hutch_xrealloc(*list, (*n + 1) * sizeof(char *));
		(*list)[(*n)++] = hutch_xasprintf("%s=%s", key, value);
		free(value);
	}
	return 0;
}

static int parse_argv(json_t *a, struct hutch_exec_request *req, struct hutch_err *err)
{
	size_t i;
	json_t *v;
	char field[32];

	if (!json_is_array(a))
		return type_error(err, "argv", "an array of strings");
	if (json_array_size(a) > 65536)
		return hutch_err_setx(err, E2BIG, "field 'argv' has too many entries");
	req->argv = hutch_xcalloc(json_array_size(a) + 1, sizeof(char *));
	json_array_foreach(a, i, v)
	{
		snprintf(field, sizeof(field), "argv[%zu]", i);
		if (get_cstr(v, field, &req->argv[i], err) < 0)
			return -1;
	}
	return 0;
}

static int parse_file(json_t *o, size_t idx, struct hutch_file *f, struct hutch_err *err)
{
	const char *key;
	json_t *v;
	char field[64];
	bool has_content = false;

	f->mode = 0644;
	if (!json_is_object(o))
		return hutch_err_setx(err, EINVAL, "field 'files[%zu]' must be an object", idx);
	json_object_foreach(o, key, v)
	{
		snprintf(field, sizeof(field), "files[%zu].%.32s", idx, key);
		if (strcmp(key, "path") == 0) {
			if (get_cstr(v, field, &f->path, err) < 0)
				return -1;
		} else if (strcmp(key, "content") == 0 || strcmp(key, "content_base64") == 0) {
			if (has_content)
				return hutch_err_setx(err, EINVAL,
						      "files[%zu]: give content or content_base64, "
						      "not both",
						      idx);
			has_content = true;
			if (get_bytes(v, field, key[7] == '_', &f->data, &f->len, err) < 0)
				return -1;
		} else if (strcmp(key, "mode") == 0) {
			uint64_t mode = 0;
			if (get_u64(v, field, &mode, err) < 0)
				return -1;
			if (mode > 07777)
				return hutch_err_setx(err, EINVAL, "field '%s': not a mode", field);
			f->mode = (unsigned int)mode;
		} else {
			return hutch_err_setx(err, EINVAL, "unknown field '%s'", field);
		}
	}
	if (!f->path)
		return hutch_err_setx(err, EINVAL, "field 'files[%zu].path' is required", idx);
	if (!f->data)
		f->data = hutch_xmalloc(1);
	return 0;
}

static int parse_files(json_t *a, struct hutch_exec_request *req, struct hutch_err *err)
{
	size_t i;
	json_t *v;

	if (!json_is_array(a))
		return type_error(err, "files", "an array of objects");
	if (json_array_size(a) > 4096)
		return hutch_err_setx(err, E2BIG, "field 'files' has more than 4096 entries");
	req->files = hutch_xcalloc(json_array_size(a) + 1, sizeof(*req->files));
	json_array_foreach(a, i, v)
	{
		req->nfiles = i + 1;
		if (parse_file(v, i, &req->files[i], err) < 0)
			return -1;
	}
	return 0;
}

static int parse_field(const char *key, json_t *v, struct hutch_exec_request *req,
		       struct hutch_err *err)
{
	if (strcmp(key, "language") == 0)
		return get_cstr(v, key, &req->language, err);
	if (strcmp(key, "code") == 0 || strcmp(key, "code_base64") == 0) {
		unsigned char *code = NULL;
		if (req->code)
			return hutch_err_setx(err, EINVAL, "give code or code_base64, not both");
		if (get_bytes(v, key, key[4] == '_', &code, &req->code_len, err) < 0)
			return -1;
		free(req->code);
		req->code = hutch_xrealloc(code, req->code_len + 1);
		req->code[req->code_len] = '\0';
		return 0;
	}
	if (strcmp(key, "argv") == 0)
		return parse_argv(v, req, err);
	if (strcmp(key, "stdin") == 0 || strcmp(key, "stdin_base64") == 0) {
		/* keys are unique, so data already here came from the other one */
		if (req->stdin_data)
			return hutch_err_setx(err, EINVAL, "give stdin or stdin_base64, not both");
		return get_bytes(v, key, key[5] == '_', &req->stdin_data, &req->stdin_len, err);
	}
	if (strcmp(key, "files") == 0)
		return parse_files(v, req, err);
	if (strcmp(key, "env") == 0)
		return parse_string_map(v, "env", &req->env, &req->nenv, err);
	if (strcmp(key, "labels") == 0)
		return parse_string_map(v, "labels", &req->labels, &req->nlabels, err);
	if (strcmp(key, "workdir") == 0)
		return get_cstr(v, key, &req->workdir, err);
	if (strcmp(key, "template") == 0)
		return get_cstr(v, key, &req->template_name, err);
	if (strcmp(key, "network") == 0)
		return get_cstr(v, key, &req->net, err);
	if (strcmp(key, "session_id") == 0)
		return get_cstr(v, key, &req->session_id, err);
	if (strcmp(key, "limits") == 0)
		return parse_limits(v, &req->limits, err);
	if (strcmp(key, "network_allow_private") == 0) {
		if (!json_is_boolean(v))
			return type_error(err, key, "true or false");
		req->net_allow_private = json_is_true(v);
		return 0;
	}
	if (strcmp(key, "cold") == 0) {
		if (!json_is_boolean(v))
			return type_error(err, key, "true or false");
		req->want_cold = json_is_true(v);
		return 0;
	}
	return hutch_err_setx(err, EINVAL, "unknown field '%.64s'", key);
}

int hutch_request_from_json(struct hutch_exec_request *req, const char *text, size_t len,
			    struct hutch_err *err)
{
	json_error_t jerr;
	json_t *root;
	const char *key;
	json_t *v;
	int rc = 0;

	hutch_request_release(req);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return hutch_err_setx(err, EINVAL,
				      "malformed JSON at line %d, column %d (byte %d): %s",
				      jerr.line, jerr.column, jerr.position, jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return hutch_err_setx(err, EINVAL, "the request must be a JSON object");
	}
	hutch_request_init(req);
	json_object_foreach(root, key, v)
	{
		if ((rc = parse_field(key, v, req, err)) < 0)
			break;
	}
	json_decref(root);
	if (rc == 0)
		rc = hutch_request_validate(req, err);
	if (rc < 0)
		hutch_request_release(req);
	return rc;
}

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/mcp_internal.h"
#include "util/buf.h"

/*
 * What a model reads of a run: one text item, sections in the order a
 * person would look at them (output, value, error, then one status line),
 * plus the figures as images. The whole ExecResult rides along as
 * structuredContent for clients that read JSON.
 */

json_t *hutch_mcp_text(const char *text)
{
	return json_pack("{s:s,s:s}", "type", "text", "text", text ? text : "");
}

json_t *hutch_mcp_result(json_t *content, json_t *structured, bool is_error)
{
	json_t *r = json_pack("{s:o,s:b}", "content", content, "isError", is_error);

	if (structured)
		json_object_set_new(r, "structuredContent", structured);
	return r;
}

json_t *hutch_mcp_error_result(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hutch_mcp_result(json_pack("[o]", hutch_mcp_text(msg)), NULL, true);
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* "[name]" then the text, ending in a newline; nothing when empty. */
static void section(struct hutch_buf *b, const char *name, const char *text)
{
	size_t n = text ? strlen(text) : 0;

	if (!n)
		return;
	hutch_buf_printf(b, "[%s]\n", name);
	hutch_buf_append(b, text, n);
	if (text[n - 1] != '\n')
		hutch_buf_puts(b, "\n");
}

static void stream(struct hutch_buf *b, json_t *res, const char *name)
{
	char key[32];

	section(b, name, str(res, name));
	snprintf(key, sizeof(key), "%s_truncated", name);
	if (json_is_true(json_object_get(res, key))) {
		snprintf(key, sizeof(key), "%s_bytes", name);
		hutch_buf_printf(b,
				 "[%s truncated: %lld bytes written in all; head and tail kept]\n",
				 name, (long long)json_integer_value(json_object_get(res, key)));
	}
}

/* The runtime's error, unless the traceback already showed on stderr. */
static void error_section(struct hutch_buf *b, json_t *res)
{
	json_t *e = json_object_get(res, "error");
	const char *tb = str(e, "traceback");
	const char *err_text = str(res, "stderr");

	if (!json_is_object(e))
		return;
	hutch_buf_printf(b, "[error] %s: %s\n", str(e, "type") ?: "Error", str(e, "message") ?: "");
	if (tb && *tb && !(err_text && strstr(err_text, tb)))
		section(b, "traceback", tb);
}

/* wall_ms, or a session call's run time (its result leaves wall_ms 0) */
static json_int_t run_ms(json_t *res)
{
	json_int_t ms = json_integer_value(json_object_get(res, "wall_ms"));
	json_int_t us =
		json_integer_value(json_object_get(json_object_get(res, "timings"), "run_us"));

	return ms ? ms : us / 1000;
}

static void status_line(struct hutch_buf *b, json_t *res)
{
	json_t *code = json_object_get(res, "exit_code");
	json_t *sig = json_object_get(res, "signal");
	json_t *se = json_object_get(res, "sandbox_error");

	hutch_buf_printf(b, "[status: %s", str(res, "status") ?: "?");
	if (json_is_integer(code))
		hutch_buf_printf(b, ", exit code %lld", (long long)json_integer_value(code));
	if (json_is_integer(sig) && json_integer_value(sig) > 0)
		hutch_buf_printf(b, ", signal %lld", (long long)json_integer_value(sig));
	if (str(res, "limit_hit"))
		hutch_buf_printf(b, ", limit hit: %s", str(res, "limit_hit"));
	hutch_buf_printf(b, ", %lld ms]\n", (long long)run_ms(res));
	if (json_is_object(se))
		hutch_buf_printf(b, "[sandbox error at step '%s': %s]\n", str(se, "step") ?: "?",
				 str(se, "message") ?: "?");
	if (json_is_true(json_object_get(res, "kernel_restarted")))
		hutch_buf_puts(b, "[the session's kernel was restarted; its state is lost]\n");
	if (str(res, "note"))
		hutch_buf_printf(b, "[note: %s]\n", str(res, "note"));
}

/* An image item for a MIME bundle's PNG or JPEG, if it has one. */
static json_t *image_of(json_t *bundle)
{
	static const char *const mimes[] = {"image/png", "image/jpeg"};

	for (size_t i = 0; i < sizeof(mimes) / sizeof(mimes[0]); i++) {
		const char *data = str(bundle, mimes[i]);
		if (data)
			return json_pack("{s:s,s:s,s:s}", "type", "image", "data", data, "mimeType",
					 mimes[i]);
	}
	return NULL;
}

/* The value and each display: text/plain in the text, images as items. */
static void rich_outputs(struct hutch_buf *b, json_t *res, json_t *images)
{
	json_t *value = json_object_get(res, "value");
	json_t *d;
	json_t *img;
	size_t i;

	json_array_foreach(json_object_get(res, "display"), i, d)
	{
		char name[32];
		snprintf(name, sizeof(name), "display %zu", i + 1);
		section(b, name, str(d, "text/plain"));
		if ((img = image_of(d)))
			json_array_append_new(images, img);
	}
	if (json_is_object(value)) {
		section(b, "value", str(value, "text/plain"));
		if ((img = image_of(value)))
			json_array_append_new(images, img);
	}
}

json_t *hutch_mcp_exec_content(json_t *res)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	json_t *images = json_array();
	json_t *content;
	char *text;

	stream(&b, res, "stdout");
	stream(&b, res, "stderr");
	rich_outputs(&b, res, images);
	error_section(&b, res);
	status_line(&b, res);
	text = hutch_buf_detach(&b, NULL);
	content = json_pack("[o]", hutch_mcp_text(text));
	free(text);
	json_array_extend(content, images);
	json_decref(images);
	return content;
}

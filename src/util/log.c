#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

static enum hutch_log_level max_level = HUTCH_LOG_WARN;
static int json_lines;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void hutch_log_set_level(enum hutch_log_level level)
{
	max_level = level;
}

void hutch_log_set_json(int is_json)
{
	json_lines = is_json;
}

int hutch_log_parse_level(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

/* One line; fields (a JSON object, or NULL) join it: as members of the
 * JSON line, or as compact JSON after the text. */
static void emit_fields(enum hutch_log_level level, const char *msg, json_t *fields)
{
	if (json_lines) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		json_t *o = json_pack("{s:f,s:s,s:s}", "ts",
				      (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "level",
				      level_names[level], "msg", msg);
		if (o && json_is_object(fields))
			json_object_update_missing(o, fields);
		char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (line)
			fprintf(stderr, "%s\n", line);
		free(line);
		json_decref(o);
	} else {
		char *text = fields ? json_dumps(fields, JSON_COMPACT) : NULL;
		fprintf(stderr, "hutch: %s: %s%s%s\n", level_names[level], msg, text ? " " : "",
			text ? text : "");
		free(text);
	}
}

static void emit(enum hutch_log_level level, const char *msg)
{
	emit_fields(level, msg, NULL);
}

void hutch_log_event(enum hutch_log_level level, const char *msg, const void *fields)
{
	if (level <= max_level)
		emit_fields(level, msg, (json_t *)(uintptr_t)fields);
}

__attribute__((format(printf, 3, 0))) static void vlog(enum hutch_log_level level, int errnum,
						       const char *fmt, va_list ap)
{
	char msg[1024];
	int n;

	if (level > max_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (errnum && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(errnum));
	emit(level, msg);
}

void hutch_log(enum hutch_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, 0, fmt, ap);
	va_end(ap);
}

void hutch_log_errno(enum hutch_log_level level, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(level, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

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

static void emit(enum hutch_log_level level, const char *msg)
{
	if (json_lines) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		json_t *o = json_pack("{s:f,s:s,s:s}", "ts",
				      (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "level",
				      level_names[level], "msg", msg);
		char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (line)
			fprintf(stderr, "%s\n", line);
		free(line);
		json_decref(o);
	} else {
		fprintf(stderr, "hutch: %s: %s\n", level_names[level], msg);
	}
}

void hutch_log_event(enum hutch_log_level level, const char *msg, const void *fields)
{
	json_t *f = (json_t *)(uintptr_t)fields;

	if (level > max_level)
		return;
	if (json_lines) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		json_t *o = json_pack("{s:f,s:s,s:s}", "ts",
				      (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "level",
				      level_names[level], "msg", msg);
		if (o && json_is_object(f))
			json_object_update_missing(o, f);
		char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (line)
			fprintf(stderr, "%s\n", line);
		free(line);
		json_decref(o);
	} else {
		char *text = f ? json_dumps(f, JSON_COMPACT) : NULL;
		fprintf(stderr, "hutch: %s: %s %s\n", level_names[level], msg, text ? text : "");
		free(text);
	}
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

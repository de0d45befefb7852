/* Logging: one line per event on stderr, text or JSON lines. Never call in a
 * child after clone(); never log submitted code, stdin or env values. */
#ifndef HUTCH_UTIL_LOG_H
#define HUTCH_UTIL_LOG_H

enum hutch_log_level {
	HUTCH_LOG_ERROR,
	HUTCH_LOG_WARN,
	HUTCH_LOG_INFO,
	HUTCH_LOG_DEBUG,
};

void hutch_log_set_level(enum hutch_log_level level);
void hutch_log_set_json(int is_json);
/* Parse "error|warn|info|debug"; returns -1 when unknown. */
int hutch_log_parse_level(const char *s);

void hutch_log(enum hutch_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One structured event: in JSON lines, {"ts", "level", "msg", ...fields};
 * in text, "hutch: LEVEL: msg {fields as JSON}". fields is borrowed (an
 * object; opaque here so this header needs no JSON library). */
void hutch_log_event(enum hutch_log_level level, const char *msg, const void *fields);
/* As hutch_log, appending ": strerror(errno)". */
void hutch_log_errno(enum hutch_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

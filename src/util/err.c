#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

__attribute__((format(printf, 4, 0))) static void
vset(struct hutch_err *err, int code, bool with_strerror, const char *fmt, va_list ap)
{
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_strerror && code > 0) {
		size_t len = strlen(err->msg);
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(code));
	}
}

int hutch_err_set(struct hutch_err *err, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vset(err, code, true, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}

int hutch_err_setx(struct hutch_err *err, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vset(err, code, false, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}

int hutch_err_prefix(struct hutch_err *err, const char *fmt, ...)
{
	char old[sizeof(err->msg)];
	char prefix[sizeof(err->msg)];
	int saved = errno;
	va_list ap;

	if (!err)
		return -1;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	/* both parts fit in 256 bytes only together; truncation is fine here */
	size_t n = strnlen(prefix, sizeof(err->msg) - 1);
	memcpy(err->msg, prefix, n);
	if (n + 2 < sizeof(err->msg)) {
		memcpy(err->msg + n, ": ", 2);
		n += 2;
	}
	size_t rest = strnlen(old, sizeof(old));
	if (rest > sizeof(err->msg) - 1 - n)
		rest = sizeof(err->msg) - 1 - n;
	memcpy(err->msg + n, old, rest);
	err->msg[n + rest] = '\0';
	errno = saved;
	return -1;
}

const char *hutch_errno_name(int code)
{
	static __thread char buf[16];
	const char *name = strerrorname_np(code);

	if (name)
		return name;
	snprintf(buf, sizeof(buf), "E%d", code);
	return buf;
}

void hutch_die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("hutch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

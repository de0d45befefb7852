/* Errors in caller storage: an errno value plus one line of context.
 *
 * The struct is plain data (no pointers, no malloc) so it can be filled in a
 * child after clone() and sent whole through a pipe in one write (< PIPE_BUF).
 */
#ifndef HUTCH_UTIL_ERR_H
#define HUTCH_UTIL_ERR_H

#include "hutch.h"

/* Fill err with code and a formatted message; returns -1 so callers can
 * write `return hutch_err_set(err, errno, "open '%s'", path);`. errno is
 * preserved. err may be NULL. */
int hutch_err_set(struct hutch_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* As hutch_err_set, without appending strerror(code): for validation errors
 * whose message already says everything ("--memory: 'x' is not a number"). */
int hutch_err_setx(struct hutch_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepend context to an already filled err: "prefix: old message". Returns -1. */
int hutch_err_prefix(struct hutch_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Short symbolic name of an errno value ("EINVAL"), or "E<number>". */
const char *hutch_errno_name(int code);

/* Print "hutch: <msg>" to stderr and exit(status). Only for main(). */
_Noreturn void hutch_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define HUTCH_BUG(...)                                                                             \
	do {                                                                                       \
		hutch_die(70, "bug at %s:%d: %s", __FILE__, __LINE__, #__VA_ARGS__);               \
	} while (0)

#endif

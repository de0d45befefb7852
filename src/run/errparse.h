/* Structured errors from a language runtime's stderr. Pure (fuzzed). */
#ifndef HUTCH_RUN_ERRPARSE_H
#define HUTCH_RUN_ERRPARSE_H

#include <stdbool.h>
#include <stddef.h>

struct hutch_rt_error {
	char *type;	 /* "ZeroDivisionError" */
	char *message;	 /* "division by zero" */
	char *traceback; /* the whole traceback text, header to last line */
};

/* Find the last uncaught Python exception in stderr text (a traceback, or a
 * SyntaxError report, which has none). Fills e (caller frees the three
 * strings) and returns true when found. */
bool hutch_errparse_python(const char *s, size_t n, struct hutch_rt_error *e);

/* Same for Node.js ("TypeError: x" followed by "    at ..." frames). */
bool hutch_errparse_node(const char *s, size_t n, struct hutch_rt_error *e);

#endif

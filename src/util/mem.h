/* Allocation that cannot fail: out of memory aborts, as in git and Redis. */
#ifndef HUTCH_UTIL_MEM_H
#define HUTCH_UTIL_MEM_H

#include <stddef.h>

void *hutch_xmalloc(size_t n);
void *hutch_xcalloc(size_t n, size_t size);
void *hutch_xrealloc(void *p, size_t n);
char *hutch_xstrdup(const char *s);
char *hutch_xstrndup(const char *s, size_t n);
void *hutch_xmemdup(const void *p, size_t n);
char *hutch_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

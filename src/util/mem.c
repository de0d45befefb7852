#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static _Noreturn void oom(size_t n)
{
	fprintf(stderr, "hutch: out of memory allocating %zu bytes\n", n);
	abort();
}

void *hutch_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *hutch_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *hutch_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *hutch_xstrdup(const char *s)
{
	return hutch_xmemdup(s, strlen(s) + 1);
}

char *hutch_xstrndup(const char *s, size_t n)
{
	char *p = hutch_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *hutch_xmemdup(const void *p, size_t n)
{
	void *q = hutch_xmalloc(n);
	if (n)
		memcpy(q, p, n);
	return q;
}

char *hutch_xasprintf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		oom(0);
	va_end(ap);
	return s;
}

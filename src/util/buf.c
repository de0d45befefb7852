#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"

static void grow(struct hutch_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->data = hutch_xrealloc(b->data, cap);
	b->cap = cap;
}

void hutch_buf_append(struct hutch_buf *b, const void *p, size_t n)
{
	grow(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void hutch_buf_puts(struct hutch_buf *b, const char *s)
{
	hutch_buf_append(b, s, strlen(s));
}

void hutch_buf_printf(struct hutch_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_list ap2;
	int n;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0) {
		grow(b, (size_t)n);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
		b->len += (size_t)n;
	}
	va_end(ap2);
}

char *hutch_buf_detach(struct hutch_buf *b, size_t *len)
{
	char *p;

	grow(b, 0);
	b->data[b->len] = '\0'; /* grow() may have just allocated: nothing appended yet */
	p = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void hutch_buf_release(struct hutch_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

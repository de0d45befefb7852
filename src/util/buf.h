/* A growable byte buffer. Invariant: data[len] == '\0' whenever data != NULL,
 * so text can be used as a C string; binary data may contain NULs. */
#ifndef HUTCH_UTIL_BUF_H
#define HUTCH_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct hutch_buf {
	char *data;
	size_t len;
	size_t cap;
};

#define HUTCH_BUF_INIT                                                                             \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void hutch_buf_append(struct hutch_buf *b, const void *p, size_t n);
void hutch_buf_puts(struct hutch_buf *b, const char *s);
void hutch_buf_printf(struct hutch_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Give the bytes away (caller frees); the buffer becomes empty. Never NULL. */
char *hutch_buf_detach(struct hutch_buf *b, size_t *len);
void hutch_buf_release(struct hutch_buf *b);

#endif

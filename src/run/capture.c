#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/capture.h"
#include "util/buf.h"
#include "util/mem.h"

void hutch_capture_init(struct hutch_capture *c, int stream, uint64_t limit,
			const struct hutch_run_hooks *hooks)
{
	memset(c, 0, sizeof(*c));
	c->stream = stream;
	c->limit = limit;
	c->head_cap = (size_t)(limit - limit / 2);
	c->ring_cap = (size_t)(limit / 2);
	c->hooks = hooks && hooks->on_output ? hooks : NULL;
	/* Buffers grow with the output: a 1 MiB limit costs nothing for a
	 * program that prints one line. */
}

static void emit(struct hutch_capture *c, const char *buf, size_t len)
{
	if (c->hooks && c->hooks->every_byte)
		return; /* already given in hutch_capture_add */
	if (c->hooks && len)
		c->hooks->on_output(c->hooks->ctx, c->stream, buf, len);
	c->streamed += len;
}

void hutch_capture_add(struct hutch_capture *c, const char *buf, size_t len)
{
	if (c->hooks && c->hooks->every_byte && len)
		c->hooks->on_output(c->hooks->ctx, c->stream, buf, len);
	c->total += len;
	if (c->head_len < c->head_cap) {
		size_t n = c->head_cap - c->head_len;
		if (n > len)
			n = len;
		c->head = hutch_xrealloc(c->head, c->head_len + n);
		memcpy(c->head + c->head_len, buf, n);
		c->head_len += n;
		emit(c, buf, n);
		buf += n;
		len -= n;
	}
	if (!len || !c->ring_cap)
		return;
	if (!c->ring)
		c->ring = hutch_xmalloc(c->ring_cap);
	if (len >= c->ring_cap) {
		memcpy(c->ring, buf + len - c->ring_cap, c->ring_cap);
		c->ring_pos = 0;
		c->ring_len = c->ring_cap;
		return;
	}
	size_t first = c->ring_cap - c->ring_pos;
	if (first > len)
		first = len;
	memcpy(c->ring + c->ring_pos, buf, first);
	memcpy(c->ring, buf + first, len - first);
	c->ring_pos = (c->ring_pos + len) % c->ring_cap;
	c->ring_len = c->ring_len + len > c->ring_cap ? c->ring_cap : c->ring_len + len;
}

void hutch_capture_finish(struct hutch_capture *c, struct hutch_output *out)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	memset(out, 0, sizeof(*out));
	hutch_buf_append(&b, c->head, c->head_len);
	out->total = c->total;
	if (c->total > c->limit) {
		out->truncated = true;
		out->head = c->head_len;
		out->tail = c->ring_len;
		hutch_buf_printf(&b, HUTCH_TRUNC_MARKER,
				 (unsigned long long)(c->total - c->head_len - c->ring_len));
	}
	/* the ring, oldest byte first */
	if (c->ring_len == c->ring_cap && c->ring_cap) {
		hutch_buf_append(&b, c->ring + c->ring_pos, c->ring_cap - c->ring_pos);
		hutch_buf_append(&b, c->ring, c->ring_pos);
	} else {
		hutch_buf_append(&b, c->ring, c->ring_len);
	}
	out->data = hutch_buf_detach(&b, &out->len);
	emit(c, out->data + c->streamed, out->len - c->streamed);
}

void hutch_capture_release(struct hutch_capture *c)
{
	free(c->head);
	free(c->ring);
	c->head = c->ring = NULL;
}

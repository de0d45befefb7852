/* Output capture with a byte cap that keeps the head and the tail.
 *
 * The first `limit - limit/2` bytes are kept as the head and streamed to the
 * hook as they arrive; after that, the last `limit/2` bytes are kept in a
 * ring. At the end the result holds everything when at most `limit` bytes
 * were written, else head + a marker line + tail, and the hook gets
 * whatever it has not seen yet, so streamed output equals the result. */
#ifndef HUTCH_RUN_CAPTURE_H
#define HUTCH_RUN_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

struct hutch_capture {
	int stream; /* 1 or 2, for the hook */
	uint64_t limit;
	uint64_t total;
	char *head;
	size_t head_cap;
	size_t head_len;
	char *ring;
	size_t ring_cap;
	size_t ring_pos; /* next write position */
	size_t ring_len; /* bytes held, <= ring_cap */
	size_t streamed; /* bytes of the final data already given to the hook */
	const struct hutch_run_hooks *hooks;
};

void hutch_capture_init(struct hutch_capture *c, int stream, uint64_t limit,
			const struct hutch_run_hooks *hooks);
void hutch_capture_add(struct hutch_capture *c, const char *buf, size_t len);
/* Build the result output (moves memory into out) and flush the hook. */
void hutch_capture_finish(struct hutch_capture *c, struct hutch_output *out);
void hutch_capture_release(struct hutch_capture *c);

/* The marker put between head and tail. */
#define HUTCH_TRUNC_MARKER "\n[hutch: %llu bytes omitted]\n"

#endif

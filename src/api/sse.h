/* Server-sent events for streamed runs (docs/http.md, "Streaming"):
 * `stdout` and `stderr` events as output arrives, then one `result`. */
#ifndef HUTCH_API_SSE_H
#define HUTCH_API_SSE_H

#include <microhttpd.h>

#include "hutch.h"

/* The work of a stream: runs on its own thread with hooks that emit
 * events; returns the final JSON (owned by the stream then). */
typedef char *(*hutch_sse_work)(void *ctx, const struct hutch_run_hooks *hooks);

/* A response whose body is the stream; work(ctx) starts now. done(ctx, json)
 * runs on the worker thread after the result event (logging, metrics), and
 * ctx_free(ctx) when the response is gone. Takes ctx in every case (freed
 * at once on failure). client_fd is the connection's socket (-1: unknown):
 * when its peer hangs up, the stream ends and the run is cancelled. NULL
 * with err. */
struct MHD_Response *hutch_sse_start(hutch_sse_work work, void (*done)(void *ctx, const char *json),
				     void *ctx, void (*ctx_free)(void *ctx), int client_fd,
				     struct hutch_err *err);

/* One event's text ("event: NAME\ndata: {...}\n\n"); chunk is any bytes:
 * data holds it as UTF-8 (invalid bytes become U+FFFD), and data_base64
 * the exact bytes when it was not valid UTF-8. Caller frees. Pure. */
char *hutch_sse_event(const char *name, const char *chunk, size_t len, size_t *out_len);

#endif

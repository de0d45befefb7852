/* `hutch serve`: the daemon's HTTP listener (docs/http.md). */
#ifndef HUTCH_API_HTTP_H
#define HUTCH_API_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "hutch.h"

struct hutch_service;
struct hutch_http;

struct hutch_http_opts {
	const char *listen;	 /* HOST:PORT, IPv4 or [IPv6]; port 0 picks a free one */
	bool insecure_local;	 /* loopback clients may come without a key */
	uint64_t max_body;	 /* bytes of a request body */
	unsigned idle_timeout_s; /* a connection silent this long is closed */
	void (*on_listen)(const char *url);
};

/* Start serving svc over HTTP; keys and ownership live in state_dir.
 * NULL with err (an address in use, a bad --listen). */
struct hutch_http *hutch_http_start(struct hutch_service *svc, const struct hutch_http_opts *o,
				    const char *state_dir, struct hutch_err *err);
/* Stop listening and free; NULL is a no-op. */
void hutch_http_stop(struct hutch_http *h);

#endif

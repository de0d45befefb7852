/* Parsing the request line of a client of the egress proxy (proxy.c). Pure. */
#ifndef HUTCH_RUN_PROXY_PARSE_H
#define HUTCH_RUN_PROXY_PARSE_H

#include <stdbool.h>

#include "run/netpolicy.h"

struct hutch_proxy_request {
	bool connect; /* CONNECT host:port; else a plain-HTTP request */
	char method[16];
	char path[2048];		   /* origin form of a plain-HTTP target ("/x?y") */
	const char *rest;		   /* in the head: just after the request line */
	char protocol[8];		   /* "https" for CONNECT, "http" otherwise */
	char host[HUTCH_NET_NAME_MAX + 1]; /* lower case; IPv6 without brackets */
	unsigned port;
};

/* head: NUL-terminated, through the blank line. true when it starts with
 * `CONNECT host:port HTTP/1.x` or `METHOD http://host[:port][/path]
 * HTTP/1.x`; r is filled (host and port checked: [A-Za-z0-9.-_:] only,
 * port 1-65535). */
bool hutch_proxy_parse_request(const char *head, struct hutch_proxy_request *r);

#endif

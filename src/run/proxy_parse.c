#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "run/proxy_parse.h"

/*
 * The request head a sandboxed program sends the egress proxy: untrusted
 * bytes, parsed by hand because only the request line matters (headers
 * are passed on as lines). Pure code, with a fuzz target
 * (fuzz/fuzz-proxy-request.c).
 */

/* "host:port" or "[v6]:port" into host (lower case, no brackets) and port. */
static bool split_authority(const char *auth, size_t n, char *host, size_t size, unsigned *port,
			    unsigned default_port)
{
	const char *colon;
	size_t hn;

	if (n == 0 || n >= size)
		return false;
	if (auth[0] == '[') {
		const char *close = memchr(auth, ']', n);
		if (!close)
			return false;
		hn = (size_t)(close - auth - 1);
		memcpy(host, auth + 1, hn);
		colon = close + 1 < auth + n && close[1] == ':' ? close + 1 : NULL;
		if (!colon && close + 1 != auth + n)
			return false;
	} else {
		colon = memchr(auth, ':', n);
		hn = colon ? (size_t)(colon - auth) : n;
		memcpy(host, auth, hn);
	}
	host[hn] = '\0';
	for (char *c = host; *c; c++) {
		if (!isalnum((unsigned char)*c) && !strchr(".-_:", *c))
			return false;
		*c = (char)tolower((unsigned char)*c);
	}
	*port = default_port;
	if (colon) {
		char digits[8];
		size_t dn = (size_t)(auth + n - colon - 1);
		if (dn == 0 || dn >= sizeof(digits))
			return false;
		memcpy(digits, colon + 1, dn);
		digits[dn] = '\0';
		char *endp;
		unsigned long v = strtoul(digits, &endp, 10);
		if (*endp || v == 0 || v > 65535)
			return false;
		*port = (unsigned)v;
	}
	return hn > 0;
}

struct request {
	bool connect;
	char method[16];
	char path[2048];  /* origin-form, for plain HTTP */
	const char *rest; /* after the request line */
};

bool hutch_proxy_parse_request(const char *head, struct hutch_proxy_request *r)
{
	const char *sp1 = strchr(head, ' ');
	const char *eol = strstr(head, "\r\n");
	/* both spaces on the first line: a space further down is not ours */
	const char *sp2 =
		sp1 && eol && sp1 < eol ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;

	memset(r, 0, sizeof(*r));
	if (!sp1 || !sp2 || !eol || (size_t)(sp1 - head) >= sizeof(r->method) ||
	    strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return false;
	memcpy(r->method, head, (size_t)(sp1 - head));
	r->method[sp1 - head] = '\0';
	r->rest = eol + 2;
	const char *target = sp1 + 1;
	size_t tn = (size_t)(sp2 - target);
	r->connect = strcmp(r->method, "CONNECT") == 0;
	if (r->connect) {
		snprintf(r->protocol, sizeof(r->protocol), "https");
		return split_authority(target, tn, r->host, sizeof(r->host), &r->port, 443);
	}
	snprintf(r->protocol, sizeof(r->protocol), "http");
	if (tn < 8 || strncasecmp(target, "http://", 7) != 0)
		return false; /* a proxy request names its target in full */
	const char *auth = target + 7;
	const char *slash = memchr(auth, '/', tn - 7);
	size_t an = slash ? (size_t)(slash - auth) : tn - 7;
	size_t pn = slash ? tn - 7 - an : 0;
	if (pn >= sizeof(r->path))
		return false;
	if (slash)
		memcpy(r->path, slash, pn);
	else
		r->path[pn++] = '/';
	r->path[pn] = '\0';
	return split_authority(auth, an, r->host, sizeof(r->host), &r->port, 80);
}

/* The HTTP API's routes and its request decoder (docs/http.md).
 *
 * hutch_route_decode turns method + path + query + body into the JSON op the
 * daemon already serves (an ExecRequest, or {"op": "session.exec", ...}).
 * Pure code: no I/O, no globals that change, so it is fuzzed
 * (fuzz/fuzz-http-request.c). */
#ifndef HUTCH_API_HTTP_ROUTES_H
#define HUTCH_API_HTTP_ROUTES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

enum hutch_route_kind {
	HUTCH_ROUTE_HEALTH,
	HUTCH_ROUTE_METRICS,
	HUTCH_ROUTE_RUN,   /* an ExecRequest */
	HUTCH_ROUTE_OP,	   /* a session operation */
	HUTCH_ROUTE_FORK,  /* not supported: 501 */
	HUTCH_ROUTE_MCP,   /* JSON-RPC for the MCP handler (http_mcp.c), body as is */
	HUTCH_ROUTE_AGENT, /* a task for the agent (docs/agent.md) */
};

/* How a route's body and reply are shaped. */
enum {
	HUTCH_ROUTE_NOAUTH = 1 << 0,  /* served without a key */
	HUTCH_ROUTE_STREAM = 1 << 1,  /* Accept: text/event-stream streams output */
	HUTCH_ROUTE_EXEC = 1 << 2,    /* counts against a key's executions per minute */
	HUTCH_ROUTE_RAW_IN = 1 << 3,  /* the body is bytes, not JSON */
	HUTCH_ROUTE_RAW_OUT = 1 << 4, /* the reply's base64 member is sent as bytes */
	HUTCH_ROUTE_NOBODY = 1 << 5,  /* a body is refused */
	HUTCH_ROUTE_NEW = 1 << 6,     /* creates a session (quotas apply) */
	HUTCH_ROUTE_SNAP = 1 << 7,    /* names a snapshot in the path */
};

struct hutch_route {
	const char *method;
	const char *pattern; /* "/v1/sessions/{id}/exec" */
	enum hutch_route_kind kind;
	const char *op;	    /* the session op, for HUTCH_ROUTE_OP */
	const char *action; /* session.files action, or NULL */
	const char *query;  /* allowed query parameters, comma-separated, or "" */
	unsigned flags;
	const char *summary;
};

/* The route table, terminated by an entry with a NULL method. */
extern const struct hutch_route hutch_routes[];

/* One HTTP request as the server read it. Borrowed. */
struct hutch_http_in {
	const char *method;
	const char *path; /* without the query string */
	json_t *query;	  /* object of strings (parsed query), or NULL */
	const char *body; /* may be NULL when body_len is 0 */
	size_t body_len;
};

/* What a request decodes to. */
struct hutch_http_call {
	const struct hutch_route *route; /* NULL when no route matched */
	char *op_json;			 /* owned: the op (or ExecRequest) as JSON */
	char id[72];			 /* session id from the path, or "" */
	char name[136];			 /* snapshot name from the path, or "" */
	uint64_t memory_bytes;		 /* session.new / run: the memory limit asked */
	int status;			 /* on failure: 400, 404, 405 */
	char allow[64];			 /* on 405: the methods allowed */
};

/* Decode in into call. Returns 0, or -1 with call->status and err set
 * (err->code EINVAL for 400/405, ENOENT for 404). call->op_json is NULL for
 * HEALTH, METRICS and FORK. Release with hutch_http_call_release. */
int hutch_route_decode(const struct hutch_http_in *in, struct hutch_http_call *call,
		       struct hutch_err *err);
void hutch_http_call_release(struct hutch_http_call *call);

/* Lines "METHOD PATTERN" of every route, for --print-routes. Caller frees. */
char *hutch_routes_text(void);

#endif

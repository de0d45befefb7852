/* Between the HTTP server (http.c) and its request handling (http_call.c). */
#ifndef HUTCH_API_HTTP_INTERNAL_H
#define HUTCH_API_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>

#include "api/http.h"
#include "api/http_routes.h"
#include "api/keys.h"
#include "api/quota.h"
#include "api/service.h"

struct hutch_http {
	struct MHD_Daemon *mhd;
	struct hutch_service *svc;
	struct hutch_http_opts opts;
	char state_dir[512];
	struct hutch_quota *quota;
	pthread_mutex_t keys_lock;
	struct hutch_keyring keys;
	struct timespec keys_mtime; /* keys.json as last read */
	ino_t keys_ino;
};

/* Who is asking: the key's name ("" without a key) and its limits. */
struct hutch_caller {
	char key[65];
	struct hutch_key_limits limits;
};

/* One request being served. */
struct hutch_http_req {
	struct hutch_http *h;
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	char id[40]; /* request id */
	uint64_t started_us;
	struct hutch_caller caller;
	struct hutch_http_call call;
	unsigned retry_after; /* a 429's Retry-After, seconds */
};

/* Serve a decoded, authenticated request (http_call.c). */
enum MHD_Result hutch_http_dispatch(struct hutch_http_req *r);

/* POST /mcp: one MCP message (http_mcp.c). */
enum MHD_Result hutch_http_mcp(struct hutch_http_req *r, const char *body, size_t len);

/* Send {"error": {code, message}} with status (and log the request). */
enum MHD_Result hutch_http_error(struct hutch_http_req *r, int status, const char *code,
				 const char *message);

/* The HTTP status of an errno name from a reply (docs/errors.md). */
int hutch_http_status_of(const char *code);

#endif

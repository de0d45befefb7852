#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/http_internal.h"
#include "api/metrics.h"
#include "api/reqlog.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/id.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/time.h"

/*
 * The HTTP listener of `hutch serve`: libmicrohttpd parses HTTP, one thread
 * per connection (a request may run for minutes, and a stream's reader
 * blocks). Here: reading the body under its cap, authentication, errors.
 * What a route does is in http_call.c; how it maps to an op in http_routes.c.
 */

#define MAX_CONNECTIONS 512 /* threads; past this, new connections are refused */

/* Per request, across libmicrohttpd's calls of the handler. */
struct body {
	struct hutch_buf buf;
	bool too_large;
	bool answered; /* a response is queued already (401 or 413 early) */
	char id[40];   /* the request id */
	struct hutch_caller caller;
	uint64_t started_us;
};

int hutch_http_status_of(const char *code)
{
	static const struct {
		const char *code;
		int status;
	} map[] = {{"EINVAL", 400},  {"ENOENT", 404}, {"EACCES", 403},	  {"EPERM", 403},
		   {"EEXIST", 409},  {"EBUSY", 409},  {"ETIMEDOUT", 504}, {"ENOTSUP", 501},
		   {"EDQUOT", 429},  {"E2BIG", 413},  {"EFBIG", 413},	  {"ENAMETOOLONG", 400},
		   {"ENOTDIR", 400}, {"EISDIR", 400}, {"ENOTEMPTY", 409}, {"ESRCH", 404}};

	for (size_t i = 0; code && i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].code, code) == 0)
			return map[i].status;
	return 500;
}

static const char *reject_reason(int status, const char *code)
{
	if (status == 429)
		return strcmp(code, "EAGAIN") == 0 ? "rate" : "quota";
	switch (status) {
	case 401:
		return "auth";
	case 404:
		return "not_found";
	case 405:
		return "method";
	case 413:
		return "body_too_large";
	default:
		return status >= 500 ? "server" : "bad_request";
	}
}

enum MHD_Result hutch_http_error(struct hutch_http_req *r, int status, const char *code,
				 const char *message)
{
	json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
	char *text = json_dumps(o, JSON_COMPACT);
	struct MHD_Response *resp;
	enum MHD_Result rc;

	json_decref(o);
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (status == 401)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
	if (status == 429 && r->retry_after) {
		char secs[16];
		snprintf(secs, sizeof(secs), "%u", r->retry_after);
		MHD_add_response_header(resp, "Retry-After", secs);
	}
	if (status == 405 && r->call.allow[0])
		MHD_add_response_header(resp, "Allow", r->call.allow);
	if (status != 501)
		hutch_metrics_reject(reject_reason(status, code));
	rc = MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	struct hutch_reqlog log = {
		r->id,	r->method,     r->call.route ? r->call.route->pattern : NULL,
		status, r->caller.key, r->call.id,
		NULL,	r->started_us, code};
	hutch_reqlog_write(&log);
	return rc;
}

/* Re-read keys.json when it changed (a `hutch keys add` while serving). */
static void refresh_keys(struct hutch_http *h)
{
	char path[600];
	struct stat st;
	struct hutch_err err = {0, ""};

	snprintf(path, sizeof(path), "%s/keys.json", h->state_dir);
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof(st));
	if (st.st_ino == h->keys_ino && st.st_mtim.tv_sec == h->keys_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == h->keys_mtime.tv_nsec)
		return;
	struct hutch_keyring kr;
	if (hutch_keys_load(h->state_dir, &kr, &err) < 0) {
		hutch_log(HUTCH_LOG_WARN, "keys not reloaded: %s", err.msg);
		return;
	}
	hutch_keys_release(&h->keys);
	h->keys = kr;
	h->keys_ino = st.st_ino;
	h->keys_mtime = st.st_mtim;
}

static bool is_loopback(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (sa && sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* 0 with r->caller filled, or -1 after a 401 was queued. */
static int authenticate(struct hutch_http_req *r, enum MHD_Result *rc)
{
	const char *auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	struct hutch_http *h = r->h;
	const struct hutch_key *k;

	if (!auth) {
		/* no key: only loopback clients, and only when the operator said so */
		if (h->opts.insecure_local && is_loopback(r->conn))
			return 0;
		*rc = hutch_http_error(r, 401, "EACCES",
				       "an API key is required: Authorization: Bearer KEY "
				       "(hutch keys add NAME)");
		return -1;
	}
	if (strncmp(auth, "Bearer ", 7) != 0) {
		*rc = hutch_http_error(r, 401, "EACCES", "Authorization must be 'Bearer KEY'");
		return -1;
	}
	pthread_mutex_lock(&h->keys_lock);
	refresh_keys(h);
	k = hutch_keys_find(&h->keys, auth + 7, strlen(auth + 7));
	if (k) {
		snprintf(r->caller.key, sizeof(r->caller.key), "%s", k->name);
		r->caller.limits = k->limits;
	}
	pthread_mutex_unlock(&h->keys_lock);
	if (!k) {
		*rc = hutch_http_error(r, 401, "EACCES", "unknown or revoked API key");
		return -1;
	}
	return 0;
}

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	(void)kind;
	json_object_set_new(cls, key, json_string(value ? value : ""));
	return MHD_YES;
}

static enum MHD_Result serve(struct hutch_http *h, struct MHD_Connection *conn, const char *url,
			     const char *method, struct body *b)
{
	struct hutch_http_req r = {h, conn, method, url};
	struct hutch_err err = {0, ""};
	enum MHD_Result rc = MHD_YES;
	json_t *query = json_object();

	memcpy(r.id, b->id, sizeof(r.id));
	r.started_us = b->started_us;
	r.caller = b->caller;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query, query);
	struct hutch_http_in in = {method, url, query, b->buf.data, b->buf.len};
	if (json_object_size(query) == 0)
		in.query = NULL;
	if (hutch_route_decode(&in, &r.call, &err) < 0) {
		rc = hutch_http_error(&r, r.call.status, hutch_errno_name(err.code), err.msg);
		goto out;
	}
	if (r.call.route->kind == HUTCH_ROUTE_MCP)
		rc = hutch_http_mcp(&r, b->buf.data, b->buf.len);
	else
		rc = hutch_http_dispatch(&r);
out:
	hutch_http_call_release(&r.call);
	json_decref(query);
	return rc;
}

/* 413 before reading a body whose announced length is over the cap. */
static bool announced_too_large(struct hutch_http *h, struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	char *end;
	unsigned long long n;

	if (!cl)
		return false;
	errno = 0;
	n = strtoull(cl, &end, 10);
	return errno != 0 || n > h->opts.max_body;
}

static enum MHD_Result too_large(struct hutch_http *h, struct MHD_Connection *conn, const char *url,
				 const char *method, struct body *b)
{
	struct hutch_http_req r = {h, conn, method, url};
	char msg[128];

	memcpy(r.id, b->id, sizeof(r.id));
	r.started_us = b->started_us;
	r.caller = b->caller;
	b->answered = true;
	snprintf(msg, sizeof(msg), "the body is over the limit of %llu bytes (--max-body)",
		 (unsigned long long)h->opts.max_body);
	return hutch_http_error(&r, 413, "E2BIG", msg);
}

/* The headers are in: authenticate before reading a byte of the body, so
 * a client without a key cannot make us buffer --max-body bytes. */
static enum MHD_Result on_headers(struct hutch_http *h, struct MHD_Connection *conn,
				  const char *url, const char *method, struct body *b)
{
	struct hutch_http_req r = {h, conn, method, url};
	enum MHD_Result rc = MHD_YES;

	memcpy(r.id, b->id, sizeof(r.id));
	r.started_us = b->started_us;
	if (strcmp(url, "/v1/health") != 0 && authenticate(&r, &rc) < 0) {
		b->answered = true;
		return rc;
	}
	b->caller = r.caller;
	if (announced_too_large(h, conn))
		return too_large(h, conn, url, method, b);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct hutch_http *h = cls;
	struct body *b = *con_cls;

	(void)version;
	if (!b) {
		b = hutch_xcalloc(1, sizeof(*b));
		b->started_us = hutch_now_us();
		hutch_id_new(b->id, sizeof(b->id), "req");
		*con_cls = b;
		return on_headers(h, conn, url, method, b);
	}
	if (b->answered) {
		*upload_size = 0; /* a response is queued: drop the rest */
		return MHD_YES;
	}
	if (*upload_size) {
		if (b->buf.len + *upload_size > h->opts.max_body)
			b->too_large = true; /* no Content-Length (chunked), or it lied */
		else
			hutch_buf_append(&b->buf, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (b->too_large)
		return too_large(h, conn, url, method, b);
	b->answered = true;
	return serve(h, conn, url, method, b);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct body *b = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (b) {
		hutch_buf_release(&b->buf);
		free(b);
		*con_cls = NULL;
	}
}

/* HOST:PORT or [V6]:PORT into sa; "localhost" is 127.0.0.1. */
static int parse_listen(const char *s, struct sockaddr_storage *sa, bool *v6, struct hutch_err *err)
{
	char host[256];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;

	if (!colon || colon == s || !colon[1] || *end || port > 65535 ||
	    (size_t)(colon - s) >= sizeof(host))
		return hutch_err_setx(err, EINVAL, "--listen '%s': expected HOST:PORT", s);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	memset(sa, 0, sizeof(*sa));
	*v6 = host[0] == '[';
	if (*v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;
		host[strlen(host) - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1)
			return 0;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)sa;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host,
			      &a->sin_addr) == 1)
			return 0;
	}
	return hutch_err_setx(err, EINVAL, "--listen '%s': '%s' is not an IP address", s, host);
}

static void announce(struct hutch_http *h, const struct sockaddr_storage *sa, bool v6)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	char addr[INET6_ADDRSTRLEN] = "";
	char url[300];

	if (v6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr,
			  sizeof(addr));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof(addr));
	snprintf(url, sizeof(url), "http://%s%s%s:%u", v6 ? "[" : "", addr, v6 ? "]" : "",
		 di ? (unsigned)di->port : 0u);
	hutch_log(HUTCH_LOG_INFO, "http listening on %s", url);
	if (h->opts.on_listen)
		h->opts.on_listen(url);
}

struct hutch_http *hutch_http_start(struct hutch_service *svc, const struct hutch_http_opts *o,
				    const char *state_dir, struct hutch_err *err)
{
	struct sockaddr_storage sa;
	struct hutch_http *h;
	bool v6 = false;

	if (parse_listen(o->listen, &sa, &v6, err) < 0)
		return NULL;
	h = hutch_xcalloc(1, sizeof(*h));
	h->svc = svc;
	h->opts = *o;
	snprintf(h->state_dir, sizeof(h->state_dir), "%s", state_dir);
	pthread_mutex_init(&h->keys_lock, NULL);
	h->quota = hutch_quota_open(state_dir);
	h->keys_ino = (ino_t)-1; /* read keys.json on the first request */
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
					  (v6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
				  (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned int)o->idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
				  (unsigned int)MAX_CONNECTIONS, MHD_OPTION_NOTIFY_COMPLETED,
				  on_completed, h, MHD_OPTION_END);
	if (!h->mhd) {
		hutch_err_setx(err, EADDRINUSE, "cannot listen on '%s' (in use, or not ours)",
			       o->listen);
		hutch_http_stop(h);
		return NULL;
	}
	announce(h, &sa, v6);
	return h;
}

void hutch_http_stop(struct hutch_http *h)
{
	if (!h)
		return;
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	hutch_quota_free(h->quota);
	hutch_keys_release(&h->keys);
	pthread_mutex_destroy(&h->keys_lock);
	free(h);
}

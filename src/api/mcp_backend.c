#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/client.h"
#include "api/mcp.h"
#include "util/err.h"

/*
 * The two backends of the MCP handler: a daemon over its socket, or the
 * library in this process. Both take the same JSON the daemon's frames
 * carry, so the handler cannot tell them apart (tests/mcp runs both).
 */

/* --- a daemon --- */

static char *daemon_run(void *ctx, const char *request_json, struct hutch_err *err)
{
	struct hutch_exec_request req;
	char *reply = NULL;
	int fd;

	/* hutch_client_run sends a request struct: parsing here also keeps a bad
	 * request from ever reaching the daemon, as `hutch run` does */
	hutch_request_init(&req);
	if (hutch_request_from_json(&req, request_json, strlen(request_json), err) < 0) {
		hutch_request_release(&req);
		return NULL;
	}
	fd = hutch_client_connect(ctx);
	if (fd < 0)
		hutch_err_set(err, errno, "connect to the daemon at '%s'", (const char *)ctx);
	else
		reply = hutch_client_run(fd, &req, NULL, err);
	if (fd >= 0)
		close(fd);
	hutch_request_release(&req);
	return reply;
}

static char *daemon_session(void *ctx, const char *op_json, struct hutch_err *err)
{
	char *reply;
	int fd = hutch_client_connect(ctx);

	if (fd < 0) {
		hutch_err_set(err, errno, "connect to the daemon at '%s'", (const char *)ctx);
		return NULL;
	}
	reply = hutch_client_session(fd, op_json, NULL, err);
	close(fd);
	return reply;
}

struct hutch_mcp_backend hutch_mcp_daemon_backend(const char *socket_path)
{
	struct hutch_mcp_backend b = {daemon_run, daemon_session, (void *)socket_path, "daemon"};

	return b;
}

/* --- in-process --- */

static char *local_run(void *ctx, const char *request_json, struct hutch_err *err)
{
	struct hutch_mcp_local *l = ctx;
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	char *reply = NULL;
	int rc;

	hutch_request_init(&req);
	rc = hutch_request_from_json(&req, request_json, strlen(request_json), err);
	if (rc == 0 && !req.want_cold && l->pool && hutch_pool_can_serve(l->pool, &req))
		rc = hutch_run_fast(l->pool, &req, NULL, &res, err);
	else if (rc == 0)
		rc = hutch_run(&req, NULL, &res, err);
	if (rc == 0) {
		reply = hutch_result_to_json(&res);
		hutch_result_release(&res);
		if (!reply)
			hutch_err_setx(err, ENOMEM, "cannot encode the result");
	}
	hutch_request_release(&req);
	return reply;
}

static char *local_session(void *ctx, const char *op_json, struct hutch_err *err)
{
	struct hutch_mcp_local *l = ctx;
	char *reply;

	if (!l->sessions) {
		hutch_err_setx(err, ENOTSUP, "sessions are not available (no state directory)");
		return NULL;
	}
	reply = hutch_session_call(l->sessions, op_json, strlen(op_json), NULL);
	if (!reply)
		hutch_err_setx(err, ENOMEM, "the session operation gave no reply");
	return reply;
}

struct hutch_mcp_backend hutch_mcp_local_backend(struct hutch_mcp_local *local)
{
	struct hutch_mcp_backend b = {local_run, local_session, local, "in-process"};

	return b;
}

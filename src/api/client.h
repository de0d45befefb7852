/* The client side of the daemon's socket (used by `hutch run`). */
#ifndef HUTCH_API_CLIENT_H
#define HUTCH_API_CLIENT_H

#include "hutch.h"

/* Connect to the daemon at path. Returns the fd, or -1 with errno (ENOENT or
 * ECONNREFUSED when no daemon listens there). */
int hutch_client_connect(const char *path);

/* Run req through the daemon; with hooks, output is streamed to them as it
 * arrives. Returns the ExecResult JSON (caller frees), or NULL with err —
 * including when the daemon refused the request (its message in err). */
char *hutch_client_run(int fd, const struct hutch_exec_request *req,
		       const struct hutch_run_hooks *hooks, struct hutch_err *err);

/* One session operation (docs/sessions.md): the reply JSON (caller frees),
 * which may be {"error": ...}; NULL with err when the daemon is unreachable
 * or the connection broke. With hooks, exec/sh output streams to them. */
char *hutch_client_session(int fd, const char *json, const struct hutch_run_hooks *hooks,
			   struct hutch_err *err);

#endif

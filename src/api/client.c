#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/client.h"
#include "api/frame.h"
#include "util/err.h"

int hutch_client_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* {"error": {"code": ..., "message": ...}} -> err; true if it was one */
static bool is_error(const char *json, size_t len, struct hutch_err *err)
{
	json_t *o = json_loadb(json, len, 0, NULL);
	json_t *e = o ? json_object_get(o, "error") : NULL;
	/* a refusal has only "error"; an ExecResult has a status (and its own
	 * "error" field for the program's runtime error) */
	bool yes = json_is_object(e) && !json_object_get(o, "status");

	if (yes) {
		const char *msg = json_string_value(json_object_get(e, "message"));
		hutch_err_setx(err, EINVAL, "%s", msg ? msg : "the daemon refused the request");
	}
	json_decref(o);
	return yes;
}

/* Send one frame and read until the reply (R), streaming O/E to hooks.
 * Returns the reply payload, refusals included, or NULL with err. */
static char *exchange(int fd, char type, const char *json, const struct hutch_run_hooks *hooks,
		      struct hutch_err *err)
{
	int rc = hutch_frame_write(fd, type, json, strlen(json));

	if (rc < 0) {
		int saved = errno;
		char rtype;
		char *payload = NULL;
		size_t len;
		/* a daemon that refuses us (peer uid) answers and closes at once:
		 * its answer says more than our broken pipe */
		if (hutch_frame_read(fd, &rtype, &payload, &len, err) == 1 && rtype == 'R')
			return payload;
		free(payload);
		hutch_err_set(err, saved, "send to the daemon");
		return NULL;
	}
	for (;;) {
		char rtype;
		char *payload;
		size_t len;
		rc = hutch_frame_read(fd, &rtype, &payload, &len, err);
		if (rc <= 0) {
			if (rc == 0)
				hutch_err_setx(err, EPIPE, "the daemon closed the connection");
			return NULL;
		}
		if (rtype == 'R')
			return payload;
		if ((rtype == 'O' || rtype == 'E') && hooks && hooks->on_output)
			hooks->on_output(hooks->ctx, rtype == 'E' ? 2 : 1, payload, len);
		free(payload);
	}
}

char *hutch_client_run(int fd, const struct hutch_exec_request *req,
		       const struct hutch_run_hooks *hooks, struct hutch_err *err)
{
	char *json = hutch_request_to_json(req);
	char *reply;

	if (!json) {
		hutch_err_setx(err, ENOMEM, "cannot encode the request");
		return NULL;
	}
	reply = exchange(fd, hooks ? 'S' : 'Q', json, hooks, err);
	free(json);
	if (reply && is_error(reply, strlen(reply), err)) {
		free(reply);
		return NULL;
	}
	return reply;
}

char *hutch_client_session(int fd, const char *json, const struct hutch_run_hooks *hooks,
			   struct hutch_err *err)
{
	return exchange(fd, hooks ? 'K' : 'J', json, hooks, err);
}

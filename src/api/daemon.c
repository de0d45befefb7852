#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include "api/daemon.h"
#include "api/frame.h"
#include "run/fast.h"
#include "util/err.h"
#include "util/log.h"

/*
 * hutch daemon: the process that owns the zygote and its pools, serving
 * ExecRequests over a unix socket (docs/daemon.md). One thread per
 * connection; the pool is thread-safe. Peers are checked with SO_PEERCRED:
 * only our own uid and root are served (the socket is 0600 as well).
 */

struct daemon {
	struct hutch_pool *pool;
	struct hutch_sessions *sessions;
	const char *socket_path;
};

struct conn {
	struct daemon *d;
	int fd;
	bool broken; /* the client went away mid-stream */
};

static char *error_json(const struct hutch_err *err)
{
	json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", hutch_errno_name(err->code),
			      "message", err->msg);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

static void send_error(struct conn *c, const struct hutch_err *err)
{
	char *text = error_json(err);

	if (text && hutch_frame_write(c->fd, 'R', text, strlen(text)) < 0)
		c->broken = true;
	free(text);
}

static void stream_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct conn *c = ctx;

	if (!c->broken && hutch_frame_write(c->fd, stream == 2 ? 'E' : 'O', buf, len) < 0)
		c->broken = true; /* keep running; the result is simply not delivered */
}

static void serve_request(struct conn *c, char type, const char *payload, size_t len)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_run_hooks hooks = {type == 'S' ? stream_output : NULL, c, c->fd};
	struct hutch_err err = {0, ""};
	int rc;

	hutch_request_init(&req);
	if (hutch_request_from_json(&req, payload, len, &err) < 0) {
		send_error(c, &err);
		return;
	}
	if (!req.want_cold && hutch_pool_can_serve(c->d->pool, &req))
		rc = hutch_run_fast(c->d->pool, &req, &hooks, &res, &err);
	else
		rc = hutch_run(&req, &hooks, &res, &err);
	if (rc < 0) {
		send_error(c, &err);
	} else {
		char *json = hutch_result_to_json(&res);
		hutch_log(HUTCH_LOG_INFO, "run %s path=%s status=%s setup_us=%llu run_us=%llu",
			  res.id, res.path, hutch_status_name(res.status),
			  (unsigned long long)res.timings.setup_us,
			  (unsigned long long)res.timings.run_us);
		if (!json || hutch_frame_write(c->fd, 'R', json, strlen(json)) < 0)
			c->broken = true;
		free(json);
		hutch_result_release(&res);
	}
	hutch_request_release(&req);
}

/* A session operation (docs/sessions.md); K streams exec/sh output. */
static void serve_session(struct conn *c, char type, const char *payload, size_t len)
{
	struct hutch_run_hooks hooks = {type == 'K' ? stream_output : NULL, c, c->fd};
	struct hutch_err err = {0, ""};
	char *reply;

	if (!c->d->sessions) {
		hutch_err_setx(&err, ENOTSUP, "this daemon has no state directory for sessions");
		send_error(c, &err);
		return;
	}
	reply = hutch_session_call(c->d->sessions, payload, len, &hooks);
	if (!reply || hutch_frame_write(c->fd, 'R', reply, strlen(reply)) < 0)
		c->broken = true;
	free(reply);
}

static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	/* Only the daemon's own user (and root) may run code through it: it
	 * runs sandboxes with the daemon's privileges. */
	return cr.uid == getuid() || cr.uid == 0;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct hutch_err err = {0, ""};

	if (!peer_allowed(c->fd)) {
		hutch_err_setx(&err, EACCES, "uid not allowed by this daemon");
		send_error(c, &err);
		goto out;
	}
	while (!c->broken) {
		char type;
		char *payload;
		size_t len;
		int rc = hutch_frame_read(c->fd, &type, &payload, &len, &err);
		if (rc <= 0) {
			if (rc < 0)
				send_error(c, &err);
			break;
		}
		if (type == 'Q' || type == 'S') {
			serve_request(c, type, payload, len);
		} else if (type == 'J' || type == 'K') {
			serve_session(c, type, payload, len);
		} else {
			hutch_err_setx(&err, EPROTO, "unknown frame type '%c'", type);
			send_error(c, &err);
			c->broken = true;
		}
		free(payload);
	}
out:
	close(c->fd);
	free(c);
	return NULL;
}

static int listen_on(const char *path, struct hutch_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return hutch_err_setx(err, ENAMETOOLONG, "socket path '%s' is too long", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hutch_err_set(err, errno, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		return hutch_err_setx(err, EADDRINUSE, "a daemon is already listening on '%s'",
				      path);
	}
	unlink(path); /* a stale socket of a dead daemon */
	/* 0600 from the start: no window where others could connect */
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || listen(fd, 128) < 0) {
		hutch_err_set(err, errno, "listen on '%s'", path);
		close(fd);
		return -1;
	}
	return fd;
}

static void make_parent_dir(const char *path)
{
	char dir[512];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		(void)mkdir(dir, 0700);
	}
}

static int accept_loop(struct daemon *d, int lfd, int sfd)
{
	for (;;) {
		struct pollfd pfd[2] = {{lfd, POLLIN, 0}, {sfd, POLLIN, 0}};
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[1].revents)
			return 0; /* SIGTERM or SIGINT */
		if (!pfd[0].revents)
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct conn *c = calloc(1, sizeof(*c));
		pthread_t t;
		if (!c) {
			close(fd);
			continue;
		}
		c->d = d;
		c->fd = fd;
		if (pthread_create(&t, NULL, conn_main, c) != 0) {
			close(fd);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
}

int hutch_daemon_main(const struct hutch_daemon_opts *o, struct hutch_err *err)
{
	struct daemon d = {NULL, NULL, o->socket_path};
	sigset_t stop;
	int lfd;
	int sfd;
	int rc;

	hutch_sweep_stale();
	make_parent_dir(o->socket_path);
	/* each session holds ~6 fds (pipes, its control socket, pidfds): the
	 * usual soft limit of 1024 would cap a daemon at ~160 sessions */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* Signals are taken by a signalfd; every thread inherits the mask. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &stop, SFD_CLOEXEC);
	lfd = listen_on(o->socket_path, err);
	if (lfd < 0 || sfd < 0) {
		if (sfd >= 0)
			close(sfd);
		return lfd < 0 ? -1 : hutch_err_set(err, errno, "signalfd");
	}
	d.pool = hutch_pool_start(o->preload, o->pool_min, o->pool_max, err);
	if (!d.pool)
		hutch_log(HUTCH_LOG_WARN, "no fast path (serving the cold path only): %s",
			  err->msg);
	if (o->state_dir) {
		d.sessions = hutch_sessions_open(o->state_dir, err);
		if (!d.sessions)
			hutch_log(HUTCH_LOG_WARN, "no sessions: %s", err->msg);
	}
	hutch_log(HUTCH_LOG_INFO, "listening on %s", o->socket_path);
	if (o->on_ready)
		o->on_ready(o->socket_path);
	rc = accept_loop(&d, lfd, sfd);
	close(lfd);
	unlink(o->socket_path);
	hutch_sessions_close(d.sessions);
	hutch_pool_stop(d.pool);
	close(sfd);
	return rc < 0 ? hutch_err_set(err, errno, "accept loop") : 0;
}

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
#include "api/http.h"
#include "api/service.h"
#include "util/err.h"
#include "util/log.h"

/*
 * hutch daemon: the process that owns the zygote and its pools, serving
 * ExecRequests over a unix socket (docs/daemon.md). One thread per
 * connection; the pool is thread-safe. Peers are checked with SO_PEERCRED:
 * only our own uid and root are served (the socket is 0600 as well).
 */

struct daemon {
	struct hutch_service svc;
	const char *socket_path;
};

struct conn {
	struct daemon *d;
	int fd;
	bool broken; /* the client went away mid-stream */
};

static void send_error(struct conn *c, const struct hutch_err *err)
{
	char *text = hutch_service_error_json(err);

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

/* An ExecRequest (Q, S) or a session operation (J, K; K and S stream). */
static void serve_frame(struct conn *c, char type, const char *payload, size_t len)
{
	bool stream = type == 'S' || type == 'K';
	struct hutch_run_hooks hooks = {stream ? stream_output : NULL, c, c->fd};
	char *reply = type == 'Q' || type == 'S'
			      ? hutch_service_run(&c->d->svc, payload, len, &hooks)
			      : hutch_service_session(&c->d->svc, payload, len, &hooks);

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
		if (type == 'Q' || type == 'S' || type == 'J' || type == 'K') {
			serve_frame(c, type, payload, len);
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

/* each session holds ~6 fds (pipes, its control socket, pidfds): the usual
 * soft limit of 1024 would cap a daemon at ~160 sessions */
static void raise_nofile(void)
{
	struct rlimit nofile;

	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &nofile);
	}
}

/* Signals are taken by a signalfd; every thread inherits the mask. */
static int stop_signals(void)
{
	sigset_t stop;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &stop, SFD_CLOEXEC);
}

static void start_services(struct daemon *d, const struct hutch_daemon_opts *o)
{
	struct hutch_err err = {0, ""};

	d->svc.state_dir = o->state_dir;
	d->svc.agent = o->agent;
	d->svc.pool = hutch_pool_start(o->preload, o->pool_min, o->pool_max, &err);
	if (!d->svc.pool)
		hutch_log(HUTCH_LOG_WARN, "no fast path (serving the cold path only): %s", err.msg);
	if (o->state_dir) {
		d->svc.sessions = hutch_sessions_open(o->state_dir, &err);
		if (!d->svc.sessions)
			hutch_log(HUTCH_LOG_WARN, "no sessions: %s", err.msg);
	}
}

int hutch_daemon_main(const struct hutch_daemon_opts *o, struct hutch_err *err)
{
	struct daemon d = {{NULL, NULL}, o->socket_path};
	struct hutch_http *http = NULL;
	int lfd;
	int sfd;
	int rc = -1;

	hutch_sweep_stale();
	make_parent_dir(o->socket_path);
	raise_nofile();
	sfd = stop_signals();
	if (sfd < 0)
		return hutch_err_set(err, errno, "signalfd");
	lfd = listen_on(o->socket_path, err);
	if (lfd < 0) {
		close(sfd);
		return -1;
	}
	start_services(&d, o);
	/* the HTTP listener shares the pool and the sessions: one process */
	if (o->http) {
		http = hutch_http_start(&d.svc, o->http, o->state_dir, err);
		if (!http)
			goto out;
	}
	hutch_log(HUTCH_LOG_INFO, "listening on %s", o->socket_path);
	if (o->on_ready)
		o->on_ready(o->socket_path);
	rc = accept_loop(&d, lfd, sfd);
	if (rc < 0)
		hutch_err_set(err, errno, "accept loop");
out:
	hutch_http_stop(http);
	close(lfd);
	unlink(o->socket_path);
	hutch_sessions_close(d.svc.sessions);
	hutch_pool_stop(d.svc.pool);
	close(sfd);
	return rc < 0 ? -1 : 0;
}

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/sse.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/text.h"

/*
 * A stream is a worker thread and a socketpair: the worker writes events to
 * one end, libmicrohttpd's reader callback reads the other (a connection has
 * its own thread, so the reader may block). A client that goes away closes
 * our end; the worker's end then reports a hangup, which is the run's
 * cancel_fd: the program is killed instead of running for nobody.
 */

struct stream {
	int fds[2];    /* [0] the worker writes, [1] the response reads */
	int client_fd; /* the connection, watched for the client going away */
	pthread_t thread;
	hutch_sse_work work;
	void (*done)(void *ctx, const char *json);
	void *ctx;
	void (*ctx_free)(void *ctx);
};

char *hutch_sse_event(const char *name, const char *chunk, size_t len, size_t *out_len)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	size_t n = 0;
	char *text = hutch_utf8_sanitize(chunk, len, &n);
	json_t *o = json_pack("{s:s%}", "data", text, n);
	char *data;

	free(text);
	if (!hutch_utf8_valid(chunk, len)) {
		char *b64 = hutch_base64_encode(chunk, len);
		json_object_set_new(o, "data_base64", json_string(b64));
		free(b64);
	}
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	hutch_buf_printf(&b, "event: %s\ndata: %s\n\n", name, data ? data : "{}");
	free(data);
	return hutch_buf_detach(&b, out_len);
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the client is gone; the run is being cancelled */
		p += w;
		n -= (size_t)w;
	}
}

static void on_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct stream *s = ctx;
	size_t n = 0;
	if (stream == 3) { /* an agent step: already one line of compact JSON */
		send_all(s->fds[0], "event: step\ndata: ", 18);
		send_all(s->fds[0], buf, strnlen(buf, len));
		send_all(s->fds[0], "\n\n", 2);
		return;
	}
	char *ev = hutch_sse_event(stream == 2 ? "stderr" : "stdout", buf, len, &n);

	send_all(s->fds[0], ev, n);
	free(ev);
}

static void *worker(void *arg)
{
	struct stream *s = arg;
	struct hutch_run_hooks hooks = {on_output, s, s->fds[0], 0, true};
	struct hutch_buf b = HUTCH_BUF_INIT;
	char *json = s->work(s->ctx, &hooks);

	/* the result is JSON already: one data line, no re-encoding */
	hutch_buf_printf(&b, "event: result\ndata: %s\n\n", json ? json : "{}");
	send_all(s->fds[0], b.data, b.len);
	hutch_buf_release(&b);
	if (s->done)
		s->done(s->ctx, json);
	free(json);
	shutdown(s->fds[0], SHUT_WR); /* the reader sees the end of the stream */
	return NULL;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	static const char keepalive[] = ": keepalive\n\n";
	struct stream *s = cls;
	ssize_t n;

	(void)pos;
	/* libmicrohttpd cannot notice a client that left while we block here
	 * (its thread is ours): watch the connection too, and say something
	 * every 15 s so proxies and dead peers show up */
	struct pollfd pfd[2] = {{s->fds[1], POLLIN, 0}, {s->client_fd, POLLRDHUP, 0}};
	int rc = poll(pfd, s->client_fd >= 0 ? 2 : 1, 15000);
	if (rc < 0 && errno != EINTR)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (rc > 0 && (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return MHD_CONTENT_READER_END_WITH_ERROR; /* closes: our run is cancelled */
	if (rc <= 0 || !pfd[0].revents) {
		if (max < sizeof(keepalive))
			return 0;
		memcpy(buf, keepalive, sizeof(keepalive) - 1);
		return (ssize_t)sizeof(keepalive) - 1;
	}
	do {
		n = read(s->fds[1], buf, max);
	} while (n < 0 && errno == EINTR);
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;

	close(s->fds[1]); /* a hangup on the worker's end cancels its run */
	pthread_join(s->thread, NULL);
	close(s->fds[0]);
	if (s->ctx_free)
		s->ctx_free(s->ctx);
	free(s);
}

struct MHD_Response *hutch_sse_start(hutch_sse_work work, void (*done)(void *ctx, const char *json),
				     void *ctx, void (*ctx_free)(void *ctx), int client_fd,
				     struct hutch_err *err)
{
	struct stream *s = hutch_xcalloc(1, sizeof(*s));
	struct MHD_Response *r;

	s->work = work;
	s->done = done;
	s->ctx = ctx;
	s->ctx_free = ctx_free;
	s->client_fd = client_fd;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->fds) < 0) {
		free(s);
		if (ctx_free)
			ctx_free(ctx);
		return hutch_err_set(err, errno, "socketpair"), NULL;
	}
	if (pthread_create(&s->thread, NULL, worker, s) != 0) {
		close(s->fds[0]);
		close(s->fds[1]);
		free(s);
		if (ctx_free)
			ctx_free(ctx);
		return hutch_err_setx(err, EAGAIN, "cannot start a stream thread"), NULL;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, (size_t)64 * 1024, reader, s,
					      stream_free);
	if (!r) {
		stream_free(s);
		return hutch_err_setx(err, ENOMEM, "cannot create a response"), NULL;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	return r;
}

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "session/session.h"
#include "util/err.h"
#include "util/id.h"
#include "util/mem.h"
#include "util/text.h"
#include "util/time.h"

/*
 * Background commands of a session: started like `session sh`, but the call
 * returns a handle at once. A thread per command runs it through the same
 * engine (command.c) and keeps its output in a log any client can read
 * from an offset, wait on, or follow (re-attach), later and from another
 * connection. Clients can also feed stdin, send signals and resize a pty.
 */

#define LOG_MAX (4u << 20) /* bytes kept per stream: the most recent */

struct hutch_session_cmd {
	char id[40];
	struct hutch_session *s;
	struct hutch_exec_request req;
	struct hutch_command_io io;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int stdin_r; /* the program's stdin (a pipe) */
	int stdin_w; /* ours, -1 once closed */
	int master;  /* the pty (tty commands), -1 otherwise */
	pid_t program;
	bool started;
	bool done;
	int start_rc;
	struct hutch_err start_err;
	struct hutch_buf log[2]; /* stdout, stderr: the last LOG_MAX bytes */
	uint64_t dropped[2];	 /* bytes no longer in the log, from the front */
	char *result;		 /* the ExecResult JSON once done */
	struct hutch_session_cmd *next;
};

static void on_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct hutch_session_cmd *c = ctx;
	struct hutch_buf *b = &c->log[stream == 2];

	pthread_mutex_lock(&c->lock);
	hutch_buf_append(b, buf, len);
	if (b->len > LOG_MAX) { /* keep the most recent bytes */
		size_t cut = b->len - LOG_MAX;
		memmove(b->data, b->data + cut, b->len - cut);
		b->len -= cut;
		b->data[b->len] = '\0';
		c->dropped[stream == 2] += cut;
	}
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
}

static void on_start(void *ctx, pid_t program, int master)
{
	struct hutch_session_cmd *c = ctx;

	pthread_mutex_lock(&c->lock);
	c->program = program;
	c->master = master;
	c->started = true;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
}

static void *cmd_main(void *arg)
{
	struct hutch_session_cmd *c = arg;
	struct hutch_run_hooks hooks = {on_output, c, 0, c->stdin_r, true};
	struct hutch_exec_result res;
	struct hutch_err err = {0, ""};
	int rc = hutch_session_command(c->s, &c->req, &c->io, &hooks, &res, &err);
	char *json = NULL;

	if (rc == 0) {
		snprintf(res.session_id, sizeof(res.session_id), "%s", c->s->id);
		snprintf(res.path, sizeof(res.path), "session");
		json = hutch_result_to_json(&res);
		hutch_result_release(&res);
	}
	pthread_mutex_lock(&c->lock);
	c->result = json;
	if (!c->started) { /* failed before the program ran */
		c->start_rc = -1;
		c->start_err = err;
	}
	c->started = c->done = true;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void cmd_free(struct hutch_session_cmd *c)
{
	hutch_request_release(&c->req);
	if (c->stdin_r >= 0)
		close(c->stdin_r);
	if (c->stdin_w >= 0)
		close(c->stdin_w);
	hutch_buf_release(&c->log[0]);
	hutch_buf_release(&c->log[1]);
	free(c->result);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->changed);
	free(c);
}

struct hutch_session_cmd *hutch_cmd_start(struct hutch_session *s, struct hutch_exec_request *req,
					  const struct hutch_command_io *io, struct hutch_err *err)
{
	struct hutch_session_cmd *c = hutch_xcalloc(1, sizeof(*c));
	int p[2];

	hutch_id_new(c->id, sizeof(c->id), "cmd");
	c->s = s;
	c->req = *req; /* moved: the caller's request is emptied */
	hutch_request_init(req);
	hutch_request_release(req);
	c->io = *io;
	c->io.on_start = on_start;
	c->io.ctx = c;
	c->master = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	/* stdin: a pipe we keep the write end of (non-blocking: a program that
	 * does not read must not stall the daemon) */
	if (pipe2(p, O_CLOEXEC) < 0) {
		hutch_err_set(err, errno, "stdin pipe");
		c->stdin_r = c->stdin_w = -1;
		cmd_free(c);
		return NULL;
	}
	c->stdin_r = p[0];
	c->stdin_w = p[1];
	fcntl(c->stdin_w, F_SETFL, O_NONBLOCK);
	if (pthread_create(&c->thread, NULL, cmd_main, c) != 0) {
		hutch_err_setx(err, EAGAIN, "cannot start a command thread");
		cmd_free(c);
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	while (!c->started)
		pthread_cond_wait(&c->changed, &c->lock);
	int rc = c->start_rc;
	pthread_mutex_unlock(&c->lock);
	if (rc < 0) {
		*err = c->start_err;
		pthread_join(c->thread, NULL);
		cmd_free(c);
		return NULL;
	}
	/* the program has its own copy now */
	pthread_mutex_lock(&c->lock);
	close(c->stdin_r);
	c->stdin_r = -1;
	c->next = s->cmds;
	s->cmds = c;
	pthread_mutex_unlock(&c->lock);
	return c;
}

const char *hutch_cmd_id(const struct hutch_session_cmd *c)
{
	return c->id;
}

struct hutch_session_cmd *hutch_cmd_find(struct hutch_session *s, const char *id)
{
	for (struct hutch_session_cmd *c = s->cmds; c; c = c->next)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

/* Stop and free every command of a session (its cell is going away). */
void hutch_cmd_free_all(struct hutch_session *s)
{
	while (s->cmds) {
		struct hutch_session_cmd *c = s->cmds;
		s->cmds = c->next;
		pthread_mutex_lock(&c->lock);
		if (!c->done && c->program > 0)
			(void)kill(-c->program, SIGKILL);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
		cmd_free(c);
	}
}

/* --- what clients see --- */

static json_t *log_since(struct hutch_session_cmd *c, int i, uint64_t *offset)
{
	struct hutch_buf *b = &c->log[i];
	uint64_t end = c->dropped[i] + b->len;
	uint64_t from = *offset < c->dropped[i] ? c->dropped[i] : *offset;
	size_t len = from < end ? (size_t)(end - from) : 0;
	size_t out_len;
	char *text =
		hutch_utf8_sanitize(b->data ? b->data + (from - c->dropped[i]) : "", len, &out_len);
	json_t *s = json_stringn(text, out_len);

	free(text);
	*offset = end;
	return s;
}

/* {"command_id", "running", "stdout", "stdout_offset", ..., "result"}:
 * output after the given offsets; the caller holds c->lock. */
static json_t *snapshot(struct hutch_session_cmd *c, uint64_t off_out, uint64_t off_err)
{
	json_t *o = json_pack("{s:s,s:b}", "command_id", c->id, "running", !c->done);

	json_object_set_new(o, "stdout", log_since(c, 0, &off_out));
	json_object_set_new(o, "stdout_offset", json_integer((json_int_t)off_out));
	json_object_set_new(o, "stderr", log_since(c, 1, &off_err));
	json_object_set_new(o, "stderr_offset", json_integer((json_int_t)off_err));
	json_object_set_new(o, "result", c->result ? json_loads(c->result, 0, NULL) : json_null());
	return o;
}

json_t *hutch_cmd_poll(struct hutch_session_cmd *c, uint64_t off_out, uint64_t off_err)
{
	pthread_mutex_lock(&c->lock);
	json_t *o = snapshot(c, off_out, off_err);
	pthread_mutex_unlock(&c->lock);
	return o;
}

static void deadline_ts(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

json_t *hutch_cmd_wait(struct hutch_session_cmd *c, uint64_t timeout_ms, uint64_t off_out,
		       uint64_t off_err, const struct hutch_run_hooks *hooks)
{
	uint64_t end = hutch_now_us() + timeout_ms * 1000;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (hooks && hooks->on_output) { /* attach: follow the output */
			for (int i = 0; i < 2; i++) {
				uint64_t *off = i ? &off_err : &off_out;
				uint64_t from = *off < c->dropped[i] ? c->dropped[i] : *off;
				uint64_t to = c->dropped[i] + c->log[i].len;
				if (from < to)
					hooks->on_output(hooks->ctx, i + 1,
							 c->log[i].data + (from - c->dropped[i]),
							 (size_t)(to - from));
				*off = to;
			}
		}
		uint64_t now = hutch_now_us();
		if (c->done || now >= end)
			break;
		if (hooks && hooks->cancel_fd > 0) {
			struct pollfd pfd = {hooks->cancel_fd, 0, 0};
			if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
				break; /* the follower went away */
		}
		struct timespec ts;
		uint64_t step = (end - now) / 1000 < 200 ? (end - now) / 1000 + 1 : 200;
		deadline_ts(&ts, step);
		pthread_cond_timedwait(&c->changed, &c->lock, &ts);
	}
	json_t *o = snapshot(c, off_out, off_err);
	pthread_mutex_unlock(&c->lock);
	return o;
}

int hutch_cmd_signal(struct hutch_session_cmd *c, int sig, struct hutch_err *err)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->done)
		rc = hutch_err_setx(err, ESRCH, "command %s has exited", c->id);
	else if (kill(-c->program, sig) < 0)
		rc = hutch_err_set(err, errno, "signal command %s", c->id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hutch_cmd_stdin(struct hutch_session_cmd *c, const void *data, size_t len, bool eof,
		    size_t *written, struct hutch_err *err)
{
	int rc = 0;

	*written = 0;
	pthread_mutex_lock(&c->lock);
	int fd = c->master >= 0 ? c->master : c->stdin_w;
	if (fd < 0 && len) {
		rc = hutch_err_setx(err, EPIPE, "stdin of command %s is closed", c->id);
	} else if (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno != EAGAIN)
			rc = hutch_err_set(err, errno, "write to command %s", c->id);
		*written = n > 0 ? (size_t)n : 0;
	}
	if (rc == 0 && eof) {
		if (c->master >= 0) /* a terminal's end of input is ^D */
			(void)!write(c->master, "\x04", 1);
		else if (c->stdin_w >= 0) {
			close(c->stdin_w);
			c->stdin_w = -1;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hutch_cmd_resize(struct hutch_session_cmd *c, unsigned rows, unsigned cols,
		     struct hutch_err *err)
{
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->master < 0)
		rc = hutch_err_setx(err, ENOTTY, "command %s has no terminal (start it with tty)",
				    c->id);
	else if (ioctl(c->master, TIOCSWINSZ, &ws) < 0)
		rc = hutch_err_set(err, errno, "resize the terminal of %s", c->id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

bool hutch_cmd_any_running(struct hutch_session *s)
{
	bool any = false;

	for (struct hutch_session_cmd *c = s->cmds; c && !any; c = c->next) {
		pthread_mutex_lock(&c->lock);
		any = !c->done;
		pthread_mutex_unlock(&c->lock);
	}
	return any;
}

json_t *hutch_cmd_list(struct hutch_session *s)
{
	json_t *a = json_array();

	for (struct hutch_session_cmd *c = s->cmds; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		json_array_append_new(
			a,
			json_pack("{s:s,s:b,s:o}", "command_id", c->id, "running", !c->done, "argv",
				  json_pack("[s]",
					    c->req.argv && c->req.argv[2] ? c->req.argv[2] : "")));
		pthread_mutex_unlock(&c->lock);
	}
	return a;
}

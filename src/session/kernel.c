#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/seccomp.h"
#include "run/capture.h"
#include "run/netpolicy.h"
#include "run/netwatch.h"
#include "run/proxy.h"
#include "run/runner.h"
#include "session/session.h"
#include "util/err.h"
#include "util/fdpass.h"
#include "util/id.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/time.h"

/*
 * A session's kernel: started in a fresh cell, spoken to over fd 3 with
 * length-prefixed JSON frames (docs/kernels.md). One call at a time; the
 * caller holds the session's lock.
 */

#define FRAME_MAX	   (64u << 20)
#define READY_TIMEOUT_MS   30000
#define INTERRUPT_GRACE_MS 2000

static const char *kernel_source(const char *language)
{
	if (strcmp(language, "python") == 0)
		return hutch_kernel_python_src;
	if (strcmp(language, "bash") == 0)
		return hutch_kernel_bash_src;
	if (strcmp(language, "node") == 0)
		return hutch_kernel_node_src;
	return NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* --- frames --- */

static int send_frame(int fd, json_t *msg, struct hutch_err *err)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	size_t len = text ? strlen(text) : 0;
	unsigned char hdr[4] = {(unsigned char)len, (unsigned char)(len >> 8),
				(unsigned char)(len >> 16), (unsigned char)(len >> 24)};
	struct iovec iov[2] = {{hdr, 4}, {text, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	size_t want = 4 + len;
	int rc = 0;

	json_decref(msg);
	if (!text)
		return hutch_err_setx(err, ENOMEM, "encode a kernel message");
	while (want > 0) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = hutch_err_set(err, errno, "send to the kernel");
			break;
		}
		want -= (size_t)n;
		while (n > 0 && mh.msg_iovlen > 0) { /* skip what was sent */
			size_t k =
				(size_t)n < mh.msg_iov->iov_len ? (size_t)n : mh.msg_iov->iov_len;
			mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + k;
			mh.msg_iov->iov_len -= k;
			n -= (ssize_t)k;
			if (mh.msg_iov->iov_len == 0) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	free(text);
	return rc;
}

/* One whole frame from the buffer, or NULL (more bytes needed, or *bad set). */
static json_t *take_frame(struct hutch_buf *b, bool *bad)
{
	const unsigned char *p = (const unsigned char *)b->data;
	uint32_t len;
	json_t *msg;

	if (b->len < 4)
		return NULL;
	len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (len > FRAME_MAX) {
		*bad = true;
		return NULL;
	}
	if (b->len < 4 + (size_t)len)
		return NULL;
	/* output may hold NUL characters (\u0000) */
	msg = json_loadb(b->data + 4, len, JSON_ALLOW_NUL, NULL);
	memmove(b->data, b->data + 4 + len, b->len - 4 - len);
	b->len -= 4 + len;
	if (!json_is_object(msg)) {
		json_decref(msg);
		*bad = true;
		return NULL;
	}
	return msg;
}

/* Read what the control socket has; false at EOF or error. The first
 * bytes come with the kernel's credentials (SO_PASSCRED): its pid, which
 * commands enter the cell through (see command.c). */
static bool read_ctl(struct hutch_session *s)
{
	char buf[65536];

	if (s->kernel_pid == 0) {
		ssize_t n = hutch_recv_pid(s->ctl, buf, sizeof(buf), &s->kernel_pid);
		if (n <= 0)
			return false;
		hutch_buf_append(&s->inbuf, buf, (size_t)n);
	}
	for (;;) {
		ssize_t n = recv(s->ctl, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			hutch_buf_append(&s->inbuf, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
}

/* Move what a kernel pipe holds into cap (NULL: discard); false at EOF. */
static bool drain_pipe(int fd, struct hutch_capture *cap)
{
	char buf[65536];

	if (fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			if (cap)
				hutch_capture_add(cap, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN;
	}
}

/* --- start and stop --- */

struct spawn_job {
	struct hutch_session *s;
	const struct hutch_cell_spec *spec;
	struct hutch_err *err;
	int rc;
};

static void spawn_on_spawner(void *arg)
{
	struct spawn_job *j = arg;

	j->rc = hutch_cell_spawn(j->spec, &j->s->cell, j->err);
}

/* Wait for the kernel's ready frame; its stderr goes to the error. */
static int await_ready(struct hutch_session *s, struct hutch_err *err)
{
	uint64_t deadline = hutch_now_us() + (uint64_t)READY_TIMEOUT_MS * 1000;
	struct hutch_capture errs;
	int rc = -1;

	hutch_capture_init(&errs, 2, 4096, NULL);
	for (;;) {
		bool bad = false;
		json_t *msg = take_frame(&s->inbuf, &bad);
		if (msg) {
			const char *type = json_string_value(json_object_get(msg, "type"));
			rc = type && strcmp(type, "ready") == 0 ? 0 : -1;
			json_decref(msg);
			if (rc < 0)
				hutch_err_setx(err, EPROTO, "kernel sent something before ready");
			break;
		}
		uint64_t now = hutch_now_us();
		struct pollfd pfd[2] = {{s->ctl, POLLIN, 0}, {s->err, POLLIN, 0}};
		if (bad || now >= deadline ||
		    poll(pfd, 2, (int)((deadline - now) / 1000) + 1) < 0) {
			hutch_err_setx(err, bad ? EPROTO : ETIMEDOUT, "kernel did not start");
			break;
		}
		drain_pipe(s->out, NULL);
		drain_pipe(s->err, &errs);
		if ((pfd[0].revents & POLLIN) && !read_ctl(s)) {
			struct hutch_output o;
			hutch_capture_finish(&errs, &o);
			hutch_err_setx(err, EPIPE, "kernel exited while starting: %.180s",
				       o.data ? o.data : "");
			free(o.data);
			hutch_capture_release(&errs);
			return -1;
		}
	}
	hutch_capture_release(&errs);
	return rc;
}

/* Read init's setup outcome: EOF means the kernel was exec'd. */
static int check_setup(struct hutch_session *s, struct hutch_err *err)
{
	struct hutch_cell_failure f;
	ssize_t n = read(s->cell.report_fd, &f, sizeof(f));

	close_fd(&s->cell.report_fd);
	if (n == (ssize_t)sizeof(f)) {
		*err = f.err;
		return hutch_err_prefix(err, "session set-up, step %s", f.step);
	}
	return 0;
}

static int make_cgroup(struct hutch_session *s, struct hutch_err *err)
{
	char name[96];

	if (s->cg.version)
		return 0;
	snprintf(name, sizeof(name), "%d.%s", getpid(), s->id);
	return hutch_cgroup_create(&s->cg, name, &s->conf.limits, s->cg_note, sizeof(s->cg_note),
				   err);
}

/* The kernel's fds: control socketpair, stdout and stderr pipes, and the
 * pipe its source arrives on (written whole here: a pipe holds 64 KiB). */
struct kernel_fds {
	int sp[2];
	int outp[2];
	int errp[2];
	int srcp[2];
};

static void close_fds(struct kernel_fds *f)
{
	int *all[] = {f->sp, f->outp, f->errp, f->srcp};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		close_fd(&all[i][0]);
		close_fd(&all[i][1]);
	}
}

static int open_fds(struct kernel_fds *f, const char *src, const char *language,
		    struct hutch_err *err)
{
	size_t src_len = strlen(src);

	if (pipe2(f->srcp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->sp) < 0 ||
	    pipe2(f->outp, O_CLOEXEC) < 0 || pipe2(f->errp, O_CLOEXEC) < 0)
		return hutch_err_set(err, errno, "kernel pipes");
	if (src_len >= 65536 || write(f->srcp[1], src, src_len) != (ssize_t)src_len)
		return hutch_err_setx(err, EFBIG, "the %s kernel does not fit in a pipe", language);
	close_fd(&f->srcp[1]);
	/* the kernel's first frame tells us its pid (read_ctl) */
	int on = 1;
	if (setsockopt(f->sp[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0)
		return hutch_err_set(err, errno, "SO_PASSCRED");
	return 0;
}

/* allow: the session's egress proxy on the listener init made in the cell */
static int start_proxy(struct hutch_session *s, int proxy_fd, const struct hutch_net_policy *policy,
		       struct hutch_err *err)
{
	const struct hutch_limits *l = &s->conf.limits;
	const struct hutch_proxy_caps caps = {l->net_connections, l->net_bytes_out,
					      l->net_bytes_in};

	s->egress_mark = 0;
	s->proxy = hutch_proxy_start(proxy_fd, policy, &caps, s->id, err);
	if (!s->proxy)
		return -1;
	json_t *ctx = hutch_egress_context(&s->conf, s->id);
	json_object_del(ctx, "execution_id");
	json_object_set_new(ctx, "session_id", json_string(s->id));
	hutch_proxy_set_context(s->proxy, ctx);
	json_decref(ctx);
	return 0;
}

int hutch_kernel_start(struct hutch_session *s, struct hutch_err *err)
{
	const char *src = kernel_source(s->language);
	struct kernel_fds f = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	/* The source arrives on stdin (a pipe holding all of it, then EOF), so
	 * `ps` in the session shows a short command line, not the kernel. */
	char *node_argv[] = {"/usr/bin/node", "-e",
			     "require('vm').runInThisContext(require('fs').readFileSync(0, 'utf8'),"
			     " {filename: 'hutch-kernel.js'})",
			     NULL};
	char *py_argv[] = {"/usr/bin/python3", "-I", "-c",
			   "import sys; exec(compile(sys.stdin.read(), '<hutch-kernel>', 'exec'))",
			   NULL};
	char **envp = hutch_runner_build_env(&s->conf);
	struct hutch_net_policy policy;
	int proxy_fd = -1;
	int watch_fd = -1;
	const struct hutch_limits *l = &s->conf.limits;
	int rc = -1;

	if (!src) {
		hutch_err_setx(err, EINVAL, "no kernel for language '%s'", s->language);
		goto out;
	}
	if (open_fds(&f, src, s->language, err) < 0 || make_cgroup(s, err) < 0 ||
	    hutch_session_net_policy(s, &policy, err) < 0)
		goto out;
	struct hutch_cell_spec spec = {
		.use_userns = !hutch_cell_is_privileged(),
		.outer_uid = getuid(),
		.outer_gid = getgid(),
		.disk_bytes = l->disk_bytes,
		.workdir = HUTCH_WORKSPACE,
		.argv = strcmp(s->language, "node") == 0 ? node_argv : py_argv,
		.envp = envp,
		.stdin_fd = f.srcp[0],
		.stdout_fd = f.outp[1],
		.stderr_fd = f.errp[1],
		.rlimits = {.file_bytes = l->file_bytes,
			    .data_bytes = s->cg.version ? 0 : l->memory_bytes,
			    .nproc = s->cg.version ? 0 : l->pids},
		.cgroup = &s->cg,
		.seccomp = hutch_seccomp_profile(err),
		.workspace_dir = s->workspace,
		.has_control_fd = true,
		.control_fd = f.sp[1],
	};
	spec.connwatch = hutch_seccomp_connwatch(err);
	spec.watch_fd_out = &watch_fd;
	if (!spec.seccomp || !spec.connwatch)
		goto out;
	struct hutch_net_block blocks[HUTCH_NET_MAX_BLOCKS];
	if (policy.mode == HUTCH_NET_FULL) {
		spec.net_full = true;
		spec.blocks = blocks;
		spec.nblocks = hutch_net_full_blocks(&policy, blocks, HUTCH_NET_MAX_BLOCKS);
	}
	if (policy.mode == HUTCH_NET_ALLOW) {
		spec.proxy_fd_out = &proxy_fd;
		spec.envp = envp = hutch_proxy_env(envp);
	}
	struct spawn_job job = {s, &spec, err, -1};
	hutch_session_on_spawner(spawn_on_spawner, &job);
	if (job.rc < 0)
		goto out;
	s->kernel_pid = 0;
	s->ctl = f.sp[0];
	s->out = f.outp[0];
	s->err = f.errp[0];
	f.sp[0] = f.outp[0] = f.errp[0] = -1;
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	fcntl(s->err, F_SETFL, O_NONBLOCK);
	s->inbuf.len = 0;
	s->state = SESSION_RUNNING;
	if (watch_fd >= 0) { /* the kernel connects between calls too: a thread */
		s->watch_mark = 0;
		s->watch = hutch_netwatch_new(watch_fd, &policy, s->id);
		json_t *ctx = hutch_egress_context(&s->conf, s->id);
		json_object_del(ctx, "execution_id"); /* the kernel's attempts span calls */
		json_object_set_new(ctx, "session_id", json_string(s->id));
		hutch_netwatch_set_context(s->watch, ctx);
		hutch_netwatch_set_max_conns(s->watch, l->net_connections);
		json_decref(ctx);
		if (hutch_netwatch_start_thread(s->watch) < 0) {
			hutch_err_setx(err, EAGAIN, "cannot start the connect watch thread");
			hutch_kernel_stop(s);
			goto out;
		}
	}
	if ((proxy_fd >= 0 && start_proxy(s, proxy_fd, &policy, err) < 0) ||
	    check_setup(s, err) < 0 || await_ready(s, err) < 0) {
		hutch_kernel_stop(s);
		goto out;
	}
	rc = 0;
out:
	close_fds(&f);
	hutch_runner_free_strv(envp);
	return rc;
}

void hutch_kernel_stop(struct hutch_session *s)
{
	if (s->cell.pid > 0) {
		if (s->cg.version) {
			s->cpu_us_dead += hutch_cgroup_cpu_us(&s->cg);
			(void)hutch_cgroup_freeze(&s->cg, false, NULL);
			hutch_cgroup_kill(&s->cg);
		}
		hutch_cell_kill(&s->cell);
		hutch_cell_reap(&s->cell, NULL);
	}
	close_fd(&s->ctl);
	s->kernel_pid = 0;
	json_decref(hutch_proxy_stop(s->proxy)); /* NULL: nothing to stop */
	s->proxy = NULL;
	hutch_netwatch_free(s->watch);
	s->watch = NULL;
	close_fd(&s->out);
	close_fd(&s->err);
	hutch_buf_release(&s->inbuf);
	s->state = SESSION_DEAD;
	/* a fresh cgroup for the next kernel: counters start at zero */
	if (s->cg.version)
		(void)hutch_cgroup_destroy(&s->cg, NULL);
	memset(&s->cg, 0, sizeof(s->cg));
}

int hutch_kernel_ensure(struct hutch_session *s, struct hutch_err *err)
{
	if (s->state == SESSION_PAUSED) {
		if (hutch_cgroup_freeze(&s->cg, false, err) < 0)
			return -1;
		s->state = SESSION_RUNNING;
	}
	if (s->state == SESSION_RUNNING)
		return 0;
	if (hutch_kernel_start(s, err) < 0)
		return -1;
	if (!s->note[0])
		snprintf(s->note, sizeof(s->note),
			 "the session's kernel was not running; a fresh one was started "
			 "(files are intact, interpreter state is not)");
	return 0;
}

/* --- one call --- */

struct call {
	struct hutch_session *s;
	char id[40];
	struct hutch_capture out;
	struct hutch_capture err;
	json_t *done;	  /* the done frame */
	json_t *displays; /* display frames' data */
	bool interrupted; /* we sent an interrupt (timeout or cancel) */
	bool timed_out;
	bool cancelled;
	bool died; /* the kernel went away */
	bool protocol_error;
};

/* Handle the frames the buffer holds; true once done arrived. */
static bool take_frames(struct call *c)
{
	for (;;) {
		bool bad = false;
		json_t *msg = take_frame(&c->s->inbuf, &bad);
		if (bad)
			c->protocol_error = true;
		if (!msg)
			return false;
		const char *type = json_string_value(json_object_get(msg, "type"));
		if (type && strcmp(type, "display") == 0) {
			json_array_append(c->displays, json_object_get(msg, "data"));
			json_decref(msg);
		} else if (type && strcmp(type, "done") == 0) {
			c->done = msg;
			return true;
		} else {
			json_decref(msg);
		}
	}
}

static void interrupt(struct call *c)
{
	if (c->interrupted)
		return;
	c->interrupted = true;
	(void)send_frame(c->s->ctl, json_pack("{s:s}", "op", "interrupt"), NULL);
}

/* Run the call's loop until done, death, or the grace after an interrupt. */
static void pump(struct call *c, uint64_t deadline, int cancel_fd)
{
	struct hutch_session *s = c->s;
	uint64_t grace_end = 0;

	while (!c->done && !c->died && !c->protocol_error) {
		uint64_t now = hutch_now_us();
		uint64_t until = grace_end ? grace_end : deadline;
		if (now >= until) {
			if (grace_end)
				return; /* ignored the interrupt: the caller restarts it */
			c->timed_out = true;
			interrupt(c);
			grace_end = now + (uint64_t)INTERRUPT_GRACE_MS * 1000;
			continue;
		}
		struct pollfd pfd[4] = {{s->ctl, POLLIN, 0},
					{s->out, POLLIN, 0},
					{s->err, POLLIN, 0},
					{cancel_fd, 0, 0}};
		int wait_ms = (int)((until - now + 999) / 1000);
		if (poll(pfd, cancel_fd >= 0 ? 4 : 3, wait_ms) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			drain_pipe(s->out, &c->out);
		if (pfd[2].revents)
			drain_pipe(s->err, &c->err);
		if (pfd[0].revents && !read_ctl(s))
			c->died = true;
		take_frames(c);
		if (cancel_fd >= 0 && (pfd[3].revents & POLLHUP) && !c->cancelled) {
			c->cancelled = true;
			interrupt(c);
			grace_end = hutch_now_us() + (uint64_t)INTERRUPT_GRACE_MS * 1000;
		}
	}
}

static char *dup_str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? hutch_xstrdup(v) : NULL;
}

/* What the done frame says, into the result. */
static void apply_done(struct call *c, struct hutch_exec_result *res, json_t *extra)
{
	const char *status = json_string_value(json_object_get(c->done, "status"));
	json_t *error = json_object_get(c->done, "error");
	json_t *code = json_object_get(c->done, "exit_code");

	if (status && strcmp(status, "ok") == 0) {
		res->status = HUTCH_STATUS_OK;
		res->exit_code = 0;
	} else if (status && strcmp(status, "interrupted") == 0) {
		res->status = c->cancelled ? HUTCH_STATUS_KILLED : HUTCH_STATUS_TIMEOUT;
		res->exit_code = -1;
	} else {
		res->status = HUTCH_STATUS_ERROR;
		res->exit_code = 1;
	}
	if (json_is_integer(code))
		res->exit_code = (int)json_integer_value(code);
	if (json_is_object(error)) {
		res->error_type = dup_str(error, "type");
		res->error_message = dup_str(error, "message");
		res->error_traceback = dup_str(error, "traceback");
	}
	json_object_set(extra, "value", json_object_get(c->done, "value") ?: json_null());
	if (json_is_string(json_object_get(c->done, "note"))) /* bash: the shell was replaced */
		json_object_set(extra, "note", json_object_get(c->done, "note"));
}

/* The kernel died or would not stop: say why, and start a fresh one. */
static void recover(struct call *c, struct hutch_exec_result *res, json_t *extra)
{
	struct hutch_session *s = c->s;
	struct hutch_cgroup_stats st = {0};
	struct hutch_err e;
	char why[200];

	if (s->cg.version)
		hutch_cgroup_stats(&s->cg, &st);
	if (c->died && st.oom_kills) {
		res->status = HUTCH_STATUS_OOM;
		snprintf(res->limit_hit, sizeof(res->limit_hit), "memory");
		snprintf(why, sizeof(why), "the kernel was killed at the memory limit");
	} else if (c->died) {
		res->status = HUTCH_STATUS_ERROR;
		snprintf(why, sizeof(why), "the kernel exited during the call");
	} else if (c->protocol_error) {
		res->status = HUTCH_STATUS_ERROR;
		snprintf(why, sizeof(why), "the kernel broke the protocol");
	} else {
		res->status = c->cancelled ? HUTCH_STATUS_KILLED : HUTCH_STATUS_TIMEOUT;
		snprintf(why, sizeof(why), "the kernel ignored the interrupt for %d ms",
			 INTERRUPT_GRACE_MS);
	}
	if (res->status == HUTCH_STATUS_TIMEOUT)
		snprintf(res->limit_hit, sizeof(res->limit_hit), "wall_time");
	res->exit_code = -1;
	drain_pipe(s->out, &c->out);
	drain_pipe(s->err, &c->err);
	hutch_kernel_stop(s);
	json_object_set_new(extra, "kernel_restarted", json_true());
	if (hutch_kernel_start(s, &e) < 0) {
		json_object_set_new(extra, "note",
				    json_sprintf("%s; restarting it failed: %s (the next call "
						 "tries again)",
						 why, e.msg));
		return;
	}
	json_object_set_new(extra, "note",
			    json_sprintf("%s; a fresh kernel was started (files are intact, "
					 "interpreter state is not)",
					 why));
}

int hutch_kernel_exec(struct hutch_session *s, const char *code, uint64_t timeout_ms,
		      const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		      struct hutch_err *err)
{
	struct call c = {.s = s};
	json_t *extra = json_object();
	uint64_t t0 = hutch_now_us();
	uint64_t cpu0;
	int cancel_fd = hooks && hooks->cancel_fd > 0 ? hooks->cancel_fd : -1;

	hutch_capture_init(&c.out, 1, s->conf.limits.output_bytes, hooks);
	hutch_capture_init(&c.err, 2, s->conf.limits.output_bytes, hooks);
	c.displays = json_array();
	json_object_set_new(extra, "kernel_restarted", json_false());
	if (s->note[0]) {
		json_object_set_new(extra, "kernel_restarted", json_true());
		json_object_set_new(extra, "note", json_string(s->note));
		s->note[0] = '\0';
	}
	cpu0 = s->cg.version ? hutch_cgroup_cpu_us(&s->cg) : 0;
	hutch_id_new(c.id, sizeof(c.id), "call");
	/* output the kernel made between calls (background threads) counts here */
	drain_pipe(s->out, &c.out);
	drain_pipe(s->err, &c.err);
	if (send_frame(s->ctl, json_pack("{s:s,s:s,s:s}", "op", "exec", "id", c.id, "code", code),
		       err) < 0)
		c.died = true;
	else
		pump(&c, t0 + timeout_ms * 1000, cancel_fd);
	res->timings.run_us = hutch_now_us() - t0;
	if (c.done) {
		drain_pipe(s->out, &c.out);
		drain_pipe(s->err, &c.err);
		apply_done(&c, res, extra);
		if (c.timed_out && res->status == HUTCH_STATUS_TIMEOUT)
			snprintf(res->limit_hit, sizeof(res->limit_hit), "wall_time");
	} else {
		recover(&c, res, extra);
	}
	res->cpu_ms = s->cg.version && s->state == SESSION_RUNNING
			      ? (hutch_cgroup_cpu_us(&s->cg) - cpu0) / 1000
			      : 0;
	if (s->cg.version) {
		struct hutch_cgroup_stats st = {0};
		hutch_cgroup_stats(&s->cg, &st);
		res->peak_memory_bytes = st.peak_bytes;
	}
	res->wall_ms = res->timings.run_us / 1000;
	hutch_capture_finish(&c.out, &res->out);
	hutch_capture_finish(&c.err, &res->err);
	hutch_capture_release(&c.out);
	hutch_capture_release(&c.err);
	json_object_set_new(extra, "display", c.displays);
	if (s->proxy)
		hutch_egress_merge(&res->egress_json,
				   hutch_proxy_log_since(s->proxy, &s->egress_mark));
	if (s->watch)
		hutch_egress_merge(&res->egress_json,
				   hutch_netwatch_log_since(s->watch, &s->watch_mark));
	res->extra_json = json_dumps(extra, JSON_COMPACT);
	json_decref(extra);
	json_decref(c.done);
	return 0;
}

int hutch_kernel_reset(struct hutch_session *s, struct hutch_err *err)
{
	uint64_t deadline = hutch_now_us() + 10ull * 1000000;

	if (send_frame(s->ctl, json_pack("{s:s}", "op", "reset"), err) < 0)
		return -1;
	for (;;) {
		bool bad = false;
		json_t *msg = take_frame(&s->inbuf, &bad);
		if (msg) {
			json_decref(msg); /* the reset's done */
			return 0;
		}
		uint64_t now = hutch_now_us();
		struct pollfd pfd = {s->ctl, POLLIN, 0};
		if (bad || now >= deadline || poll(&pfd, 1, (int)((deadline - now) / 1000) + 1) < 0)
			return hutch_err_setx(err, ETIMEDOUT, "kernel did not answer the reset");
		drain_pipe(s->out, NULL);
		drain_pipe(s->err, NULL);
		if (!read_ctl(s))
			return hutch_err_setx(err, EPIPE, "kernel exited during the reset");
	}
}

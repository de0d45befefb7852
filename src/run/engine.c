#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "run/capture.h"
#include "run/errparse.h"
#include "run/lang.h"
#include "run/netwatch.h"
#include "run/path.h"
#include "run/proxy.h"
#include "run/engine.h"
#include "run/runner.h"
#include "util/err.h"
#include "util/io.h"
#include "util/id.h"
#include "util/mem.h"
#include "util/time.h"

/*
 * The engine both paths share: one request in one cell.
 *
 *   acquire   a cell's resources (cold: a new cgroup; fast: a pool entry)
 *   setup     until the program starts (cold: clone, root filesystem,
 *             privileges, execve; fast: the warm child places the files,
 *             drops privileges and says "ready")
 *   run       supervise: stdout/stderr capture, wall and CPU deadlines
 *   teardown  kill what is left, reap, account, release the resources
 *
 * What differs between the paths is in struct hutch_engine_ops (cold.c,
 * fast.c); timings, limits and the result are built here, once.
 */

static const char default_path[] =
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static bool env_has(const struct hutch_exec_request *req, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < req->nenv; i++)
		if (strncmp(req->env[i], name, n) == 0 && req->env[i][n] == '=')
			return true;
	return false;
}

/* Only what the request names, plus PATH, HOME, LANG and TMPDIR (which the
 * request may override). The host's environment never enters. */
char **hutch_proxy_env(char **env)
{
	/* curl, pip, npm, git, urllib, requests and node's undici (with
	 * NODE_USE_ENV_PROXY) read these; some only the lower-case ones */
	static const char *const vars[] = {
		"HTTP_PROXY=http://127.0.0.1:3128",
		"HTTPS_PROXY=http://127.0.0.1:3128",
		"ALL_PROXY=http://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128",
		"https_proxy=http://127.0.0.1:3128",
		"all_proxy=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1,::1",
		"no_proxy=localhost,127.0.0.1,::1",
		"NODE_USE_ENV_PROXY=1",
	};
	size_t n = 0;
	size_t nvars = sizeof(vars) / sizeof(vars[0]);

	while (env[n])
		n++;
	env = hutch_xrealloc(env, (n + nvars + 1) * sizeof(char *));
	for (size_t i = 0; i < nvars; i++) {
		/* the request's own value wins (it may point somewhere allowed) */
		size_t klen = (size_t)(strchr(vars[i], '=') - vars[i]) + 1;
		bool set = false;
		for (size_t j = 0; j < n && !set; j++)
			set = strncmp(env[j], vars[i], klen) == 0;
		if (!set)
			env[n++] = hutch_xstrdup(vars[i]);
	}
	env[n] = NULL;
	return env;
}

char **hutch_runner_build_env(const struct hutch_exec_request *req)
{
	static const char *const defaults[][2] = {{"PATH", default_path},
						  {"HOME", "HOME=" HUTCH_WORKSPACE},
						  {"LANG", "LANG=C.UTF-8"},
						  {"TMPDIR", "TMPDIR=/tmp"}};
	char **env = hutch_xcalloc(req->nenv + 5, sizeof(char *));
	size_t n = 0;

	for (size_t i = 0; i < 4; i++)
		if (!env_has(req, defaults[i][0]))
			env[n++] = hutch_xstrdup(defaults[i][1]);
	for (size_t i = 0; i < req->nenv; i++)
		env[n++] = hutch_xstrdup(req->env[i]);
	return env;
}

char **hutch_runner_build_argv(const struct hutch_exec_request *req)
{
	const struct hutch_lang *lang = req->language ? hutch_lang_find(req->language) : NULL;
	size_t nargs = 0;
	char **argv;
	size_t n = 0;

	while (req->argv && req->argv[nargs])
		nargs++;
	argv = hutch_xcalloc(nargs + 3, sizeof(char *));
	if (lang) {
		argv[n++] = hutch_xstrdup(lang->interpreter);
		argv[n++] = hutch_xasprintf("%s/%s", HUTCH_WORKSPACE, lang->file);
	}
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = hutch_xstrdup(req->argv[i]);
	return argv;
}

/* Files with validated, absolute paths, plus the code file. Borrowed data. */
struct hutch_file *hutch_runner_build_files(const struct hutch_exec_request *req, size_t *count)
{
	const struct hutch_lang *lang = req->language ? hutch_lang_find(req->language) : NULL;
	struct hutch_file *files = hutch_xcalloc(req->nfiles + 1, sizeof(*files));
	char path[1100];
	size_t n = 0;

	for (size_t i = 0; i < req->nfiles; i++) {
		if (hutch_sandbox_path(req->files[i].path, path, sizeof(path), 0, NULL) < 0)
			continue; /* validated before; cannot happen */
		files[n] = req->files[i];
		files[n++].path = hutch_xstrdup(path);
	}
	if (lang && req->code) {
		files[n].path = hutch_xasprintf("%s/%s", HUTCH_WORKSPACE, lang->file);
		files[n].data = (unsigned char *)req->code;
		files[n].len = req->code_len;
		files[n++].mode = 0644;
	}
	*count = n;
	return files;
}

void hutch_runner_free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int open_stdin(const struct hutch_exec_request *req, struct hutch_err *err)
{
	int fd;

	if (!req->stdin_len) {
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return fd < 0 ? hutch_err_set(err, errno, "open /dev/null") : fd;
	}
	/* A memfd, not a pipe: the program sees a plain seekable file and the
	 * supervisor never blocks writing it or takes SIGPIPE. */
	fd = memfd_create("hutch-stdin", MFD_CLOEXEC);
	if (fd < 0)
		return hutch_err_set(err, errno, "memfd_create");
	if (hutch_write_all(fd, req->stdin_data, req->stdin_len) < 0) {
		hutch_err_set(err, errno, "write stdin");
		close(fd);
		return -1;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		hutch_err_set(err, errno, "seek stdin");
		close(fd);
		return -1;
	}
	return fd;
}

void hutch_engine_fail(struct hutch_exec_result *res, const char *step, const struct hutch_err *e)
{
	res->status = HUTCH_STATUS_SANDBOX_ERROR;
	snprintf(res->failed_step, sizeof(res->failed_step), "%s", step);
	res->failed_errno = e->code;
	snprintf(res->failed_msg, sizeof(res->failed_msg), "%s", e->msg);
}

void hutch_engine_fill_enforced(struct hutch_engine *c, const char *note)
{
	struct hutch_enforced *e = &c->res->enforced;
	enum hutch_mech cg = c->cg.version == 2	  ? HUTCH_MECH_CGROUP_V2
			     : c->cg.version == 1 ? HUTCH_MECH_CGROUP_V1
						  : HUTCH_MECH_RLIMIT;

	e->wall = HUTCH_MECH_SUPERVISOR;
	e->cpu = c->req->limits.cpu_ms ? (c->cg.version ? cg : HUTCH_MECH_RLIMIT) : HUTCH_MECH_NONE;
	e->memory = cg;
	e->pids = cg;
	e->output = HUTCH_MECH_SUPERVISOR;
	e->file = HUTCH_MECH_RLIMIT;
	e->disk = HUTCH_MECH_TMPFS;
	e->cpus = c->req->limits.cpus > 0 && c->cg.has[HUTCH_CG_CPU] ? cg : HUTCH_MECH_NONE;
	if (note && *note)
		snprintf(e->note, sizeof(e->note), "%s", note);
}

static void kill_all(struct hutch_engine *c)
{
	if (c->ops->kill)
		c->ops->kill(c);
	hutch_cell_kill(&c->cell);
	if (c->cg.version)
		hutch_cgroup_kill(&c->cg);
}

/* Read what is available on a pipe into its capture; false at EOF. */
static bool drain(struct hutch_engine *c, int *fd, struct hutch_capture *cap)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			c->last_output_us = hutch_now_us();
			hutch_capture_add(cap, buf, (size_t)n);
			if (c->req->limits.output_kill && cap->total > cap->limit &&
			    !c->output_killed) {
				c->output_killed = true;
				kill_all(c);
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		close(*fd);
		*fd = -1;
		return false;
	}
}

static void read_status(struct hutch_engine *c)
{
	ssize_t n = read(c->cell.status_fd, &c->report, sizeof(c->report));

	c->have_status = n == (ssize_t)sizeof(c->report);
}

static void check_cpu(struct hutch_engine *c)
{
	uint64_t limit_us = c->req->limits.cpu_ms * 1000;

	if (!limit_us || !c->cg.version || c->cpu_exceeded)
		return;
	if (hutch_cgroup_cpu_us(&c->cg) >= limit_us + c->cpu_base_us) {
		c->cpu_exceeded = true;
		kill_all(c);
	}
}

/* The run phase: until init has exited and both pipes are at EOF. */
static void supervise(struct hutch_engine *c)
{
	uint64_t exit_grace = 0;

	while (!c->init_exited || c->out_fd >= 0 || c->err_fd >= 0) {
		struct pollfd pfd[5] = {
			{c->out_fd, POLLIN, 0},
			{c->err_fd, POLLIN, 0},
			/* init writes its report and exits (EOF if it died):
			 * no need to wait for the kernel to finish its exit */
			{c->init_exited		  ? -1
			 : c->cell.status_fd >= 0 ? c->cell.status_fd
						  : c->cell.pidfd,
			 POLLIN, 0},
			/* a full hangup only: a client that
			 * half-closed still reads the result */
			{c->cancelled ? -1 : c->cancel_fd, 0, 0},
			{c->watch && !c->watch_gone ? hutch_netwatch_fd(c->watch) : -1, POLLIN, 0}};
		uint64_t now = hutch_now_us();
		int timeout_ms;

		if (!c->timed_out && now >= c->deadline_us) {
			c->timed_out = true;
			kill_all(c);
		}
		uint64_t idle_us = c->req->limits.idle_output_ms * 1000;
		if (idle_us && !c->timed_out && !c->init_exited &&
		    now >= c->last_output_us + idle_us) {
			c->timed_out = c->idle_out = true; /* partial output is kept */
			kill_all(c);
		}
		if (c->init_exited && !exit_grace)
			exit_grace = now + 1000000;
		if (exit_grace && now >= exit_grace)
			break; /* something in D state holds a pipe; stop waiting */
		timeout_ms = (int)((c->deadline_us > now ? c->deadline_us - now : 0) / 1000) + 1;
		if (idle_us && !c->timed_out) {
			uint64_t idle_end = c->last_output_us + idle_us;
			int idle_ms = (int)((idle_end > now ? idle_end - now : 0) / 1000) + 1;
			if (idle_ms < timeout_ms)
				timeout_ms = idle_ms;
		}
		if (c->req->limits.cpu_ms && c->cg.version && timeout_ms > 20)
			timeout_ms = 20;
		if (exit_grace && timeout_ms > 100)
			timeout_ms = 100;
		if (poll(pfd, 5, timeout_ms) < 0 && errno != EINTR)
			break;
		if (pfd[4].revents & POLLIN)
			hutch_netwatch_serve(c->watch);
		else if (pfd[4].revents)
			c->watch_gone = true; /* no process left under the filter */
		if (c->out_fd >= 0 && pfd[0].revents)
			drain(c, &c->out_fd, &c->out);
		if (c->err_fd >= 0 && pfd[1].revents)
			drain(c, &c->err_fd, &c->err);
		if (!c->init_exited && pfd[2].revents) {
			c->init_exited = true;
			if (c->cell.status_fd >= 0)
				read_status(c);
		}
		if (!c->cancelled && pfd[3].revents & (POLLHUP | POLLERR)) {
			c->cancelled = true; /* nobody is waiting for the result */
			kill_all(c);
		}
		check_cpu(c);
	}
}

/* Wait for the report pipe: EOF means execve succeeded. */
static bool wait_setup(struct hutch_engine *c)
{
	struct hutch_cell_failure f;
	struct pollfd pfd = {c->cell.report_fd, POLLIN, 0};
	uint64_t now = hutch_now_us();
	int timeout = (int)((c->deadline_us > now ? c->deadline_us - now : 0) / 1000) + 1;
	ssize_t n;

	if (poll(&pfd, 1, timeout) == 0) {
		c->timed_out = true;
		struct hutch_err e = {ETIMEDOUT,
				      "sandbox set-up did not finish before the deadline"};
		hutch_engine_fail(c->res, "setup", &e);
		return false;
	}
	n = read(c->cell.report_fd, &f, sizeof(f));
	if (n == 0 || n == 1)
		return true; /* EOF at execve (cold, or fast exec), or the fast path's "ready" */
	if (n != (ssize_t)sizeof(f)) {
		struct hutch_err e = {EIO, "sandbox died during set-up"};
		hutch_engine_fail(c->res, "setup", &e);
		return false;
	}
	f.step[sizeof(f.step) - 1] = '\0';
	f.err.msg[sizeof(f.err.msg) - 1] = '\0';
	hutch_engine_fail(c->res, f.step, &f.err);
	return false;
}

static void runtime_error(struct hutch_engine *c)
{
	struct hutch_exec_result *res = c->res;
	struct hutch_rt_error e = {NULL, NULL, NULL};
	bool found = false;

	if (!c->req->language || res->status == HUTCH_STATUS_OK)
		return;
	if (strcmp(c->req->language, "python") == 0)
		found = hutch_errparse_python(res->err.data, res->err.len, &e);
	else if (strcmp(c->req->language, "node") == 0)
		found = hutch_errparse_node(res->err.data, res->err.len, &e);
	if (found) {
		res->error_type = e.type;
		res->error_message = e.message;
		res->error_traceback = e.traceback;
	}
}

static void classify(struct hutch_engine *c, const struct hutch_cgroup_stats *st)
{
	struct hutch_exec_result *res = c->res;
	int ws = c->report.wait_status;

	if (c->have_status && WIFEXITED(ws))
		res->exit_code = WEXITSTATUS(ws);
	else if (c->have_status && WIFSIGNALED(ws))
		res->signal = WTERMSIG(ws);
	else
		res->signal = SIGKILL; /* killed with init, by us or the OOM killer */
	if (res->status == HUTCH_STATUS_SANDBOX_ERROR)
		return;
	if (c->timed_out) {
		res->status = HUTCH_STATUS_TIMEOUT;
		snprintf(res->limit_hit, sizeof(res->limit_hit), "%s",
			 c->idle_out ? "idle_output" : "wall_time");
	} else if (c->cpu_exceeded || res->signal == SIGXCPU) {
		res->status = HUTCH_STATUS_TIMEOUT;
		snprintf(res->limit_hit, sizeof(res->limit_hit), "cpu_time");
	} else if (st->oom_kills > 0) {
		res->status = HUTCH_STATUS_OOM;
		snprintf(res->limit_hit, sizeof(res->limit_hit), "memory");
	} else if (c->output_killed) {
		res->status = HUTCH_STATUS_OUTPUT_LIMIT;
		snprintf(res->limit_hit, sizeof(res->limit_hit), "output");
	} else if (res->signal) {
		res->status = HUTCH_STATUS_KILLED;
		if (res->signal == SIGXFSZ)
			snprintf(res->limit_hit, sizeof(res->limit_hit), "file_size");
	} else {
		res->status = res->exit_code == 0 ? HUTCH_STATUS_OK : HUTCH_STATUS_ERROR;
	}
	if (!res->limit_hit[0] && st->pids_max_hits > 0)
		snprintf(res->limit_hit, sizeof(res->limit_hit), "pids");
	if (!res->limit_hit[0] && c->have_status &&
	    c->report.disk_used + 65536 >= c->req->limits.disk_bytes)
		snprintf(res->limit_hit, sizeof(res->limit_hit), "disk");
}

/* An execve that failed because the command does not exist is the user's
 * error (exit 127, like a shell), not the sandbox's. */
static bool exec_failure_is_users(struct hutch_engine *c)
{
	struct hutch_exec_result *res = c->res;
	char msg[400];
	int n;

	if (strcmp(res->failed_step, "exec") != 0 ||
	    (res->failed_errno != ENOENT && res->failed_errno != EACCES &&
	     res->failed_errno != ENOEXEC))
		return false;
	res->status = HUTCH_STATUS_ERROR;
	res->exit_code = res->failed_errno == ENOENT ? 127 : 126;
	n = snprintf(msg, sizeof(msg), "hutch: %s\n", res->failed_msg);
	hutch_capture_add(&c->err, msg, (size_t)n);
	res->failed_step[0] = '\0';
	res->failed_errno = 0;
	res->failed_msg[0] = '\0';
	return true;
}

static void finish(struct hutch_engine *c, uint64_t t_end_run)
{
	struct hutch_exec_result *res = c->res;
	struct hutch_cgroup_stats st = {0};
	struct rusage ru;
	struct hutch_err e;

	memset(&ru, 0, sizeof(ru));
	kill_all(c);
	hutch_cell_reap(&c->cell, &ru);
	if (c->cg.version)
		hutch_cgroup_stats(&c->cg, &st);
	/* without a cgroup: what init measured of the program's tree */
	if (st.has_cpu)
		st.cpu_us = st.cpu_us > c->cpu_base_us ? st.cpu_us - c->cpu_base_us : 0;
	res->cpu_ms = st.has_cpu ? st.cpu_us / 1000 : c->report.cpu_us / 1000;
	res->peak_memory_bytes = st.has_peak ? st.peak_bytes : c->report.maxrss_bytes;
	res->bytes_written = c->have_status ? c->report.disk_used : 0;
	if (res->status == HUTCH_STATUS_SANDBOX_ERROR && exec_failure_is_users(c))
		c->have_status = true, c->report.wait_status = res->exit_code << 8;
	classify(c, &st);
	if (c->ops->release(c, &e) < 0 && res->status != HUTCH_STATUS_SANDBOX_ERROR)
		snprintf(res->enforced.note, sizeof(res->enforced.note), "%s", e.msg);
	if (c->proxy) { /* the program is gone: end its tunnels, keep the log */
		hutch_egress_merge(&res->egress_json, hutch_proxy_stop(c->proxy));
		c->proxy = NULL;
	}
	if (c->watch) {
		size_t mark = 0;
		hutch_egress_merge(&res->egress_json, hutch_netwatch_log_since(c->watch, &mark));
		hutch_netwatch_free(c->watch);
		c->watch = NULL;
	}
	hutch_capture_finish(&c->out, &res->out);
	hutch_capture_finish(&c->err, &res->err);
	runtime_error(c);
	res->wall_ms = res->timings.run_us / 1000;
	res->timings.teardown_us = hutch_now_us() - t_end_run;
}

static void result_init(struct hutch_exec_result *res, const struct hutch_exec_request *req)
{
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	hutch_id_new(res->id, sizeof(res->id), "run");
	snprintf(res->path, sizeof(res->path), "cold");
	if (req->session_id)
		snprintf(res->session_id, sizeof(res->session_id), "%s", req->session_id);
	res->limits = req->limits;
	res->labels = hutch_xcalloc(req->nlabels + 1, sizeof(char *));
	for (size_t i = 0; i < req->nlabels; i++)
		res->labels[i] = hutch_xstrdup(req->labels[i]);
	res->nlabels = req->nlabels;
}

static void run_cell(struct hutch_engine *c, uint64_t t0)
{
	struct hutch_exec_result *res = c->res;
	int pipes[2][2] = {{-1, -1}, {-1, -1}};
	int stdin_fd;
	struct hutch_err e;
	uint64_t t_spawn;
	uint64_t t_exec;

	if (c->stdin_from_hooks > 0) {
		stdin_fd = fcntl(c->stdin_from_hooks, F_DUPFD_CLOEXEC, 3);
		if (stdin_fd < 0)
			hutch_err_set(&e, errno, "dup stdin");
	} else {
		stdin_fd = open_stdin(c->req, &e);
	}
	if (stdin_fd >= 0 && c->given_out >= 0) {
		pipes[0][0] = c->given_out;
		pipes[1][0] = c->given_err;
		c->given_out = c->given_err = -1;
	} else if (stdin_fd >= 0 &&
		   (pipe2(pipes[0], O_CLOEXEC) < 0 || pipe2(pipes[1], O_CLOEXEC) < 0)) {
		hutch_err_set(&e, errno, "pipe");
		stdin_fd = (close(stdin_fd), -1);
	}
	if (stdin_fd < 0) {
		hutch_engine_fail(res, "stdio", &e);
		goto out;
	}
	t_spawn = hutch_now_us();
	res->timings.acquire_us = t_spawn - t0;
	c->deadline_us = t_spawn + c->req->limits.wall_ms * 1000;
	if (c->ops->start(c, stdin_fd, pipes[0][1], pipes[1][1], &e) < 0) {
		hutch_engine_fail(res, "spawn", &e);
		goto out;
	}
	for (int i = 0; i < 2; i++)
		if (pipes[i][1] >= 0)
			close(pipes[i][1]);
	pipes[0][1] = pipes[1][1] = -1;
	c->out_fd = pipes[0][0];
	c->err_fd = pipes[1][0];
	fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
	pipes[0][0] = pipes[1][0] = -1;
	bool started = wait_setup(c);
	t_exec = hutch_now_us();
	c->last_output_us = t_exec;
	res->timings.setup_us = t_exec - t_spawn;
	if (started || strcmp(res->failed_step, "exec") == 0)
		supervise(c);
	res->timings.run_us = started ? hutch_now_us() - t_exec : 0;
out:
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (pipes[i][j] >= 0)
				close(pipes[i][j]);
	if (stdin_fd >= 0)
		close(stdin_fd);
}

int hutch_engine_run(const struct hutch_engine_ops *ops, const struct hutch_exec_request *req,
		     const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		     struct hutch_err *err)
{
	struct hutch_engine c;
	uint64_t t0 = hutch_now_us();

	if (hutch_request_validate(req, err) < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.ops = ops;
	c.req = req;
	c.res = res;
	c.out_fd = c.err_fd = c.given_out = c.given_err = -1;
	c.cancel_fd = hooks && hooks->cancel_fd > 0 ? hooks->cancel_fd : -1;
	c.stdin_from_hooks = hooks && hooks->stdin_fd > 0 ? hooks->stdin_fd : -1;
	c.cell.pidfd = c.cell.report_fd = c.cell.status_fd = -1;
	result_init(res, req);
	snprintf(res->path, sizeof(res->path), "%s", ops->path);
	hutch_capture_init(&c.out, 1, req->limits.output_bytes, hooks);
	hutch_capture_init(&c.err, 2, req->limits.output_bytes, hooks);
	if (ops->acquire(&c) == 0)
		run_cell(&c, t0);
	uint64_t t_end = hutch_now_us();
	finish(&c, t_end);
	if (c.out_fd >= 0)
		close(c.out_fd);
	if (c.err_fd >= 0)
		close(c.err_fd);
	if (c.given_out >= 0)
		close(c.given_out);
	if (c.given_err >= 0)
		close(c.given_err);
	hutch_capture_release(&c.out);
	hutch_capture_release(&c.err);
	return 0;
}

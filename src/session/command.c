#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "cell/seccomp.h"
#include "run/engine.h"
#include "run/path.h"
#include "run/runner.h"
#include "session/session.h"
#include "util/err.h"

/*
 * A command in a session (`hutch session sh`): the engine of the cold and
 * fast paths (capture, deadlines, streaming, result), with a program
 * entered into the session's running cell instead of a new cell. Its
 * processes share the session's cgroup (and so its memory and pids limits),
 * filesystem and network namespace, but the engine must never kill or
 * account the whole cgroup: that is the session's, kernel included.
 */

struct command {
	struct hutch_session *s;
	pid_t program; /* its process group, in our pid namespace */
};

static int acquire(struct hutch_engine *c)
{
	struct command *cmd = c->ops->data;

	/* say which mechanism enforces the limits, then hand back the cgroup:
	 * the engine must not kill or account all of it */
	c->cg = cmd->s->cg;
	hutch_engine_fill_enforced(c, cmd->s->cg_note);
	memset(&c->cg, 0, sizeof(c->cg));
	return 0;
}

struct enter_job {
	const struct hutch_cell *target;
	const struct hutch_cell_spec *spec;
	struct hutch_cell *cell;
	pid_t *program;
	struct hutch_err *err;
	int rc;
};

static void enter_on_spawner(void *arg)
{
	struct enter_job *j = arg;

	j->rc = hutch_cell_enter(j->target, j->spec, j->cell, j->program, j->err);
}

static int start(struct hutch_engine *c, int stdin_fd, int out_w, int err_w, struct hutch_err *err)
{
	struct command *cmd = c->ops->data;
	struct hutch_session *s = cmd->s;
	char **argv = hutch_runner_build_argv(c->req);
	char **envp = hutch_runner_build_env(c->req);
	char workdir[1100] = HUTCH_WORKSPACE;
	const struct hutch_limits *l = &c->req->limits;

	if (c->req->workdir &&
	    hutch_sandbox_path(c->req->workdir, workdir, sizeof(workdir), 1, err) < 0) {
		hutch_runner_free_strv(argv);
		hutch_runner_free_strv(envp);
		return -1;
	}
	struct hutch_cell_spec spec = {
		.use_userns = !hutch_cell_is_privileged(),
		.workdir = workdir,
		.argv = argv,
		.envp = envp,
		.stdin_fd = stdin_fd,
		.stdout_fd = out_w,
		.stderr_fd = err_w,
		.rlimits = {.file_bytes = l->file_bytes,
			    .cpu_sec = l->cpu_ms ? (l->cpu_ms + 999) / 1000 : 0,
			    .data_bytes = s->cg.version ? 0 : l->memory_bytes,
			    .nproc = s->cg.version ? 0 : l->pids},
		.cgroup = &s->cg,
		.seccomp = hutch_seccomp_profile(err),
	};
	/* Enter through the kernel, not init: init is non-dumpable (its memory
	 * is a copy of ours), and joining a non-dumpable task's namespaces
	 * needs CAP_SYS_PTRACE, which a rootless daemon does not have. */
	struct hutch_cell target = {s->kernel_pid, -1, -1, -1};
	struct enter_job job = {&target, &spec, &c->cell, &cmd->program, err, -1};
	if (s->kernel_pid > 0)
		target.pidfd = pidfd_open(s->kernel_pid, 0);
	if (target.pidfd < 0)
		hutch_err_setx(err, ESRCH, "the session's kernel is not running");
	else if (spec.seccomp)
		hutch_session_on_spawner(enter_on_spawner, &job);
	if (target.pidfd >= 0)
		close(target.pidfd);
	hutch_runner_free_strv(argv);
	hutch_runner_free_strv(envp);
	return job.rc;
}

/* The program and its process group (a command's children stay in it
 * unless they make their own session, like daemons do on purpose). */
static void kill_program(struct hutch_engine *c)
{
	struct command *cmd = c->ops->data;

	if (cmd->program > 0)
		(void)kill(-cmd->program, SIGKILL);
}

static int release(struct hutch_engine *c, struct hutch_err *err)
{
	(void)c;
	(void)err;
	return 0;
}

int hutch_session_command(struct hutch_session *s, struct hutch_exec_request *req,
			  const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
			  struct hutch_err *err)
{
	struct command cmd = {s, 0};
	const struct hutch_engine_ops ops = {
		.path = "session",
		.acquire = acquire,
		.start = start,
		.kill = kill_program,
		.release = release,
		.data = &cmd,
	};
	int rc = hutch_engine_run(&ops, req, hooks, res, err);

	/* whatever the command left in its process group ends with it */
	if (cmd.program > 0)
		(void)kill(-cmd.program, SIGKILL);
	return rc;
}

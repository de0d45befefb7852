#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/openat2.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cell/seccomp.h"
#include "run/engine.h"
#include "run/path.h"
#include "run/netwatch.h"
#include "run/proxy.h"
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
	const struct hutch_command_io *io; /* may be NULL */
	pid_t program;			   /* its process group, in our pid namespace */
	int master;			   /* the pty's master side, or -1 */
	int relay_out;			   /* our copy of the engine's stdout pipe */
	pthread_t relay;
	bool relaying;
};

/* A terminal's output is one stream: copy it into the engine's stdout
 * pipe, where capture, streaming and limits apply as to any output. Ends
 * when every holder of the slave side has closed it (EIO) or on our close. */
static void *relay_main(void *arg)
{
	struct command *cmd = arg;
	char buf[16384];

	for (;;) {
		ssize_t n = read(cmd->master, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(cmd->relay_out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto out;
			done += w;
		}
	}
out:
	close(cmd->relay_out);
	cmd->relay_out = -1;
	return NULL;
}

/* The ptmx of the cell's own devpts (so the program sees /dev/pts/N of
 * its sandbox, and no host terminal is involved), reached through the
 * kernel's root without following anything the sandbox could plant. */
static int open_cell_ptmx(pid_t kernel, struct hutch_err *err)
{
	char path[64];
	struct open_how how = {.flags = O_RDWR | O_NOCTTY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	struct stat st;
	int root;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)kernel);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return hutch_err_set(err, errno, "open the session's root");
	fd = (int)syscall(SYS_openat2, root, "dev/pts/ptmx", &how, sizeof(how));
	close(root);
	if (fd < 0)
		return hutch_err_set(err, errno, "open the session's /dev/pts/ptmx");
	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 5 ||
	    minor(st.st_rdev) != 2) {
		close(fd);
		return hutch_err_setx(err, EINVAL, "the session's /dev/pts/ptmx is not a ptmx");
	}
	return fd;
}

/* A pty pair sized as asked; the slave goes to the program as 0, 1 and 2. */
static int open_pty(struct command *cmd, int *slave, struct hutch_err *err)
{
	struct winsize ws = {.ws_row = cmd->io->rows ? cmd->io->rows : 24,
			     .ws_col = cmd->io->cols ? cmd->io->cols : 80};

	cmd->master = open_cell_ptmx(cmd->s->kernel_pid, err);
	if (cmd->master < 0)
		return -1;
	if (unlockpt(cmd->master) < 0)
		return hutch_err_set(err, errno, "unlock the pty");
	/* the peer by fd, not by a path in a namespace we are not in */
	*slave = ioctl(cmd->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0)
		return hutch_err_set(err, errno, "open the pty's slave");
	(void)ioctl(cmd->master, TIOCSWINSZ, &ws);
	return 0;
}

static int acquire(struct hutch_engine *c)
{
	struct command *cmd = c->ops->data;

	/* say which mechanism enforces the limits, then hand back the cgroup:
	 * the engine must not kill or account all of it */
	c->cg = cmd->s->cg;
	hutch_engine_fill_enforced(c, cmd->s->cg_note);
	if (cmd->s->quota)
		c->res->enforced.disk = HUTCH_MECH_IMAGE;
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

	if (s->proxy) /* the session's way out, as for its kernel */
		envp = hutch_proxy_env(envp);
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
	int slave = -1;
	if (cmd->io && cmd->io->tty) {
		if (open_pty(cmd, &slave, err) < 0) {
			hutch_runner_free_strv(argv);
			hutch_runner_free_strv(envp);
			return -1;
		}
		spec.stdin_fd = spec.stdout_fd = spec.stderr_fd = slave;
		spec.tty = true;
	}
	/* what the command tries on its own is seen as for the kernel */
	int watch_fd = -1;
	spec.connwatch = hutch_seccomp_connwatch(err);
	spec.watch_fd_out = &watch_fd;
	if (!spec.connwatch)
		spec.seccomp = NULL;
	if (s->kernel_pid > 0)
		target.pidfd = pidfd_open(s->kernel_pid, 0);
	if (target.pidfd < 0)
		hutch_err_setx(err, ESRCH, "the session's kernel is not running");
	else if (spec.seccomp)
		hutch_session_on_spawner(enter_on_spawner, &job);
	if (target.pidfd >= 0)
		close(target.pidfd);
	if (slave >= 0)
		close(slave);
	hutch_runner_free_strv(argv);
	hutch_runner_free_strv(envp);
	if (job.rc == 0 && watch_fd >= 0) {
		struct hutch_net_policy policy;
		struct hutch_err perr;
		if (hutch_session_net_policy(s, &policy, &perr) < 0)
			policy.mode = HUTCH_NET_NONE; /* checked when the session was made */
		json_t *ctx = hutch_egress_context(c->req, c->res->id);
		json_object_set_new(ctx, "session_id", json_string(s->id));
		c->watch = hutch_netwatch_new(watch_fd, &policy, c->res->id);
		hutch_netwatch_set_context(c->watch, ctx);
		json_decref(ctx);
	} else if (watch_fd >= 0) {
		close(watch_fd);
	}
	if (job.rc == 0 && cmd->master >= 0) {
		cmd->relay_out = fcntl(out_w, F_DUPFD_CLOEXEC, 3);
		if (cmd->relay_out >= 0 && pthread_create(&cmd->relay, NULL, relay_main, cmd) == 0)
			cmd->relaying = true;
	}
	if (job.rc == 0 && cmd->io && cmd->io->on_start)
		cmd->io->on_start(cmd->io->ctx, cmd->program, cmd->master);
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
			  const struct hutch_command_io *io, const struct hutch_run_hooks *hooks,
			  struct hutch_exec_result *res, struct hutch_err *err)
{
	struct command cmd = {s, io, 0, -1, -1, 0, false};
	const struct hutch_engine_ops ops = {
		.path = "session",
		.acquire = acquire,
		.start = start,
		.kill = kill_program,
		.release = release,
		.data = &cmd,
	};
	int rc = hutch_engine_run(&ops, req, hooks, res, err);

	if (rc == 0 && s->proxy) /* what it tried through the session's proxy */
		hutch_egress_merge(&res->egress_json,
				   hutch_proxy_log_since(s->proxy, &s->egress_mark));

	/* whatever the command left in its process group ends with it */
	if (cmd.program > 0)
		(void)kill(-cmd.program, SIGKILL);
	if (cmd.master >= 0) {
		if (io && io->on_start)
			io->on_start(io->ctx, cmd.program, -1); /* the pty is going away */
		close(cmd.master); /* wakes the relay if anything still holds the slave */
	}
	if (cmd.relaying)
		pthread_join(cmd.relay, NULL);
	if (cmd.relay_out >= 0)
		close(cmd.relay_out);
	return rc;
}

/* Sessions: long-lived cells with a language kernel (layer session/ in
 * DESIGN.md). Internal; the public face is hutch_session_call() in hutch.h,
 * which takes and returns JSON (docs/sessions.md).
 *
 * Shape of a session:
 *
 *   daemon (this code)
 *     └─ init of the session's cell (cold cell: hutch_cell_spawn)
 *          └─ kernel (kernels/: python.py, bash.py, node.js): fd 3 = control socket, fd 1/2 = pipes
 *     └─ waiter → command (hutch_cell_enter) for each shell command
 *
 * The workspace is a host directory, <state>/sessions/<id>/workspace, bound
 * on /workspace: it outlives the processes, the daemon and its restarts.
 */
#ifndef HUTCH_SESSION_SESSION_H
#define HUTCH_SESSION_SESSION_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cell/cell.h"
#include "cell/cgroup.h"
#include "hutch.h"
#include "run/netpolicy.h"
#include "util/buf.h"

enum session_state { SESSION_RUNNING, SESSION_PAUSED, SESSION_DEAD };

struct hutch_session {
	char id[40];
	char language[16];
	char dir[512];	      /* <state>/sessions/<id> */
	char workspace[600];  /* dir/workspace, bound on /workspace */
	int workspace_fd;     /* O_PATH of workspace, for the files API */
	bool quota;	      /* the workspace is a size-capped ext4 image (cell/quota.c) */
	char quota_note[160]; /* why not */
	struct hutch_exec_request conf; /* language, env, limits, labels of `new` */
	uint64_t idle_timeout_ms;	/* 0: never auto-pause */
	uint64_t ttl_ms;		/* 0: no deadline */
	uint64_t created_ms;		/* wall clock, ms since the epoch */
	uint64_t last_used_ms;		/* monotonic */
	uint64_t calls;
	uint64_t cpu_us_dead; /* CPU of kernels that have gone (restarts) */
	char note[256];	      /* why the kernel was restarted, once, for the next result */

	/* the running cell (state RUNNING or PAUSED) */
	enum session_state state;
	struct hutch_cgroup cg;
	char cg_note[160];
	struct hutch_cell cell;
	int ctl;	  /* control socket to the kernel */
	pid_t kernel_pid; /* in our pid namespace, from its credentials */
	int out;	  /* the kernel's stdout and stderr */
	int err;
	struct hutch_buf inbuf;	      /* partial frames from ctl */
	struct hutch_proxy *proxy;    /* network policy allow: (run/proxy.c), or NULL */
	size_t egress_mark;	      /* proxy log entries already given to a result */
	struct hutch_netwatch *watch; /* the kernel's direct connects (run/netwatch.c) */
	size_t watch_mark;

	struct hutch_session_cmd *cmds; /* background commands (commands.c), under lock */

	pthread_mutex_t lock; /* one call at a time; held for the whole call */
	int refs;	      /* guarded by the manager's lock */
	bool gone;	      /* killed: no new calls */
};

struct hutch_sessions {
	char state_dir[400];
	pthread_mutex_t lock; /* the table */
	struct hutch_session **tab;
	size_t n;
	pthread_t reaper;
	int reaper_stop[2];
	bool reaper_running;
};

/* manager.c */
struct hutch_session *hutch_session_create(struct hutch_sessions *m,
					   const struct hutch_exec_request *conf,
					   uint64_t idle_timeout_ms, uint64_t ttl_ms,
					   struct hutch_err *err);
int hutch_session_kill(struct hutch_sessions *m, const char *id, struct hutch_err *err);
json_t *hutch_session_list(struct hutch_sessions *m);
struct hutch_session *hutch_session_get(struct hutch_sessions *m, const char *id,
					struct hutch_err *err);
void hutch_session_put(struct hutch_sessions *m, struct hutch_session *s);
int hutch_session_save_meta(const struct hutch_session *s, struct hutch_err *err);
/* The session's network policy, from its configuration. */
int hutch_session_net_policy(const struct hutch_session *s, struct hutch_net_policy *policy,
			     struct hutch_err *err);
json_t *hutch_session_info(struct hutch_session *s);

/* kernel.c: the kernel process and its protocol. Callers hold s->lock. */
int hutch_kernel_start(struct hutch_session *s, struct hutch_err *err);
void hutch_kernel_stop(struct hutch_session *s);
int hutch_kernel_exec(struct hutch_session *s, const char *code, uint64_t timeout_ms,
		      const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		      struct hutch_err *err);
int hutch_kernel_reset(struct hutch_session *s, struct hutch_err *err);
/* Make sure a kernel runs (thaw a paused one, restart a dead one). */
int hutch_kernel_ensure(struct hutch_session *s, struct hutch_err *err);

/* command.c: a command in the session's cell. The caller holds s->lock
 * until the program started (io->on_start), or for the whole call. */
struct hutch_command_io {
	bool tty;		   /* run on a pty (stdout and stderr merged) */
	unsigned short rows, cols; /* its size (0: 24x80) */
	/* called once the program runs (its process group and the pty's
	 * master, or -1) and again with master -1 before the pty closes */
	void (*on_start)(void *ctx, pid_t program, int tty_master);
	void *ctx;
};
int hutch_session_command(struct hutch_session *s, struct hutch_exec_request *req,
			  const struct hutch_command_io *io, const struct hutch_run_hooks *hooks,
			  struct hutch_exec_result *res, struct hutch_err *err);

/* commands.c: background commands. Start, find and list under s->lock;
 * the rest only needs a reference on the session (commands are freed with
 * it). */
struct hutch_session_cmd;
struct hutch_session_cmd *hutch_cmd_start(struct hutch_session *s, struct hutch_exec_request *req,
					  const struct hutch_command_io *io, struct hutch_err *err);
const char *hutch_cmd_id(const struct hutch_session_cmd *c);
struct hutch_session_cmd *hutch_cmd_find(struct hutch_session *s, const char *id);
void hutch_cmd_free_all(struct hutch_session *s);
json_t *hutch_cmd_list(struct hutch_session *s);
bool hutch_cmd_any_running(struct hutch_session *s);
json_t *hutch_cmd_poll(struct hutch_session_cmd *c, uint64_t off_out, uint64_t off_err);
/* Wait up to timeout_ms for the command to end; with hooks, stream its
 * output from the offsets as it comes (attach). */
json_t *hutch_cmd_wait(struct hutch_session_cmd *c, uint64_t timeout_ms, uint64_t off_out,
		       uint64_t off_err, const struct hutch_run_hooks *hooks);
int hutch_cmd_signal(struct hutch_session_cmd *c, int sig, struct hutch_err *err);
int hutch_cmd_stdin(struct hutch_session_cmd *c, const void *data, size_t len, bool eof,
		    size_t *written, struct hutch_err *err);
int hutch_cmd_resize(struct hutch_session_cmd *c, unsigned rows, unsigned cols,
		     struct hutch_err *err);

/* transfer.c: tar of a tree in memory, both ways (paths in-root), and
 * snapshots of a workspace under <state>/snapshots/<name>. */
int hutch_session_tar_out(int root, const char *path, struct hutch_buf *out, struct hutch_err *err);
int hutch_session_tar_in(int root, const char *path, const void *data, size_t len,
			 struct hutch_err *err);
json_t *hutch_session_snapshot(struct hutch_sessions *m, struct hutch_session *s, const char *name,
			       struct hutch_err *err);
struct hutch_session *hutch_snapshot_restore(struct hutch_sessions *m, const char *name,
					     uint64_t idle_timeout_ms, uint64_t ttl_ms,
					     struct hutch_err *err);
int hutch_snapshot_delete(struct hutch_sessions *m, const char *name, struct hutch_err *err);
json_t *hutch_snapshot_list(struct hutch_sessions *m);

/* spawner.c: run fn(arg) on the one long-lived thread that creates every
 * session process. PR_SET_PDEATHSIG fires when the creating *thread* ends,
 * and a session must outlive the connection that made it. */
void hutch_session_on_spawner(void (*fn)(void *), void *arg);

/* kernel_src.S: the kernels' sources, NUL-terminated. */
extern const char hutch_kernel_python_src[];
extern const char hutch_kernel_bash_src[];
extern const char hutch_kernel_node_src[];

#endif

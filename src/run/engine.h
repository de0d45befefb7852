/* The engine shared by the cold and fast paths (engine.c). Internal. */
#ifndef HUTCH_RUN_ENGINE_H
#define HUTCH_RUN_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "cell/cell.h"
#include "hutch.h"
#include "run/capture.h"

struct hutch_engine;

struct hutch_engine_ops {
	const char *path; /* "cold" or "fast", for the result */
	/* Get the cell's resources: set c->cg (version 0 when none) and call
	 * hutch_engine_fill_enforced; on failure call hutch_engine_fail and
	 * return -1. */
	int (*acquire)(struct hutch_engine *c);
	/* Start the program with these stdio fds (out_w and err_w are -1 when
	 * acquire gave the cell's own pipes): fill c->cell (pidfd to kill,
	 * report_fd to read setup's outcome from, status_fd for init's report). */
	int (*start)(struct hutch_engine *c, int stdin_fd, int out_w, int err_w,
		     struct hutch_err *err);
	/* Optional: kill what hutch_cell_kill on c->cell does not reach (a
	 * program entered into a cell lives outside the waiter's tree). */
	void (*kill)(struct hutch_engine *c);
	/* Give back what acquire took (after accounting). */
	int (*release)(struct hutch_engine *c, struct hutch_err *err);
	void *data;
};

struct hutch_engine {
	const struct hutch_engine_ops *ops;
	const struct hutch_exec_request *req;
	struct hutch_exec_result *res;
	struct hutch_cgroup cg;
	struct hutch_cell cell;
	struct hutch_capture out;
	struct hutch_capture err;
	int out_fd;
	int err_fd;
	uint64_t deadline_us;
	bool timed_out;
	bool idle_out;		 /* no output for limits.idle_output_ms */
	uint64_t last_output_us; /* when output last arrived (or the run started) */
	bool cpu_exceeded;
	bool output_killed;
	bool init_exited;
	bool have_status;
	bool cancelled; /* the caller went away (hooks->cancel_fd) */
	int cancel_fd;
	int stdin_from_hooks; /* hooks->stdin_fd, or -1 */
	struct hutch_cell_report report;
	void *slot; /* the path's own per-run state (a pool entry) */
	/* the connect watch, when start set one up (run/netwatch.h) */
	struct hutch_netwatch *watch;
	bool watch_gone;
	/* allow: on the fast path, the proxy start set up (run/proxy.h) */
	struct hutch_proxy *proxy;
	/* Set by acquire when the cell comes with its own output pipes (a
	 * program started ahead already writes to them): their read ends,
	 * which the engine takes over; -1 otherwise. */
	int given_out;
	int given_err;
	/* CPU time the cell's cgroup had used before the request (that
	 * program's start-up): not the request's */
	uint64_t cpu_base_us;
};

int hutch_engine_run(const struct hutch_engine_ops *ops, const struct hutch_exec_request *req,
		     const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		     struct hutch_err *err);
void hutch_engine_fail(struct hutch_exec_result *res, const char *step, const struct hutch_err *e);
void hutch_engine_fill_enforced(struct hutch_engine *c, const char *note);

#endif

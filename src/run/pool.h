/* Pools of warm, pre-isolated cells, forked from a zygote (see
 * src/cell/zygote.h), refilled in the background. Thread-safe. */
#ifndef HUTCH_RUN_POOL_H
#define HUTCH_RUN_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cell/cgroup.h"
#include "hutch.h"

/* One cell waiting for a request: B's pid and pidfd, the channel to C, the
 * status pipe from B, and its cgroup (already attached). Owned by whoever
 * took it from the pool. */
struct hutch_pool_entry {
	pid_t pid;
	int pidfd;
	int chan;
	int status_fd;
	int watch_fd; /* the connect watch's listener (cell/connwatch.h) */
	int proxy_fd; /* listener on the cell's 127.0.0.1:3128, for allow: */
	char kind;    /* HUTCH_CELL_ANY or HUTCH_CELL_NODE (run/zproto.h) */
	int out_fd;   /* a node cell's: its node's stdout and stderr */
	int err_fd;
	uint64_t disk_bytes;
	struct hutch_cgroup cg;
	char cg_note[160];
};

struct hutch_pool_stats {
	uint64_t served;      /* entries handed out */
	uint64_t misses;      /* requests that found the pool empty */
	uint64_t forks;	      /* entries made */
	unsigned ready;	      /* entries waiting now */
	unsigned target;      /* how many it keeps ready now */
	unsigned max;	      /* the cap (of each kind) */
	unsigned node_ready;  /* node cells waiting now */
	unsigned node_target; /* how many it keeps ready now */
	uint64_t node_served; /* node requests served by a node cell */
	uint64_t node_misses; /* node requests that found none ready */
	pid_t zygote_pid;     /* 0 when none */
};

/* Start a zygote for the "host" template (Python with `preload` imported,
 * comma-separated) and keep `min` to `max` cells ready. The zygote program
 * is $HUTCH_ZYGOTE, or hutch-zygote beside the running binary, or in
 * HUTCH_LIBEXECDIR. */
struct hutch_pool *hutch_pool_start(const char *preload, unsigned min, unsigned max,
				    struct hutch_err *err);
/* Whether a request can run on this pool's cells (else: the cold path). */
bool hutch_pool_can_serve(const struct hutch_pool *pool, const struct hutch_exec_request *req);
/* Take a ready cell of this kind (HUTCH_CELL_*, run/zproto.h). A node
 * request may get a cell for any program instead (e->kind says which);
 * when none is ready at all, one is made now. */
int hutch_pool_take(struct hutch_pool *pool, char kind, struct hutch_pool_entry *e,
		    struct hutch_err *err);
/* Release what an entry holds (kills its processes, removes its cgroup). */
void hutch_pool_entry_release(struct hutch_pool_entry *e);
/* Hand a finished run's cgroup (its processes killed) to the pool, which
 * removes it in the background. */
void hutch_pool_bury(struct hutch_pool *pool, struct hutch_cgroup *cg);
void hutch_pool_get_stats(struct hutch_pool *pool, struct hutch_pool_stats *st);
/* Stop refilling, kill the zygote and every ready cell. */
void hutch_pool_stop(struct hutch_pool *pool);

#endif

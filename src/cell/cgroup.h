/* Per-cell cgroups: cgroup v2 (most machines), or v1 (memory, pids, cpu and
 * cpuacct, freezer as separate hierarchies), detected at run time. Where no
 * cgroup can be created (rootless without delegation) version is 0 and the
 * caller falls back to rlimits and says so. */
#ifndef HUTCH_CELL_CGROUP_H
#define HUTCH_CELL_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

enum hutch_cg_ctl {
	HUTCH_CG_MEMORY,
	HUTCH_CG_PIDS,
	HUTCH_CG_CPU,
	HUTCH_CG_CPUACCT,
	HUTCH_CG_FREEZER,
	HUTCH_CG_NCTL,
};

struct hutch_cgroup {
	int version; /* 0: none, 1 or 2 */
	/* v2: dirs[0] is the cgroup; v1: one dir per controller ("" if absent) */
	char dirs[HUTCH_CG_NCTL][PATH_MAX];
	bool has[HUTCH_CG_NCTL];
};

struct hutch_cgroup_stats {
	uint64_t cpu_us;
	uint64_t peak_bytes;
	uint64_t oom_kills;
	uint64_t pids_max_hits;
	bool has_cpu;
	bool has_peak;
};

/* Which backend this process would use; note says why when it is none. */
int hutch_cgroup_backend(char *note, size_t note_size);

/* Create the cgroup `name` with the limits applied. Returns 0 with
 * cg->version == 0 (and note filled) when cgroups are unavailable; -1 with
 * err when they are available but creating failed. */
int hutch_cgroup_create(struct hutch_cgroup *cg, const char *name, const struct hutch_limits *lim,
			char *note, size_t note_size, struct hutch_err *err);
/* Set memory, pids and cpu limits of an existing cgroup (pool cells get the
 * request's limits just before they run it). */
int hutch_cgroup_set_limits(struct hutch_cgroup *cg, const struct hutch_limits *lim,
			    struct hutch_err *err);
/* CPU weight relative to siblings (v2 cpu.weight 1-10000, default 100;
 * v1 cpu.shares scaled to match). No-op without a cpu controller. */
int hutch_cgroup_set_weight(const struct hutch_cgroup *cg, unsigned weight, struct hutch_err *err);
int hutch_cgroup_attach(const struct hutch_cgroup *cg, pid_t pid, struct hutch_err *err);
/* CPU time used so far (µs), or 0 when not available. */
uint64_t hutch_cgroup_cpu_us(const struct hutch_cgroup *cg);
void hutch_cgroup_stats(const struct hutch_cgroup *cg, struct hutch_cgroup_stats *st);
/* Freeze or thaw every process of the cgroup. */
int hutch_cgroup_freeze(const struct hutch_cgroup *cg, bool frozen, struct hutch_err *err);
/* SIGKILL every process in the cgroup (cgroup.kill on v2). */
void hutch_cgroup_kill(const struct hutch_cgroup *cg);
/* Kill what is left and remove the cgroup; waits up to ~2 s for exits. */
int hutch_cgroup_destroy(struct hutch_cgroup *cg, struct hutch_err *err);
/* Remove cgroups of hutch processes that no longer exist. */
void hutch_cgroup_sweep(void);
/* The directories under which hutch makes its cgroups (for tests). */
int hutch_cgroup_bases(char bases[][PATH_MAX], int max);

#endif

#include <errno.h>
#include <sys/resource.h>

#include "cell/cell.h"
#include "util/err.h"

/* Lower one limit. We can never raise a hard limit (no CAP_SYS_RESOURCE on
 * many hosts), so a request above the current hard limit keeps the hard one. */
static int lower_to(pid_t pid, int resource, const char *name, uint64_t soft, uint64_t hard,
		    struct hutch_err *err)
{
	struct rlimit cur;
	struct rlimit want;

	if (prlimit(pid, resource, NULL, &cur) < 0)
		return hutch_err_set(err, errno, "getrlimit %s", name);
	want.rlim_max = hard;
	if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < want.rlim_max)
		want.rlim_max = cur.rlim_max;
	want.rlim_cur = soft < want.rlim_max ? soft : want.rlim_max;
	if (prlimit(pid, resource, &want, NULL) < 0)
		return hutch_err_set(err, errno, "setrlimit %s", name);
	return 0;
}

static int lower(pid_t pid, int resource, const char *name, uint64_t value, struct hutch_err *err)
{
	return lower_to(pid, resource, name, value, value, err);
}

/* Backstops for the cgroup limits, and the only limits where cgroups are not
 * available (rootless without delegation). Child-only; async-signal-safe. */
int hutch_rlimit_apply(const struct hutch_cell_rlimits *rl, struct hutch_err *err)
{
	return hutch_rlimit_apply_to(0, rl, err);
}

/* The same for another process of ours (a warm node, already running). */
int hutch_rlimit_apply_to(pid_t pid, const struct hutch_cell_rlimits *rl, struct hutch_err *err)
{
	/* No core dumps: they would write the process's memory into the
	 * workspace, and take long enough to blur timeouts. */
	if (lower(pid, RLIMIT_CORE, "RLIMIT_CORE", 0, err) < 0)
		return -1;
	if (lower(pid, RLIMIT_FSIZE, "RLIMIT_FSIZE", rl->file_bytes, err) < 0)
		return -1;
	/* SIGXCPU at the soft limit, SIGKILL one second later if ignored */
	if (rl->cpu_sec &&
	    lower_to(pid, RLIMIT_CPU, "RLIMIT_CPU", rl->cpu_sec, rl->cpu_sec + 1, err) < 0)
		return -1;
	/* RLIMIT_DATA, not RLIMIT_AS: V8 and the JVM reserve large address
	 * ranges they never touch, and AS would refuse them. */
	if (rl->data_bytes && lower(pid, RLIMIT_DATA, "RLIMIT_DATA", rl->data_bytes, err) < 0)
		return -1;
	/* Counted per user namespace and uid (Linux >= 5.14), so in rootless
	 * mode it bounds this sandbox, not all of the caller's processes. */
	if (rl->nproc && lower(pid, RLIMIT_NPROC, "RLIMIT_NPROC", rl->nproc, err) < 0)
		return -1;
	return 0;
}

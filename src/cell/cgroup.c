#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cell/cgroup.h"
#include "util/cleanup.h"
#include "util/err.h"

static const char *const ctl_names[HUTCH_CG_NCTL] = {"memory", "pids", "cpu", "cpuacct", "freezer"};

/* What the machine offers, found once per process from /proc/self/mounts. */
struct backend {
	int version;
	char base[HUTCH_CG_NCTL][PATH_MAX]; /* v2: base[0]; v1: per controller */
	bool has[HUTCH_CG_NCTL];
	char note[160];
};

static struct backend be;
static pthread_once_t be_once = PTHREAD_ONCE_INIT;

static int read_text(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int write_text(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len)
		return -1;
	return 0;
}

static bool has_word(const char *list, const char *word, const char *seps)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n) {
		bool starts = p == list || strchr(seps, p[-1]);
		bool ends = p[n] == '\0' || strchr(seps, p[n]);
		if (starts && ends)
			return true;
	}
	return false;
}

static void detect_v2(const char *mnt, bool is_root)
{
	char ctls[512];
	char path[PATH_MAX];
	const char *parent = getenv("HUTCH_CGROUP_PARENT");

	snprintf(path, sizeof(path), "%s/cgroup.controllers", mnt);
	if (read_text(path, ctls, sizeof(ctls)) < 0)
		return;
	if (!has_word(ctls, "memory", " \n") || !has_word(ctls, "pids", " \n"))
		return;
	if (parent && *parent) {
		char up[PATH_MAX];
		char *slash;

		snprintf(be.base[0], PATH_MAX, "%s", parent);
		/* Cells can have only what the parent's parent offers, and a
		 * delegated subtree may lack cpu (systemd delegates memory and
		 * pids by default): asking for a missing one fails every run. */
		snprintf(up, sizeof(up), "%s", parent);
		slash = strrchr(up, '/');
		if (slash && slash != up)
			*slash = '\0';
		snprintf(path, sizeof(path), "%s/cgroup.controllers", up);
		if (read_text(path, ctls, sizeof(ctls)) < 0)
			snprintf(ctls, sizeof(ctls), "memory pids");
	} else if (is_root) {
		snprintf(be.base[0], PATH_MAX, "%s/hutch", mnt);
	} else {
		snprintf(be.note, sizeof(be.note),
			 "cgroup v2 not delegated to uid %u (set HUTCH_CGROUP_PARENT)", getuid());
		return;
	}
	be.version = 2;
	for (int i = 0; i < HUTCH_CG_NCTL; i++)
		be.has[i] = true; /* memory, pids, cpu; cpuacct and freezer are core on v2 */
	be.has[HUTCH_CG_CPU] = has_word(ctls, "cpu", " \n");
}

static void detect_backend(void)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct mntent *m;
	struct mntent ent;
	char buf[1024];
	char v2[PATH_MAX] = "";
	bool is_root = geteuid() == 0;
	const char *off = getenv("HUTCH_CGROUP");

	if (off && strcmp(off, "off") == 0) {
		snprintf(be.note, sizeof(be.note), "cgroups disabled by HUTCH_CGROUP=off");
		return;
	}
	f = setmntent("/proc/self/mounts", "re");
	if (!f) {
		snprintf(be.note, sizeof(be.note), "cannot read /proc/self/mounts");
		return;
	}
	while ((m = getmntent_r(f, &ent, buf, sizeof(buf)))) {
		if (strcmp(m->mnt_type, "cgroup2") == 0 && !v2[0]) {
			snprintf(v2, sizeof(v2), "%s", m->mnt_dir);
		} else if (strcmp(m->mnt_type, "cgroup") == 0) {
			for (int i = 0; i < HUTCH_CG_NCTL; i++)
				if (has_word(m->mnt_opts, ctl_names[i], ",") && !be.base[i][0])
					snprintf(be.base[i], PATH_MAX, "%s/hutch", m->mnt_dir);
		}
	}
	if (v2[0]) {
		detect_v2(v2, is_root);
		if (be.version == 2)
			return;
	}
	if (be.base[HUTCH_CG_MEMORY][0] && be.base[HUTCH_CG_PIDS][0]) {
		if (!is_root) {
			snprintf(be.note, sizeof(be.note),
				 "cgroup v1 hierarchies are not writable by uid %u", getuid());
			memset(be.base, 0, sizeof(be.base));
			return;
		}
		be.version = 1;
		for (int i = 0; i < HUTCH_CG_NCTL; i++)
			be.has[i] = be.base[i][0] != '\0';
		return;
	}
	memset(be.base, 0, sizeof(be.base));
	if (!be.note[0])
		snprintf(be.note, sizeof(be.note),
			 "no usable cgroup hierarchy with memory and pids");
}

int hutch_cgroup_backend(char *note, size_t note_size)
{
	pthread_once(&be_once, detect_backend);
	if (note && note_size)
		snprintf(note, note_size, "%s", be.note);
	return be.version;
}

int hutch_cgroup_bases(char bases[][PATH_MAX], int max)
{
	int n = 0;

	hutch_cgroup_backend(NULL, 0);
	for (int i = 0; i < HUTCH_CG_NCTL && n < max; i++) {
		if (!be.base[i][0])
			continue;
		bool dup = false;
		for (int j = 0; j < n; j++)
			dup |= strcmp(bases[j], be.base[i]) == 0;
		if (!dup)
			snprintf(bases[n++], PATH_MAX, "%s", be.base[i]);
	}
	return n;
}

/* v2: a controller is usable in a child only if enabled in every ancestor's
 * subtree_control. Enable ours in the base's parent and in the base. */
static int v2_prepare_base(struct hutch_err *err)
{
	char parent[PATH_MAX];
	const char *want = be.has[HUTCH_CG_CPU] ? "+memory +pids +cpu" : "+memory +pids";

	if (mkdir(be.base[0], 0755) < 0 && errno != EEXIST)
		return hutch_err_set(err, errno, "mkdir '%s'", be.base[0]);
	snprintf(parent, sizeof(parent), "%s", be.base[0]);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		(void)write_text(parent, "cgroup.subtree_control", want); /* may be set already */
	}
	if (write_text(be.base[0], "cgroup.subtree_control", want) < 0)
		return hutch_err_set(err, errno, "enable controllers in '%s'", be.base[0]);
	return 0;
}

static int apply_v2(struct hutch_cgroup *cg, const struct hutch_limits *lim, struct hutch_err *err)
{
	char num[64];
	const char *dir = cg->dirs[0];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)lim->memory_bytes);
	if (write_text(dir, "memory.max", num) < 0)
		return hutch_err_set(err, errno, "set memory.max");
	(void)write_text(dir, "memory.swap.max", "0"); /* absent without swap accounting */
	/* One OOM kill takes the whole cell: a half-killed tree is worse. */
	(void)write_text(dir, "memory.oom.group", "1");
	snprintf(num, sizeof(num), "%llu", (unsigned long long)lim->pids);
	if (write_text(dir, "pids.max", num) < 0)
		return hutch_err_set(err, errno, "set pids.max");
	if (lim->cpus > 0 && be.has[HUTCH_CG_CPU]) {
		snprintf(num, sizeof(num), "%llu 100000", (unsigned long long)(lim->cpus * 100000));
		if (write_text(dir, "cpu.max", num) < 0)
			return hutch_err_set(err, errno, "set cpu.max");
	}
	return 0;
}

static int apply_v1(struct hutch_cgroup *cg, const struct hutch_limits *lim, struct hutch_err *err)
{
	char num[64];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)lim->memory_bytes);
	if (write_text(cg->dirs[HUTCH_CG_MEMORY], "memory.limit_in_bytes", num) < 0)
		return hutch_err_set(err, errno, "set memory.limit_in_bytes");
	/* memory+swap equal to memory: no swapping around the limit. */
	(void)write_text(cg->dirs[HUTCH_CG_MEMORY], "memory.memsw.limit_in_bytes", num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)lim->pids);
	if (write_text(cg->dirs[HUTCH_CG_PIDS], "pids.max", num) < 0)
		return hutch_err_set(err, errno, "set pids.max");
	if (lim->cpus > 0 && cg->has[HUTCH_CG_CPU]) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)(lim->cpus * 100000));
		if (write_text(cg->dirs[HUTCH_CG_CPU], "cpu.cfs_period_us", "100000") < 0 ||
		    write_text(cg->dirs[HUTCH_CG_CPU], "cpu.cfs_quota_us", num) < 0)
			return hutch_err_set(err, errno, "set cpu.cfs_quota_us");
	}
	return 0;
}

int hutch_cgroup_create(struct hutch_cgroup *cg, const char *name, const struct hutch_limits *lim,
			char *note, size_t note_size, struct hutch_err *err)
{
	memset(cg, 0, sizeof(*cg));
	if (hutch_cgroup_backend(note, note_size) == 0)
		return 0;
	if (be.version == 2) {
		if (v2_prepare_base(err) < 0)
			return -1;
		snprintf(cg->dirs[0], PATH_MAX, "%s/%s", be.base[0], name);
		if (mkdir(cg->dirs[0], 0755) < 0)
			return hutch_err_set(err, errno, "mkdir '%s'", cg->dirs[0]);
		memcpy(cg->has, be.has, sizeof(cg->has));
		cg->version = 2;
		if (apply_v2(cg, lim, err) < 0)
			goto out_destroy;
		return 0;
	}
	cg->version = 1;
	for (int i = 0; i < HUTCH_CG_NCTL; i++) {
		if (!be.has[i])
			continue;
		if (mkdir(be.base[i], 0755) < 0 && errno != EEXIST) {
			hutch_err_set(err, errno, "mkdir '%s'", be.base[i]);
			goto out_destroy;
		}
		snprintf(cg->dirs[i], PATH_MAX, "%s/%s", be.base[i], name);
		if (mkdir(cg->dirs[i], 0755) < 0 && errno != EEXIST) {
			hutch_err_set(err, errno, "mkdir '%s'", cg->dirs[i]);
			goto out_destroy;
		}
		cg->has[i] = true;
	}
	if (apply_v1(cg, lim, err) < 0)
		goto out_destroy;
	return 0;

out_destroy:
	hutch_cgroup_destroy(cg, NULL);
	return -1;
}

int hutch_cgroup_set_limits(struct hutch_cgroup *cg, const struct hutch_limits *lim,
			    struct hutch_err *err)
{
	if (cg->version == 2)
		return apply_v2(cg, lim, err);
	if (cg->version == 1)
		return apply_v1(cg, lim, err);
	return 0;
}

int hutch_cgroup_set_weight(const struct hutch_cgroup *cg, unsigned weight, struct hutch_err *err)
{
	char num[32];

	if (cg->version == 2 && cg->has[HUTCH_CG_CPU]) {
		snprintf(num, sizeof(num), "%u", weight);
		if (write_text(cg->dirs[0], "cpu.weight", num) < 0)
			return hutch_err_set(err, errno, "set cpu.weight");
	} else if (cg->version == 1 && cg->has[HUTCH_CG_CPU]) {
		/* v1 shares: 1024 is the default, as 100 is v2's weight */
		snprintf(num, sizeof(num), "%u", weight * 1024 / 100 < 2 ? 2 : weight * 1024 / 100);
		if (write_text(cg->dirs[HUTCH_CG_CPU], "cpu.shares", num) < 0)
			return hutch_err_set(err, errno, "set cpu.shares");
	}
	return 0;
}

int hutch_cgroup_attach(const struct hutch_cgroup *cg, pid_t pid, struct hutch_err *err)
{
	char num[32];

	snprintf(num, sizeof(num), "%d", pid);
	for (int i = 0; i < HUTCH_CG_NCTL; i++) {
		if (!cg->dirs[i][0])
			continue;
		if (write_text(cg->dirs[i], "cgroup.procs", num) < 0)
			return hutch_err_set(err, errno, "attach to '%s'", cg->dirs[i]);
	}
	return 0;
}

/* "key value" lines: the value of key, or 0. */
static uint64_t read_key(const char *dir, const char *file, const char *key, bool *found)
{
	char path[PATH_MAX];
	char buf[4096];
	size_t klen = strlen(key);

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return 0;
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			if (found)
				*found = true;
			return strtoull(line + klen + 1, NULL, 10);
		}
	}
	return 0;
}

static uint64_t read_num(const char *dir, const char *file, bool *found)
{
	char path[PATH_MAX];
	char buf[64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return 0;
	if (found)
		*found = true;
	return strtoull(buf, NULL, 10);
}

uint64_t hutch_cgroup_cpu_us(const struct hutch_cgroup *cg)
{
	if (cg->version == 2)
		return read_key(cg->dirs[0], "cpu.stat", "usage_usec", NULL);
	if (cg->version == 1 && cg->has[HUTCH_CG_CPUACCT])
		return read_num(cg->dirs[HUTCH_CG_CPUACCT], "cpuacct.usage", NULL) / 1000;
	return 0;
}

void hutch_cgroup_stats(const struct hutch_cgroup *cg, struct hutch_cgroup_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (cg->version == 2) {
		const char *d = cg->dirs[0];
		st->cpu_us = read_key(d, "cpu.stat", "usage_usec", &st->has_cpu);
		st->peak_bytes = read_num(d, "memory.peak", &st->has_peak);
		st->oom_kills = read_key(d, "memory.events", "oom_kill", NULL);
		st->pids_max_hits = read_key(d, "pids.events", "max", NULL);
	} else if (cg->version == 1) {
		const char *mem = cg->dirs[HUTCH_CG_MEMORY];
		if (cg->has[HUTCH_CG_CPUACCT])
			st->cpu_us = read_num(cg->dirs[HUTCH_CG_CPUACCT], "cpuacct.usage",
					      &st->has_cpu) /
				     1000;
		st->peak_bytes = read_num(mem, "memory.max_usage_in_bytes", &st->has_peak);
		st->oom_kills = read_key(mem, "memory.oom_control", "oom_kill", NULL);
		st->pids_max_hits = read_key(cg->dirs[HUTCH_CG_PIDS], "pids.events", "max", NULL);
	}
}

int hutch_cgroup_freeze(const struct hutch_cgroup *cg, bool frozen, struct hutch_err *err)
{
	if (cg->version == 2) {
		struct timespec pause = {0, 1000000L};

		if (write_text(cg->dirs[0], "cgroup.freeze", frozen ? "1" : "0") < 0)
			return hutch_err_set(err, errno, "cgroup.freeze");
		/* The write only starts it: processes run on until each reaches
		 * the freezer. Return once cgroup.events says all have, ~1 s. */
		for (int tries = 0; tries < 1000; tries++) {
			bool found = false;
			uint64_t state = read_key(cg->dirs[0], "cgroup.events", "frozen", &found);
			if (!found || state == (frozen ? 1 : 0))
				return 0;
			nanosleep(&pause, NULL);
		}
		return hutch_err_setx(err, ETIMEDOUT, "cgroup.freeze: not %s after 1 s",
				      frozen ? "frozen" : "thawed");
	}
	if (cg->version == 1 && cg->has[HUTCH_CG_FREEZER]) {
		const char *want = frozen ? "FROZEN" : "THAWED";
		char path[PATH_MAX];
		char state[32];
		struct timespec pause = {0, 1000000L};

		if (write_text(cg->dirs[HUTCH_CG_FREEZER], "freezer.state", want) < 0)
			return hutch_err_set(err, errno, "freezer.state");
		/* v1 reports FREEZING until every task has stopped: wait for it,
		 * as on v2, so a caller may rely on "frozen" when we return. */
		snprintf(path, sizeof(path), "%s/freezer.state", cg->dirs[HUTCH_CG_FREEZER]);
		for (int tries = 0; tries < 1000; tries++) {
			if (read_text(path, state, sizeof(state)) == 0 &&
			    strncmp(state, want, strlen(want)) == 0)
				return 0;
			nanosleep(&pause, NULL);
		}
		return hutch_err_setx(err, ETIMEDOUT, "freezer.state: not %s after 1 s", want);
	}
	return hutch_err_setx(err, ENOTSUP, "no freezer cgroup");
}

/* Kill every pid listed in dir/cgroup.procs; returns how many were listed. */
static int kill_listed(const char *dir)
{
	char path[PATH_MAX];
	char buf[8192];
	int n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return 0;
	for (char *p = buf; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0) {
			kill((pid_t)pid, SIGKILL);
			n++;
		}
		p = end;
		while (*p == '\n')
			p++;
	}
	/* A frozen task dies only once thawed (the v1 freezer holds even
	 * SIGKILL): a paused session whose daemon died would linger forever.
	 * Only the freezer's directory has these files; elsewhere the writes
	 * fail, harmlessly. */
	if (n > 0) {
		(void)write_text(dir, "freezer.state", "THAWED");
		(void)write_text(dir, "cgroup.freeze", "0");
	}
	return n;
}

void hutch_cgroup_kill(const struct hutch_cgroup *cg)
{
	if (cg->version == 2 && write_text(cg->dirs[0], "cgroup.kill", "1") == 0)
		return;
	for (int i = 0; i < HUTCH_CG_NCTL; i++)
		if (cg->dirs[i][0])
			kill_listed(cg->dirs[i]);
}

static int remove_dir(const char *dir)
{
	struct timespec pause = {0, 2000000L};

	for (int tries = 0; tries < 1000; tries++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -1;
		/* Processes still exiting (or something escaped our kill):
		 * kill what is listed and retry; ~2 s in all. */
		kill_listed(dir);
		nanosleep(&pause, NULL);
	}
	return -1;
}

int hutch_cgroup_destroy(struct hutch_cgroup *cg, struct hutch_err *err)
{
	int rc = 0;

	if (cg->version == 0)
		return 0;
	hutch_cgroup_kill(cg);
	for (int i = 0; i < HUTCH_CG_NCTL; i++) {
		if (!cg->dirs[i][0])
			continue;
		if (remove_dir(cg->dirs[i]) < 0 && rc == 0)
			rc = hutch_err_set(err, errno, "remove cgroup '%s'", cg->dirs[i]);
		cg->dirs[i][0] = '\0';
	}
	cg->version = 0;
	return rc;
}

/* Cgroup names start with the owning hutch process's pid: "<pid>.<id>". */
static void sweep_base(const char *base)
{
	_cleanup_closedir_ DIR *d = opendir(base);
	struct dirent *e;
	char dir[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (e->d_type != DT_DIR || end == e->d_name || *end != '.' || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* owner alive (or not ours to judge) */
		snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name);
		kill_listed(dir);
		(void)remove_dir(dir);
	}
}

void hutch_cgroup_sweep(void)
{
	char bases[HUTCH_CG_NCTL][PATH_MAX];
	int n = hutch_cgroup_bases(bases, HUTCH_CG_NCTL);

	for (int i = 0; i < n; i++)
		sweep_base(bases[i]);
}

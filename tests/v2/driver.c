/* driver: exercises the cgroup v2 backend of src/cell/cgroup.c through its
 * own API (create, attach, freeze, kill, stats, destroy, sweep) inside the
 * qemu guest of tests/v2/run.sh, where cgroup2 is the only hierarchy.
 *
 * Prints TAP lines without numbers ("ok - ...", "not ok - ...", "# ...");
 * the host numbers them. Exit status: 0 when every check passed, 1 if not.
 * Built static against build/libhutch.a; run as root in the guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cell/cgroup.h"

#define BASE "/sys/fs/cgroup/hutch"

static int failed;

static bool check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		failed = 1;
	return cond;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The contents of dir/file without a trailing newline, or "" on error. */
static const char *read_file(const char *dir, const char *file)
{
	static char buf[4096];
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return buf;
}

/* "key value" from a flat-keyed file, or -1. */
static long read_key(const char *dir, const char *file, const char *key)
{
	const char *text = read_file(dir, file);
	size_t klen = strlen(key);

	for (const char *line = text; line && *line;) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return strtol(line + klen + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

/* Wait up to ms for dir/cgroup.events to say key == value. */
static bool wait_event(const char *dir, const char *key, long value, long ms, uint64_t *took)
{
	uint64_t t0 = now_ms();

	for (;;) {
		if (read_key(dir, "cgroup.events", key) == value) {
			if (took)
				*took = now_ms() - t0;
			return true;
		}
		if (now_ms() - t0 > (uint64_t)ms)
			return false;
		sleep_ms(5);
	}
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static _Noreturn void spin(void)
{
	for (volatile unsigned long i = 0;; i++)
		;
}

/* A child that waits on `gate` (until we have attached it), then forks
 * `extra` spinning children of its own and spins. */
static pid_t start_spinner(int extra, int gate[2])
{
	pid_t pid;
	char c;

	if (pipe(gate) < 0)
		return -1;
	pid = fork();
	if (pid != 0)
		return pid;
	close(gate[1]);
	if (read(gate[0], &c, 1) != 1)
		_exit(1);
	for (int i = 0; i < extra; i++)
		if (fork() == 0)
			spin();
	spin();
}

static void release(int gate[2])
{
	close(gate[0]);
	if (write(gate[1], "g", 1) != 1)
		diag("write gate: %s", strerror(errno));
	close(gate[1]);
}

/* Reap `pid` within ms; its wait status, or -1 when it did not end. */
static int reap(pid_t pid, long ms)
{
	uint64_t t0 = now_ms();
	int ws;

	while (now_ms() - t0 <= (uint64_t)ms) {
		pid_t r = waitpid(pid, &ws, WNOHANG);
		if (r == pid)
			return ws;
		if (r < 0)
			return -1;
		sleep_ms(5);
	}
	return -1;
}

static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static int count_procs(const char *dir)
{
	const char *text = read_file(dir, "cgroup.procs");
	int n = 0;

	for (const char *p = text; *p; p++)
		if (*p == '\n' || p[1] == '\0')
			n++;
	return n;
}

static void test_lifecycle(void)
{
	struct hutch_limits lim = {.memory_bytes = 64ull << 20, .pids = 32, .cpus = 1.5};
	struct hutch_cgroup cg;
	struct hutch_cgroup_stats st;
	struct hutch_err err = {0, ""};
	char note[160] = "";
	char name[64];
	char want[PATH_MAX];
	char line[PATH_MAX + 8];
	int gate[2];
	uint64_t a;
	uint64_t b;
	uint64_t took = 0;
	pid_t pid;
	int ws;

	snprintf(name, sizeof(name), "%d.driver", getpid());
	snprintf(want, sizeof(want), BASE "/%s", name);
	if (!check(hutch_cgroup_create(&cg, name, &lim, note, sizeof(note), &err) == 0 &&
			   cg.version == 2,
		   "create: a v2 cgroup (%s%s)", err.code ? err.msg : "no error", note))
		return;
	check(strcmp(cg.dirs[0], want) == 0 && exists(want), "create: the cgroup is %s", want);
	check(strstr(read_file(BASE, "cgroup.subtree_control"), "memory") &&
		      strstr(read_file(BASE, "cgroup.subtree_control"), "pids") &&
		      strstr(read_file(BASE, "cgroup.subtree_control"), "cpu"),
	      "create: memory, pids and cpu enabled in " BASE " (subtree_control '%s')",
	      read_file(BASE, "cgroup.subtree_control"));
	check(strcmp(read_file(want, "memory.max"), "67108864") == 0, "create: memory.max '%s'",
	      read_file(want, "memory.max"));
	check(strcmp(read_file(want, "pids.max"), "32") == 0, "create: pids.max '%s'",
	      read_file(want, "pids.max"));
	check(strcmp(read_file(want, "cpu.max"), "150000 100000") == 0, "create: cpu.max '%s'",
	      read_file(want, "cpu.max"));
	check(strcmp(read_file(want, "memory.oom.group"), "1") == 0,
	      "create: memory.oom.group '%s'", read_file(want, "memory.oom.group"));

	/* A spinner with two spinning children of its own: three processes. */
	pid = start_spinner(2, gate);
	if (!check(pid > 0, "fork a spinner"))
		goto out;
	check(hutch_cgroup_attach(&cg, pid, &err) == 0, "attach: pid %d (%s)", (int)pid,
	      err.code ? err.msg : "no error");
	release(gate);
	snprintf(line, sizeof(line), "0::/hutch/%s", name);
	{
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
		check(strcmp(read_file(proc, "cgroup"), line) == 0,
		      "attach: /proc/%d/cgroup is '%s'", (int)pid, read_file(proc, "cgroup"));
	}
	sleep_ms(200);
	check(count_procs(want) == 3, "attach: the children are in the cgroup too (%d procs)",
	      count_procs(want));

	a = hutch_cgroup_cpu_us(&cg);
	sleep_ms(500);
	b = hutch_cgroup_cpu_us(&cg);
	check(b > a + 100000, "running: CPU time advances (%llu ms in 500 ms)",
	      (unsigned long long)(b - a) / 1000);

	/* Freeze: once hutch_cgroup_freeze returns, every process has stopped
	 * (a pause or a snapshot relies on it), and the CPU time stands still. */
	check(hutch_cgroup_freeze(&cg, true, &err) == 0, "freeze: returns 0 (%s)",
	      err.code ? err.msg : "no error");
	a = hutch_cgroup_cpu_us(&cg);
	if (!check(read_key(want, "cgroup.events", "frozen") == 1,
		   "freeze: cgroup.events says frozen 1 when hutch_cgroup_freeze returns") &&
	    wait_event(want, "frozen", 1, 2000, &took))
		diag("frozen only %llu ms after hutch_cgroup_freeze returned",
		     (unsigned long long)took);
	sleep_ms(500);
	b = hutch_cgroup_cpu_us(&cg);
	check(b - a < 2000, "frozen: CPU time stands still from the return on (%llu us in 500 ms)",
	      (unsigned long long)(b - a));
	check(waitpid(pid, &ws, WNOHANG) == 0, "frozen: the processes are still alive");

	/* Thaw: it runs again. */
	check(hutch_cgroup_freeze(&cg, false, &err) == 0, "thaw: returns 0 (%s)",
	      err.code ? err.msg : "no error");
	check(read_key(want, "cgroup.events", "frozen") == 0,
	      "thaw: cgroup.events says frozen 0 when hutch_cgroup_freeze returns");
	a = hutch_cgroup_cpu_us(&cg);
	sleep_ms(500);
	b = hutch_cgroup_cpu_us(&cg);
	check(b > a + 100000, "thawed: CPU time advances again (%llu ms in 500 ms)",
	      (unsigned long long)(b - a) / 1000);

	/* Kill while frozen: cgroup.kill must take frozen processes too. */
	check(hutch_cgroup_freeze(&cg, true, &err) == 0 &&
		      wait_event(want, "frozen", 1, 2000, NULL),
	      "freeze again before the kill");
	hutch_cgroup_kill(&cg);
	ws = reap(pid, 3000);
	check(ws != -1 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL,
	      "kill: the frozen spinner died of SIGKILL (wait status %#x)", ws);
	check(wait_event(want, "populated", 0, 3000, NULL) && count_procs(want) == 0,
	      "kill: the cgroup is empty (populated 0, cgroup.procs '%s')",
	      read_file(want, "cgroup.procs"));
	reap_orphans();

	hutch_cgroup_stats(&cg, &st);
	check(st.has_cpu && st.cpu_us > 500000, "stats: cpu.stat usage %llu ms",
	      (unsigned long long)st.cpu_us / 1000);
	check(st.has_peak && st.peak_bytes > 0, "stats: memory.peak %llu bytes",
	      (unsigned long long)st.peak_bytes);
	check(st.oom_kills == 0 && st.pids_max_hits == 0, "stats: no oom kills, no pids.max hits");
out:
	check(hutch_cgroup_destroy(&cg, &err) == 0 && cg.version == 0,
	      "destroy: returns 0 on an empty cgroup (%s)", err.code ? err.msg : "no error");
	check(!exists(want), "destroy: %s is gone", want);
}

/* The common path: destroy with processes still running inside. */
static void test_destroy_busy(void)
{
	struct hutch_limits lim = {.memory_bytes = 64ull << 20, .pids = 8};
	struct hutch_cgroup cg;
	struct hutch_err err = {0, ""};
	char name[64];
	char dir[PATH_MAX];
	int gate[2];
	pid_t pid;
	int ws;

	snprintf(name, sizeof(name), "%d.busy", getpid());
	if (!check(hutch_cgroup_create(&cg, name, &lim, NULL, 0, &err) == 0 && cg.version == 2,
		   "busy: create (%s)", err.code ? err.msg : "no error"))
		return;
	snprintf(dir, sizeof(dir), "%s", cg.dirs[0]);
	check(strcmp(read_file(dir, "cpu.max"), "max 100000") == 0,
	      "busy: no --cpus leaves cpu.max at '%s'", read_file(dir, "cpu.max"));
	pid = start_spinner(3, gate);
	if (pid < 0 || hutch_cgroup_attach(&cg, pid, &err) < 0) {
		check(false, "busy: start and attach a spinner (%s)", err.msg);
		hutch_cgroup_destroy(&cg, NULL);
		return;
	}
	release(gate);
	sleep_ms(200);
	check(count_procs(dir) == 4, "busy: 4 processes in the cgroup");
	check(hutch_cgroup_destroy(&cg, &err) == 0, "busy: destroy with 4 processes inside (%s)",
	      err.code ? err.msg : "no error");
	check(!exists(dir), "busy: %s is gone", dir);
	ws = reap(pid, 3000);
	check(ws != -1 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL,
	      "busy: the spinner died of SIGKILL (wait status %#x)", ws);
	reap_orphans();
}

/* Sweep removes cgroups whose owner pid is dead, and only those. */
static void test_sweep(void)
{
	struct hutch_limits lim = {.memory_bytes = 64ull << 20, .pids = 8};
	struct hutch_cgroup dead;
	struct hutch_cgroup live;
	struct hutch_err err = {0, ""};
	char name[64];
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(name, sizeof(name), "%d.stale", (int)gone);
	if (!check(hutch_cgroup_create(&dead, name, &lim, NULL, 0, &err) == 0,
		   "sweep: create a cgroup owned by dead pid %d", (int)gone))
		return;
	snprintf(name, sizeof(name), "%d.live", getpid());
	if (!check(hutch_cgroup_create(&live, name, &lim, NULL, 0, &err) == 0,
		   "sweep: create a cgroup owned by us")) {
		hutch_cgroup_destroy(&dead, NULL);
		return;
	}
	hutch_cgroup_sweep();
	check(!exists(dead.dirs[0]), "sweep: removed %s", dead.dirs[0]);
	check(exists(live.dirs[0]), "sweep: kept %s (owner alive)", live.dirs[0]);
	hutch_cgroup_destroy(&live, NULL);
}

int main(void)
{
	char note[160] = "";
	int version;

	setvbuf(stdout, NULL, _IOLBF, 0);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	version = hutch_cgroup_backend(note, sizeof(note));
	if (!check(version == 2, "backend: cgroup v2 chosen (version %d%s%s)", version,
		   note[0] ? ", " : "", note))
		return 1;
	test_lifecycle();
	test_destroy_busy();
	test_sweep();
	return failed;
}

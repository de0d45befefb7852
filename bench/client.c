/*
 * bench-client: the measuring end of bench/run.sh.
 *
 *   bench-client latency    -s SOCK -c CODE -e EXPECT -n N -w WARMUP -o OUT [-g GAP_MS]
 *                           [-l LANG]
 *   bench-client throughput -s SOCK -c CODE -e EXPECT -j CLIENTS -t SECONDS [-w WARMUP]
 *   bench-client soak       -s SOCK -c CODE -e EXPECT -n N -i EVERY -p PID [-r RECONNECT]
 *   bench-client spawn      -e EXPECT -n N -w WARMUP -o OUT [-m plain|json|json-fast]
 *                           [-g GAP_MS] -- CMD...
 *
 * The first three speak the daemon's frame protocol (docs/daemon.md): one unix-socket
 * connection per client, kept alive, 'Q' frames carrying {"language":LANG,"code":CODE}
 * (LANG: -l, default python)
 * and one 'R' frame (the ExecResult) read back per request. `spawn` times a whole process
 * per run (posix_spawn to waitpid, stdout and stderr read through pipes), for the CLI and
 * the other sandboxes compared with hutch.
 *
 * Every run is checked: the program's stdout must be EXPECT plus a newline and its status
 * "ok" (exit 0). OUT gets one line per measured run:
 *   ok total_us acquire_us setup_us run_us teardown_us path
 * (ok is 1 or 0; the phases are -1 and path "-" when the run gave no ExecResult.)
 * Times come from clock_gettime(CLOCK_MONOTONIC).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_FRAME     (128u << 20)
#define FAIL_REPORTS  5	     /* detailed messages printed per client before going quiet */
#define SPAWN_TIMEOUT 120000 /* ms: a spawned run that takes longer is killed */

struct opts {
	const char *sock;
	const char *code;
	const char *expect;
	const char *out;
	const char *mode;
	long n, warmup, clients, every, reconnect;
	long gap_ms; /* latency, spawn: pause between runs (untimed), so the pool refills */
	const char *lang;
	double seconds;
	pid_t pid;
	char **argv; /* spawn: the command */
};

/* What one run gave. */
struct sample {
	int ok;
	int64_t total_us;
	int64_t phase[4]; /* acquire, setup, run, teardown; -1 if unknown */
	char path[8];
};

static const char *const phase_keys[4] = {"acquire_us", "setup_us", "run_us", "teardown_us"};

static char *request_json; /* the 'Q' payload, built once */
static char *expect_line;  /* EXPECT + "\n" */

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bench-client: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* 0 on success, -1 on error or on EOF before len bytes. */
static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int connect_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect %s: %s", path, strerror(errno));
	return fd;
}

static int send_frame(int fd, char type, const char *payload, size_t len)
{
	uint32_t n = (uint32_t)len + 1;
	unsigned char hdr[5] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
				(unsigned char)(n >> 24), (unsigned char)type};
	/* One write for small requests: header and payload in the same segment. */
	char stackbuf[4096];
	if (len + sizeof(hdr) <= sizeof(stackbuf)) {
		memcpy(stackbuf, hdr, sizeof(hdr));
		memcpy(stackbuf + sizeof(hdr), payload, len);
		return write_all(fd, stackbuf, len + sizeof(hdr));
	}
	if (write_all(fd, hdr, sizeof(hdr)) < 0)
		return -1;
	return write_all(fd, payload, len);
}

/*
 * Reads frames until an 'R' frame and returns its payload (NUL-terminated, malloc'd), or
 * NULL on a closed connection or a protocol error (*why says which). 'O'/'E' frames
 * (streaming requests only) are skipped.
 */
static char *read_result(int fd, const char **why)
{
	for (;;) {
		unsigned char hdr[5];
		if (read_all(fd, hdr, sizeof(hdr)) < 0) {
			*why = "connection closed before an R frame";
			return NULL;
		}
		uint32_t n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
			     (uint32_t)hdr[3] << 24;
		if (n < 1 || n > MAX_FRAME) {
			*why = "bad frame length";
			return NULL;
		}
		char *payload = malloc(n);
		if (!payload)
			die("out of memory");
		if (read_all(fd, payload, n - 1) < 0) {
			free(payload);
			*why = "connection closed inside a frame";
			return NULL;
		}
		payload[n - 1] = '\0';
		if (hdr[4] == 'R')
			return payload;
		free(payload);
		if (hdr[4] != 'O' && hdr[4] != 'E') {
			*why = "unexpected frame type";
			return NULL;
		}
	}
}

/* The string member key of obj, or "" when there is none. */
static const char *str_of(const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(obj, key));
	return v ? v : "";
}

/*
 * Checks one ExecResult JSON and fills s->ok, s->phase, s->path. want_path: NULL, or the
 * "path" the result must have. On failure, writes a one-line reason into why.
 */
static void check_result(const char *json, const char *want_path, struct sample *s, char *why,
			 size_t whylen)
{
	json_error_t jerr;
	json_t *root = json_loads(json, 0, &jerr);
	s->ok = 0;
	for (int i = 0; i < 4; i++)
		s->phase[i] = -1;
	snprintf(s->path, sizeof(s->path), "-");
	if (!root || !json_is_object(root)) {
		snprintf(why, whylen, "result is not a JSON object: %.200s", json);
		json_decref(root);
		return;
	}
	json_t *err = json_object_get(root, "error");
	json_t *status = json_object_get(root, "status");
	if (!status && json_is_object(err)) {
		snprintf(why, whylen, "request refused: %s: %s", str_of(err, "code"),
			 str_of(err, "message"));
		json_decref(root);
		return;
	}
	const char *path = json_string_value(json_object_get(root, "path"));
	snprintf(s->path, sizeof(s->path), "%s", path ? path : "-");
	json_t *timings = json_object_get(root, "timings");
	for (int i = 0; i < 4; i++) {
		json_t *v = json_object_get(timings, phase_keys[i]);
		if (json_is_integer(v))
			s->phase[i] = json_integer_value(v);
	}
	const char *st = json_string_value(status);
	const char *out = json_string_value(json_object_get(root, "stdout"));
	if (!st || strcmp(st, "ok") != 0) {
		json_t *se = json_object_get(root, "sandbox_error");
		snprintf(why, whylen, "status %s%s%s; stderr: %.200s", st ? st : "(none)",
			 se ? ": " : "",
			 se ? json_string_value(json_object_get(se, "message")) : "",
			 json_string_value(json_object_get(root, "stderr")));
	} else if (!out || strcmp(out, expect_line) != 0) {
		snprintf(why, whylen, "unexpected stdout: %.200s", out ? out : "(none)");
	} else if (want_path && strcmp(s->path, want_path) != 0) {
		snprintf(why, whylen, "path is \"%s\", not \"%s\"", s->path, want_path);
	} else {
		s->ok = 1;
	}
	json_decref(root);
}

static void print_sample(FILE *f, const struct sample *s)
{
	fprintf(f, "%d %lld %lld %lld %lld %lld %s\n", s->ok, (long long)s->total_us,
		(long long)s->phase[0], (long long)s->phase[1], (long long)s->phase[2],
		(long long)s->phase[3], s->path);
}

static void report_failure(const char *who, long i, long *nfail, const char *why)
{
	if (++*nfail <= FAIL_REPORTS)
		fprintf(stderr, "bench-client: %s: run %ld failed: %s\n", who, i, why);
	else if (*nfail == FAIL_REPORTS + 1)
		fprintf(stderr, "bench-client: %s: more failures, not shown\n", who);
}

/*
 * One request over an open connection. Returns 0 with *s filled (s->ok may be 0), or -1
 * when the connection broke (the caller reconnects).
 */
static int socket_exec(int fd, struct sample *s, char *why, size_t whylen)
{
	const char *perr = NULL;
	*s = (struct sample){.path = "-", .phase = {-1, -1, -1, -1}};
	int64_t t0 = now_us();
	if (send_frame(fd, 'Q', request_json, strlen(request_json)) < 0) {
		snprintf(why, whylen, "send: %s", strerror(errno));
		return -1;
	}
	char *res = read_result(fd, &perr);
	s->total_us = now_us() - t0;
	if (!res) {
		snprintf(why, whylen, "%s", perr);
		return -1;
	}
	check_result(res, "fast", s, why, whylen);
	free(res);
	return 0;
}

static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die("%s: %s", path, strerror(errno));
	return f;
}

static int cmd_latency(const struct opts *o)
{
	FILE *out = open_out(o->out);
	int fd = connect_socket(o->sock);
	long nfail = 0;
	for (long i = 0; i < o->warmup + o->n; i++) {
		struct sample s;
		char why[512];
		if (socket_exec(fd, &s, why, sizeof(why)) < 0) {
			close(fd);
			fd = connect_socket(o->sock);
		}
		if (!s.ok)
			report_failure("latency", i, &nfail, why);
		if (i >= o->warmup)
			print_sample(out, &s);
		if (o->gap_ms > 0)
			usleep((useconds_t)o->gap_ms * 1000);
	}
	close(fd);
	if (fclose(out) != 0)
		die("%s: %s", o->out, strerror(errno));
	return 0;
}

/* --- throughput: CLIENTS threads, one connection each --- */

struct worker {
	pthread_t tid;
	const struct opts *o;
	pthread_barrier_t *ready, *go;
	long ok, fail, n;
	int64_t *lat;
	size_t cap;
};

static volatile int64_t tp_deadline;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int fd = connect_socket(w->o->sock);
	char why[512];
	for (long i = 0; i < w->o->warmup; i++) {
		struct sample s;
		if (socket_exec(fd, &s, why, sizeof(why)) < 0) {
			close(fd);
			fd = connect_socket(w->o->sock);
		}
	}
	pthread_barrier_wait(w->ready);
	pthread_barrier_wait(w->go);
	int64_t deadline = __atomic_load_n(&tp_deadline, __ATOMIC_ACQUIRE);
	while (now_us() < deadline) {
		struct sample s;
		if (socket_exec(fd, &s, why, sizeof(why)) < 0) {
			close(fd);
			fd = connect_socket(w->o->sock);
		}
		if (!s.ok) {
			report_failure("throughput", w->n, &w->fail, why);
			w->n++;
			continue;
		}
		if ((size_t)w->ok == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 1024;
			w->lat = realloc(w->lat, w->cap * sizeof(*w->lat));
			if (!w->lat)
				die("out of memory");
		}
		w->lat[w->ok++] = s.total_us;
		w->n++;
	}
	close(fd);
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank quantile of a sorted array. */
static int64_t quantile(const int64_t *v, size_t n, double q)
{
	if (n == 0)
		return -1;
	size_t rank = (size_t)(q * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static int cmd_throughput(const struct opts *o)
{
	struct worker *w = calloc((size_t)o->clients, sizeof(*w));
	pthread_barrier_t ready, go;
	if (!w)
		die("out of memory");
	pthread_barrier_init(&ready, NULL, (unsigned)o->clients + 1);
	pthread_barrier_init(&go, NULL, (unsigned)o->clients + 1);
	for (long i = 0; i < o->clients; i++) {
		w[i].o = o;
		w[i].ready = &ready;
		w[i].go = &go;
		int e = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
		if (e)
			die("pthread_create: %s", strerror(e));
	}
	/* The clock starts once every client is connected and warm. */
	pthread_barrier_wait(&ready);
	int64_t t0 = now_us();
	__atomic_store_n(&tp_deadline, t0 + (int64_t)(o->seconds * 1e6), __ATOMIC_RELEASE);
	pthread_barrier_wait(&go);
	long ok = 0, fail = 0;
	for (long i = 0; i < o->clients; i++) {
		pthread_join(w[i].tid, NULL);
		ok += w[i].ok;
		fail += w[i].fail;
	}
	double elapsed = (double)(now_us() - t0) / 1e6;
	int64_t *all = malloc(((size_t)ok + 1) * sizeof(*all));
	if (!all)
		die("out of memory");
	size_t k = 0;
	for (long i = 0; i < o->clients; i++) {
		memcpy(all + k, w[i].lat, (size_t)w[i].ok * sizeof(*all));
		k += (size_t)w[i].ok;
		free(w[i].lat);
	}
	qsort(all, k, sizeof(*all), cmp_i64);
	/* clients ok fail seconds execs_per_s p50_us p99_us */
	printf("%ld %ld %ld %.3f %.1f %lld %lld\n", o->clients, ok, fail, elapsed,
	       (double)ok / elapsed, (long long)quantile(all, k, 0.5),
	       (long long)quantile(all, k, 0.99));
	free(all);
	free(w);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);
	return 0;
}

/* --- soak: N requests, sampling the daemon's RSS, fds and processes --- */

static long status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (!f)
		return -1;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static long count_fds(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	long n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Processes descending from pid (zygotes, pooled sandboxes, stragglers). */
static long count_descendants(pid_t root)
{
	enum { MAXP = 65536 };
	static pid_t pids[MAXP], ppids[MAXP];
	size_t n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d)) && n < MAXP;) {
		char path[300], buf[512];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		/* "pid (comm) state ppid ...": comm may hold spaces and parens */
		const char *p = strrchr(buf, ')');
		if (!p || strlen(p) < 5)
			continue;
		char *end;
		long ppid = strtol(p + 4, &end, 10);
		if (end == p + 4)
			continue;
		pids[n] = (pid_t)strtol(e->d_name, NULL, 10);
		ppids[n] = (pid_t)ppid;
		n++;
	}
	closedir(d);
	/* Mark descendants by repeated passes (the tree is shallow). */
	static char in[MAXP];
	memset(in, 0, n);
	long count = 0;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (in[i])
				continue;
			int parent_in = ppids[i] == root;
			for (size_t j = 0; !parent_in && j < n; j++)
				parent_in = in[j] && pids[j] == ppids[i];
			if (parent_in) {
				in[i] = 1;
				count++;
				changed = 1;
			}
		}
	}
	return count;
}

static void soak_sample(pid_t pid, long done, int64_t *win, size_t nwin, long fails)
{
	qsort(win, nwin, sizeof(*win), cmp_i64);
	printf("%9ld %10ld %6ld %8ld %6ld %10lld %10lld %6ld\n", done, status_field(pid, "VmRSS"),
	       count_fds(pid), status_field(pid, "Threads"), count_descendants(pid),
	       (long long)quantile(win, nwin, 0.5), (long long)quantile(win, nwin, 0.99), fails);
	fflush(stdout);
}

static int cmd_soak(const struct opts *o)
{
	int64_t *win = malloc((size_t)o->every * sizeof(*win));
	if (!win)
		die("out of memory");
	if (kill(o->pid, 0) < 0)
		die("daemon pid %d: %s", (int)o->pid, strerror(errno));
	int fd = connect_socket(o->sock);
	long fails = 0, nfail = 0;
	size_t nwin = 0;
	printf("%9s %10s %6s %8s %6s %10s %10s %6s\n", "execs", "rss_kB", "fds", "threads", "procs",
	       "p50_us", "p99_us", "fails");
	soak_sample(o->pid, 0, win, 0, 0);
	for (long i = 1; i <= o->n; i++) {
		struct sample s;
		char why[512];
		if (socket_exec(fd, &s, why, sizeof(why)) < 0) {
			close(fd);
			fd = connect_socket(o->sock);
		}
		if (!s.ok) {
			fails++;
			report_failure("soak", i, &nfail, why);
		} else {
			win[nwin++] = s.total_us;
		}
		if (o->reconnect > 0 && i % o->reconnect == 0) {
			close(fd);
			fd = connect_socket(o->sock);
		}
		if (i % o->every == 0 || i == o->n) {
			soak_sample(o->pid, i, win, nwin, fails);
			nwin = 0;
		}
	}
	close(fd);
	free(win);
	return fails ? 1 : 0;
}

/* --- spawn: one process per run --- */

struct capture {
	char *data;
	size_t len, cap;
};

static void cap_append(struct capture *c, const char *p, size_t n)
{
	if (c->len + n + 1 > c->cap) {
		c->cap = (c->len + n + 1) * 2;
		c->data = realloc(c->data, c->cap);
		if (!c->data)
			die("out of memory");
	}
	memcpy(c->data + c->len, p, n);
	c->len += n;
	c->data[c->len] = '\0';
}

/* Runs argv once; returns its wait status, or -1 if it was killed for taking too long. */
static int spawn_once(char **argv, struct capture *out, struct capture *err, int64_t *us)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	out->len = err->len = 0;
	cap_append(out, "", 0);
	cap_append(err, "", 0);
	pid_t pid;
	int64_t t0 = now_us();
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		die("spawn %s: %s", argv[0], strerror(e));
	close(po[1]);
	close(pe[1]);
	struct pollfd pfd[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
	struct capture *dst[2] = {out, err};
	int open_fds = 2, killed = 0;
	while (open_fds > 0) {
		int r = poll(pfd, 2, SPAWN_TIMEOUT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			killed = 1;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[8192];
			ssize_t n = read(pfd[i].fd, buf, sizeof(buf));
			if (n > 0) {
				cap_append(dst[i], buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
			}
		}
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	*us = now_us() - t0;
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	return killed ? -1 : status;
}

static int cmd_spawn(const struct opts *o)
{
	FILE *out = open_out(o->out);
	struct capture so = {0}, se = {0};
	long nfail = 0;
	const char *mode = o->mode ? o->mode : "plain";
	int json = strncmp(mode, "json", 4) == 0;
	const char *want_path = strcmp(mode, "json-fast") == 0 ? "fast" : NULL;
	if (!json && strcmp(mode, "plain") != 0)
		die("unknown mode %s", mode);
	for (long i = 0; i < o->warmup + o->n; i++) {
		struct sample s = {.path = "-", .phase = {-1, -1, -1, -1}};
		char why[512] = "";
		int st = spawn_once(o->argv, &so, &se, &s.total_us);
		if (st < 0) {
			snprintf(why, sizeof(why), "timed out after %d ms", SPAWN_TIMEOUT);
		} else if (json) {
			check_result(so.data, want_path, &s, why, sizeof(why));
			if (s.ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
				s.ok = 0;
				snprintf(why, sizeof(why), "exit status %d", st);
			}
			if (!s.ok && so.len == 0)
				snprintf(why, sizeof(why), "no ExecResult; stderr: %.300s",
					 se.data);
		} else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			snprintf(why, sizeof(why), "wait status %d; stderr: %.300s", st, se.data);
		} else if (strcmp(so.data, expect_line) != 0) {
			snprintf(why, sizeof(why), "unexpected stdout: %.200s; stderr: %.200s",
				 so.data, se.data);
		} else {
			s.ok = 1;
		}
		if (!s.ok)
			report_failure(o->argv[0], i, &nfail, why);
		if (i >= o->warmup)
			print_sample(out, &s);
		if (o->gap_ms > 0)
			usleep((useconds_t)o->gap_ms * 1000);
	}
	free(so.data);
	free(se.data);
	if (fclose(out) != 0)
		die("%s: %s", o->out, strerror(errno));
	return 0;
}

static long num(const char *s, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		die("%s: not a non-negative integer: %s", what, s);
	return v;
}

__attribute__((noreturn)) static void usage(void)
{
	fputs("usage:\n"
	      "  bench-client latency    -s SOCK -c CODE -e EXPECT -n N -w WARMUP -o OUT [-g "
	      "GAP_MS] [-l LANG]\n"
	      "  bench-client throughput -s SOCK -c CODE -e EXPECT -j CLIENTS -t SECONDS "
	      "[-w WARMUP]\n"
	      "  bench-client soak       -s SOCK -c CODE -e EXPECT -n N -i EVERY -p PID "
	      "[-r RECONNECT]\n"
	      "  bench-client spawn      -e EXPECT -n N -w WARMUP -o OUT "
	      "[-m plain|json|json-fast] [-g GAP_MS] -- CMD...\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.n = 200,
			 .warmup = 10,
			 .clients = 1,
			 .seconds = 5,
			 .every = 10000,
			 .lang = "python"};
	if (argc < 2)
		usage();
	const char *cmd = argv[1];
	for (int c; (c = getopt(argc - 1, argv + 1, "+s:c:e:o:m:n:w:j:t:i:p:r:g:l:")) != -1;) {
		switch (c) {
		case 's':
			o.sock = optarg;
			break;
		case 'c':
			o.code = optarg;
			break;
		case 'e':
			o.expect = optarg;
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'm':
			o.mode = optarg;
			break;
		case 'n':
			o.n = num(optarg, "-n");
			break;
		case 'g':
			o.gap_ms = num(optarg, "-g");
			break;
		case 'l':
			o.lang = optarg;
			break;
		case 'w':
			o.warmup = num(optarg, "-w");
			break;
		case 'j':
			o.clients = num(optarg, "-j");
			break;
		case 't':
			o.seconds = (double)num(optarg, "-t");
			break;
		case 'i':
			o.every = num(optarg, "-i");
			break;
		case 'p':
			o.pid = (pid_t)num(optarg, "-p");
			break;
		case 'r':
			o.reconnect = num(optarg, "-r");
			break;
		default:
			usage();
		}
	}
	if (!o.expect)
		usage();
	size_t el = strlen(o.expect);
	expect_line = malloc(el + 2);
	if (!expect_line)
		die("out of memory");
	memcpy(expect_line, o.expect, el);
	memcpy(expect_line + el, "\n", 2);
	signal(SIGPIPE, SIG_IGN);

	if (strcmp(cmd, "spawn") == 0) {
		if (optind >= argc - 1 || !o.out)
			usage();
		o.argv = argv + 1 + optind;
		return cmd_spawn(&o);
	}
	if (!o.sock || !o.code)
		usage();
	json_t *req = json_pack("{s:s, s:s}", "language", o.lang, "code", o.code);
	if (!req)
		die("cannot build the request JSON");
	request_json = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!request_json)
		die("cannot encode the request JSON");
	int rc;
	if (strcmp(cmd, "latency") == 0 && o.out)
		rc = cmd_latency(&o);
	else if (strcmp(cmd, "throughput") == 0 && o.clients > 0 && o.seconds > 0)
		rc = cmd_throughput(&o);
	else if (strcmp(cmd, "soak") == 0 && o.pid > 0 && o.every > 0)
		rc = cmd_soak(&o);
	else
		usage();
	free(request_json);
	free(expect_line);
	return rc;
}

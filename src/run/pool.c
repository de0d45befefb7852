#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cell/cell.h"
#include "cell/zygote.h"
#include "run/pool.h"
#include "run/zproto.h"
#include "util/err.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/mem.h"

#ifndef HUTCH_LIBEXECDIR
#define HUTCH_LIBEXECDIR "/usr/local/libexec/hutch"
#endif

/* The default writable layer a pool cell is made with; a request asking for
 * another size gets its tmpfs resized before it starts (no new cell). */
#define POOL_DISK HUTCH_DEFAULT_DISK
/* Node cells each hold a running node (~40 MB here) that took ~100 ms of
 * CPU to start: a few at most, whatever the pool's cap. */
#define NODE_CELLS_MAX 4

struct hutch_pool {
	pthread_mutex_t mu;
	pthread_cond_t wake;
	pthread_mutex_t zmu; /* one conversation with the zygote at a time */
	struct hutch_pool_entry *ready;
	unsigned nready;
	unsigned min;
	unsigned max;
	unsigned target;
	/* node cells (a node started ahead in each): none until node requests
	 * come, then one more for each that misses, up to NODE_CELLS_MAX */
	struct hutch_pool_entry *ready_node;
	unsigned nready_node;
	unsigned target_node;
	time_t node_failed; /* when a node cell last failed to start */
	bool stopping;
	pthread_t refiller;
	bool has_refiller;
	int ctrl;		 /* our end of the zygote's control socket */
	struct hutch_cgroup zcg; /* the zygote's own, at the lowest CPU weight */
	pid_t zpid;
	int zpidfd;
	char preload[512];
	uint64_t seq;
	uint64_t served;
	uint64_t misses;
	uint64_t forks;
	uint64_t served_node;
	uint64_t misses_node;
	time_t last_miss;
	time_t last_node; /* when a node request last came */
	/* cgroups of finished runs, removed in the background (a cgroup can
	 * only go once its processes have been reaped: not on the reply path) */
	struct hutch_cgroup *graveyard;
	unsigned ngrave;
	unsigned grave_cap;
};

static int find_zygote(char *out, size_t size)
{
	const char *env = getenv("HUTCH_ZYGOTE");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, size, "%s", env);
		return access(out, X_OK);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, size, "%s/hutch-zygote", self);
			if (access(out, X_OK) == 0)
				return 0;
		}
	}
	snprintf(out, size, "%s/hutch-zygote", HUTCH_LIBEXECDIR);
	return access(out, X_OK);
}

static int start_zygote(struct hutch_pool *p, struct hutch_err *err)
{
	char path[PATH_MAX];
	char *argv[] = {"hutch-zygote", p->preload, NULL};
	/* the zygote's environment: nothing of ours (DESIGN: no host secrets) */
	char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOME=/workspace", "LANG=C.UTF-8", "TMPDIR=/tmp", NULL};
	int sv[2];
	int exe;

	if (find_zygote(path, sizeof(path)) < 0)
		return hutch_err_setx(err, ENOENT,
				      "hutch-zygote not found (beside hutch, in " HUTCH_LIBEXECDIR
				      ", or $HUTCH_ZYGOTE)");
	exe = open(path, O_PATH | O_CLOEXEC);
	if (exe < 0)
		return hutch_err_set(err, errno, "open '%s'", path);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		close(exe);
		return hutch_err_set(err, errno, "socketpair");
	}
	struct hutch_zygote_spawn spec = {
		.use_userns = geteuid() != 0,
		.outer_uid = getuid(),
		.outer_gid = getgid(),
		.exe_fd = exe,
		.argv = argv,
		.envp = envp,
		.ctrl_fd = sv[1],
	};
	p->zpid = hutch_zygote_spawn(&spec, &p->zpidfd, err);
	close(exe);
	close(sv[1]);
	if (p->zpid < 0) {
		close(sv[0]);
		return -1;
	}
	p->ctrl = sv[0];
	/* Making cells (forks, page-table copies) is background work: in a
	 * cgroup of its own at the lowest CPU weight, it never competes with
	 * a request. Without cgroups it simply runs as it is. */
	if (!p->zcg.version) {
		struct hutch_limits zl = {.memory_bytes = 4ull << 30, .pids = 4096};
		char name[64];
		snprintf(name, sizeof(name), "%d.zygote", getpid());
		if (hutch_cgroup_create(&p->zcg, name, &zl, NULL, 0, err) < 0)
			memset(&p->zcg, 0, sizeof(p->zcg));
	}
	if (p->zcg.version && (hutch_cgroup_set_weight(&p->zcg, 1, err) < 0 ||
			       hutch_cgroup_attach(&p->zcg, p->zpid, err) < 0))
		hutch_log(HUTCH_LOG_WARN, "pool: zygote runs without its own cgroup: %s", err->msg);
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* With zmu held: make sure a zygote runs, starting a new one if the last
 * died (killed, or out of memory). Cells it already made live on. */
static int zygote_alive(struct hutch_pool *p, struct hutch_err *err)
{
	struct pollfd pfd = {p->zpidfd, POLLIN, 0};

	if (p->zpid > 0 && p->zpidfd >= 0 && poll(&pfd, 1, 0) == 0)
		return 0;
	if (p->stopping)
		return hutch_err_setx(err, ESHUTDOWN, "the pool is stopping");
	hutch_log(HUTCH_LOG_WARN, "pool: the zygote is gone; starting a new one");
	if (p->zpid > 0)
		waitpid(p->zpid, NULL, 0);
	close_fd(&p->zpidfd);
	close_fd(&p->ctrl);
	p->zpid = 0;
	return start_zygote(p, err);
}

void hutch_pool_entry_release(struct hutch_pool_entry *e)
{
	if (e->pidfd >= 0)
		(void)pidfd_send_signal(e->pidfd, SIGKILL, NULL, 0);
	if (e->cg.version)
		hutch_cgroup_destroy(&e->cg, NULL);
	close_fd(&e->pidfd);
	close_fd(&e->chan);
	close_fd(&e->status_fd);
	close_fd(&e->watch_fd);
	close_fd(&e->proxy_fd);
	close_fd(&e->out_fd);
	close_fd(&e->err_fd);
}

/* Open cgroup.procs of each hierarchy of cg, for the zygote's A to attach B. */
static int open_procs(const struct hutch_cgroup *cg, int *fds, int max)
{
	char path[PATH_MAX + 16];
	int n = 0;

	for (int i = 0; i < HUTCH_CG_NCTL && n < max; i++) {
		if (!cg->dirs[i][0])
			continue;
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dirs[i]);
		fds[n] = open(path, O_WRONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			while (n-- > 0)
				close(fds[n]);
			return -1;
		}
		n++;
	}
	return n;
}

/* One conversation with the zygote: send the fork message with its fds;
 * 0 when it made the cell, -1 with err otherwise. */
static int ask_zygote(struct hutch_pool *p, const struct hutch_zmsg_fork *msg, const int *fds,
		      int nfds_out, struct hutch_err *err)
{
	struct hutch_zmsg_forked reply = {0};
	ssize_t n = -1;
	int nfds = 0;
	bool alive;

	pthread_mutex_lock(&p->zmu);
	alive = zygote_alive(p, err) == 0;
	if (alive && hutch_send_fds(p->ctrl, msg, sizeof(*msg), fds, nfds_out) == 0)
		n = hutch_recv_fds(p->ctrl, &reply, sizeof(reply), NULL, 0, &nfds);
	pthread_mutex_unlock(&p->zmu);
	if (n == (ssize_t)sizeof(reply) && reply.pid > 0)
		return 0;
	if (n == (ssize_t)sizeof(reply))
		*err = reply.err;
	else if (alive)
		hutch_err_setx(err, EPIPE, "the zygote is gone");
	return -1;
}

/* The new cell's three messages: B's hello, which carries its pid as we
 * see it (the zygote's answer is in its own namespace), B's connect watch
 * listener, then C's, once it is warm and locked down (a node cell's with
 * its node's stdout and stderr). */
static int wait_ready(int chan, pid_t *pid, struct hutch_pool_entry *e, struct hutch_err *err)
{
	char hello = 0;
	int nfds = 0;
	int fds[2] = {-1, -1};

	if (hutch_recv_pid(chan, &hello, 1, pid) != 1 || *pid <= 0)
		return hutch_err_setx(err, ECHILD, "the new cell died while it was set up");
	ssize_t n = hutch_recv_fds(chan, &hello, 1, fds, 2, &nfds);
	e->watch_fd = fds[0];
	e->proxy_fd = fds[1];
	if (n != 1 || nfds != 2 || hello != 'w')
		return hutch_err_setx(err, ECHILD, "the new cell sent no connect watch");
	/* one byte, its kind; or a struct hutch_cell_failure saying why not */
	struct hutch_cell_failure f;
	memset(&f, 0, sizeof(f));
	fds[0] = fds[1] = -1;
	n = hutch_recv_fds(chan, &f, sizeof(f), fds, 2, &nfds);
	e->out_fd = fds[0];
	e->err_fd = fds[1];
	if (n == (ssize_t)sizeof(f)) {
		f.step[sizeof(f.step) - 1] = '\0';
		f.err.msg[sizeof(f.err.msg) - 1] = '\0';
		return hutch_err_setx(err, f.err.code, "the new cell failed (%s): %s", f.step,
				      f.err.msg);
	}
	if (n != 1 || f.step[0] != e->kind || nfds != (e->kind == HUTCH_CELL_NODE ? 2 : 0))
		return hutch_err_setx(err, ECHILD, "the new cell died while it was warmed up");
	return 0;
}

/* Ask the zygote for one cell of this kind (HUTCH_CELL_*). */
static int make_entry(struct hutch_pool *p, char kind, struct hutch_pool_entry *e,
		      struct hutch_err *err)
{
	struct hutch_limits defaults = {.memory_bytes = HUTCH_DEFAULT_MEMORY,
					.pids = HUTCH_DEFAULT_PIDS};
	struct hutch_zmsg_fork msg = {'F', 0, kind, {0}, POOL_DISK};
	int chan[2] = {-1, -1};
	int status[2] = {-1, -1};
	int fds[2 + HUTCH_CG_NCTL];
	char name[64];
	int ncg = 0;

	memset(e, 0, sizeof(*e));
	e->pidfd = e->chan = e->status_fd = e->watch_fd = e->proxy_fd = -1;
	e->out_fd = e->err_fd = -1;
	e->kind = kind;
	e->disk_bytes = POOL_DISK;
	pthread_mutex_lock(&p->mu);
	snprintf(name, sizeof(name), "%d.z%llu", getpid(), (unsigned long long)++p->seq);
	pthread_mutex_unlock(&p->mu);
	if (hutch_cgroup_create(&e->cg, name, &defaults, e->cg_note, sizeof(e->cg_note), err) < 0)
		return -1;
	/* A cell being made (and waiting) yields the CPU to cells running
	 * code: the refill never slows a request down. Taken cells get the
	 * default weight back (fast.c). */
	(void)hutch_cgroup_set_weight(&e->cg, 1, NULL);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) < 0 ||
	    pipe2(status, O_CLOEXEC) < 0) {
		hutch_err_set(err, errno, "socketpair");
		goto out_fail;
	}
	int one = 1;
	if (setsockopt(chan[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
		hutch_err_set(err, errno, "SO_PASSCRED");
		goto out_fail;
	}
	fds[0] = chan[1];
	fds[1] = status[1];
	ncg = e->cg.version ? open_procs(&e->cg, fds + 2, HUTCH_CG_NCTL) : 0;
	if (ncg < 0) {
		hutch_err_set(err, errno, "open cgroup.procs");
		goto out_fail;
	}
	msg.ncg = (uint8_t)ncg;
	pid_t pid = 0;
	int rc = ask_zygote(p, &msg, fds, 2 + ncg, err);
	for (int i = 2; i < 2 + ncg; i++)
		close(fds[i]);
	close_fd(&chan[1]);
	close_fd(&status[1]);
	if (rc < 0 || wait_ready(chan[0], &pid, e, err) < 0)
		goto out_fail;
	e->pid = pid;
	e->pidfd = pidfd_open(e->pid, 0);
	e->chan = chan[0];
	e->status_fd = status[0];
	if (e->pidfd < 0) {
		hutch_err_set(err, errno, "pidfd_open");
		hutch_pool_entry_release(e);
		return -1;
	}
	pthread_mutex_lock(&p->mu);
	p->forks++;
	pthread_mutex_unlock(&p->mu);
	return 0;

out_fail:
	close_fd(&e->watch_fd);
	close_fd(&e->proxy_fd);
	close_fd(&e->out_fd);
	close_fd(&e->err_fd);
	close_fd(&chan[0]);
	close_fd(&chan[1]);
	close_fd(&status[0]);
	close_fd(&status[1]);
	hutch_cgroup_destroy(&e->cg, NULL);
	return -1;
}

void hutch_pool_bury(struct hutch_pool *p, struct hutch_cgroup *cg)
{
	pthread_mutex_lock(&p->mu);
	if (p->ngrave == p->grave_cap) {
		p->grave_cap = p->grave_cap ? p->grave_cap * 2 : 16;
		p->graveyard = hutch_xrealloc(p->graveyard, p->grave_cap * sizeof(*p->graveyard));
	}
	p->graveyard[p->ngrave++] = *cg;
	cg->version = 0;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
}

/* With p->mu held: remove every buried cgroup (unlocking meanwhile). */
static void dig(struct hutch_pool *p)
{
	while (p->ngrave > 0) {
		struct hutch_cgroup cg = p->graveyard[--p->ngrave];
		pthread_mutex_unlock(&p->mu);
		hutch_cgroup_destroy(&cg, NULL);
		pthread_mutex_lock(&p->mu);
	}
}

/* With p->mu held: what the refill should make next, or 0 when both kinds
 * are at their targets. Cells for any program first: most requests are. */
static char next_kind(const struct hutch_pool *p)
{
	if (p->nready < p->target)
		return HUTCH_CELL_ANY;
	if (p->nready_node < p->target_node)
		return HUTCH_CELL_NODE;
	return 0;
}

/* With p->mu held: release the ready cells of one kind beyond its target. */
static void trim(struct hutch_pool *p, struct hutch_pool_entry *ready, unsigned *nready,
		 unsigned target)
{
	while (*nready > target) {
		struct hutch_pool_entry extra = ready[--*nready];
		pthread_mutex_unlock(&p->mu);
		hutch_pool_entry_release(&extra);
		pthread_mutex_lock(&p->mu);
	}
}

/* With p->mu held: wait for work; idle for 30 s, shrink one step. */
static void idle(struct hutch_pool *p)
{
	struct timespec until;
	time_t now;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	if (pthread_cond_timedwait(&p->wake, &p->mu, &until) != ETIMEDOUT)
		return;
	now = time(NULL);
	if (p->target > p->min && now - p->last_miss > 30)
		p->target--;
	if (p->target_node > 0 && now - p->last_node > 30)
		p->target_node--;
	trim(p, p->ready, &p->nready, p->target);
	trim(p, p->ready_node, &p->nready_node, p->target_node);
}

static void *refill_main(void *arg)
{
	struct hutch_pool *p = arg;
	struct hutch_err err;

	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		dig(p);
		char kind = next_kind(p);
		if (!kind) {
			idle(p);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		struct hutch_pool_entry e;
		int rc = make_entry(p, kind, &e, &err);
		pthread_mutex_lock(&p->mu);
		if (rc < 0 && kind == HUTCH_CELL_NODE) {
			/* no node in the template, say: node requests take cells
			 * for any program (node by execve) for a while */
			if (!p->stopping)
				hutch_log(HUTCH_LOG_WARN, "pool: no warm node: %s", err.msg);
			p->node_failed = time(NULL);
			p->target_node = 0;
			continue;
		}
		if (rc < 0) {
			if (!p->stopping)
				hutch_log(HUTCH_LOG_WARN, "pool: cannot make a cell: %s", err.msg);
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1; /* back off; the zygote may be restarting */
			pthread_cond_timedwait(&p->wake, &p->mu, &until);
			continue;
		}
		if (p->stopping) {
			pthread_mutex_unlock(&p->mu);
			hutch_pool_entry_release(&e);
			pthread_mutex_lock(&p->mu);
			break;
		}
		if (kind == HUTCH_CELL_NODE)
			p->ready_node[p->nready_node++] = e;
		else
			p->ready[p->nready++] = e;
		pthread_cond_broadcast(&p->wake);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct hutch_pool *hutch_pool_start(const char *preload, unsigned min, unsigned max,
				    struct hutch_err *err)
{
	struct hutch_pool *p = hutch_xcalloc(1, sizeof(*p));

	if (max < 1)
		max = 1;
	if (min > max)
		min = max;
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->zmu, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->min = min;
	p->max = max;
	p->target = min;
	p->ctrl = p->zpidfd = -1;
	p->ready = hutch_xcalloc(max, sizeof(*p->ready));
	p->ready_node = hutch_xcalloc(max, sizeof(*p->ready_node));
	snprintf(p->preload, sizeof(p->preload), "%s", preload ? preload : "");
	if (start_zygote(p, err) < 0) {
		hutch_pool_stop(p);
		return NULL;
	}
	if (pthread_create(&p->refiller, NULL, refill_main, p) != 0) {
		hutch_err_setx(err, EAGAIN, "cannot start the pool's refill thread");
		hutch_pool_stop(p);
		return NULL;
	}
	p->has_refiller = true;
	return p;
}

/* With p->mu held: the newest live cell of a ready list (its pages are the
 * most likely to be warm), dropping those that died while they waited
 * (their zygote was killed). */
static bool pop_live(struct hutch_pool *p, struct hutch_pool_entry *ready, unsigned *nready,
		     struct hutch_pool_entry *e)
{
	while (*nready > 0) {
		*e = ready[--*nready];
		struct pollfd pfd = {e->pidfd, POLLIN, 0};
		if (poll(&pfd, 1, 0) == 0)
			return true;
		pthread_mutex_unlock(&p->mu);
		hutch_pool_entry_release(e);
		pthread_mutex_lock(&p->mu);
	}
	return false;
}

int hutch_pool_take(struct hutch_pool *p, char kind, struct hutch_pool_entry *e,
		    struct hutch_err *err)
{
	pthread_mutex_lock(&p->mu);
	if (kind == HUTCH_CELL_NODE) {
		p->last_node = time(NULL);
		if (pop_live(p, p->ready_node, &p->nready_node, e)) {
			p->served_node++;
			goto served;
		}
		/* none ready: this one runs node by execve in a cell for any
		 * program; keep one more node cell from now on */
		p->misses_node++;
		if (p->target_node < p->max && p->target_node < NODE_CELLS_MAX &&
		    time(NULL) - p->node_failed > 60)
			p->target_node++;
	}
	if (pop_live(p, p->ready, &p->nready, e))
		goto served;
	/* Empty: grow the pool (up to its cap) and make this one now. */
	p->misses++;
	p->last_miss = time(NULL);
	if (p->target < p->max)
		p->target++;
	p->served++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	return make_entry(p, HUTCH_CELL_ANY, e, err);
served:
	p->served++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

bool hutch_pool_can_serve(const struct hutch_pool *p, const struct hutch_exec_request *req)
{
	/* A cell's writable layer is made (and locked down) before the request
	 * comes: only the size it was made with can be served from the pool. */
	/* and only none or allow: (a cell's network namespace is made before
	 * the request comes, with a proxy listener in it; full needs
	 * slirp4netns and its routes from the start) */
	return p && req->limits.disk_bytes == POOL_DISK &&
	       (!req->template_name || strcmp(req->template_name, "host") == 0) &&
	       (!req->net || strcmp(req->net, "none") == 0 || strncmp(req->net, "allow:", 6) == 0);
}

void hutch_pool_get_stats(struct hutch_pool *p, struct hutch_pool_stats *st)
{
	pthread_mutex_lock(&p->mu);
	st->served = p->served;
	st->misses = p->misses;
	st->forks = p->forks;
	st->ready = p->nready;
	st->target = p->target;
	st->node_ready = p->nready_node;
	st->node_target = p->target_node;
	st->node_served = p->served_node;
	st->node_misses = p->misses_node;
	st->max = p->max;
	st->zygote_pid = p->zpid > 0 ? p->zpid : 0;
	pthread_mutex_unlock(&p->mu);
}

void hutch_pool_stop(struct hutch_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	/* the kill ends any conversation in flight, so zmu comes free */
	if (p->zpidfd >= 0)
		(void)pidfd_send_signal(p->zpidfd, SIGKILL, NULL, 0);
	pthread_mutex_lock(&p->zmu);
	close_fd(&p->ctrl);
	pthread_mutex_unlock(&p->zmu);
	if (p->has_refiller)
		pthread_join(p->refiller, NULL);
	if (p->zpid > 0)
		waitpid(p->zpid, NULL, 0);
	close_fd(&p->zpidfd);
	for (unsigned i = 0; i < p->nready; i++)
		hutch_pool_entry_release(&p->ready[i]);
	for (unsigned i = 0; i < p->nready_node; i++)
		hutch_pool_entry_release(&p->ready_node[i]);
	free(p->ready);
	free(p->ready_node);
	for (unsigned i = 0; i < p->ngrave; i++)
		hutch_cgroup_destroy(&p->graveyard[i], NULL);
	free(p->graveyard);
	if (p->zcg.version)
		hutch_cgroup_destroy(&p->zcg, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->zmu);
	pthread_cond_destroy(&p->wake);
	free(p);
}

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cell/quota.h"
#include "session/files.h"
#include "session/session.h"
#include "util/err.h"
#include "util/id.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/time.h"

/*
 * The session table and its persistence. Each session has a directory
 * <state>/sessions/<id>/ with meta.json (what `new` asked for, written
 * atomically) and workspace/ (bound on /workspace). After a restart the
 * table is rebuilt from those directories; their kernels start again on the
 * next call (state DEAD until then).
 */

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *state_name(enum session_state st)
{
	switch (st) {
	case SESSION_RUNNING:
		return "running";
	case SESSION_PAUSED:
		return "paused";
	case SESSION_DEAD:
		return "dead";
	}
	return "dead";
}

/* --- meta.json --- */

static json_t *meta_json(const struct hutch_session *s)
{
	char *req = hutch_request_to_json(&s->conf);
	json_t *conf = req ? json_loads(req, 0, NULL) : NULL;

	free(req);
	return json_pack("{s:s,s:s,s:o,s:I,s:I,s:I}", "id", s->id, "language", s->language,
			 "request", conf ? conf : json_object(), "idle_timeout_ms",
			 (json_int_t)s->idle_timeout_ms, "ttl_ms", (json_int_t)s->ttl_ms,
			 "created_ms", (json_int_t)s->created_ms);
}

int hutch_session_save_meta(const struct hutch_session *s, struct hutch_err *err)
{
	char tmp[600];
	char path[600];
	json_t *meta = meta_json(s);
	int rc;

	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", s->dir);
	snprintf(path, sizeof(path), "%s/meta.json", s->dir);
	rc = json_dump_file(meta, tmp, JSON_INDENT(1));
	json_decref(meta);
	/* temp + rename: a crash leaves the old file or the new, never half */
	if (rc < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return hutch_err_set(err, errno ? errno : EIO, "write '%s'", path);
	}
	return 0;
}

int hutch_session_net_policy(const struct hutch_session *s, struct hutch_net_policy *policy,
			     struct hutch_err *err)
{
	if (hutch_net_policy_parse(s->conf.net, policy, err) < 0)
		return -1;
	policy->allow_private = s->conf.net_allow_private;
	return 0;
}

/* --- the table --- */

static struct hutch_session *session_alloc(struct hutch_sessions *m, const char *id)
{
	struct hutch_session *s = hutch_xcalloc(1, sizeof(*s));

	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->dir, sizeof(s->dir), "%s/sessions/%s", m->state_dir, id);
	snprintf(s->workspace, sizeof(s->workspace), "%s/workspace", s->dir);
	s->workspace_fd = s->ctl = s->out = s->err = -1;
	s->cell.pidfd = s->cell.report_fd = s->cell.status_fd = -1;
	s->state = SESSION_DEAD;
	s->last_used_ms = hutch_now_us() / 1000;
	hutch_request_init(&s->conf);
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

static void session_free(struct hutch_session *s)
{
	hutch_kernel_stop(s); /* its cell goes, and every command in it */
	hutch_cmd_free_all(s);
	if (s->workspace_fd >= 0)
		close(s->workspace_fd);
	hutch_request_release(&s->conf);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void table_add(struct hutch_sessions *m, struct hutch_session *s)
{
	m->tab = hutch_xrealloc(m->tab, (m->n + 1) * sizeof(struct hutch_session *));
	m->tab[m->n++] = s;
}

struct hutch_session *hutch_session_get(struct hutch_sessions *m, const char *id,
					struct hutch_err *err)
{
	struct hutch_session *s = NULL;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; id && i < m->n; i++)
		if (strcmp(m->tab[i]->id, id) == 0 && !m->tab[i]->gone) {
			s = m->tab[i];
			s->refs++;
		}
	pthread_mutex_unlock(&m->lock);
	if (!s)
		hutch_err_setx(err, ENOENT, "no session '%s'", id ? id : "");
	return s;
}

void hutch_session_put(struct hutch_sessions *m, struct hutch_session *s)
{
	bool free_it = false;

	pthread_mutex_lock(&m->lock);
	if (--s->refs == 0 && s->gone) {
		for (size_t i = 0; i < m->n; i++)
			if (m->tab[i] == s) {
				m->tab[i] = m->tab[--m->n];
				break;
			}
		free_it = true;
	}
	pthread_mutex_unlock(&m->lock);
	if (free_it)
		session_free(s);
}

/* Without a cgroup: the kernel's own CPU time and that of the children it
 * waited for (fields 14-17 of /proc/PID/stat), in µs. */
static uint64_t kernel_cpu_us(pid_t pid)
{
	char path[64];
	char buf[1024];
	unsigned long long t[4] = {0, 0, 0, 0};
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p)
		return 0;
	/* after ")": field 3 (state) is token 0, so utime (14) is token 11 */
	char *tok = (char *)p + 1;
	for (int i = 0; i < 15 && tok; i++) {
		while (*tok == ' ')
			tok++;
		if (i >= 11)
			t[i - 11] = strtoull(tok, NULL, 10);
		tok = strchr(tok, ' ');
	}
	long hz = sysconf(_SC_CLK_TCK);
	return (t[0] + t[1] + t[2] + t[3]) * 1000000ull / (unsigned long long)(hz > 0 ? hz : 100);
}

json_t *hutch_session_info(struct hutch_session *s)
{
	struct hutch_cgroup_stats st = {0};
	uint64_t bytes = 0;
	uint64_t inodes = 0;

	if (s->cg.version && s->state != SESSION_DEAD)
		hutch_cgroup_stats(&s->cg, &st);
	else if (s->state != SESSION_DEAD)
		st.cpu_us = kernel_cpu_us(s->kernel_pid);
	if (s->workspace_fd >= 0)
		(void)hutch_files_usage(s->workspace_fd, &bytes, &inodes, NULL);
	json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "id", s->id, "language",
			      s->language, "state", state_name(s->state), "created_ms",
			      (json_int_t)s->created_ms, "calls", (json_int_t)s->calls, "cpu_ms",
			      (json_int_t)((s->cpu_us_dead + st.cpu_us) / 1000),
			      "peak_memory_bytes", (json_int_t)st.peak_bytes, "disk_used_bytes",
			      (json_int_t)bytes, "idle_timeout_ms", (json_int_t)s->idle_timeout_ms,
			      "ttl_ms", (json_int_t)s->ttl_ms);
	char *req = hutch_request_to_json(&s->conf);
	json_t *conf = req ? json_loads(req, 0, NULL) : NULL;
	free(req);
	json_object_set_new(o, "limits", json_incref(json_object_get(conf, "limits")));
	json_object_set_new(o, "disk_quota",
			    json_pack("{s:I,s:s,s:s?}", "bytes",
				      (json_int_t)s->conf.limits.disk_bytes, "enforced_by",
				      s->quota ? "ext4 image" : "none", "note",
				      s->quota ? NULL : s->quota_note));
	json_decref(conf);
	return o;
}

/* --- creating, loading, removing --- */

static void image_path(const struct hutch_session *s, char *out, size_t n)
{
	snprintf(out, n, "%s/workspace.img", s->dir);
}

static int make_dirs(struct hutch_session *s, struct hutch_err *err)
{
	char image[600];

	if (mkdir(s->dir, 0700) < 0)
		return hutch_err_set(err, errno, "mkdir '%s'", s->dir);
	if (mkdir(s->workspace, 0755) < 0)
		return hutch_err_set(err, errno, "mkdir '%s'", s->workspace);
	/* a hard cap on the workspace where we can make one (root) */
	if (hutch_quota_available(s->quota_note, sizeof(s->quota_note))) {
		image_path(s, image, sizeof(image));
		if (hutch_quota_create(image, s->workspace, s->conf.limits.disk_bytes,
				       HUTCH_SANDBOX_UID, HUTCH_SANDBOX_GID, err) < 0)
			return -1;
		s->quota = true;
		return 0;
	}
	/* the sandbox's uid owns its workspace (rootless: our own uid, which
	 * the cell's user namespace maps to it) */
	if (getuid() == 0 && chown(s->workspace, HUTCH_SANDBOX_UID, HUTCH_SANDBOX_GID) < 0)
		return hutch_err_set(err, errno, "chown '%s'", s->workspace);
	return 0;
}

static int open_workspace(struct hutch_session *s, struct hutch_err *err)
{
	s->workspace_fd = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->workspace_fd < 0)
		return hutch_err_set(err, errno, "open '%s'", s->workspace);
	return 0;
}

static void remove_tree(const char *dir)
{
	char meta[600];

	snprintf(meta, sizeof(meta), "%s/workspace", dir);
	hutch_quota_unmount(meta);
	snprintf(meta, sizeof(meta), "%s/workspace.img", dir);
	unlink(meta);
	int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		(void)hutch_files_remove(fd, "workspace", true, NULL);
		close(fd);
	}
	snprintf(meta, sizeof(meta), "%s/meta.json", dir);
	unlink(meta);
	snprintf(meta, sizeof(meta), "%s/workspace", dir);
	rmdir(meta);
	rmdir(dir);
}

/* Through the JSON form: one definition of what a request holds. */
static int copy_request(struct hutch_exec_request *dst, const struct hutch_exec_request *src,
			struct hutch_err *err)
{
	char *text = hutch_request_to_json(src);
	int rc = text ? hutch_request_from_json(dst, text, strlen(text), err)
		      : hutch_err_setx(err, ENOMEM, "copy request");

	free(text);
	return rc;
}

struct hutch_session *hutch_session_create(struct hutch_sessions *m,
					   const struct hutch_exec_request *conf,
					   uint64_t idle_timeout_ms, uint64_t ttl_ms,
					   struct hutch_err *err)
{
	char id[40];
	struct hutch_session *s;

	hutch_id_new(id, sizeof(id), "sess");
	s = session_alloc(m, id);
	snprintf(s->language, sizeof(s->language), "%s", conf->language ? conf->language : "");
	if (copy_request(&s->conf, conf, err) < 0) {
		session_free(s);
		return NULL;
	}
	s->idle_timeout_ms = idle_timeout_ms;
	s->ttl_ms = ttl_ms;
	s->created_ms = wall_ms();
	if (make_dirs(s, err) < 0 || open_workspace(s, err) < 0 ||
	    hutch_session_save_meta(s, err) < 0 || hutch_kernel_start(s, err) < 0) {
		char dir[sizeof(s->dir)];
		memcpy(dir, s->dir, sizeof(dir));
		session_free(s);
		remove_tree(dir);
		return NULL;
	}
	s->refs = 1;
	pthread_mutex_lock(&m->lock);
	table_add(m, s);
	pthread_mutex_unlock(&m->lock);
	hutch_log(HUTCH_LOG_INFO, "session %s created (%s)", s->id, s->language);
	return s;
}

static struct hutch_session *load_one(struct hutch_sessions *m, const char *id)
{
	char path[600];
	json_t *meta;
	struct hutch_session *s;
	struct hutch_err err;

	snprintf(path, sizeof(path), "%s/sessions/%s/meta.json", m->state_dir, id);
	meta = json_load_file(path, 0, NULL);
	json_t *conf = json_object_get(meta, "request");
	const char *language = json_string_value(json_object_get(meta, "language"));
	if (!json_is_object(conf) || !language) {
		hutch_log(HUTCH_LOG_WARN, "session %s: no usable meta.json; left alone", id);
		json_decref(meta);
		return NULL;
	}
	s = session_alloc(m, id);
	snprintf(s->language, sizeof(s->language), "%s", language);
	char *text = json_dumps(conf, JSON_COMPACT);
	int rc = text ? hutch_request_from_json(&s->conf, text, strlen(text), &err) : -1;
	free(text);
	s->idle_timeout_ms = (uint64_t)json_integer_value(json_object_get(meta, "idle_timeout_ms"));
	s->ttl_ms = (uint64_t)json_integer_value(json_object_get(meta, "ttl_ms"));
	s->created_ms = (uint64_t)json_integer_value(json_object_get(meta, "created_ms"));
	json_decref(meta);
	char image[600];
	image_path(s, image, sizeof(image));
	if (rc == 0 && access(image, F_OK) == 0) { /* mounted still, or again after a reboot */
		rc = hutch_quota_mount(image, s->workspace, &err);
		s->quota = rc == 0;
	} else if (rc == 0) {
		(void)hutch_quota_available(s->quota_note, sizeof(s->quota_note));
	}
	if (rc < 0 || open_workspace(s, &err) < 0) {
		hutch_log(HUTCH_LOG_WARN, "session %s: %s; left alone", id, err.msg);
		session_free(s);
		return NULL;
	}
	snprintf(s->note, sizeof(s->note),
		 "the daemon restarted and the session's processes ended with it; a fresh "
		 "kernel was started (files are intact, interpreter state is not)");
	return s;
}

/* Sessions a previous daemon left: back in the table, kernel not running. */
static void load_all(struct hutch_sessions *m)
{
	char path[450];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/sessions", m->state_dir);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "sess_", 5) != 0)
			continue;
		struct hutch_session *s = load_one(m, e->d_name);
		if (s)
			table_add(m, s);
	}
	closedir(d);
}

static void remove_session(struct hutch_sessions *m, struct hutch_session *s)
{
	char dir[sizeof(s->dir)];

	pthread_mutex_lock(&s->lock);
	memcpy(dir, s->dir, sizeof(dir));
	hutch_kernel_stop(s);
	remove_tree(dir);
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&m->lock);
	s->gone = true;
	pthread_mutex_unlock(&m->lock);
	hutch_log(HUTCH_LOG_INFO, "session %s removed", s->id);
}

int hutch_session_kill(struct hutch_sessions *m, const char *id, struct hutch_err *err)
{
	struct hutch_session *s = hutch_session_get(m, id, err);

	if (!s)
		return -1;
	remove_session(m, s);
	hutch_session_put(m, s);
	return 0;
}

json_t *hutch_session_list(struct hutch_sessions *m)
{
	json_t *a = json_array();
	struct hutch_session **snap;
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = m->n;
	snap = hutch_xcalloc(n + 1, sizeof(struct hutch_session *));
	for (size_t i = 0; i < n; i++) {
		snap[i] = m->tab[i];
		snap[i]->refs++;
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < n; i++) {
		if (!snap[i]->gone) {
			pthread_mutex_lock(&snap[i]->lock);
			json_array_append_new(a, hutch_session_info(snap[i]));
			pthread_mutex_unlock(&snap[i]->lock);
		}
		hutch_session_put(m, snap[i]);
	}
	free(snap);
	return a;
}

/* --- the reaper: auto-pause when idle, kill at the deadline --- */

static void reap_once(struct hutch_sessions *m)
{
	uint64_t now_mono = hutch_now_us() / 1000;
	uint64_t now_wall = wall_ms();
	struct hutch_session *victim = NULL;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n && !victim; i++) {
		struct hutch_session *s = m->tab[i];
		if (s->gone || s->refs > 0)
			continue; /* in use: not idle */
		if (s->ttl_ms && now_wall >= s->created_ms + s->ttl_ms) {
			victim = s;
			victim->refs++;
		} else if (s->idle_timeout_ms && s->state == SESSION_RUNNING && s->cg.version &&
			   now_mono >= s->last_used_ms + s->idle_timeout_ms) {
			/* a background command (a dev server) is not idleness */
			if (pthread_mutex_trylock(&s->lock) == 0) {
				if (!hutch_cmd_any_running(s) &&
				    hutch_cgroup_freeze(&s->cg, true, NULL) == 0)
					s->state = SESSION_PAUSED;
				pthread_mutex_unlock(&s->lock);
			}
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (victim) {
		hutch_log(HUTCH_LOG_INFO, "session %s reached its ttl", victim->id);
		remove_session(m, victim);
		hutch_session_put(m, victim);
	}
}

static void *reaper_main(void *arg)
{
	struct hutch_sessions *m = arg;

	for (;;) {
		struct pollfd pfd = {m->reaper_stop[0], POLLIN, 0};
		if (poll(&pfd, 1, 200) > 0)
			return NULL;
		reap_once(m);
	}
}

struct hutch_sessions *hutch_sessions_open(const char *state_dir, struct hutch_err *err)
{
	struct hutch_sessions *m = hutch_xcalloc(1, sizeof(*m));
	char path[450];

	if (strlen(state_dir) >= 300) {
		free(m);
		hutch_err_setx(err, ENAMETOOLONG, "state directory path is too long");
		return NULL;
	}
	snprintf(m->state_dir, sizeof(m->state_dir), "%s", state_dir);
	snprintf(path, sizeof(path), "%s/sessions", state_dir);
	if ((mkdir(state_dir, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(path, 0700) < 0 && errno != EEXIST)) {
		hutch_err_set(err, errno, "create state directory '%s'", path);
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	load_all(m);
	if (pipe2(m->reaper_stop, O_CLOEXEC) == 0 &&
	    pthread_create(&m->reaper, NULL, reaper_main, m) == 0)
		m->reaper_running = true;
	return m;
}

void hutch_sessions_close(struct hutch_sessions *m)
{
	if (!m)
		return;
	if (m->reaper_running) {
		(void)!write(m->reaper_stop[1], "x", 1);
		pthread_join(m->reaper, NULL);
		close(m->reaper_stop[0]);
		close(m->reaper_stop[1]);
	}
	/* the processes end with the daemon; the directories stay for the next */
	for (size_t i = 0; i < m->n; i++)
		session_free(m->tab[i]);
	free(m->tab);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

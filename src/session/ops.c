#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/netpolicy.h"
#include "run/netwatch.h"
#include "run/proxy.h"
#include "session/files.h"
#include "session/session.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/id.h"
#include "util/text.h"
#include "util/time.h"

/*
 * hutch_session_call: every session operation as one JSON object in and one
 * out (docs/sessions.md). The daemon's `J` frames, the CLI and the C API
 * all come through here: one code path.
 */

#define FILE_MAX_BYTES (256ull << 20) /* one files-API read or write */

static char *error_json(const struct hutch_err *e)
{
	json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", hutch_errno_name(e->code),
			      "message", e->msg);
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return text;
}

static char *ok_json(json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return text;
}

/* Only the named keys may appear: a typo is an error, not a silent default. */
static int check_keys(json_t *req, const char *const *allowed, struct hutch_err *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(req, key, v)
	{
		bool ok = false;
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(key, allowed[i]) == 0;
		if (!ok)
			return hutch_err_setx(err, EINVAL, "unknown field '%s'", key);
	}
	return 0;
}

/* A string field that must be there. */
static int need_str(json_t *req, const char *key, const char **out, struct hutch_err *err)
{
	json_t *v = json_object_get(req, key);

	*out = "";
	if (!json_is_string(v))
		return hutch_err_setx(err, EINVAL, "field '%s' %s", key,
				      v ? "must be a string" : "is required");
	*out = json_string_value(v);
	return 0;
}

/* A string field that may be missing (*out NULL then). */
static int opt_str(json_t *req, const char *key, const char **out, struct hutch_err *err)
{
	*out = NULL;
	return json_object_get(req, key) ? need_str(req, key, out, err) : 0;
}

static int get_ms(json_t *req, const char *key, uint64_t *out, struct hutch_err *err)
{
	json_t *v = json_object_get(req, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return hutch_err_setx(err, EINVAL, "field '%s' must be a non-negative integer",
				      key);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* --- new --- */

static char *op_new(struct hutch_sessions *m, json_t *req, struct hutch_err *err)
{
	static const char *const keys[] = {"op",
					   "language",
					   "limits",
					   "env",
					   "labels",
					   "network",
					   "network_allow_private",
					   "idle_timeout_ms",
					   "ttl_ms",
					   NULL};
	struct hutch_exec_request conf;
	uint64_t idle = 0;
	uint64_t ttl = 0;
	const char *language;
	char *text;
	json_t *body;
	int rc;

	if (check_keys(req, keys, err) < 0 || need_str(req, "language", &language, err) < 0 ||
	    get_ms(req, "idle_timeout_ms", &idle, err) < 0 || get_ms(req, "ttl_ms", &ttl, err) < 0)
		return NULL;
	if (strcmp(language, "python") != 0 && strcmp(language, "bash") != 0 &&
	    strcmp(language, "node") != 0) {
		hutch_err_setx(err, EINVAL, "language '%s': sessions speak python, node or bash",
			       language);
		return NULL;
	}
	/* the limits, env and labels are an ExecRequest's: parse them as one */
	body = json_deep_copy(req);
	json_object_del(body, "op");
	json_object_del(body, "idle_timeout_ms");
	json_object_del(body, "ttl_ms");
	json_object_set_new(body, "code", json_string(""));
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	hutch_request_init(&conf);
	rc = hutch_request_from_json(&conf, text, strlen(text), err);
	free(text);
	if (rc == 0)
		rc = hutch_request_validate(&conf, err);
	struct hutch_session *s = rc == 0 ? hutch_session_create(m, &conf, idle, ttl, err) : NULL;
	hutch_request_release(&conf);
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	json_t *info = hutch_session_info(s);
	pthread_mutex_unlock(&s->lock);
	hutch_session_put(m, s);
	return ok_json(json_pack("{s:o}", "session", info));
}

/* --- calls on one session --- */

static char *result_json(struct hutch_session *s, struct hutch_exec_result *res)
{
	char *text;

	snprintf(res->session_id, sizeof(res->session_id), "%s", s->id);
	snprintf(res->path, sizeof(res->path), "session");
	text = hutch_result_to_json(res);
	hutch_result_release(res);
	return text;
}

/* Which mechanism holds each limit of a session call (as hutch run says). */
static void fill_enforced(const struct hutch_session *s, struct hutch_exec_result *res)
{
	struct hutch_enforced *e = &res->enforced;
	enum hutch_mech cg = s->cg.version == 2	  ? HUTCH_MECH_CGROUP_V2
			     : s->cg.version == 1 ? HUTCH_MECH_CGROUP_V1
						  : HUTCH_MECH_RLIMIT;

	e->wall = HUTCH_MECH_SUPERVISOR;
	e->cpu = HUTCH_MECH_NONE; /* a call has a deadline, not a CPU budget */
	e->memory = cg;
	e->pids = cg;
	e->output = HUTCH_MECH_SUPERVISOR;
	e->file = HUTCH_MECH_RLIMIT;
	e->disk = s->quota ? HUTCH_MECH_IMAGE : HUTCH_MECH_TMPFS;
	e->cpus = s->conf.limits.cpus > 0 && s->cg.has[HUTCH_CG_CPU] ? cg : HUTCH_MECH_NONE;
	snprintf(e->note, sizeof(e->note), "%s",
		 s->cg.version ? (s->quota ? "" : s->quota_note) : s->cg_note);
}

static char *op_exec(struct hutch_session *s, json_t *req, const struct hutch_run_hooks *hooks,
		     struct hutch_err *err)
{
	static const char *const keys[] = {"op", "id", "code", "timeout_ms", NULL};
	struct hutch_exec_result res;
	uint64_t timeout = s->conf.limits.wall_ms;
	const char *code;

	if (check_keys(req, keys, err) < 0 || need_str(req, "code", &code, err) < 0 ||
	    get_ms(req, "timeout_ms", &timeout, err) < 0)
		return NULL;
	if (timeout == 0)
		return hutch_err_setx(err, EINVAL, "field 'timeout_ms' must be positive"), NULL;
	if (hutch_kernel_ensure(s, err) < 0)
		return NULL;
	memset(&res, 0, sizeof(res));
	hutch_id_new(res.id, sizeof(res.id), "run");
	res.limits = s->conf.limits;
	res.limits.wall_ms = timeout;
	fill_enforced(s, &res);
	hutch_kernel_exec(s, code, timeout, hooks, &res, err);
	return result_json(s, &res);
}

static char *op_sh(struct hutch_session *s, json_t *req, const struct hutch_run_hooks *hooks,
		   struct hutch_err *err)
{
	static const char *const keys[] = {
		"op",	   "id",	 "command", "stdin", "timeout_ms", "env",
		"workdir", "background", "tty",	    "rows",  "cols",	   "idle_output_timeout_ms",
		NULL};
	struct hutch_command_io io = {0};
	uint64_t rows = 0;
	uint64_t cols = 0;
	struct hutch_exec_request r;
	struct hutch_exec_result res;
	json_t *body = json_deep_copy(req);
	const char *command;
	char *text;
	int rc;

	if (check_keys(req, keys, err) < 0 || need_str(req, "command", &command, err) < 0 ||
	    get_ms(req, "rows", &rows, err) < 0 || get_ms(req, "cols", &cols, err) < 0 ||
	    hutch_kernel_ensure(s, err) < 0) {
		json_decref(body);
		return NULL;
	}
	if (rows > 1000 || cols > 1000) {
		json_decref(body);
		return hutch_err_setx(err, EINVAL, "rows and cols: at most 1000"), NULL;
	}
	io.tty = json_is_true(json_object_get(req, "tty"));
	io.rows = (unsigned short)rows;
	io.cols = (unsigned short)cols;
	bool background = json_is_true(json_object_get(req, "background"));
	/* an ExecRequest for bash -c, with the session's limits and env */
	json_object_del(body, "op");
	json_object_del(body, "id");
	json_object_del(body, "command");
	json_object_del(body, "timeout_ms");
	json_object_del(body, "background");
	json_object_del(body, "tty");
	json_object_del(body, "rows");
	json_object_del(body, "cols");
	json_object_del(body, "idle_output_timeout_ms");
	json_object_set_new(body, "argv", json_pack("[s,s,s]", "/bin/bash", "-c", command));
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	hutch_request_init(&r);
	rc = hutch_request_from_json(&r, text, strlen(text), err);
	free(text);
	if (rc == 0) {
		r.limits = s->conf.limits;
		if (background) /* a handle outlives any one call: no default deadline */
			r.limits.wall_ms = 24ull * 3600 * 1000;
		(void)get_ms(req, "timeout_ms", &r.limits.wall_ms, NULL);
		(void)get_ms(req, "idle_output_timeout_ms", &r.limits.idle_output_ms, NULL);
		for (size_t i = 0; i < s->conf.nenv; i++)
			(void)hutch_request_add_env(&r, s->conf.env[i], NULL);
		r.session_id = hutch_xstrdup(s->id);
		rc = hutch_request_validate(&r, err);
	}
	if (rc == 0 && background) {
		struct hutch_session_cmd *c = hutch_cmd_start(s, &r, &io, err);
		hutch_request_release(&r);
		return c ? ok_json(json_pack("{s:{s:s,s:s}}", "command", "command_id",
					     hutch_cmd_id(c), "session_id", s->id))
			 : NULL;
	}
	if (rc == 0)
		rc = hutch_session_command(s, &r, &io, hooks, &res, err);
	hutch_request_release(&r);
	return rc == 0 ? result_json(s, &res) : NULL;
}

/* {"path", "size", key: base64 of b} when got is 0; frees b either way */
static char *bytes_reply(int got, const char *path, const char *key, struct hutch_buf *b)
{
	char *enc = got == 0 ? hutch_base64_encode((const unsigned char *)b->data, b->len) : NULL;
	json_t *o =
		enc ? json_pack("{s:s,s:I,s:s}", "path", path, "size", (json_int_t)b->len, key, enc)
		    : NULL;

	free(enc);
	hutch_buf_release(b);
	return o ? ok_json(o) : NULL;
}

static char *op_files(struct hutch_session *s, json_t *req, struct hutch_err *err)
{
	static const char *const keys[] = {"op",	  "id",	    "action", "path",	   "to",
					   "data_base64", "offset", "length", "recursive", NULL};
	/* files belong to the sandbox's uid (rootless: ours, mapped to it) */
	const struct hutch_files_owner own = {getuid() == 0 ? (uid_t)HUTCH_SANDBOX_UID : getuid(),
					      getuid() == 0 ? (gid_t)HUTCH_SANDBOX_GID : getgid()};
	const char *action;
	const char *path;
	const char *to = NULL;
	const char *b64 = NULL;
	uint64_t offset = 0;
	uint64_t length = 0;
	int root = s->workspace_fd;
	int rc = -1;

	if (check_keys(req, keys, err) < 0 || need_str(req, "action", &action, err) < 0 ||
	    need_str(req, "path", &path, err) < 0 || opt_str(req, "to", &to, err) < 0 ||
	    opt_str(req, "data_base64", &b64, err) < 0 || get_ms(req, "offset", &offset, err) < 0 ||
	    get_ms(req, "length", &length, err) < 0)
		return NULL;
	if (strcmp(action, "write") == 0) {
		size_t len = 0;
		unsigned char *data = b64 ? hutch_base64_decode(b64, strlen(b64), &len) : NULL;
		if (b64 && !data)
			return hutch_err_setx(err, EINVAL, "field 'data_base64' is not base64"),
			       NULL;
		rc = hutch_files_write(root, path, data ? (const void *)data : "", len, &own,
				       FILE_MAX_BYTES, err);
		free(data);
	} else if (strcmp(action, "read") == 0) {
		struct hutch_buf b = HUTCH_BUF_INIT;
		int got = hutch_files_read(root, path, offset, length, FILE_MAX_BYTES, &b, err);
		return bytes_reply(got, path, "data_base64", &b);
	} else if (strcmp(action, "list") == 0 || strcmp(action, "stat") == 0) {
		json_t *o = action[0] == 'l' ? hutch_files_list(root, path, err)
					     : hutch_files_stat(root, path, err);
		return o ? ok_json(json_pack("{s:o}", action[0] == 'l' ? "entries" : "stat", o))
			 : NULL;
	} else if (strcmp(action, "upload") == 0) { /* a tar, extracted under path */
		size_t len = 0;
		unsigned char *data = b64 ? hutch_base64_decode(b64, strlen(b64), &len) : NULL;
		if (!data)
			return hutch_err_setx(err, EINVAL, "upload needs a tar in 'data_base64'"),
			       NULL;
		rc = hutch_session_tar_in(root, path, data, len, err);
		free(data);
	} else if (strcmp(action, "download") == 0) { /* a tar of path */
		struct hutch_buf b = HUTCH_BUF_INIT;
		int got = hutch_session_tar_out(root, path, &b, err);
		return bytes_reply(got, path, "tar_base64", &b);
	} else if (strcmp(action, "mkdir") == 0) {
		rc = hutch_files_mkdir(root, path, &own, err);
	} else if (strcmp(action, "remove") == 0) {
		rc = hutch_files_remove(root, path, json_is_true(json_object_get(req, "recursive")),
					err);
	} else if (strcmp(action, "move") == 0) {
		if (!to)
			return hutch_err_setx(err, EINVAL, "move needs field 'to'"), NULL;
		rc = hutch_files_move(root, path, to, false, err);
	} else {
		hutch_err_setx(err, EINVAL,
			       "action '%s': expected write, read, list, stat, mkdir, remove, "
			       "move, upload or download",
			       action);
	}
	return rc == 0 ? ok_json(json_pack("{s:b}", "ok", 1)) : NULL;
}

/* session.net: a new allowlist for a live session (its proxy keeps
 * running; open connections stay). "none" denies everything from now on. */
static char *op_net(struct hutch_session *s, json_t *req, struct hutch_err *err)
{
	static const char *const keys[] = {"op", "id", "network", NULL};
	struct hutch_net_policy policy;
	const char *net;

	if (check_keys(req, keys, err) < 0 || need_str(req, "network", &net, err) < 0 ||
	    hutch_net_policy_parse(net, &policy, err) < 0)
		return NULL;
	struct hutch_net_policy now;
	if (hutch_session_net_policy(s, &now, err) < 0)
		return NULL;
	if ((now.mode == HUTCH_NET_FULL) != (policy.mode == HUTCH_NET_FULL))
		return hutch_err_setx(err, ENOTSUP,
				      "network 'full' is chosen when the session is made (its "
				      "network stack is set up then); a session can switch between "
				      "none and allow: only"),
		       NULL;
	if (policy.mode == HUTCH_NET_FULL)
		return ok_json(json_pack("{s:s}", "network", net));
	if (!s->proxy && policy.mode == HUTCH_NET_ALLOW)
		return hutch_err_setx(err, ENOTSUP,
				      "this session was created with net none: it has no proxy to "
				      "allow through (create it with --net allow:...)"),
		       NULL;
	if (s->watch)
		hutch_netwatch_set_policy(s->watch, &policy);
	if (s->proxy) {
		policy.mode = HUTCH_NET_ALLOW; /* none: an empty allowlist */
		hutch_proxy_set_policy(s->proxy, &policy);
	}
	free(s->conf.net);
	s->conf.net = hutch_xstrdup(net);
	if (hutch_session_save_meta(s, err) < 0)
		return NULL;
	return ok_json(json_pack("{s:s}", "network", net));
}

static char *op_pause(struct hutch_session *s, bool pause, struct hutch_err *err)
{
	uint64_t t0 = hutch_now_us();

	if (pause && s->state == SESSION_RUNNING) {
		if (!s->cg.version)
			return hutch_err_setx(err, ENOTSUP,
					      "pause needs a cgroup freezer, and this session has "
					      "no cgroup (%s)",
					      s->cg_note),
			       NULL;
		if (hutch_cgroup_freeze(&s->cg, true, err) < 0)
			return NULL;
		s->state = SESSION_PAUSED;
	} else if (!pause && hutch_kernel_ensure(s, err) < 0) {
		return NULL;
	}
	json_t *info = hutch_session_info(s);
	return ok_json(json_pack("{s:o,s:I}", "session", info, "took_us",
				 (json_int_t)(hutch_now_us() - t0)));
}

static char *op_snapshot(struct hutch_sessions *m, struct hutch_session *s, json_t *req,
			 struct hutch_err *err)
{
	static const char *const keys[] = {"op", "id", "name", NULL};
	const char *name;

	if (check_keys(req, keys, err) < 0 || need_str(req, "name", &name, err) < 0)
		return NULL;
	json_t *meta = hutch_session_snapshot(m, s, name, err);
	if (!meta)
		return NULL;
	json_object_del(meta, "request");
	return ok_json(json_pack("{s:o}", "snapshot", meta));
}

/* snapshot.restore | snapshot.list | snapshot.delete */
static char *on_snapshot(struct hutch_sessions *m, const char *op, json_t *req,
			 struct hutch_err *err)
{
	static const char *const keys[] = {"op", "name", "idle_timeout_ms", "ttl_ms", NULL};
	uint64_t idle = 0;
	uint64_t ttl = 0;
	const char *name;

	if (strcmp(op, "snapshot.list") == 0)
		return ok_json(json_pack("{s:o}", "snapshots", hutch_snapshot_list(m)));
	if (check_keys(req, keys, err) < 0 || need_str(req, "name", &name, err) < 0 ||
	    get_ms(req, "idle_timeout_ms", &idle, err) < 0 || get_ms(req, "ttl_ms", &ttl, err) < 0)
		return NULL;
	if (strcmp(op, "snapshot.delete") == 0)
		return hutch_snapshot_delete(m, name, err) == 0
			       ? ok_json(json_pack("{s:b}", "ok", 1))
			       : NULL;
	if (strcmp(op, "snapshot.restore") != 0)
		return hutch_err_setx(err, EINVAL, "unknown op '%s'", op), NULL;
	struct hutch_session *s = hutch_snapshot_restore(m, name, idle, ttl, err);
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	json_t *info = hutch_session_info(s);
	pthread_mutex_unlock(&s->lock);
	hutch_session_put(m, s);
	return ok_json(json_pack("{s:o,s:s}", "session", info, "note",
				 "files restored; the kernel is fresh (snapshots hold no process "
				 "memory)"));
}

static int signal_number(json_t *v, struct hutch_err *err)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"INT", SIGINT},	{"TERM", SIGTERM},  {"KILL", SIGKILL}, {"HUP", SIGHUP},
		     {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},  {"USR2", SIGUSR2}, {"STOP", SIGSTOP},
		     {"CONT", SIGCONT}, {"WINCH", SIGWINCH}};
	const char *s = json_string_value(v);

	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 65)
		return (int)json_integer_value(v);
	if (s && strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].sig;
	return hutch_err_setx(err, EINVAL,
			      "field 'signal': a signal name (INT, TERM, KILL...) "
			      "or number"),
	       -1;
}

/* session.command: poll | wait | attach | signal | stdin | resize */
static char *op_command(struct hutch_session_cmd *c, json_t *req,
			const struct hutch_run_hooks *hooks, struct hutch_err *err)
{
	static const char *const keys[] = {
		"op",	      "id",	"command_id",  "action", "stdout_offset", "stderr_offset",
		"timeout_ms", "signal", "data_base64", "close",	 "rows",	  "cols",
		NULL};
	uint64_t off_out = 0;
	uint64_t off_err = 0;
	uint64_t timeout = 30000;
	uint64_t rows = 0;
	uint64_t cols = 0;
	const char *action;
	const char *b64 = NULL;

	if (check_keys(req, keys, err) < 0 || need_str(req, "action", &action, err) < 0 ||
	    get_ms(req, "stdout_offset", &off_out, err) < 0 ||
	    get_ms(req, "stderr_offset", &off_err, err) < 0 ||
	    get_ms(req, "timeout_ms", &timeout, err) < 0 || get_ms(req, "rows", &rows, err) < 0 ||
	    get_ms(req, "cols", &cols, err) < 0 || opt_str(req, "data_base64", &b64, err) < 0)
		return NULL;
	if (strcmp(action, "poll") == 0)
		return ok_json(hutch_cmd_poll(c, off_out, off_err));
	if (strcmp(action, "wait") == 0 || strcmp(action, "attach") == 0)
		return ok_json(hutch_cmd_wait(c, timeout, off_out, off_err,
					      action[0] == 'a' ? hooks : NULL));
	if (strcmp(action, "signal") == 0) {
		int sig = signal_number(json_object_get(req, "signal"), err);
		return sig > 0 && hutch_cmd_signal(c, sig, err) == 0
			       ? ok_json(json_pack("{s:b}", "ok", 1))
			       : NULL;
	}
	if (strcmp(action, "stdin") == 0) {
		size_t len = 0;
		size_t written = 0;
		unsigned char *data = b64 ? hutch_base64_decode(b64, strlen(b64), &len) : NULL;
		if (b64 && !data)
			return hutch_err_setx(err, EINVAL, "field 'data_base64' is not base64"),
			       NULL;
		int rc = hutch_cmd_stdin(c, data, len, json_is_true(json_object_get(req, "close")),
					 &written, err);
		free(data);
		return rc == 0 ? ok_json(json_pack("{s:I}", "written", (json_int_t)written)) : NULL;
	}
	if (strcmp(action, "resize") == 0)
		return hutch_cmd_resize(c, (unsigned)rows, (unsigned)cols, err) == 0
			       ? ok_json(json_pack("{s:b}", "ok", 1))
			       : NULL;
	return hutch_err_setx(err, EINVAL,
			      "action '%s': expected poll, wait, attach, signal, stdin or resize",
			      action),
	       NULL;
}

static char *on_session(struct hutch_sessions *m, const char *op, json_t *req,
			const struct hutch_run_hooks *hooks, struct hutch_err *err)
{
	static const char *const id_only[] = {"op", "id", NULL};
	const char *id;
	char *out = NULL;

	if (need_str(req, "id", &id, err) < 0)
		return NULL;
	struct hutch_session *s = hutch_session_get(m, id, err);
	if (!s)
		return NULL;
	if (strcmp(op, "session.kill") == 0) {
		hutch_session_put(m, s);
		if (check_keys(req, id_only, err) < 0 || hutch_session_kill(m, id, err) < 0)
			return NULL;
		return ok_json(json_pack("{s:b}", "ok", 1));
	}
	if (strcmp(op, "session.command") == 0) {
		/* the session lock only to find it: waiting on a command must not
		 * block the session; our reference keeps the command alive */
		const char *cid;
		struct hutch_session_cmd *c = NULL;
		if (need_str(req, "command_id", &cid, err) == 0) {
			pthread_mutex_lock(&s->lock);
			c = hutch_cmd_find(s, cid);
			pthread_mutex_unlock(&s->lock);
			if (!c)
				hutch_err_setx(err, ENOENT, "no command '%s' in session %s", cid,
					       s->id);
		}
		out = c ? op_command(c, req, hooks, err) : NULL;
		hutch_session_put(m, s);
		return out;
	}
	pthread_mutex_lock(&s->lock);
	if (strcmp(op, "session.exec") == 0)
		out = op_exec(s, req, hooks, err);
	else if (strcmp(op, "session.sh") == 0)
		out = op_sh(s, req, hooks, err);
	else if (strcmp(op, "session.files") == 0)
		out = op_files(s, req, err);
	else if (strcmp(op, "session.snapshot") != 0 && strcmp(op, "session.net") != 0 &&
		 check_keys(req, id_only, err) < 0)
		out = NULL;
	else if (strcmp(op, "session.net") == 0)
		out = op_net(s, req, err);
	else if (strcmp(op, "session.commands") == 0)
		out = ok_json(json_pack("{s:o}", "commands", hutch_cmd_list(s)));
	else if (strcmp(op, "session.info") == 0)
		out = ok_json(json_pack("{s:o}", "session", hutch_session_info(s)));
	else if (strcmp(op, "session.pause") == 0 || strcmp(op, "session.resume") == 0)
		out = op_pause(s, op[8] == 'p', err);
	else if (strcmp(op, "session.snapshot") == 0)
		out = op_snapshot(m, s, req, err);
	else if (strcmp(op, "session.reset") == 0)
		out = hutch_kernel_ensure(s, err) == 0 && hutch_kernel_reset(s, err) == 0
			      ? ok_json(json_pack("{s:b}", "ok", 1))
			      : NULL;
	else
		hutch_err_setx(err, EINVAL, "unknown op '%s'", op);
	if (strcmp(op, "session.exec") == 0 || strcmp(op, "session.sh") == 0)
		s->calls++;
	s->last_used_ms = hutch_now_us() / 1000;
	pthread_mutex_unlock(&s->lock);
	hutch_session_put(m, s);
	return out;
}

char *hutch_session_call(struct hutch_sessions *m, const char *json, size_t len,
			 const struct hutch_run_hooks *hooks)
{
	struct hutch_err err = {0, ""};
	json_error_t jerr;
	json_t *req = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	const char *op = NULL;
	char *out = NULL;

	if (!json_is_object(req)) {
		if (req)
			hutch_err_setx(&err, EINVAL, "a session request is a JSON object");
		else
			hutch_err_setx(&err, EINVAL, "malformed JSON at line %d column %d: %s",
				       jerr.line, jerr.column, jerr.text);
	} else if (need_str(req, "op", &op, &err) == 0) {
		if (strcmp(op, "session.new") == 0)
			out = op_new(m, req, &err);
		else if (strcmp(op, "session.list") == 0)
			out = ok_json(json_pack("{s:o}", "sessions", hutch_session_list(m)));
		else if (strncmp(op, "snapshot.", 9) == 0)
			out = on_snapshot(m, op, req, &err);
		else if (strncmp(op, "session.", 8) == 0)
			out = on_session(m, op, req, hooks, &err);
		else
			hutch_err_setx(&err, EINVAL, "unknown op '%s'", op);
	}
	json_decref(req);
	return out ? out : error_json(&err);
}

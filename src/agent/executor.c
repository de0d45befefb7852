#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "api/client.h"
#include "api/sockpath.h"
#include "hutch.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/text.h"

/*
 * The executor: a client of the session operations (docs/sessions.md), the
 * daemon's when one answers (frames J, as `hutch session` does), else the
 * same operations in this process. One bash session per pipeline runs every
 * attempt: files written with session.files, the install step under
 * allow: the language's registry with its own timeout, then session.net
 * none, then the run step. A session made under none has no proxy and
 * cannot switch to allow:, so an artifact that needs an install after one
 * that did not gets a fresh session.
 */

#define FILE_MAX (64u << 20)

struct agent_exec {
	bool is_daemon;
	char sock[512];
	struct hutch_sessions *sessions;
	char pipeline[40];
	char session[64];
	bool has_proxy;
	json_t *policies;
	char own_dir[600]; /* in-process: this pipeline's own state directory */
	bool borrowed;	   /* sessions is the caller's (hutch serve's) */
};

static const char *registry(const char *language)
{
	return strcmp(language, "python") == 0 ? "allow:pypi.org,files.pythonhosted.org"
					       : "allow:registry.npmjs.org";
}

struct agent_exec *agent_exec_open(const struct agent_options *opt, const char *pipeline_id,
				   struct hutch_err *err)
{
	struct agent_exec *x = hutch_xcalloc(1, sizeof(*x));
	const char *state_dir = opt->state_dir;
	char dir[512];
	int fd;

	snprintf(x->pipeline, sizeof(x->pipeline), "%s", pipeline_id);
	x->policies = json_object();
	if (opt->sessions) { /* inside hutch serve: its own manager */
		x->sessions = opt->sessions;
		x->borrowed = true;
		return x;
	}
	hutch_socket_path(NULL, x->sock, sizeof(x->sock));
	fd = hutch_client_connect(x->sock);
	if (fd >= 0) {
		close(fd);
		x->is_daemon = true;
		return x;
	}
	/* a state directory of its own: hutch_sessions_open adopts every
	 * session it finds, and another pipeline's (or the user's) are not
	 * this one's to manage */
	hutch_state_dir(state_dir, dir, sizeof(dir));
	(void)mkdir(dir, 0700);
	snprintf(x->own_dir, sizeof(x->own_dir), "%s/agent", dir);
	(void)mkdir(x->own_dir, 0700);
	snprintf(x->own_dir, sizeof(x->own_dir), "%s/agent/run-%s", dir, pipeline_id);
	x->sessions = hutch_sessions_open(x->own_dir, err);
	if (!x->sessions) {
		json_decref(x->policies);
		free(x);
		return NULL;
	}
	return x;
}

const char *agent_exec_mode(const struct agent_exec *x)
{
	return x->is_daemon ? "daemon" : x->borrowed ? "service" : "in-process";
}

/* One operation: req is consumed; the reply, or NULL with err (also for a
 * refusal, whose message lands in err). */
static json_t *call(struct agent_exec *x, json_t *req, struct hutch_err *err)
{
	char *text = json_dumps(req, JSON_COMPACT);
	char *reply = NULL;
	json_t *o;

	json_decref(req);
	if (x->is_daemon) {
		int fd = hutch_client_connect(x->sock);
		if (fd < 0)
			hutch_err_set(err, errno, "no daemon at '%s' any more", x->sock);
		else
			reply = hutch_client_session(fd, text, NULL, err);
		if (fd >= 0)
			close(fd);
	} else {
		reply = hutch_session_call(x->sessions, text, strlen(text), NULL);
	}
	free(text);
	if (!reply)
		return NULL;
	o = json_loads(reply, 0, NULL);
	free(reply);
	if (!o)
		return hutch_err_setx(err, EPROTO, "the session reply is not JSON"), NULL;
	json_t *e = json_object_get(o, "error");
	if (json_is_object(e) && !json_object_get(o, "status")) {
		hutch_err_setx(err, EIO, "%s", agent_jstr(e, "message") ?: "refused");
		json_decref(o);
		return NULL;
	}
	return o;
}

static int call_ok(struct agent_exec *x, json_t *req, struct hutch_err *err)
{
	json_t *r = call(x, req, err);

	json_decref(r);
	return r ? 0 : -1;
}

static void kill_session(struct agent_exec *x)
{
	struct hutch_err err;

	if (!x->session[0])
		return;
	(void)call_ok(x, json_pack("{s:s, s:s}", "op", "session.kill", "id", x->session), &err);
	x->session[0] = '\0';
}

void agent_exec_close(struct agent_exec *x)
{
	if (!x)
		return;
	kill_session(x);
	if (!x->borrowed)
		hutch_sessions_close(x->sessions);
	if (x->own_dir[0]) {
		char sub[620];
		snprintf(sub, sizeof(sub), "%s/sessions", x->own_dir);
		(void)rmdir(sub);
		(void)rmdir(x->own_dir);
	}
	json_decref(x->policies);
	free(x);
}

static int write_file(struct agent_exec *x, const char *name, const void *data, size_t len,
		      struct hutch_err *err)
{
	char *b64 = hutch_base64_encode(data, len);
	json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "session.files", "id",
				x->session, "action", "write", "path", name, "data_base64", b64);

	free(b64);
	return call_ok(x, req, err);
}

/* The user's --file arguments, by their base names. */
static int place_files(struct agent_exec *x, const struct agent_options *opt, struct hutch_err *err)
{
	for (int i = 0; i < opt->nfiles; i++) {
		struct hutch_buf b = HUTCH_BUF_INIT;
		char chunk[8192];
		size_t n;
		FILE *f = fopen(opt->files[i], "re");
		const char *base = strrchr(opt->files[i], '/');

		if (!f)
			return hutch_err_set(err, errno, "open '%s'", opt->files[i]);
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= FILE_MAX)
			hutch_buf_append(&b, chunk, n);
		fclose(f);
		if (b.len > FILE_MAX) {
			hutch_buf_release(&b);
			return hutch_err_setx(err, EFBIG, "'%s' is over 64 MiB", opt->files[i]);
		}
		int rc = write_file(x, base ? base + 1 : opt->files[i], b.data ?: "", b.len, err);
		hutch_buf_release(&b);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int new_session(struct agent_exec *x, const struct agent_options *opt, const char *network,
		       struct hutch_err *err)
{
	json_t *req =
		json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:{s:I}}", "op", "session.new", "language",
			  "bash", "network", network, "labels", "agent_pipeline", x->pipeline,
			  "role", "executor", "limits", "memory_bytes", (json_int_t)(512 << 20));
	json_t *r;

	kill_session(x);
	r = call(x, req, err);
	if (!r)
		return hutch_err_prefix(err, "session for the executor");
	snprintf(x->session, sizeof(x->session), "%s",
		 agent_jstr(json_object_get(r, "session"), "id") ?: "");
	json_decref(r);
	x->has_proxy = strncmp(network, "allow:", 6) == 0;
	json_object_set_new(x->policies, "session", json_string(x->session));
	return place_files(x, opt, err);
}

static json_t *sh(struct agent_exec *x, const char *command, uint64_t timeout_ms,
		  struct hutch_err *err)
{
	return call(x,
		    json_pack("{s:s, s:s, s:s, s:I}", "op", "session.sh", "id", x->session,
			      "command", command, "timeout_ms", (json_int_t)timeout_ms),
		    err);
}

static int set_net(struct agent_exec *x, const char *policy, const char *phase,
		   struct hutch_err *err)
{
	json_object_set_new(x->policies, phase, json_string(policy));
	if (!x->has_proxy)
		return 0; /* made under none: it already is */
	return call_ok(x,
		       json_pack("{s:s, s:s, s:s}", "op", "session.net", "id", x->session,
				 "network", policy),
		       err);
}

int agent_exec_artifact(struct agent_exec *x, const struct agent_options *opt,
			const struct agent_plan *plan, const struct agent_artifact *a,
			json_t **install, json_t **run, struct hutch_err *err)
{
	const char *reg = registry(plan->language);

	*install = NULL;
	*run = NULL;
	json_object_clear(x->policies);
	if (!x->session[0] || (a->install_command && !x->has_proxy)) {
		if (new_session(x, opt, a->install_command ? reg : "none", err) < 0)
			return -1;
	}
	json_object_set_new(x->policies, "session", json_string(x->session));
	if (write_file(x, a->filename, a->code, strlen(a->code), err) < 0)
		return -1;
	if (a->install_command) {
		if (set_net(x, reg, "install", err) < 0)
			return -1;
		*install = sh(x, a->install_command, opt->install_timeout_ms, err);
		if (!*install)
			return -1;
		if (strcmp(agent_jstr(*install, "status") ?: "", "ok") != 0)
			return 0; /* the debugger reads why; running would only fail */
	}
	/* the run step never has network: what it needs was installed above */
	if (set_net(x, "none", "run", err) < 0)
		return -1;
	*run = sh(x, a->run_command, opt->run_timeout_ms, err);
	return *run ? 0 : -1;
}

json_t *agent_exec_policies(const struct agent_exec *x)
{
	return json_deep_copy(x->policies);
}

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/lang.h"
#include "run/netpolicy.h"
#include "run/path.h"
#include "util/err.h"
#include "util/mem.h"

/* Defaults that need no memory: NULL template_name and net mean "host"
 * and "none", so a released request holds no allocation. */
static void set_defaults(struct hutch_exec_request *req)
{
	memset(req, 0, sizeof(*req));
	req->limits.wall_ms = HUTCH_DEFAULT_WALL_MS;
	req->limits.memory_bytes = HUTCH_DEFAULT_MEMORY;
	req->limits.pids = HUTCH_DEFAULT_PIDS;
	req->limits.output_bytes = HUTCH_DEFAULT_OUTPUT;
	req->limits.file_bytes = HUTCH_DEFAULT_FILE;
	req->limits.disk_bytes = HUTCH_DEFAULT_DISK;
}

void hutch_request_init(struct hutch_exec_request *req)
{
	set_defaults(req);
	req->template_name = hutch_xstrdup("host");
	req->net = hutch_xstrdup("none");
}

static void free_strv(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; n == (size_t)-1 ? v[i] != NULL : i < n; i++)
		free(v[i]);
	free(v);
}

void hutch_request_release(struct hutch_exec_request *req)
{
	free(req->language);
	free_strv(req->argv, (size_t)-1);
	free(req->code);
	free(req->stdin_data);
	for (size_t i = 0; i < req->nfiles; i++) {
		free(req->files[i].path);
		free(req->files[i].data);
	}
	free(req->files);
	free_strv(req->env, req->nenv);
	free_strv(req->labels, req->nlabels);
	free(req->workdir);
	free(req->template_name);
	free(req->net);
	free(req->session_id);
	set_defaults(req);
}

int hutch_request_set_code(struct hutch_exec_request *req, const char *language, const char *code,
			   size_t len)
{
	const struct hutch_lang *lang = hutch_lang_find(language);

	if (!lang) {
		errno = EINVAL;
		return -1;
	}
	free(req->language);
	free(req->code);
	req->language = hutch_xstrdup(lang->name);
	req->code = hutch_xstrndup(code, len);
	req->code_len = len;
	return 0;
}

void hutch_request_set_argv(struct hutch_exec_request *req, char *const *argv)
{
	size_t n = 0;

	free_strv(req->argv, (size_t)-1);
	while (argv[n])
		n++;
	req->argv = hutch_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		req->argv[i] = hutch_xstrdup(argv[i]);
}

static bool is_env_name(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

int hutch_request_add_env(struct hutch_exec_request *req, const char *name_value,
			  struct hutch_err *err)
{
	const char *eq = strchr(name_value, '=');

	if (!eq || !is_env_name(name_value, (size_t)(eq - name_value)))
		return hutch_err_setx(
			err, EINVAL,
			"environment entry '%.64s' is not NAME=value with a valid name",
			name_value);
	req->env = hutch_xrealloc(req->env, (req->nenv + 1) * sizeof(char *));
	req->env[req->nenv++] = hutch_xstrdup(name_value);
	return 0;
}

void hutch_request_add_file(struct hutch_exec_request *req, const char *path, const void *data,
			    size_t len, unsigned int mode)
{
	struct hutch_file *f;

	req->files = hutch_xrealloc(req->files, (req->nfiles + 1) * sizeof(*req->files));
	f = &req->files[req->nfiles++];
	f->path = hutch_xstrdup(path);
	f->data = hutch_xmemdup(data, len);
	f->len = len;
	f->mode = mode;
}

struct bound {
	const char *name;
	uint64_t value;
	uint64_t min;
	uint64_t max;
};

static int validate_limits(const struct hutch_limits *l, struct hutch_err *err)
{
	const struct bound bounds[] = {
		{"wall_ms", l->wall_ms, 1, 24ull * 3600 * 1000},
		{"cpu_ms", l->cpu_ms, 0, 24ull * 3600 * 1000},
		{"memory_bytes", l->memory_bytes, 4ull << 20, 1ull << 44},
		{"pids", l->pids, 1, 1u << 22},
		{"output_bytes", l->output_bytes, 1, 1ull << 30},
		{"file_bytes", l->file_bytes, 0, 1ull << 44},
		/* tmpfs treats size=0 as "unlimited": never let 0 through */
		{"disk_bytes", l->disk_bytes, 64ull << 10, 1ull << 44},
		{"idle_output_ms", l->idle_output_ms, 0, 24ull * 3600 * 1000},
		{"net_connections", l->net_connections, 0, 65536},
		{"net_bytes_out", l->net_bytes_out, 0, 1ull << 44},
		{"net_bytes_in", l->net_bytes_in, 0, 1ull << 44},
	};

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		if (bounds[i].value < bounds[i].min || bounds[i].value > bounds[i].max)
			return hutch_err_setx(err, EINVAL,
					      "limits.%s: %llu is outside [%llu, %llu]",
					      bounds[i].name, (unsigned long long)bounds[i].value,
					      (unsigned long long)bounds[i].min,
					      (unsigned long long)bounds[i].max);
	}
	/* the kernel refuses CPU quotas under 1 ms per 100 ms period */
	if (!(l->cpus == 0 || (l->cpus >= 0.01 && l->cpus <= 1024)))
		return hutch_err_setx(err, EINVAL, "limits.cpus: %g is not 0 or in [0.01, 1024]",
				      l->cpus);
	return 0;
}

struct placed {
	char *path; /* normalised */
	size_t index;
};

static int by_path(const void *x, const void *y)
{
	const struct placed *a = x;
	const struct placed *b = y;
	int c = strcmp(a->path, b->path);

	return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* Sorted, a clash is between neighbours: the same path twice, or a path
 * that is a file and also the directory of the next one ("a", "a/b").
 * O(n log n): requests may carry thousands of files. */
static int check_clashes(struct placed *v, size_t n, struct hutch_err *err)
{
	qsort(v, n, sizeof(*v), by_path);
	for (size_t i = 1; i < n; i++) {
		size_t len = strlen(v[i - 1].path);
		if (strcmp(v[i - 1].path, v[i].path) == 0)
			return hutch_err_setx(err, EINVAL, "files[%zu]: '%s' given twice",
					      v[i].index, v[i].path);
		if (strncmp(v[i - 1].path, v[i].path, len) == 0 && v[i].path[len] == '/')
			return hutch_err_setx(err, EINVAL,
					      "files[%zu]: '%s' is a file, so files[%zu] cannot be "
					      "inside it",
					      v[i - 1].index, v[i - 1].path, v[i].index);
	}
	return 0;
}

static int validate_files(const struct hutch_exec_request *req, const char *code_path,
			  struct hutch_err *err)
{
	char a[1100];
	uint64_t total = req->code_len;
	struct placed *v = hutch_xcalloc(req->nfiles + 1, sizeof(*v));
	size_t n = 0;
	int rc = -1;

	for (size_t i = 0; i < req->nfiles; i++) {
		if (hutch_sandbox_path(req->files[i].path, a, sizeof(a), 0, err) < 0) {
			hutch_err_prefix(err, "files[%zu]", i);
			goto out;
		}
		if (req->files[i].mode > 07777) {
			hutch_err_setx(err, EINVAL, "files[%zu]: mode %o is not a permission mode",
				       i, req->files[i].mode);
			goto out;
		}
		if (code_path && strcmp(a, code_path) == 0) {
			hutch_err_setx(err, EINVAL, "files[%zu]: '%s' is where the code goes", i,
				       a);
			goto out;
		}
		v[n].path = hutch_xstrdup(a);
		v[n++].index = i;
		total += req->files[i].len;
	}
	if (code_path) {
		v[n].path = hutch_xstrdup(code_path);
		v[n++].index = req->nfiles; /* the code file */
	}
	if (check_clashes(v, n, err) < 0)
		goto out;
	if (total > req->limits.disk_bytes) {
		hutch_err_setx(err, ENOSPC, "files need %llu bytes but limits.disk_bytes is %llu",
			       (unsigned long long)total,
			       (unsigned long long)req->limits.disk_bytes);
		goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return rc;
}

int hutch_request_validate(const struct hutch_exec_request *req, struct hutch_err *err)
{
	char code_path[1100] = "";
	char tmp[1100];

	if (req->language) {
		const struct hutch_lang *lang = hutch_lang_find(req->language);
		if (!lang)
			return hutch_err_setx(err, EINVAL, "language '%s' is not one of: %s",
					      req->language, hutch_lang_list());
		if (!req->code && !req->argv)
			return hutch_err_setx(err, EINVAL, "language '%s' needs code",
					      req->language);
		snprintf(code_path, sizeof(code_path), "%s/%s", HUTCH_WORKSPACE, lang->file);
	} else if (!req->argv || !req->argv[0] || !req->argv[0][0]) {
		return hutch_err_setx(
			err, EINVAL,
			"nothing to run: give a command (argv) or a language and code");
	}
	if (req->code && !req->language)
		return hutch_err_setx(err, EINVAL, "code given without a language");
	for (size_t i = 0; i < req->nenv; i++) {
		const char *eq = strchr(req->env[i], '=');
		if (!eq || !is_env_name(req->env[i], (size_t)(eq - req->env[i])))
			return hutch_err_setx(err, EINVAL, "env: '%.64s' is not NAME=value",
					      req->env[i]);
	}
	if (req->workdir && hutch_sandbox_path(req->workdir, tmp, sizeof(tmp), 1, err) < 0)
		return hutch_err_prefix(err, "workdir");
	if (req->template_name && strcmp(req->template_name, "host") != 0)
		return hutch_err_setx(err, EINVAL, "template '%s' does not exist (known: host)",
				      req->template_name);
	struct hutch_net_policy policy;
	if (hutch_net_policy_parse(req->net, &policy, err) < 0)
		return -1;
	if (req->net_allow_private && policy.mode != HUTCH_NET_FULL)
		return hutch_err_setx(err, EINVAL,
				      "network_allow_private applies only to network 'full'");
	if (req->stdin_len > HUTCH_MAX_STDIN)
		return hutch_err_setx(err, EFBIG, "stdin is %zu bytes; the limit is %llu",
				      req->stdin_len, (unsigned long long)HUTCH_MAX_STDIN);
	if (validate_limits(&req->limits, err) < 0)
		return -1;
	return validate_files(req, code_path[0] ? code_path : NULL, err);
}

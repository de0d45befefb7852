#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/coder.h"
#include "util/mem.h"

/*
 * The heuristic coder: plan -> CodeArtifact from a template per shape and
 * language. The coder sees the plan, never the raw task. The artifact's
 * variant holds the switches the debugger may flip (use_dep: use the
 * third-party module the task named; memo: memoise a recursion), so a retry
 * regenerates different code instead of patching text blindly.
 */

#define RUN_FILE_MAX (1u << 20)

char *coder_param_lit(const struct coder_in *in, const char *key)
{
	json_t *v = json_object_get(in->plan->params, key);
	char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;

	return s ? s : hutch_xstrdup("null");
}

long coder_param_int(const struct coder_in *in, const char *key)
{
	return (long)json_integer_value(json_object_get(in->plan->params, key));
}

bool coder_param_bool(const struct coder_in *in, const char *key)
{
	return json_is_true(json_object_get(in->plan->params, key));
}

const char *coder_param_str(const struct coder_in *in, const char *key)
{
	return json_string_value(json_object_get(in->plan->params, key)) ?: "";
}

bool coder_use_dep(const struct coder_in *in, const char *module)
{
	json_t *e;
	size_t i;

	if (json_is_false(json_object_get(in->variant, "use_dep")))
		return false;
	json_array_foreach(in->plan->dependencies, i, e)
	{
		if (strcmp(json_string_value(e), module) == 0) {
			json_array_append_new(in->used, json_string(module));
			return true;
		}
	}
	return false;
}

/* Install only what the code imports and the sandbox lacks: the check
 * first, so an installed module costs no network at all. */
static char *install_command(const char *language, const json_t *used)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	json_t *e;
	size_t i;

	if (json_array_size(used) == 0)
		return NULL;
	json_array_foreach(used, i, e)
	{
		const char *m = json_string_value(e);
		if (strcmp(language, "python") == 0)
			hutch_buf_printf(
				&b,
				"%spython3 -c 'import %s' 2>/dev/null || python3 -m pip install "
				"--user --break-system-packages --no-input "
				"--disable-pip-version-check --retries 0 --timeout 10 %s",
				i ? " && " : "", m, m);
		else
			hutch_buf_printf(
				&b,
				"%snode -e 'require(\"%s\")' 2>/dev/null || npm install "
				"--no-audit --no-fund --fetch-retries 0 --fetch-timeout 10000 %s",
				i ? " && " : "", m, m);
	}
	return hutch_buf_detach(&b, NULL);
}

static char *read_local(const char *path, struct hutch_err *err)
{
	FILE *f = fopen(path, "re");
	struct hutch_buf b = HUTCH_BUF_INIT;
	char chunk[4096];
	size_t n;

	if (!f)
		return hutch_err_set(err, errno, "open '%s'", path), NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < RUN_FILE_MAX)
		hutch_buf_append(&b, chunk, n);
	fclose(f);
	return hutch_buf_detach(&b, NULL);
}

/* run_file: the user's program as it is. */
static int code_run_file(const struct agent_plan *plan, struct agent_artifact *out,
			 struct hutch_err *err)
{
	const char *name = json_string_value(json_object_get(plan->params, "file"));
	const char *path = json_string_value(json_object_get(plan->params, "path"));

	out->code = path ? read_local(path, err) : NULL;
	if (!out->code)
		return path ? -1 : hutch_err_setx(err, EINVAL, "the plan names no file to run");
	out->filename = hutch_xstrdup(name);
	return 0;
}

int agent_code_template(const struct agent_plan *plan, const json_t *variant,
			struct agent_artifact *out, struct hutch_err *err)
{
	bool py = strcmp(plan->language, "python") == 0;
	const struct coder_shape *t = py ? coder_python_shapes() : coder_js_shapes();
	struct coder_in in = {plan, variant, json_array()};
	struct hutch_buf b = HUTCH_BUF_INIT;

	memset(out, 0, sizeof(*out));
	out->variant = variant ? json_deep_copy(variant) : json_object();
	if (strcmp(plan->shape, "run_file") == 0) {
		if (code_run_file(plan, out, err) < 0)
			goto fail;
	} else {
		while (t->shape && strcmp(t->shape, plan->shape) != 0)
			t++;
		if (!t->shape) {
			hutch_err_setx(err, ENOTSUP, "no %s template for shape '%s'",
				       plan->language, plan->shape);
			goto fail;
		}
		t->write(&b, &in);
		out->code = hutch_buf_detach(&b, NULL);
		out->filename = hutch_xstrdup(py ? "main.py" : "main.js");
	}
	out->run_command = hutch_xasprintf("%s %s", py ? "python3" : "node", out->filename);
	out->install_command = install_command(plan->language, in.used);
	json_decref(in.used);
	return 0;
fail:
	json_decref(in.used);
	agent_artifact_release(out);
	return -1;
}

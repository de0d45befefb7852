#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/mem.h"

/*
 * The agent's messages and their JSON forms (docs/agent.md). The JSON form
 * is the contract: the trace, the history and the LLM's structured output
 * all use it, so from_json is strict about types (an LLM reply is input).
 */

char *agent_strdup_or_null(const char *s)
{
	return s ? hutch_xstrdup(s) : NULL;
}

const char *agent_jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

char *agent_result_stdout(const json_t *run)
{
	const char *s = agent_jstr(run, "stdout");
	size_t n;

	if (!s)
		return hutch_xstrdup("");
	while (*s == '\n' || *s == ' ' || *s == '\r' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 &&
	       (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\t'))
		n--;
	return hutch_xstrndup(s, n);
}

void agent_plan_release(struct agent_plan *p)
{
	free(p->task);
	free(p->shape);
	free(p->expected_output);
	free(p->note);
	json_decref(p->params);
	json_decref(p->dependencies);
	json_decref(p->steps);
	json_decref(p->checks);
	memset(p, 0, sizeof(*p));
}

void agent_artifact_release(struct agent_artifact *a)
{
	free(a->filename);
	free(a->code);
	free(a->install_command);
	free(a->run_command);
	json_decref(a->variant);
	memset(a, 0, sizeof(*a));
}

void agent_diagnosis_release(struct agent_diagnosis *d)
{
	free(d->signature);
	free(d->root_cause);
	free(d->fix);
	free(d->rule);
	memset(d, 0, sizeof(*d));
}

void agent_artifact_copy(struct agent_artifact *dst, const struct agent_artifact *src)
{
	dst->filename = agent_strdup_or_null(src->filename);
	dst->code = agent_strdup_or_null(src->code);
	dst->install_command = agent_strdup_or_null(src->install_command);
	dst->run_command = agent_strdup_or_null(src->run_command);
	dst->variant = src->variant ? json_deep_copy(src->variant) : json_object();
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *copy_or(const json_t *v, json_t *dflt)
{
	if (!v)
		return dflt;
	json_decref(dflt);
	return json_deep_copy(v);
}

json_t *agent_plan_to_json(const struct agent_plan *p)
{
	return json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "task",
			 str_or_null(p->task), "language", p->language, "shape",
			 str_or_null(p->shape), "params", copy_or(p->params, json_object()),
			 "dependencies", copy_or(p->dependencies, json_array()), "steps",
			 copy_or(p->steps, json_array()), "expected_output",
			 str_or_null(p->expected_output), "checks",
			 copy_or(p->checks, json_array()), "note", str_or_null(p->note));
}

json_t *agent_artifact_to_json(const struct agent_artifact *a)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o}", "filename", str_or_null(a->filename), "code",
			 str_or_null(a->code), "install_command", str_or_null(a->install_command),
			 "run_command", str_or_null(a->run_command), "variant",
			 copy_or(a->variant, json_object()));
}

json_t *agent_diagnosis_to_json(const struct agent_diagnosis *d)
{
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:b}", "category", d->category, "signature",
			 str_or_null(d->signature), "root_cause", str_or_null(d->root_cause), "fix",
			 str_or_null(d->fix), "rule", str_or_null(d->rule), "from_history",
			 d->from_history);
}

/* --- from JSON: every field typed, unknown fields ignored --- */

static int get_str(const json_t *o, const char *key, bool required, char **out,
		   struct hutch_err *err)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return hutch_err_setx(err, EINVAL, "field '%s' is missing", key);
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return hutch_err_setx(err, EINVAL, "field '%s' must be a string", key);
	*out = hutch_xstrdup(json_string_value(v));
	return 0;
}

/* An array of strings (absent: empty). */
static int get_strings(const json_t *o, const char *key, json_t **out, struct hutch_err *err)
{
	json_t *v = json_object_get(o, key);
	json_t *e;
	size_t i;

	*out = NULL;
	if (!v || json_is_null(v)) {
		*out = json_array();
		return 0;
	}
	if (!json_is_array(v))
		return hutch_err_setx(err, EINVAL, "field '%s' must be an array", key);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return hutch_err_setx(err, EINVAL, "field '%s' holds a non-string", key);
	}
	*out = json_deep_copy(v);
	return 0;
}

static int get_checks(const json_t *o, json_t **out, struct hutch_err *err)
{
	json_t *v = json_object_get(o, "checks");
	json_t *e;
	size_t i;

	*out = json_array();
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return hutch_err_setx(err, EINVAL, "field 'checks' must be an array");
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(json_object_get(e, "type")))
			return hutch_err_setx(err, EINVAL, "checks[%zu] has no string 'type'", i);
		json_array_append(*out, e);
	}
	return 0;
}

int agent_plan_from_json(struct agent_plan *p, const json_t *o, struct hutch_err *err)
{
	char *lang = NULL;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!json_is_object(o))
		return hutch_err_setx(err, EINVAL, "a plan must be a JSON object");
	rc = get_str(o, "language", true, &lang, err);
	if (rc == 0 && (!lang || (strcmp(lang, "python") != 0 && strcmp(lang, "javascript") != 0)))
		rc = hutch_err_setx(err, EINVAL, "language '%s': python or javascript",
				    lang ? lang : "");
	if (rc == 0)
		snprintf(p->language, sizeof(p->language), "%s", lang ? lang : "");
	free(lang);
	if (rc == 0)
		rc = get_str(o, "expected_output", false, &p->expected_output, err);
	if (rc == 0)
		rc = get_str(o, "note", false, &p->note, err);
	if (rc == 0)
		rc = get_strings(o, "dependencies", &p->dependencies, err);
	if (rc == 0)
		rc = get_strings(o, "steps", &p->steps, err);
	if (rc == 0)
		rc = get_checks(o, &p->checks, err);
	if (rc < 0) {
		agent_plan_release(p);
		return -1;
	}
	p->shape = hutch_xstrdup("llm");
	p->params = json_object();
	return 0;
}

int agent_artifact_from_json(struct agent_artifact *a, const json_t *o, struct hutch_err *err)
{
	int rc;

	memset(a, 0, sizeof(*a));
	if (!json_is_object(o))
		return hutch_err_setx(err, EINVAL, "an artifact must be a JSON object");
	rc = get_str(o, "filename", true, &a->filename, err);
	if (rc == 0)
		rc = get_str(o, "code", true, &a->code, err);
	if (rc == 0)
		rc = get_str(o, "install_command", false, &a->install_command, err);
	if (rc == 0)
		rc = get_str(o, "run_command", true, &a->run_command, err);
	/* the filename lands in the workspace: one plain name, nothing more */
	if (rc == 0 &&
	    (!a->filename || strchr(a->filename, '/') || a->filename[0] == '.' || !a->filename[0]))
		rc = hutch_err_setx(err, EINVAL, "filename '%s' must be a plain file name",
				    a->filename ? a->filename : "");
	if (rc == 0 && a->install_command && !a->install_command[0]) {
		free(a->install_command);
		a->install_command = NULL;
	}
	if (rc < 0) {
		agent_artifact_release(a);
		return -1;
	}
	a->variant = json_object();
	return 0;
}

static const char *const categories[] = {
	"syntax", "import",	  "name",    "type",	"value",   "timeout",
	"oom",	  "wrong_output", "network", "sandbox", "unknown", NULL,
};

int agent_diagnosis_from_json(struct agent_diagnosis *d, const json_t *o, struct hutch_err *err)
{
	const char *cat = agent_jstr(o, "category");
	int rc;

	memset(d, 0, sizeof(*d));
	if (!cat)
		return hutch_err_setx(err, EINVAL, "a diagnosis needs a string 'category'");
	rc = -1;
	for (int i = 0; categories[i]; i++) {
		if (strcmp(cat, categories[i]) == 0)
			rc = 0;
	}
	if (rc < 0)
		return hutch_err_setx(err, EINVAL, "category '%s' is not one of docs/agent.md",
				      cat);
	snprintf(d->category, sizeof(d->category), "%s", cat);
	rc = get_str(o, "root_cause", true, &d->root_cause, err);
	if (rc == 0)
		rc = get_str(o, "fix", false, &d->fix, err);
	if (rc < 0) {
		agent_diagnosis_release(d);
		return -1;
	}
	d->rule = hutch_xstrdup("llm");
	return 0;
}

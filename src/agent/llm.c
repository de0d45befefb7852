#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/parse.h"
#include "util/time.h"

/*
 * LLM mode's client: OpenAI-compatible chat completions over libcurl, with
 * structured output (response_format json_schema), retries with
 * exponential backoff on 429, 5xx, timeouts and unparsable replies, and per
 * call usage (tokens, cached prompt tokens, cost estimate). The API key
 * lives only in this struct and the Authorization header: it is never
 * logged, traced, or passed to a sandbox (sessions get an explicit, empty
 * environment).
 */

#define REPLY_MAX (8u << 20)
#define ROLES	  3

struct agent_llm {
	char base_url[512];
	char *auth; /* "Authorization: Bearer KEY", or NULL */
	char model[ROLES][128];
	double price_in;  /* USD per million prompt tokens */
	double price_out; /* USD per million completion tokens */
	uint64_t timeout_ms;
	uint64_t backoff_ms;
	int retries;
};

static const char *const role_names[ROLES] = {"Planner", "Coder", "Debugger"};
static const char *const role_env[ROLES] = {"HUTCH_LLM_MODEL_PLANNER", "HUTCH_LLM_MODEL_CODER",
					    "HUTCH_LLM_MODEL_DEBUGGER"};

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static uint64_t env_ms(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	struct hutch_err err;
	uint64_t ms;

	if (!v || !*v || hutch_parse_duration_ms(v, &ms, &err) < 0)
		return dflt;
	return ms;
}

static int pick_models(struct agent_llm *l, const struct agent_options *opt, struct hutch_err *err)
{
	const char *all = opt->model ? opt->model : env_or("HUTCH_LLM_MODEL", NULL);

	for (int i = 0; i < ROLES; i++) {
		const char *m = env_or(role_env[i], all);
		if (i == 1 && opt->coder_model)
			m = opt->coder_model;
		if (!m)
			return hutch_err_setx(err, EINVAL,
					      "no model for the %s: set --model or HUTCH_LLM_MODEL "
					      "(or %s)",
					      role_names[i], role_env[i]);
		snprintf(l->model[i], sizeof(l->model[i]), "%s", m);
	}
	return 0;
}

struct agent_llm *agent_llm_open(const struct agent_options *opt, struct hutch_err *err)
{
	struct agent_llm *l = hutch_xcalloc(1, sizeof(*l));
	const char *key = getenv("HUTCH_LLM_API_KEY");

	snprintf(l->base_url, sizeof(l->base_url), "%s",
		 env_or("HUTCH_LLM_BASE_URL", "https://api.openai.com/v1"));
	if (strncmp(l->base_url, "http://", 7) != 0 && strncmp(l->base_url, "https://", 8) != 0) {
		hutch_err_setx(err, EINVAL, "HUTCH_LLM_BASE_URL must be an http(s) URL");
		goto fail;
	}
	if (pick_models(l, opt, err) < 0)
		goto fail;
	if (key && *key)
		l->auth = hutch_xasprintf("Authorization: Bearer %s", key);
	l->price_in = strtod(env_or("HUTCH_LLM_PRICE_IN", "0"), NULL);
	l->price_out = strtod(env_or("HUTCH_LLM_PRICE_OUT", "0"), NULL);
	l->timeout_ms = env_ms("HUTCH_LLM_TIMEOUT", 120000);
	l->backoff_ms = env_ms("HUTCH_LLM_BACKOFF", 1000);
	l->retries = (int)strtol(env_or("HUTCH_LLM_RETRIES", "3"), NULL, 10);
	if (l->retries < 0 || l->retries > 10)
		l->retries = 3;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return l;
fail:
	free(l);
	return NULL;
}

void agent_llm_close(struct agent_llm *l)
{
	if (!l)
		return;
	if (l->auth) {
		/* the key should not outlive its use, even in freed memory */
		explicit_bzero(l->auth, strlen(l->auth));
		free(l->auth);
	}
	free(l);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct hutch_buf *b = ctx;

	if (b->len + size * n > REPLY_MAX)
		return 0; /* curl reports a write error */
	hutch_buf_append(b, p, size * n);
	return size * n;
}

/* One HTTP exchange: the status (0 when the transfer failed, err says why). */
static long post(struct agent_llm *l, const char *body, struct hutch_buf *reply,
		 struct hutch_err *err)
{
	char url[600];
	struct curl_slist *h = NULL;
	CURL *curl = curl_easy_init();
	long status = 0;
	CURLcode rc;

	if (!curl)
		return hutch_err_setx(err, ENOMEM, "curl_easy_init failed"), 0;
	snprintf(url, sizeof(url), "%s/chat/completions", l->base_url);
	h = curl_slist_append(h, "Content-Type: application/json");
	if (l->auth)
		h = curl_slist_append(h, l->auth);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)l->timeout_ms);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	/* the key goes to the endpoint named, never elsewhere by a redirect */
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	rc = curl_easy_perform(curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	else
		hutch_err_setx(err, rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO,
			       "chat completion: %s", curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(curl);
	return status;
}

static json_t *request_body(const char *model, const char *system, const char *user,
			    const char *schema_name, const json_t *schema)
{
	return json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}], s:{s:s, s:{s:s, s:b, s:O}}, s:i}",
			 "model", model, "messages", "role", "system", "content", system, "role",
			 "user", "content", user, "response_format", "type", "json_schema",
			 "json_schema", "name", schema_name, "strict", 1, "schema", schema,
			 "temperature", 0);
}

/* The structured content of a 200 reply, or NULL (err: why, retryable). */
static json_t *parse_reply(const char *text, json_t *usage, struct hutch_err *err)
{
	json_t *o = json_loads(text, 0, NULL);
	json_t *msg = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "message");
	const char *content = agent_jstr(msg, "content");
	json_t *u = json_object_get(o, "usage");
	json_t *out = NULL;

	json_object_set_new(usage, "prompt",
			    json_integer(json_integer_value(json_object_get(u, "prompt_tokens"))));
	json_object_set_new(
		usage, "completion",
		json_integer(json_integer_value(json_object_get(u, "completion_tokens"))));
	json_object_set_new(
		usage, "cached",
		json_integer(json_integer_value(json_object_get(
			json_object_get(u, "prompt_tokens_details"), "cached_tokens"))));
	if (!content)
		hutch_err_setx(err, EPROTO, "the reply has no choices[0].message.content");
	else if (!(out = json_loads(content, 0, NULL)) || !json_is_object(out)) {
		json_decref(out);
		out = NULL;
		hutch_err_setx(err, EPROTO, "the model's content is not a JSON object (%.60s...)",
			       content);
	}
	json_decref(o);
	return out;
}

static void add_cost(const struct agent_llm *l, json_t *usage)
{
	double in = (double)json_integer_value(json_object_get(usage, "prompt"));
	double out = (double)json_integer_value(json_object_get(usage, "completion"));

	json_object_set_new(usage, "cost_usd",
			    json_real((in * l->price_in + out * l->price_out) / 1e6));
}

static void backoff(const struct agent_llm *l, int attempt)
{
	uint64_t ms = l->backoff_ms << (attempt < 6 ? attempt : 6);
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int role_index(const char *role)
{
	for (int i = 0; i < ROLES; i++) {
		if (strcmp(role_names[i], role) == 0)
			return i;
	}
	return 0;
}

const char *agent_llm_model(const struct agent_llm *l, const char *role)
{
	return l->model[role_index(role)];
}

json_t *agent_llm_chat(struct agent_llm *l, const char *role, const char *system, const char *user,
		       const char *schema_name, const json_t *schema, json_t **usage,
		       struct hutch_err *err)
{
	const char *model = l->model[role_index(role)];
	json_t *req = request_body(model, system, user, schema_name, schema);
	char *body = json_dumps(req, JSON_COMPACT);
	uint64_t t0 = hutch_now_us();
	json_t *out = NULL;
	int i;

	json_decref(req);
	*usage = json_pack("{s:s, s:s, s:I, s:I, s:I}", "role", role, "model", model, "prompt",
			   (json_int_t)0, "completion", (json_int_t)0, "cached", (json_int_t)0);
	for (i = 0; i <= l->retries && !out; i++) {
		struct hutch_buf reply = HUTCH_BUF_INIT;
		if (i > 0)
			backoff(l, i - 1);
		long status = post(l, body, &reply, err);
		json_object_set_new(*usage, "http_status", json_integer(status));
		if (status == 200)
			out = parse_reply(reply.data ? reply.data : "", *usage, err);
		else if (status != 0)
			hutch_err_setx(err, status == 429 ? EAGAIN : EIO,
				       "chat completion: HTTP %ld", status);
		hutch_buf_release(&reply);
		/* 4xx other than 429 will not get better by asking again */
		if (status >= 400 && status < 500 && status != 429)
			break;
	}
	free(body);
	json_object_set_new(*usage, "retries", json_integer(i - 1));
	json_object_set_new(*usage, "elapsed_ms",
			    json_integer((json_int_t)((hutch_now_us() - t0) / 1000)));
	add_cost(l, *usage);
	return out;
}

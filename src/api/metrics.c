#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/metrics.h"
#include "api/service.h"
#include "run/pool.h"
#include "util/buf.h"

/*
 * Counters keyed by one label value (a status, a reason, a verdict), and one
 * latency histogram per phase of a run (the result's timings).
 */

#define MAX_LABELS 32
#define NBUCKETS   12
#define NPHASES	   4

struct labeled {
	char value[MAX_LABELS][32];
	uint64_t count[MAX_LABELS];
	size_t n;
};

static const char *const phases[NPHASES] = {"acquire", "setup", "run", "teardown"};
/* seconds: from 100 µs (a warm cell) to a minute (a long build) */
static const double bounds[NBUCKETS] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05,
					0.1,	0.5,	1,     5,     10,   60};

static struct {
	pthread_mutex_t lock;
	struct labeled executions, rejected, egress;
	struct labeled pipelines, categories; /* the agent (POST /v1/agent) */
	uint64_t agent_attempts;
	uint64_t bucket[NPHASES][NBUCKETS];
	uint64_t count[NPHASES];
	double sum[NPHASES];
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void bump(struct labeled *l, const char *value)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->value[i], value) == 0)
			break;
	if (i == l->n) {
		if (l->n == MAX_LABELS)
			return; /* labels come from our own code; a cap keeps it bounded */
		snprintf(l->value[l->n++], 32, "%s", value);
	}
	l->count[i]++;
}

static void observe(int phase, double seconds)
{
	for (int b = 0; b < NBUCKETS; b++)
		if (seconds <= bounds[b])
			reg.bucket[phase][b]++;
	reg.count[phase]++;
	reg.sum[phase] += seconds;
}

void hutch_metrics_result(json_t *result)
{
	const char *status = json_string_value(json_object_get(result, "status"));
	json_t *timings = json_object_get(result, "timings");
	json_t *egress = json_object_get(result, "egress");
	char key[32];

	if (!status)
		return;
	pthread_mutex_lock(&reg.lock);
	bump(&reg.executions, status);
	for (int p = 0; p < NPHASES && timings; p++) {
		snprintf(key, sizeof(key), "%s_us", phases[p]);
		json_t *v = json_object_get(timings, key);
		if (json_is_integer(v))
			observe(p, (double)json_integer_value(v) / 1e6);
	}
	for (size_t i = 0; i < json_array_size(egress); i++) {
		const char *verdict =
			json_string_value(json_object_get(json_array_get(egress, i), "verdict"));
		bump(&reg.egress, verdict ? verdict : "unknown");
	}
	pthread_mutex_unlock(&reg.lock);
}

void hutch_metrics_agent(json_t *trace)
{
	const char *status = json_string_value(json_object_get(trace, "status"));
	json_t *attempts = json_object_get(trace, "attempts");

	if (!status)
		return;
	pthread_mutex_lock(&reg.lock);
	bump(&reg.pipelines, status);
	reg.agent_attempts += json_array_size(attempts);
	for (size_t i = 0; i < json_array_size(attempts); i++) {
		json_t *d = json_object_get(json_array_get(attempts, i), "diagnosis");
		const char *cat = json_string_value(json_object_get(d, "category"));
		if (cat)
			bump(&reg.categories, cat);
	}
	pthread_mutex_unlock(&reg.lock);
}

void hutch_metrics_reject(const char *reason)
{
	pthread_mutex_lock(&reg.lock);
	bump(&reg.rejected, reason);
	pthread_mutex_unlock(&reg.lock);
}

static void counter(struct hutch_buf *b, const char *name, const char *label,
		    const struct labeled *l, const char *help)
{
	hutch_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (size_t i = 0; i < l->n; i++)
		hutch_buf_printf(b, "%s{%s=\"%s\"} %llu\n", name, label, l->value[i],
				 (unsigned long long)l->count[i]);
}

static void histograms(struct hutch_buf *b)
{
	const char *name = "hutch_phase_duration_seconds";

	hutch_buf_printf(b, "# HELP %s time of each phase of an execution\n", name);
	hutch_buf_printf(b, "# TYPE %s histogram\n", name);
	for (int p = 0; p < NPHASES; p++) {
		for (int k = 0; k < NBUCKETS; k++)
			hutch_buf_printf(b, "%s_bucket{phase=\"%s\",le=\"%g\"} %llu\n", name,
					 phases[p], bounds[k],
					 (unsigned long long)reg.bucket[p][k]);
		hutch_buf_printf(b, "%s_bucket{phase=\"%s\",le=\"+Inf\"} %llu\n", name, phases[p],
				 (unsigned long long)reg.count[p]);
		hutch_buf_printf(b, "%s_sum{phase=\"%s\"} %.6f\n", name, phases[p], reg.sum[p]);
		hutch_buf_printf(b, "%s_count{phase=\"%s\"} %llu\n", name, phases[p],
				 (unsigned long long)reg.count[p]);
	}
}

/* Live and paused sessions, counted from session.list now. */
static void sessions(struct hutch_buf *b, struct hutch_service *svc)
{
	static const char list[] = "{\"op\":\"session.list\"}";
	char *reply = svc->sessions
			      ? hutch_session_call(svc->sessions, list, sizeof(list) - 1, NULL)
			      : NULL;
	json_t *o = reply ? json_loads(reply, 0, NULL) : NULL;
	json_t *arr = json_object_get(o, "sessions");
	unsigned running = 0;
	unsigned paused = 0;

	for (size_t i = 0; i < json_array_size(arr); i++) {
		const char *st =
			json_string_value(json_object_get(json_array_get(arr, i), "state"));
		if (st && strcmp(st, "paused") == 0)
			paused++;
		else
			running++;
	}
	hutch_buf_printf(b,
			 "# HELP hutch_sessions sessions by state\n# TYPE hutch_sessions gauge\n"
			 "hutch_sessions{state=\"live\"} %u\nhutch_sessions{state=\"paused\"} "
			 "%u\n",
			 running, paused);
	json_decref(o);
	free(reply);
}

static void pool(struct hutch_buf *b, struct hutch_service *svc)
{
	struct hutch_pool_stats st = {0};

	if (svc->pool)
		hutch_pool_get_stats(svc->pool, &st);
	hutch_buf_printf(
		b,
		"# HELP hutch_pool_cells warm sandboxes of the fast path\n"
		"# TYPE hutch_pool_cells gauge\n"
		"hutch_pool_cells{kind=\"ready\"} %u\nhutch_pool_cells{kind=\"target\"} "
		"%u\nhutch_pool_cells{kind=\"max\"} %u\n"
		"# HELP hutch_pool_served_total cells handed out\n"
		"# TYPE hutch_pool_served_total counter\nhutch_pool_served_total %llu\n"
		"# HELP hutch_pool_misses_total requests that found the pool empty\n"
		"# TYPE hutch_pool_misses_total counter\nhutch_pool_misses_total %llu\n"
		"# HELP hutch_pool_node_cells node cells (a node started ahead in each)\n"
		"# TYPE hutch_pool_node_cells gauge\n"
		"hutch_pool_node_cells{kind=\"ready\"} %u\n"
		"hutch_pool_node_cells{kind=\"target\"} %u\n"
		"# HELP hutch_pool_node_served_total node requests run in a node cell\n"
		"# TYPE hutch_pool_node_served_total counter\n"
		"hutch_pool_node_served_total %llu\n"
		"# HELP hutch_pool_node_misses_total node requests that found no node cell\n"
		"# TYPE hutch_pool_node_misses_total counter\n"
		"hutch_pool_node_misses_total %llu\n",
		st.ready, st.target, st.max, (unsigned long long)st.served,
		(unsigned long long)st.misses, st.node_ready, st.node_target,
		(unsigned long long)st.node_served, (unsigned long long)st.node_misses);
}

char *hutch_metrics_text(struct hutch_service *svc)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	pthread_mutex_lock(&reg.lock);
	counter(&b, "hutch_executions_total", "status", &reg.executions,
		"executions by result status");
	counter(&b, "hutch_http_rejected_total", "reason", &reg.rejected,
		"HTTP requests refused, by reason");
	counter(&b, "hutch_egress_attempts_total", "verdict", &reg.egress,
		"connection attempts through network policies, by verdict");
	counter(&b, "hutch_agent_pipelines_total", "status", &reg.pipelines,
		"agent pipelines by outcome (success rate: success / all)");
	counter(&b, "hutch_agent_errors_total", "category", &reg.categories,
		"agent debugger diagnoses by error category");
	hutch_buf_printf(
		&b,
		"# HELP hutch_agent_attempts_total attempts of every agent pipeline "
		"(attempts per pipeline: this / pipelines)\n"
		"# TYPE hutch_agent_attempts_total counter\nhutch_agent_attempts_total %llu\n",
		(unsigned long long)reg.agent_attempts);
	histograms(&b);
	pthread_mutex_unlock(&reg.lock);
	sessions(&b, svc);
	pool(&b, svc);
	return hutch_buf_detach(&b, NULL);
}

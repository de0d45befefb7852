#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "hutch.h"
#include "util/time.h"

/*
 * Observability: one progress line per step on stderr,
 *   [pipeline ID] [Role] [attempt n/N] message
 * and the pipeline's JSON trace (plan, every artifact, ExecResult,
 * verdict and diagnosis, timings, tokens). Neither ever holds the LLM key:
 * it lives only in llm.c's request headers.
 */

/* On a terminal, a step under way shows as a line the next one replaces. */
static bool pending;

static void emit(const struct agent_ctx *c, const char *role, bool live, const char *fmt,
		 va_list ap) __attribute__((format(printf, 4, 0)));
static void emit(const struct agent_ctx *c, const char *role, bool live, const char *fmt,
		 va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (pending)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "[pipeline %s] [%s] [attempt %d/%d] %s%s", c->id, role, c->attempt,
		c->opt->max_attempts, line, live ? " ..." : "\n");
	pending = live;
}

/* The step as an event for on_step (hutch serve streams it). */
static void step_event(const struct agent_ctx *c, const char *role, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void step_event(const struct agent_ctx *c, const char *role, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	json_t *o =
		json_pack("{s:s,s:s,s:i,s:i,s:s}", "pipeline_id", c->id, "role", role, "attempt",
			  c->attempt, "max_attempts", c->opt->max_attempts, "message", line);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text)
		c->opt->on_step(c->opt->step_ctx, text, strlen(text));
	free(text);
	json_decref(o);
}

void agent_log(const struct agent_ctx *c, const char *role, const char *fmt, ...)
{
	va_list ap;

	if (c->opt->on_step) {
		va_start(ap, fmt);
		step_event(c, role, fmt, ap);
		va_end(ap);
	}
	if (c->opt->quiet)
		return;
	va_start(ap, fmt);
	emit(c, role, false, fmt, ap);
	va_end(ap);
}

void agent_progress(const struct agent_ctx *c, const char *role, const char *fmt, ...)
{
	va_list ap;

	/* plain lines when not a terminal: logs and pipes get results only */
	if (c->opt->quiet || !isatty(STDERR_FILENO))
		return;
	va_start(ap, fmt);
	emit(c, role, true, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

static void iso_now(char *out, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *agent_trace_new(const char *id, const struct agent_options *opt, const char *mode)
{
	char now[32];
	json_t *files = json_array();

	iso_now(now, sizeof(now));
	for (int i = 0; i < opt->nfiles; i++)
		json_array_append_new(files, json_string(opt->files[i]));
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:s, s:o, s:{s:I, s:I}, s:f}",
			 "pipeline_id", id, "task", opt->task, "mode", mode, "started_at", now,
			 "max_attempts", opt->max_attempts, "files", files, "hutch_version",
			 HUTCH_VERSION, "attempts", json_array(), "tokens", "prompt", (json_int_t)0,
			 "completion", (json_int_t)0, "cost_usd", 0.0);
}

/* Add an LLM step's usage to the pipeline's totals. */
static void add_usage(json_t *trace, const json_t *usage)
{
	json_t *tok = json_object_get(trace, "tokens");
	static const char *const keys[] = {"prompt", "completion"};

	for (int i = 0; i < 2; i++) {
		json_int_t have = json_integer_value(json_object_get(tok, keys[i]));
		json_int_t add = json_integer_value(json_object_get(usage, keys[i]));
		json_object_set_new(tok, keys[i], json_integer(have + add));
	}
	json_object_set_new(trace, "cost_usd",
			    json_real(json_real_value(json_object_get(trace, "cost_usd")) +
				      json_number_value(json_object_get(usage, "cost_usd"))));
}

void agent_trace_step(struct agent_ctx *c, const char *role, json_t *step)
{
	json_t *usage;
	size_t i;

	/* each LLM call of the step left its usage in step.llm */
	json_array_foreach(json_object_get(step, "llm"), i, usage)
	{
		add_usage(c->trace, usage);
	}
	if (strcmp(role, "Planner") == 0) {
		json_object_set_new(c->trace, "plan_step", step);
		return;
	}
	json_array_append_new(json_object_get(c->trace, "attempts"), step);
}

void agent_trace_finish(struct agent_ctx *c, const char *status, uint64_t started_us)
{
	json_object_set_new(c->trace, "status", json_string(status));
	json_object_set_new(
		c->trace, "attempts_used",
		json_integer((json_int_t)json_array_size(json_object_get(c->trace, "attempts"))));
	json_object_set_new(c->trace, "total_ms",
			    json_integer((json_int_t)((hutch_now_us() - started_us) / 1000)));
}

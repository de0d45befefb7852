/* Prometheus metrics of `hutch serve` (GET /metrics; docs/http.md). One
 * registry per process: counters are process-wide by nature. Thread-safe. */
#ifndef HUTCH_API_METRICS_H
#define HUTCH_API_METRICS_H

#include <jansson.h>

struct hutch_service;

/* Count one ExecResult (status, phase timings, egress verdicts). */
void hutch_metrics_result(json_t *result);
/* Count one agent pipeline's trace (status, attempts, error categories). */
void hutch_metrics_agent(json_t *trace);
/* Count one refused request; reason is a short word (auth, rate, quota...). */
void hutch_metrics_reject(const char *reason);
/* The exposition text (caller frees); sessions and pool are read now. */
char *hutch_metrics_text(struct hutch_service *svc);

#endif

/* One JSON line per HTTP request on stderr (docs/http.md, "Logs"): ids,
 * route, status, key name, labels, timings and usage. Never user code,
 * stdin, env values or output. */
#ifndef HUTCH_API_REQLOG_H
#define HUTCH_API_REQLOG_H

#include <jansson.h>
#include <stdint.h>

struct hutch_reqlog {
	const char *request_id;
	const char *method;
	const char *route; /* the pattern, not the path */
	int status;
	const char *key;	/* the key's NAME; "" when served without a key */
	const char *session_id; /* or "" */
	json_t *result;		/* an ExecResult or reply to take ids and usage from, or NULL */
	uint64_t started_us;
	const char *error; /* the error code, or NULL */
};

void hutch_reqlog_write(const struct hutch_reqlog *r);

#endif

/* The heuristic coder's template tables (coder_python.c, coder_js.c) and
 * the helpers they share (coder_templates.c). Internal to src/agent/. */
#ifndef HUTCH_AGENT_CODER_H
#define HUTCH_AGENT_CODER_H

#include <stdlib.h>

#include "agent/agent.h"
#include "util/buf.h"

struct coder_in {
	const struct agent_plan *plan;
	const json_t *variant;
	json_t *used; /* the third-party modules the code imports */
};

struct coder_shape {
	const char *shape;
	void (*write)(struct hutch_buf *b, const struct coder_in *in);
};

const struct coder_shape *coder_python_shapes(void);
const struct coder_shape *coder_js_shapes(void);

/* A plan parameter as a JSON literal (valid Python and JavaScript for the
 * strings, numbers and arrays the planner stores); "null" when absent.
 * Caller frees. */
char *coder_param_lit(const struct coder_in *in, const char *key);
long coder_param_int(const struct coder_in *in, const char *key);
bool coder_param_bool(const struct coder_in *in, const char *key);
const char *coder_param_str(const struct coder_in *in, const char *key);
/* The plan names module and the variant has not switched it off. */
bool coder_use_dep(const struct coder_in *in, const char *module);

#endif

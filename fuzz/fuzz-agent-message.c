/* The agent's messages as an LLM returns them (src/agent/messages.c): any
 * bytes that parse as JSON go through the plan, artifact and diagnosis
 * parsers. Accepted messages keep their promises (a known language, a
 * plain file name, a known category) and survive a round trip through
 * their JSON form unchanged; refused ones say EINVAL. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "fuzz.h"

static void round_trip_artifact(const struct agent_artifact *a)
{
	struct agent_artifact b;
	struct hutch_err err;
	json_t *j = agent_artifact_to_json(a);
	json_t *k;

	if (strchr(a->filename, '/') || a->filename[0] == '.' ||
	    agent_artifact_from_json(&b, j, &err) < 0)
		abort();
	k = agent_artifact_to_json(&b);
	if (!json_equal(j, k))
		abort();
	json_decref(j);
	json_decref(k);
	agent_artifact_release(&b);
}

int hutch_fuzz_agent_message(const uint8_t *data, size_t size)
{
	json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	struct agent_plan p;
	struct agent_artifact a;
	struct agent_diagnosis d;
	struct hutch_err err;

	if (!o)
		return 0;
	if (agent_plan_from_json(&p, o, &err) == 0) {
		if (strcmp(p.language, "python") != 0 && strcmp(p.language, "javascript") != 0)
			abort();
		agent_plan_release(&p);
	} else if (err.code != EINVAL || p.shape) {
		abort();
	}
	if (agent_artifact_from_json(&a, o, &err) == 0) {
		round_trip_artifact(&a);
		agent_artifact_release(&a);
	} else if (err.code != EINVAL || a.code) {
		abort();
	}
	if (agent_diagnosis_from_json(&d, o, &err) == 0) {
		json_t *j = agent_diagnosis_to_json(&d);
		if (!json_is_string(json_object_get(j, "category")))
			abort();
		json_decref(j);
		agent_diagnosis_release(&d);
	} else if (err.code != EINVAL || d.root_cause) {
		abort();
	}
	json_decref(o);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_agent_message(d, n);
}
#endif

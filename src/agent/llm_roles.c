#include <errno.h>
#include <string.h>

#include "agent/agent.h"

/* placeholder until LLM mode lands */
struct agent_llm *agent_llm_open(const struct agent_options *opt, struct hutch_err *err)
{
	(void)opt;
	hutch_err_setx(err, ENOSYS, "LLM mode is not built yet");
	return NULL;
}

void agent_llm_close(struct agent_llm *l)
{
	(void)l;
}

int agent_plan_llm(struct agent_ctx *c, struct agent_plan *plan, json_t *step,
		   struct hutch_err *err)
{
	(void)c, (void)plan, (void)step;
	return hutch_err_setx(err, ENOSYS, "no LLM");
}

int agent_code_llm(struct agent_ctx *c, const struct agent_plan *plan, struct agent_artifact *out,
		   json_t *step, struct hutch_err *err)
{
	(void)c, (void)plan, (void)out, (void)step;
	return hutch_err_setx(err, ENOSYS, "no LLM");
}

int agent_debug_llm(struct agent_ctx *c, const struct agent_plan *plan,
		    const struct agent_artifact *cur, const json_t *install, const json_t *run,
		    const json_t *verdict, struct agent_diagnosis *d, struct agent_artifact *out,
		    json_t *step)
{
	(void)c, (void)plan, (void)cur, (void)install, (void)run, (void)verdict, (void)out,
		(void)step;
	memset(d, 0, sizeof(*d));
	return 0;
}

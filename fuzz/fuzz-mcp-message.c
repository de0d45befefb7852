/* MCP messages (src/api/mcp.c): whatever arrives, the handler answers with
 * valid JSON-RPC or nothing, never crashes or leaks. The backend is a fake
 * whose reply (a result, a refusal, garbage, a failure) the input picks. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/mcp.h"
#include "fuzz.h"
#include "util/err.h"

static const char *const replies[] = {
	"{\"status\":\"ok\",\"exit_code\":0,\"stdout\":\"x\",\"stderr\":\"\",\"value\":"
	"{\"text/plain\":\"1\",\"image/png\":\"AA==\"},\"display\":[{\"image/jpeg\":\"AA==\"}]}",
	"{\"error\":{\"code\":\"ENOENT\",\"message\":\"no session\"}}",
	"{\"data_base64\":\"AP8=\",\"sessions\":[{\"id\":1}],\"session\":{}}",
	"not json",
	NULL,
};

static char *fake(void *ctx, const char *json, struct hutch_err *err)
{
	const char *reply = replies[*(const size_t *)ctx % (sizeof(replies) / sizeof(replies[0]))];

	(void)json;
	if (!reply)
		return (void)hutch_err_setx(err, EPIPE, "gone"), NULL;
	return strdup(reply);
}

/* A response is one JSON-RPC object (or a batch of them). */
static void check_response(json_t *r)
{
	if (json_is_array(r) && json_array_size(r) > 0) {
		for (size_t i = 0; i < json_array_size(r); i++)
			check_response(json_array_get(r, i));
		return;
	}
	if (!json_is_object(r) || !json_object_get(r, "id") ||
	    strcmp(json_string_value(json_object_get(r, "jsonrpc")) ?: "", "2.0") != 0 ||
	    !json_object_get(r, "result") == !json_object_get(r, "error"))
		abort();
}

int hutch_fuzz_mcp_message(const uint8_t *data, size_t size)
{
	size_t pick = size;
	struct hutch_mcp_backend b = {fake, fake, &pick, "fuzz"};
	struct hutch_mcp *m = hutch_mcp_new(&b);
	char *text = hutch_mcp_handle(m, (const char *)data, size);

	if (text) {
		json_t *r = json_loads(text, 0, NULL);
		if (!r)
			abort();
		check_response(r);
		json_decref(r);
	}
	free(text);
	hutch_mcp_free(m);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_mcp_message(d, n);
}
#endif

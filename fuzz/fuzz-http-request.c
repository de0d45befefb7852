/* HTTP requests -> JSON ops (src/api/http_routes.c). Input: "METHOD PATH[?QUERY]\n" then the
 * body. Decoding never crashes or leaks; a failure has a status and a message; a success
 * names a route, and its op is a JSON object carrying the route's op. */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/http_routes.h"
#include "fuzz.h"

static json_t *parse_query(char *q)
{
	json_t *o = json_object();

	for (char *kv = strtok(q, "&"); kv; kv = strtok(NULL, "&")) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq++ = '\0';
		json_object_set_new(o, kv, json_string(eq ? eq : ""));
	}
	return o;
}

static void check(const struct hutch_http_call *c, int rc, const struct hutch_err *err)
{
	if (rc < 0) {
		if ((c->status != 400 && c->status != 404 && c->status != 405) || !err->msg[0] ||
		    c->op_json)
			abort();
		return;
	}
	bool has_op =
		c->route && (c->route->kind == HUTCH_ROUTE_OP || c->route->kind == HUTCH_ROUTE_RUN);

	if (!c->route || has_op != (c->op_json != NULL))
		abort();
	if (c->route->kind == HUTCH_ROUTE_OP) {
		json_t *op = json_loads(c->op_json, 0, NULL);
		const char *name = json_string_value(json_object_get(op, "op"));
		if (!json_is_object(op) || !name || strcmp(name, c->route->op) != 0)
			abort();
		json_decref(op);
	}
}

int hutch_fuzz_http_request(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	char *nl = text ? memchr(text, '\n', strlen(text)) : NULL;
	char *sp = text ? strchr(text, ' ') : NULL;
	struct hutch_http_call call;
	struct hutch_err err = {0, ""};

	if (!nl || !sp || sp > nl) {
		free(text);
		return 0;
	}
	*nl = *sp = '\0';
	char *qm = strchr(sp + 1, '?');
	if (qm)
		*qm = '\0';
	json_t *query = qm ? parse_query(qm + 1) : NULL;
	const char *body = (const char *)data + (nl - text) + 1;
	struct hutch_http_in in = {text, sp + 1, query, body, size - (size_t)(nl - text) - 1};
	check(&call, hutch_route_decode(&in, &call, &err), &err);
	hutch_http_call_release(&call);
	json_decref(query);
	free(text);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_http_request(d, n);
}
#endif

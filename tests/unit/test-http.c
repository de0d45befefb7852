/* Unit tests for the HTTP layer's pure parts (src/api/http_routes.c, sse.c), its keys and
 * quotas (keys.c, quota.c), and that docs/openapi.json lists exactly the router's routes. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "tap.h"

#include "api/http_routes.h"
#include "api/keys.h"
#include "api/quota.h"
#include "api/sse.h"

struct decoded {
	struct hutch_http_call call;
	struct hutch_err err;
	json_t *op;
	int rc;
};

/* Decode "METHOD PATH" with a query ("k=v" pairs, or NULL) and a body. */
static void decode(struct decoded *d, const char *method, const char *path, const char *query,
		   const char *body)
{
	json_t *q = NULL;
	char buf[256];

	if (query) {
		q = json_object();
		snprintf(buf, sizeof(buf), "%s", query);
		for (char *kv = strtok(buf, "&"); kv; kv = strtok(NULL, "&")) {
			char *eq = strchr(kv, '=');
			*eq = '\0';
			json_object_set_new(q, kv, json_string(eq + 1));
		}
	}
	struct hutch_http_in in = {method, path, q, body, body ? strlen(body) : 0};
	memset(&d->err, 0, sizeof(d->err));
	d->rc = hutch_route_decode(&in, &d->call, &d->err);
	d->op = d->call.op_json ? json_loads(d->call.op_json, 0, NULL) : NULL;
	json_decref(q);
}

static void release(struct decoded *d)
{
	json_decref(d->op);
	hutch_http_call_release(&d->call);
}

static const char *field(struct decoded *d, const char *key)
{
	return json_string_value(json_object_get(d->op, key));
}

static void test_http_exec_maps_to_session_exec(void)
{
	struct decoded d;

	decode(&d, "POST", "/v1/sessions/sess_1/exec", NULL, "{\"code\":\"1+1\",\"timeout_ms\":5}");
	ASSERT_OK(d.rc);
	ASSERT_STREQ(field(&d, "op"), "session.exec");
	ASSERT_STREQ(field(&d, "id"), "sess_1");
	ASSERT_STREQ(field(&d, "code"), "1+1");
	ASSERT_STREQ(d.call.id, "sess_1");
	release(&d);
}

static void test_http_command_id_from_path(void)
{
	struct decoded d;

	decode(&d, "POST", "/v1/sessions/s1/commands/cmd_9", NULL, "{\"action\":\"poll\"}");
	ASSERT_OK(d.rc);
	ASSERT_STREQ(field(&d, "op"), "session.command");
	ASSERT_STREQ(field(&d, "command_id"), "cmd_9");
	release(&d);
}

static void test_http_files_query_to_fields(void)
{
	struct decoded d;

	decode(&d, "GET", "/v1/sessions/s1/files", "path=a.txt&offset=2&length=3", NULL);
	ASSERT_OK(d.rc);
	ASSERT_STREQ(field(&d, "action"), "read");
	ASSERT_STREQ(field(&d, "path"), "a.txt");
	ASSERT_EQ(json_integer_value(json_object_get(d.op, "offset")), 2);
	ASSERT(d.call.route->flags & HUTCH_ROUTE_RAW_OUT);
	release(&d);
	decode(&d, "PUT", "/v1/sessions/s1/files", "path=b", "hi");
	ASSERT_OK(d.rc);
	ASSERT_STREQ(field(&d, "data_base64"), "aGk=");
	release(&d);
}

static void test_http_rejects_bad_input_naming_it(void)
{
	struct decoded d;

	decode(&d, "GET", "/v1/sessions/s1/files", NULL, NULL);
	ASSERT_EQ(d.call.status, 400);
	ASSERT_CONTAINS(d.err.msg, "'path'");
	release(&d);
	decode(&d, "GET", "/v1/sessions/s1/files", "path=a&offset=-1", NULL);
	ASSERT_CONTAINS(d.err.msg, "'offset'");
	release(&d);
	decode(&d, "GET", "/v1/sessions/s1/files/list", "path=a&x=1", NULL);
	ASSERT_CONTAINS(d.err.msg, "unknown query parameter 'x'");
	release(&d);
	decode(&d, "POST", "/v1/sessions/s1/exec", NULL, "{\"code\":\"1\",\"id\":\"s2\"}");
	ASSERT_EQ(d.call.status, 400);
	ASSERT_CONTAINS(d.err.msg, "'id'");
	release(&d);
	decode(&d, "POST", "/v1/sessions/s1/exec", NULL,
	       "{\"code\":\"1\",\"timeout_ms\":99999999999}");
	ASSERT_CONTAINS(d.err.msg, "'timeout_ms'");
	release(&d);
	decode(&d, "POST", "/v1/run", NULL, "{\"language\":\"python\",\"limits\":{\"pids\":-1}}");
	ASSERT_EQ(d.call.status, 400);
	ASSERT_CONTAINS(d.err.msg, "limits.pids");
	release(&d);
}

static void test_http_malformed_json_names_line_and_column(void)
{
	struct decoded d;

	decode(&d, "POST", "/v1/sessions", NULL, "{\n\"language\": }");
	ASSERT_EQ(d.call.status, 400);
	ASSERT_CONTAINS(d.err.msg, "line 2");
	ASSERT_CONTAINS(d.err.msg, "column");
	release(&d);
}

static void test_http_404_405(void)
{
	struct decoded d;

	decode(&d, "GET", "/v1/nothing", NULL, NULL);
	ASSERT_EQ(d.call.status, 404);
	release(&d);
	decode(&d, "PATCH", "/v1/sessions/s1", NULL, NULL);
	ASSERT_EQ(d.call.status, 405);
	ASSERT_STREQ(d.call.allow, "GET, DELETE");
	release(&d);
	decode(&d, "GET", "/v1/sessions/..", NULL, NULL);
	ASSERT_EQ(d.call.status, 400);
	release(&d);
}

static void test_http_sse_event_keeps_bytes(void)
{
	size_t n = 0;
	char *ev = hutch_sse_event("stdout", "a\xff", 2, &n);

	ASSERT_CONTAINS(ev, "event: stdout\ndata: {");
	ASSERT_CONTAINS(ev, "\"data_base64\":\"Yf8=\"");
	ASSERT_EQ(n, strlen(ev));
	free(ev);
	ev = hutch_sse_event("stderr", "ok\n", 3, &n);
	ASSERT_STREQ(ev, "event: stderr\ndata: {\"data\":\"ok\\n\"}\n\n");
	free(ev);
}

static void test_http_keys_hashed_and_found(void)
{
	char dir[] = "/tmp/hutch-test-keys.XXXXXX";
	struct hutch_key_limits lim = {2, 10, 0};
	struct hutch_keyring kr;
	struct hutch_err err;
	char key[80];
	char path[128];

	ASSERT(mkdtemp(dir));
	ASSERT_OK(hutch_keys_add(dir, "alice", &lim, key, sizeof(key), &err));
	char other[80];
	ASSERT_ERR(hutch_keys_add(dir, "alice", &lim, other, sizeof(other), &err), err, EEXIST);
	ASSERT_ERR(hutch_keys_add(dir, "bad name", &lim, other, sizeof(other), &err), err, EINVAL);
	ASSERT_OK(hutch_keys_load(dir, &kr, &err));
	ASSERT_EQ(kr.n, 1);
	ASSERT(hutch_keys_find(&kr, key, strlen(key)) == &kr.keys[0]);
	ASSERT(hutch_keys_find(&kr, key, strlen(key) - 1) == NULL);
	ASSERT_EQ(kr.keys[0].limits.rate_per_min, 10);
	hutch_keys_release(&kr);
	snprintf(path, sizeof(path), "%s/keys.json", dir);
	FILE *f = fopen(path, "r");
	char text[4096] = "";
	ASSERT(f && fread(text, 1, sizeof(text) - 1, f) > 0);
	fclose(f);
	ASSERT(!strstr(text, key)); /* never the key itself */
	ASSERT_OK(hutch_keys_revoke(dir, "alice", &err));
	ASSERT_ERR(hutch_keys_revoke(dir, "alice", &err), err, ENOENT);
	unlink(path);
	rmdir(dir);
}

static void test_http_quota_limits(void)
{
	char dir[] = "/tmp/hutch-test-quota.XXXXXX";
	struct hutch_key_limits lim = {1, 2, 1000};
	struct hutch_err err;
	unsigned retry = 0;
	char path[128];

	ASSERT(mkdtemp(dir));
	struct hutch_quota *q = hutch_quota_open(dir);
	struct hutch_quota_slot *s = hutch_quota_reserve(q, "a", &lim, 600, &err);
	ASSERT(s);
	ASSERT(!hutch_quota_reserve(q, "a", &lim, 1, &err)); /* one session at most */
	ASSERT_EQ(err.code, EDQUOT);
	hutch_quota_claim(q, s, "sess_1");
	ASSERT(hutch_quota_owns(q, 's', "a", "sess_1"));
	ASSERT(!hutch_quota_owns(q, 's', "b", "sess_1"));
	lim.max_sessions = 0;
	ASSERT(!hutch_quota_reserve(q, "a", &lim, 600, &err)); /* memory: 1200 > 1000 */
	ASSERT_OK(hutch_quota_take_exec(q, "a", &lim, &retry));
	ASSERT_OK(hutch_quota_take_exec(q, "a", &lim, &retry));
	ASSERT_EQ(hutch_quota_take_exec(q, "a", &lim, &retry), -1);
	ASSERT(retry >= 1 && retry <= 31);
	hutch_quota_free(q);
	q = hutch_quota_open(dir); /* ownership survives a restart */
	ASSERT(hutch_quota_owns(q, 's', "a", "sess_1"));
	hutch_quota_free(q);
	snprintf(path, sizeof(path), "%s/http-owners.json", dir);
	unlink(path);
	rmdir(dir);
}

/* docs/openapi.json has every route of the router, and nothing else. */
static void test_http_openapi_matches_routes(void)
{
	json_t *doc = json_load_file("docs/openapi.json", 0, NULL);
	json_t *paths = json_object_get(doc, "paths");
	const char *path;
	const char *method;
	json_t *item;
	json_t *v;
	char lower[16];
	size_t n = 0;
	size_t in_doc = 0;

	ASSERT(json_is_object(paths));
	for (const struct hutch_route *r = hutch_routes; r->method; r++, n++) {
		size_t i;
		for (i = 0; i < sizeof(lower) - 1 && r->method[i]; i++)
			lower[i] = (char)(r->method[i] | 0x20);
		lower[i] = '\0';
		if (!json_object_get(json_object_get(paths, r->pattern), lower))
			TAP_FAIL("%s %s is not in docs/openapi.json", r->method, r->pattern);
	}
	json_object_foreach(paths, path, item)
	{
		json_object_foreach(item, method, v)
		{
			(void)v;
			in_doc++;
		}
	}
	if (in_doc != n)
		TAP_FAIL("docs/openapi.json has %zu operations, the router %zu", in_doc, n);
	json_decref(doc);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_http_exec_maps_to_session_exec),
	TAP_CASE(test_http_command_id_from_path),
	TAP_CASE(test_http_files_query_to_fields),
	TAP_CASE(test_http_rejects_bad_input_naming_it),
	TAP_CASE(test_http_malformed_json_names_line_and_column),
	TAP_CASE(test_http_404_405),
	TAP_CASE(test_http_sse_event_keeps_bytes),
	TAP_CASE(test_http_keys_hashed_and_found),
	TAP_CASE(test_http_quota_limits),
	TAP_CASE(test_http_openapi_matches_routes),
	TAP_END,
};

TAP_MAIN(cases)

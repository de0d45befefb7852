#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent.h"
#include "api/sockpath.h"
#include "util/mem.h"

/*
 * The execution history: SQLite (Debian's libsqlite3) at
 * STATE_DIR/agent/history.db. Pipelines with their traces, each failed
 * attempt's error signature and the rule that was tried, and per signature
 * the rules that fixed it, which the debugger consults first. Every
 * statement is prepared with bound parameters: task text and error output
 * are input.
 */

struct agent_history {
	sqlite3 *db;
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS pipelines(id TEXT PRIMARY KEY, started_at TEXT, task TEXT,"
	" language TEXT, mode TEXT, status TEXT, attempts INTEGER, total_ms INTEGER, trace TEXT);"
	"CREATE TABLE IF NOT EXISTS attempts(pipeline_id TEXT, n INTEGER, category TEXT,"
	" signature TEXT, rule TEXT, fixed INTEGER);"
	"CREATE TABLE IF NOT EXISTS fixes(signature TEXT, rule TEXT, successes INTEGER,"
	" PRIMARY KEY(signature, rule));";

struct agent_history *agent_history_open(const char *state_dir, struct hutch_err *err)
{
	char dir[512];
	char path[600];
	struct agent_history *h = hutch_xcalloc(1, sizeof(*h));

	hutch_state_dir(state_dir, dir, sizeof(dir));
	(void)mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/agent", dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		hutch_err_set(err, errno, "mkdir '%s'", path);
		free(h);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/agent/history.db", dir);
	if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
		    SQLITE_OK ||
	    sqlite3_busy_timeout(h->db, 5000) != SQLITE_OK ||
	    sqlite3_exec(h->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		hutch_err_setx(err, EIO, "history '%s': %s", path, sqlite3_errmsg(h->db));
		sqlite3_close(h->db);
		free(h);
		return NULL;
	}
	return h;
}

void agent_history_close(struct agent_history *h)
{
	if (!h)
		return;
	sqlite3_close(h->db);
	free(h);
}

static sqlite3_stmt *prep(struct agent_history *h, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static int exec_stmt(sqlite3_stmt *st)
{
	int rc = st ? sqlite3_step(st) : SQLITE_ERROR;

	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* One failed attempt; fixed: the next attempt passed. */
static void record_attempt(struct agent_history *h, const char *id, const json_t *a,
			   const json_t *next)
{
	const json_t *d = json_object_get(a, "diagnosis");
	const char *sig = agent_jstr(d, "signature");
	const char *rule = agent_jstr(d, "rule");
	bool fixed =
		next && json_is_true(json_object_get(json_object_get(next, "verdict"), "passed"));
	sqlite3_stmt *st;

	if (!d)
		return;
	st = prep(h, "INSERT INTO attempts VALUES(?, ?, ?, ?, ?, ?)");
	if (st) {
		bind_text(st, 1, id);
		sqlite3_bind_int(st, 2, (int)json_integer_value(json_object_get(a, "attempt")));
		bind_text(st, 3, agent_jstr(d, "category"));
		bind_text(st, 4, sig);
		bind_text(st, 5, rule);
		sqlite3_bind_int(st, 6, fixed);
	}
	(void)exec_stmt(st);
	if (!fixed || !sig || !rule)
		return;
	st = prep(h, "INSERT INTO fixes VALUES(?, ?, 1) ON CONFLICT(signature, rule)"
		     " DO UPDATE SET successes = successes + 1");
	if (st) {
		bind_text(st, 1, sig);
		bind_text(st, 2, rule);
	}
	(void)exec_stmt(st);
}

int agent_history_record(struct agent_history *h, const json_t *trace)
{
	const char *id = agent_jstr(trace, "pipeline_id");
	json_t *attempts = json_object_get(trace, "attempts");
	char *text = json_dumps(trace, JSON_COMPACT);
	sqlite3_stmt *st =
		prep(h, "INSERT OR REPLACE INTO pipelines VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
	size_t n = json_array_size(attempts);

	if (st) {
		bind_text(st, 1, id);
		bind_text(st, 2, agent_jstr(trace, "started_at"));
		bind_text(st, 3, agent_jstr(trace, "task"));
		bind_text(st, 4, agent_jstr(json_object_get(trace, "plan"), "language"));
		bind_text(st, 5, agent_jstr(trace, "mode"));
		bind_text(st, 6, agent_jstr(trace, "status"));
		sqlite3_bind_int(st, 7, (int)n);
		sqlite3_bind_int64(st, 8, json_integer_value(json_object_get(trace, "total_ms")));
		bind_text(st, 9, text);
	}
	free(text);
	if (exec_stmt(st) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		record_attempt(h, id, json_array_get(attempts, i), json_array_get(attempts, i + 1));
	return 0;
}

char *agent_history_known_fix(struct agent_history *h, const char *signature, int *times)
{
	sqlite3_stmt *st;
	char *rule = NULL;

	*times = 0;
	if (!h || !signature)
		return NULL;
	st = prep(h, "SELECT rule, successes FROM fixes WHERE signature = ?"
		     " ORDER BY successes DESC LIMIT 1");
	if (!st)
		return NULL;
	bind_text(st, 1, signature);
	if (sqlite3_step(st) == SQLITE_ROW) {
		rule = hutch_xstrdup((const char *)sqlite3_column_text(st, 0));
		*times = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	return rule;
}

static json_t *column(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	case SQLITE_TEXT:
		return json_string((const char *)sqlite3_column_text(st, i));
	default:
		return json_null();
	}
}

/* Every row of a query as objects keyed by column name. */
static json_t *rows(struct agent_history *h, const char *sql, const char *arg, int limit)
{
	sqlite3_stmt *st = prep(h, sql);
	json_t *out = json_array();

	if (!st)
		return out;
	if (arg)
		bind_text(st, 1, arg);
	else if (limit > 0)
		sqlite3_bind_int(st, 1, limit);
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *row = json_object();
		for (int i = 0; i < sqlite3_column_count(st); i++)
			json_object_set_new(row, sqlite3_column_name(st, i), column(st, i));
		json_array_append_new(out, row);
	}
	sqlite3_finalize(st);
	return out;
}

json_t *agent_history_list(struct agent_history *h, int limit)
{
	return rows(h,
		    "SELECT id, started_at, status, attempts, total_ms, mode, language, task"
		    " FROM pipelines ORDER BY started_at DESC, rowid DESC LIMIT ?",
		    NULL, limit);
}

json_t *agent_history_show(struct agent_history *h, const char *id)
{
	json_t *r = rows(h, "SELECT trace FROM pipelines WHERE id = ?", id, 0);
	const char *text = agent_jstr(json_array_get(r, 0), "trace");
	json_t *trace = text ? json_loads(text, 0, NULL) : NULL;

	json_decref(r);
	return trace;
}

/* The execution time distribution: pipelines' total_ms at p50 and p90. */
static void add_percentiles(struct agent_history *h, json_t *s)
{
	json_t *all = rows(h, "SELECT total_ms FROM pipelines ORDER BY total_ms", NULL, 0);
	size_t n = json_array_size(all);
	static const struct {
		const char *key;
		unsigned pct;
	} at[] = {{"p50_ms", 50}, {"p90_ms", 90}};

	for (size_t i = 0; i < 2; i++) {
		/* nearest rank */
		size_t k = n ? (n * at[i].pct + 99) / 100 : 0;
		json_t *row = json_array_get(all, k ? k - 1 : 0);
		json_object_set(s, at[i].key, row ? json_object_get(row, "total_ms") : json_null());
	}
	json_decref(all);
}

json_t *agent_history_stats(struct agent_history *h)
{
	json_t *tot =
		rows(h,
		     "SELECT COUNT(*) AS pipelines,"
		     " SUM(status = 'success') AS successes,"
		     " AVG(CASE WHEN status = 'success' THEN attempts END) AS attempts_per_success,"
		     " MIN(total_ms) AS min_ms, AVG(total_ms) AS mean_ms, MAX(total_ms) AS max_ms"
		     " FROM pipelines",
		     NULL, 0);
	json_t *cats = rows(h,
			    "SELECT category, COUNT(*) AS count, SUM(fixed) AS fixed FROM attempts"
			    " GROUP BY category ORDER BY count DESC",
			    NULL, 0);
	json_t *fixes = rows(
		h, "SELECT signature, rule, successes FROM fixes ORDER BY successes DESC", NULL, 0);
	json_t *s = json_deep_copy(json_array_get(tot, 0));
	json_int_t n = json_integer_value(json_object_get(s, "pipelines"));
	json_int_t ok = json_integer_value(json_object_get(s, "successes"));

	json_decref(tot);
	json_object_set_new(s, "success_rate", json_real(n ? (double)ok / (double)n : 0.0));
	add_percentiles(h, s);
	json_object_set_new(s, "error_categories", cats);
	json_object_set_new(s, "fixes", fixes);
	return s;
}

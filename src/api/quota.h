/* Who owns what, and per-key limits (docs/http.md, "Keys and quotas").
 * A session or a snapshot belongs to the key that made it; ownership is kept
 * in STATE_DIR/http-owners.json so it survives a restart. Thread-safe. */
#ifndef HUTCH_API_QUOTA_H
#define HUTCH_API_QUOTA_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/keys.h"
#include "hutch.h"

struct hutch_quota;
struct hutch_quota_slot;

struct hutch_quota *hutch_quota_open(const char *state_dir);
void hutch_quota_free(struct hutch_quota *q);

/* Whether key ("" when serving without keys) owns the session (kind 's') or
 * snapshot (kind 'n') called id. */
bool hutch_quota_owns(struct hutch_quota *q, char kind, const char *key, const char *id);

/* Whether id of kind is owned by a key other than key. */
bool hutch_quota_taken(struct hutch_quota *q, char kind, const char *key, const char *id);

/* Reserve room for a new session of key: EDQUOT with a message when its
 * sessions or their memory would pass its limits. Then either claim the
 * slot with the new session's id or cancel it. */
struct hutch_quota_slot *hutch_quota_reserve(struct hutch_quota *q, const char *key,
					     const struct hutch_key_limits *lim, uint64_t memory,
					     struct hutch_err *err);
void hutch_quota_claim(struct hutch_quota *q, struct hutch_quota_slot *slot, const char *id);
void hutch_quota_cancel(struct hutch_quota *q, struct hutch_quota_slot *slot);

/* Record a snapshot made by key; forget a session or snapshot. */
void hutch_quota_add(struct hutch_quota *q, char kind, const char *key, const char *id);
void hutch_quota_forget(struct hutch_quota *q, char kind, const char *id);

/* Forget sessions that are no longer live (killed by their TTL): live is
 * session.list's array. */
void hutch_quota_prune(struct hutch_quota *q, json_t *live);

/* Take one execution from key's budget: 0, or -1 with *retry_after_s (the
 * seconds until one is available again). */
int hutch_quota_take_exec(struct hutch_quota *q, const char *key,
			  const struct hutch_key_limits *lim, unsigned *retry_after_s);

#endif

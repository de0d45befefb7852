#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/quota.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/time.h"

/* One owned thing; id "" while a new session's slot is only reserved. */
struct hutch_quota_slot {
	struct hutch_quota_slot *next;
	char kind; /* 's' session, 'n' snapshot */
	char id[72];
	char key[65];
	uint64_t memory;
};

/* A token bucket per key: rate_per_min tokens, refilled continuously. */
struct bucket {
	struct bucket *next;
	char key[65];
	double tokens;
	uint64_t at_us;
};

struct hutch_quota {
	pthread_mutex_t lock;
	struct hutch_quota_slot *slots;
	struct bucket *buckets;
	char path[600];
};

/* Persist the owned things (not the reservations); called with the lock. */
static void save(struct hutch_quota *q)
{
	json_t *arr = json_array();
	char tmp[620];

	for (struct hutch_quota_slot *s = q->slots; s; s = s->next)
		if (s->id[0])
			json_array_append_new(arr, json_pack("{s:s%,s:s,s:s,s:I}", "kind", &s->kind,
							     (size_t)1, "id", s->id, "key", s->key,
							     "memory", (json_int_t)s->memory));
	snprintf(tmp, sizeof(tmp), "%s.tmp", q->path);
	if (json_dump_file(arr, tmp, JSON_COMPACT) == 0 && rename(tmp, q->path) < 0)
		unlink(tmp);
	json_decref(arr);
}

static struct hutch_quota_slot *slot_new(struct hutch_quota *q, char kind, const char *key,
					 const char *id, uint64_t memory)
{
	struct hutch_quota_slot *s = hutch_xcalloc(1, sizeof(*s));

	s->kind = kind;
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->memory = memory;
	s->next = q->slots;
	q->slots = s;
	return s;
}

struct hutch_quota *hutch_quota_open(const char *state_dir)
{
	struct hutch_quota *q = hutch_xcalloc(1, sizeof(*q));
	json_t *arr;

	pthread_mutex_init(&q->lock, NULL);
	snprintf(q->path, sizeof(q->path), "%s/http-owners.json", state_dir);
	arr = json_load_file(q->path, 0, NULL);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *o = json_array_get(arr, i);
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *id = json_string_value(json_object_get(o, "id"));
		const char *key = json_string_value(json_object_get(o, "key"));
		if (kind && id && key && *id)
			slot_new(q, kind[0], key, id,
				 (uint64_t)json_integer_value(json_object_get(o, "memory")));
	}
	json_decref(arr);
	return q;
}

void hutch_quota_free(struct hutch_quota *q)
{
	if (!q)
		return;
	while (q->slots) {
		struct hutch_quota_slot *s = q->slots;
		q->slots = s->next;
		free(s);
	}
	while (q->buckets) {
		struct bucket *b = q->buckets;
		q->buckets = b->next;
		free(b);
	}
	pthread_mutex_destroy(&q->lock);
	free(q);
}

bool hutch_quota_owns(struct hutch_quota *q, char kind, const char *key, const char *id)
{
	bool owns = false;

	pthread_mutex_lock(&q->lock);
	for (struct hutch_quota_slot *s = q->slots; s && !owns; s = s->next)
		owns = s->kind == kind && strcmp(s->id, id) == 0 && strcmp(s->key, key) == 0;
	pthread_mutex_unlock(&q->lock);
	return owns;
}

bool hutch_quota_taken(struct hutch_quota *q, char kind, const char *key, const char *id)
{
	bool taken = false;

	pthread_mutex_lock(&q->lock);
	for (struct hutch_quota_slot *s = q->slots; s && !taken; s = s->next)
		taken = s->kind == kind && strcmp(s->id, id) == 0 && strcmp(s->key, key) != 0;
	pthread_mutex_unlock(&q->lock);
	return taken;
}

struct hutch_quota_slot *hutch_quota_reserve(struct hutch_quota *q, const char *key,
					     const struct hutch_key_limits *lim, uint64_t memory,
					     struct hutch_err *err)
{
	struct hutch_quota_slot *slot = NULL;
	uint64_t count = 0;
	uint64_t mem = 0;

	pthread_mutex_lock(&q->lock);
	for (struct hutch_quota_slot *s = q->slots; s; s = s->next)
		if (s->kind == 's' && strcmp(s->key, key) == 0) {
			count++;
			mem += s->memory;
		}
	if (lim->max_sessions && count + 1 > lim->max_sessions)
		hutch_err_setx(err, EDQUOT, "key '%s' has %llu live sessions, its limit", key,
			       (unsigned long long)count);
	else if (lim->max_memory_bytes && (mem += memory) > lim->max_memory_bytes)
		hutch_err_setx(err, EDQUOT,
			       "key '%s': its sessions' memory would reach %llu bytes, over its "
			       "limit of %llu",
			       key, (unsigned long long)mem,
			       (unsigned long long)lim->max_memory_bytes);
	else
		slot = slot_new(q, 's', key, "", memory);
	pthread_mutex_unlock(&q->lock);
	return slot;
}

void hutch_quota_claim(struct hutch_quota *q, struct hutch_quota_slot *slot, const char *id)
{
	pthread_mutex_lock(&q->lock);
	snprintf(slot->id, sizeof(slot->id), "%s", id);
	save(q);
	pthread_mutex_unlock(&q->lock);
}

/* Unlink and free the slot for which pred is true (called with the lock). */
static void drop_if(struct hutch_quota *q,
		    bool (*pred)(const struct hutch_quota_slot *s, const void *arg),
		    const void *arg)
{
	for (struct hutch_quota_slot **pp = &q->slots; *pp;) {
		struct hutch_quota_slot *s = *pp;
		if (pred(s, arg)) {
			*pp = s->next;
			free(s);
		} else {
			pp = &s->next;
		}
	}
}

static bool is_slot(const struct hutch_quota_slot *s, const void *arg)
{
	return s == arg;
}

/* arg: a slot whose kind and id to match */
static bool same_thing(const struct hutch_quota_slot *s, const void *arg)
{
	const struct hutch_quota_slot *want = arg;

	return s->kind == want->kind && strcmp(s->id, want->id) == 0;
}

static void drop_id(struct hutch_quota *q, char kind, const char *id)
{
	struct hutch_quota_slot want = {.kind = kind};

	snprintf(want.id, sizeof(want.id), "%s", id);
	drop_if(q, same_thing, &want);
}

void hutch_quota_cancel(struct hutch_quota *q, struct hutch_quota_slot *slot)
{
	pthread_mutex_lock(&q->lock);
	drop_if(q, is_slot, slot);
	pthread_mutex_unlock(&q->lock);
}

void hutch_quota_add(struct hutch_quota *q, char kind, const char *key, const char *id)
{
	pthread_mutex_lock(&q->lock);
	drop_id(q, kind, id); /* a snapshot made again under the same name */
	slot_new(q, kind, key, id, 0);
	save(q);
	pthread_mutex_unlock(&q->lock);
}

void hutch_quota_forget(struct hutch_quota *q, char kind, const char *id)
{
	pthread_mutex_lock(&q->lock);
	drop_id(q, kind, id);
	save(q);
	pthread_mutex_unlock(&q->lock);
}

static bool is_live(json_t *live, const char *id)
{
	for (size_t i = 0; i < json_array_size(live); i++) {
		const char *l = json_string_value(json_object_get(json_array_get(live, i), "id"));
		if (l && strcmp(l, id) == 0)
			return true;
	}
	return false;
}

void hutch_quota_prune(struct hutch_quota *q, json_t *live)
{
	pthread_mutex_lock(&q->lock);
	for (struct hutch_quota_slot **pp = &q->slots; *pp;) {
		struct hutch_quota_slot *s = *pp;
		if (s->kind == 's' && s->id[0] && !is_live(live, s->id)) {
			*pp = s->next;
			free(s);
		} else {
			pp = &s->next;
		}
	}
	pthread_mutex_unlock(&q->lock);
}

static struct bucket *bucket_of(struct hutch_quota *q, const char *key, double full)
{
	struct bucket *b;

	for (b = q->buckets; b; b = b->next)
		if (strcmp(b->key, key) == 0)
			return b;
	b = hutch_xcalloc(1, sizeof(*b));
	snprintf(b->key, sizeof(b->key), "%s", key);
	b->tokens = full;
	b->at_us = hutch_now_us();
	b->next = q->buckets;
	q->buckets = b;
	return b;
}

int hutch_quota_take_exec(struct hutch_quota *q, const char *key,
			  const struct hutch_key_limits *lim, unsigned *retry_after_s)
{
	double full = (double)lim->rate_per_min;
	double per_us = full / 60e6;
	int rc = 0;

	if (!lim->rate_per_min)
		return 0;
	pthread_mutex_lock(&q->lock);
	struct bucket *b = bucket_of(q, key, full);
	uint64_t now = hutch_now_us();
	b->tokens += (double)(now - b->at_us) * per_us;
	if (b->tokens > full)
		b->tokens = full;
	b->at_us = now;
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
	} else {
		*retry_after_s = (unsigned)((1.0 - b->tokens) / per_us / 1e6) + 1;
		rc = -1;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/* API keys of `hutch serve` (docs/http.md, "Authentication"): kept in
 * STATE_DIR/keys.json, each as the SHA-256 of the key (never the key), with
 * its name and limits. */
#ifndef HUTCH_API_KEYS_H
#define HUTCH_API_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

#define HUTCH_KEY_DEFAULT_SESSIONS 16
#define HUTCH_KEY_DEFAULT_RATE	   600		 /* executions per minute */
#define HUTCH_KEY_DEFAULT_MEMORY   (16ull << 30) /* live sessions' memory limits */

struct hutch_key_limits {
	uint64_t max_sessions;	   /* live sessions at once; 0 = no limit */
	uint64_t rate_per_min;	   /* executions per minute; 0 = no limit */
	uint64_t max_memory_bytes; /* sum of its live sessions' memory limits; 0 = none */
};

struct hutch_key {
	char name[65];
	unsigned char hash[32];
	uint64_t created_ms;
	struct hutch_key_limits limits;
};

struct hutch_keyring {
	struct hutch_key *keys;
	size_t n;
};

/* Read STATE_DIR/keys.json (a missing file is no keys). -1 with err. */
int hutch_keys_load(const char *state_dir, struct hutch_keyring *kr, struct hutch_err *err);
void hutch_keys_release(struct hutch_keyring *kr);

/* Make a key called name; the key itself (shown once) goes to out, which
 * holds at least 64 bytes. EEXIST when the name is taken. */
int hutch_keys_add(const char *state_dir, const char *name, const struct hutch_key_limits *lim,
		   char *out, size_t out_size, struct hutch_err *err);
/* Remove the key called name; ENOENT when there is none. */
int hutch_keys_revoke(const char *state_dir, const char *name, struct hutch_err *err);

/* The key whose hash is SHA-256(presented), or NULL. Compares against
 * every key in constant time (no early exit on a match). */
const struct hutch_key *hutch_keys_find(const struct hutch_keyring *kr, const char *presented,
					size_t len);

#endif

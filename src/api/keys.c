#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/keys.h"
#include "util/err.h"
#include "util/mem.h"

/*
 * Keys are stored hashed: whoever reads keys.json (a backup, a bug that
 * serves files) learns no usable key. The keys are 192 random bits, so a
 * plain SHA-256 (no salt, no stretching) cannot be brute-forced; it is not a
 * password hash on purpose.
 */

static void keys_path(const char *state_dir, char *out, size_t n)
{
	snprintf(out, n, "%s/keys.json", state_dir);
}

static void sha256(const void *data, size_t len, unsigned char out[32])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, 32, out);
}

static void to_hex(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int from_hex(const char *s, unsigned char *out, size_t n)
{
	if (!s || strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(s[2 * i]);
		int lo = nibble(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int key_from_json(json_t *o, struct hutch_key *k)
{
	const char *name = json_string_value(json_object_get(o, "name"));

	if (!name || strlen(name) >= sizeof(k->name) ||
	    from_hex(json_string_value(json_object_get(o, "sha256")), k->hash, 32) < 0)
		return -1;
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->created_ms = (uint64_t)json_integer_value(json_object_get(o, "created_ms"));
	k->limits.max_sessions = (uint64_t)json_integer_value(json_object_get(o, "max_sessions"));
	k->limits.rate_per_min = (uint64_t)json_integer_value(json_object_get(o, "rate_per_min"));
	k->limits.max_memory_bytes =
		(uint64_t)json_integer_value(json_object_get(o, "max_memory_bytes"));
	return 0;
}

int hutch_keys_load(const char *state_dir, struct hutch_keyring *kr, struct hutch_err *err)
{
	char path[600];
	json_error_t jerr;
	json_t *root;
	json_t *arr;

	kr->keys = NULL;
	kr->n = 0;
	keys_path(state_dir, path, sizeof(path));
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	arr = json_object_get(root, "keys");
	if (!json_is_array(arr)) {
		json_decref(root);
		return hutch_err_setx(err, EINVAL, "'%s' is not a keys file: %s", path, jerr.text);
	}
	kr->keys = hutch_xcalloc(json_array_size(arr) + 1, sizeof(*kr->keys));
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (key_from_json(json_array_get(arr, i), &kr->keys[kr->n]) == 0)
			kr->n++;
	json_decref(root);
	return 0;
}

void hutch_keys_release(struct hutch_keyring *kr)
{
	free(kr->keys);
	kr->keys = NULL;
	kr->n = 0;
}

static json_t *key_to_json(const struct hutch_key *k)
{
	char hex[65];

	to_hex(k->hash, 32, hex);
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "name", k->name, "sha256", hex, "created_ms",
			 (json_int_t)k->created_ms, "max_sessions",
			 (json_int_t)k->limits.max_sessions, "rate_per_min",
			 (json_int_t)k->limits.rate_per_min, "max_memory_bytes",
			 (json_int_t)k->limits.max_memory_bytes);
}

/* Write the ring to keys.json atomically (a temp file renamed), mode 0600. */
static int keys_save(const char *state_dir, const struct hutch_keyring *kr, struct hutch_err *err)
{
	char path[600];
	char tmp[620];
	json_t *arr = json_array();
	int rc;

	for (size_t i = 0; i < kr->n; i++)
		json_array_append_new(arr, key_to_json(&kr->keys[i]));
	json_t *root = json_pack("{s:o}", "keys", arr);
	(void)mkdir(state_dir, 0700);
	keys_path(state_dir, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = fd < 0 ? -1 : json_dumpfd(root, fd, JSON_INDENT(1));
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	json_decref(root);
	if (rc < 0 || rename(tmp, path) < 0)
		return hutch_err_set(err, errno ? errno : EIO, "write '%s'", path);
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

int hutch_keys_add(const char *state_dir, const char *name, const struct hutch_key_limits *lim,
		   char *out, size_t out_size, struct hutch_err *err)
{
	struct hutch_keyring kr;
	unsigned char raw[24];
	struct timeval tv;
	struct hutch_key *k;
	int rc;

	if (!name_ok(name))
		return hutch_err_setx(err, EINVAL,
				      "key name '%.80s': 1 to 64 letters, digits, '_', '.', '-'",
				      name);
	if (out_size < 64 || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return hutch_err_set(err, errno ? errno : EINVAL, "getrandom");
	if (hutch_keys_load(state_dir, &kr, err) < 0)
		return -1;
	for (size_t i = 0; i < kr.n; i++)
		if (strcmp(kr.keys[i].name, name) == 0) {
			hutch_keys_release(&kr);
			return hutch_err_setx(err, EEXIST, "a key called '%s' exists", name);
		}
	snprintf(out, out_size, "hk_");
	to_hex(raw, sizeof(raw), out + 3);
	kr.keys = hutch_xrealloc(kr.keys, (kr.n + 1) * sizeof(*kr.keys));
	k = &kr.keys[kr.n++];
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", name);
	sha256(out, strlen(out), k->hash);
	gettimeofday(&tv, NULL);
	k->created_ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	k->limits = *lim;
	rc = keys_save(state_dir, &kr, err);
	hutch_keys_release(&kr);
	return rc;
}

int hutch_keys_revoke(const char *state_dir, const char *name, struct hutch_err *err)
{
	struct hutch_keyring kr;
	size_t j = 0;
	int rc;

	if (hutch_keys_load(state_dir, &kr, err) < 0)
		return -1;
	for (size_t i = 0; i < kr.n; i++)
		if (strcmp(kr.keys[i].name, name) != 0)
			kr.keys[j++] = kr.keys[i];
	if (j == kr.n) {
		hutch_keys_release(&kr);
		return hutch_err_setx(err, ENOENT, "no key called '%.80s'", name);
	}
	kr.n = j;
	rc = keys_save(state_dir, &kr, err);
	hutch_keys_release(&kr);
	return rc;
}

const struct hutch_key *hutch_keys_find(const struct hutch_keyring *kr, const char *presented,
					size_t len)
{
	const struct hutch_key *found = NULL;
	unsigned char h[32];

	sha256(presented, len, h);
	/* every key is compared, each in constant time: the time taken says
	 * nothing about which bytes of which key matched */
	for (size_t i = 0; i < kr->n; i++)
		if (nettle_memeql_sec(h, kr->keys[i].hash, 32))
			found = &kr->keys[i];
	return found;
}

/* Sandbox paths: an accepted path is normalised, inside /workspace and a
 * fixed point; allow_root only ever accepts more. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "run/path.h"

static int is_normal(const char *out, int allow_root)
{
	size_t len = strlen(out);

	return strncmp(out, HUTCH_WORKSPACE, 10) == 0 && (out[10] == '/' || out[10] == '\0') &&
	       (allow_root || out[10] != '\0') && !strstr(out, "//") && !strstr(out, "/./") &&
	       !strstr(out, "/../") && out[len - 1] != '/' && strcmp(out + len - 2, "/.") != 0 &&
	       strcmp(out + len - 3, "/..") != 0;
}

int hutch_fuzz_path(const uint8_t *data, size_t size)
{
	struct hutch_err err;
	char *path = strndup((const char *)data, size);
	char out[2][1100];
	char again[1100];
	int rc[2];

	for (int root = 0; path && root < 2; root++) {
		rc[root] = hutch_sandbox_path(path, out[root], sizeof(out[root]), root, &err);
		if (rc[root] == 0 &&
		    (!is_normal(out[root], root) ||
		     hutch_sandbox_path(out[root], again, sizeof(again), root, &err) != 0 ||
		     strcmp(again, out[root]) != 0))
			abort(); /* not normal, or not a fixed point */
		if (rc[root] != 0 &&
		    (rc[root] != -1 || (err.code != EINVAL && err.code != ENAMETOOLONG)))
			abort();
	}
	if (path && rc[0] == 0 && (rc[1] != 0 || strcmp(out[0], out[1]) != 0))
		abort();
	free(path);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_path(d, n);
}
#endif

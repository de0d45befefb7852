#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "run/path.h"
#include "util/err.h"

int hutch_sandbox_path(const char *path, char *out, size_t out_size, int allow_root,
		       struct hutch_err *err)
{
	const size_t ws_len = strlen(HUTCH_WORKSPACE);
	const char *rel = path;
	size_t len;

	if (!path || !*path)
		return hutch_err_setx(err, EINVAL, "empty sandbox path");
	if (path[0] == '/') {
		if (strncmp(path, HUTCH_WORKSPACE, ws_len) != 0 ||
		    (path[ws_len] != '/' && path[ws_len] != '\0'))
			return hutch_err_setx(
				err, EINVAL, "sandbox path '%s' is outside " HUTCH_WORKSPACE, path);
		rel = path + ws_len;
		if (*rel == '/')
			rel++;
	}
	/* counted under /workspace, so "x" and "/workspace/x" agree */
	len = strlen(rel);
	if (len > 1024)
		return hutch_err_setx(err, ENAMETOOLONG, "sandbox path longer than 1024 bytes");
	if (!*rel) {
		if (!allow_root)
			return hutch_err_setx(err, EINVAL, "sandbox path '%s' names no file", path);
		snprintf(out, out_size, "%s", HUTCH_WORKSPACE);
		return 0;
	}
	/* Walk the components: none may be empty, ".", ".." or over NAME_MAX. */
	for (const char *c = rel; *c;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 0)
			return hutch_err_setx(err, EINVAL,
					      "sandbox path '%s' has an empty component", path);
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return hutch_err_setx(
				err, EINVAL, "sandbox path '%s' may not contain '.' or '..'", path);
		if (n > 255)
			return hutch_err_setx(err, ENAMETOOLONG, "a component of '%s' is too long",
					      path);
		if (!slash)
			break;
		c = slash + 1;
		if (!*c && !allow_root)
			return hutch_err_setx(err, EINVAL, "sandbox path '%s' ends in '/'", path);
	}
	if ((size_t)snprintf(out, out_size, "%s/%s", HUTCH_WORKSPACE, rel) >= out_size)
		return hutch_err_setx(err, ENAMETOOLONG, "sandbox path '%s' too long", path);
	/* a trailing slash is fine for a directory; drop it */
	len = strlen(out);
	if (len > 1 && out[len - 1] == '/')
		out[len - 1] = '\0';
	return 0;
}

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cell/cell.h"
#include "util/err.h"

static int write_file(const char *path, const char *text, struct hutch_err *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0)
		return hutch_err_set(err, errno, "open '%s'", path);
	if (write(fd, text, len) != (ssize_t)len) {
		hutch_err_set(err, errno, "write '%s'", path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Rootless: map exactly one id, ours, to the sandbox uid/gid inside. Every
 * other id (root's files in /usr, say) shows as the overflow id and cannot be
 * assumed. setgroups is denied first, as an unprivileged writer of gid_map
 * must (user_namespaces(7)): a process could otherwise drop a group that
 * denies it access. Runs in the supervisor, for the child's pid. */
int hutch_ns_write_id_maps(pid_t pid, uid_t outer_uid, gid_t outer_gid, struct hutch_err *err)
{
	char path[64];
	char map[64];

	snprintf(path, sizeof(path), "/proc/%d/setgroups", pid);
	if (write_file(path, "deny", err) < 0 && err->code != ENOENT)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", HUTCH_SANDBOX_UID, outer_uid);
	if (write_file(path, map, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", HUTCH_SANDBOX_GID, outer_gid);
	return write_file(path, map, err);
}

/* The sandbox's own host name, in its own UTS namespace. Child-only. */
int hutch_ns_set_identity(struct hutch_err *err)
{
	if (sethostname("hutch", 5) < 0)
		return hutch_err_set(err, errno, "sethostname");
	if (setdomainname("", 0) < 0)
		return hutch_err_set(err, errno, "setdomainname");
	return 0;
}

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cell/cell.h"
#include "sys/syscalls.h"
#include "util/err.h"

#define FS_READ                                                                                    \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_WRITE_FILE (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)
#define FS_CREATE                                                                                  \
	(LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                          \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                               \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |                             \
	 LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER)
/* Rights that exist in every ABI we handle; MAKE_CHAR/MAKE_BLOCK are handled
 * (so denied everywhere) but granted nowhere: no device nodes. */
#define FS_ALL_V1                                                                                  \
	(FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                 \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                           \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                               \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |                             \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

struct rule {
	const char *path;
	uint64_t access;
};

/* Defense in depth behind the read-only mounts: even if a mount flag were
 * wrong, writes are only possible where the sandbox has writable space. */
static const struct rule rules[] = {
	{"/", FS_READ},
	{"/workspace", FS_READ | FS_WRITE_FILE | FS_CREATE},
	{"/tmp", FS_READ | FS_WRITE_FILE | FS_CREATE},
	{"/dev", FS_READ | FS_WRITE_FILE},
	{"/dev/shm", FS_READ | FS_WRITE_FILE | FS_CREATE},
	{"/proc", FS_READ | FS_WRITE_FILE},
};

static uint64_t handled_fs(int abi)
{
	uint64_t fs = FS_ALL_V1;

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	return fs;
}

/* Apply the landlock ruleset to the calling process (and its future
 * children). Kernels without landlock: skip silently, the mounts still hold.
 * Needs no_new_privs. Child-only; async-signal-safe. */
int hutch_landlock_apply(struct hutch_err *err)
{
	struct hutch_landlock_ruleset_attr attr = {0, 0, 0};
	int abi = hutch_sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	int ruleset;

	if (abi < 0)
		return 0; /* ENOSYS or EOPNOTSUPP: landlock not built or disabled */
	attr.handled_access_fs = handled_fs(abi);
	/* ABI 6: no connecting to abstract unix sockets and no signals outside
	 * the sandbox's own landlock domain (a second wall behind the network
	 * and pid namespaces). */
	if (abi >= 6)
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	size_t size = abi >= 6 ? sizeof(attr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
	ruleset = hutch_sys_landlock_create_ruleset(&attr, size, 0);
	if (ruleset < 0)
		return hutch_err_set(err, errno, "landlock_create_ruleset");
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		struct landlock_path_beneath_attr pb;
		int fd = open(rules[i].path, O_PATH | O_CLOEXEC | O_DIRECTORY);
		if (fd < 0)
			continue; /* e.g. no /dev/shm: nothing to grant */
		pb.allowed_access = rules[i].access & attr.handled_access_fs;
		pb.parent_fd = fd;
		int rc = hutch_sys_landlock_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
		close(fd);
		if (rc < 0) {
			hutch_err_set(err, errno, "landlock rule for '%s'", rules[i].path);
			close(ruleset);
			return -1;
		}
	}
	if (hutch_sys_landlock_restrict_self(ruleset, 0) < 0) {
		hutch_err_set(err, errno, "landlock_restrict_self");
		close(ruleset);
		return -1;
	}
	close(ruleset);
	return 0;
}

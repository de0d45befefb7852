#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cell/layer.h"
#include "cell/mountutil.h"
#include "util/err.h"

/*
 * What every execution gets fresh, on top of the template's root:
 *   - its own /proc (for its own pid namespace), with the dangerous files
 *     read-only or masked;
 *   - one tmpfs of the disk limit, bound on /workspace, /tmp and /dev/shm;
 *   - the request's files placed in /workspace.
 * Used by the cold path while it builds a root, and by a zygote's child in
 * the root it inherited. Child-only code: no malloc.
 */

/* procfs entries that leak host state or change it (Docker's masked and
 * read-only paths, moby/moby oci/defaults.go). */
static const char *const proc_readonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
static const char *const proc_masked_files[] = {"kcore",       "keys",		"timer_list",
						"sched_debug", "latency_stats", "kmsg",
						"key-users",   "kpageflags",	"kpagecount"};
static const char *const proc_masked_dirs[] = {"acpi", "scsi", "asound", "driver"};

int hutch_layer_proc(const char *proc_dir, struct hutch_err *err)
{
	char path[PATHBUF];

	if (mount("proc", proc_dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return hutch_err_set(err, errno, "mount proc");
	for (size_t i = 0; i < sizeof(proc_readonly) / sizeof(proc_readonly[0]); i++) {
		if (hutch_path_join(path, proc_dir, proc_readonly[i], err) < 0)
			return -1;
		if (access(path, F_OK) == 0 && hutch_bind(path, path, RO_ATTR, true, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(proc_masked_files) / sizeof(proc_masked_files[0]); i++) {
		if (hutch_path_join(path, proc_dir, proc_masked_files[i], err) < 0)
			return -1;
		/* /dev/null (a device: no MOUNT_ATTR_NODEV) reads as empty */
		if (access(path, F_OK) == 0 &&
		    hutch_bind("/dev/null", path,
			       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false,
			       err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(proc_masked_dirs) / sizeof(proc_masked_dirs[0]); i++) {
		if (hutch_path_join(path, proc_dir, proc_masked_dirs[i], err) < 0)
			return -1;
		if (access(path, F_OK) == 0 &&
		    mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=0,mode=0555") < 0)
			return hutch_err_set(err, errno, "mask '%s'", path);
	}
	return 0;
}

/* mkdir -p for the parents of rel under base (rel already validated: no
 * "..", no empty components, no leading '/'). */
static int make_parents(const char *base, const char *rel, struct hutch_err *err)
{
	char path[PATHBUF];
	int n = snprintf(path, sizeof(path), "%s/%s", base, rel);
	size_t start = strlen(base) + 1;

	if (n < 0 || n >= PATHBUF)
		return hutch_err_setx(err, ENAMETOOLONG, "path '%s' too long", rel);
	for (size_t i = start; path[i]; i++) {
		if (path[i] != '/')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return hutch_err_set(err, errno, "mkdir '%s'", path + start - 1);
		if (chown(path, HUTCH_SANDBOX_UID, HUTCH_SANDBOX_GID) < 0)
			return hutch_err_set(err, errno, "chown '%s'", path + start - 1);
		path[i] = '/';
	}
	return 0;
}

/* Strip "/workspace/" from a validated sandbox path. */
static const char *workspace_rel(const char *path)
{
	size_t n = strlen(HUTCH_WORKSPACE);

	if (strncmp(path, HUTCH_WORKSPACE, n) == 0 && (path[n] == '/' || path[n] == '\0'))
		path += n;
	while (*path == '/')
		path++;
	return path;
}

static int hutch_layer_place_file(const char *ws, const struct hutch_file *f, struct hutch_err *err)
{
	const char *rel = workspace_rel(f->path);
	char path[PATHBUF];
	size_t done = 0;
	int fd;

	if (make_parents(ws, rel, err) < 0 || hutch_path_join(path, ws, rel, err) < 0)
		return -1;
	/* The tmpfs is new and only we have written to it, but O_EXCL and
	 * O_NOFOLLOW still make sure no earlier entry is followed. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  f->mode & 07777 & ~06000u);
	if (fd < 0)
		return hutch_err_set(err, errno, "create '%s'", f->path);
	while (done < f->len) {
		ssize_t w = write(fd, f->data + done, f->len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			hutch_err_set(err, w < 0 ? errno : EIO, "write '%s'", f->path);
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (fchown(fd, HUTCH_SANDBOX_UID, HUTCH_SANDBOX_GID) < 0) {
		hutch_err_set(err, errno, "chown '%s'", f->path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int hutch_layer_writable(const char *root, const char *staging, uint64_t disk_bytes,
			 struct hutch_err *err)
{
	char opts[128];
	char src[PATHBUF];
	char dst[PATHBUF];
	static const char *const parts[][3] = {
		/* in staging, mode, where in root */
		{"workspace", "0755", "workspace"},
		{"tmp", "1777", "tmp"},
		{"shm", "1777", "dev/shm"},
	};
	/* Bound the inode count too: an empty-file bomb would otherwise grow
	 * kernel memory without touching the byte limit. */
	unsigned long long inodes = disk_bytes / 4096;

	if (inodes < 16384)
		inodes = 16384;
	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0755",
		 (unsigned long long)disk_bytes, inodes);
	if (hutch_make_dir(staging, 0755, err) < 0)
		return -1;
	if (mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return hutch_err_set(err, errno, "mount writable tmpfs (%s)", opts);
	for (size_t i = 0; i < 3; i++) {
		mode_t mode = parts[i][1][0] == '1' ? 01777 : 0755;
		if (hutch_path_join(src, staging, parts[i][0], err) < 0 ||
		    hutch_path_join(dst, root, parts[i][2], err) < 0 ||
		    hutch_make_dir(src, mode, err) < 0)
			return -1;
		/* mkdir applies the umask: set the sticky, world-writable bits */
		if (chmod(src, mode) < 0)
			return hutch_err_set(err, errno, "chmod '%s'", src);
		if (mode == 0755 && chown(src, HUTCH_SANDBOX_UID, HUTCH_SANDBOX_GID) < 0)
			return hutch_err_set(err, errno, "chown '%s'", src);
		if (hutch_make_dir(dst, mode, err) < 0 || hutch_bind(src, dst, 0, false, err) < 0)
			return -1;
	}
	return 0;
}

int hutch_layer_resize(const char *workspace, uint64_t disk_bytes, struct hutch_err *err)
{
	char opts[96];
	unsigned long long inodes = disk_bytes / 4096;

	if (inodes < 16384)
		inodes = 16384;
	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu", (unsigned long long)disk_bytes,
		 inodes);
	/* A remount without MS_BIND changes the superblock under every bind
	 * of it: /workspace, /tmp and /dev/shm together. */
	if (mount(NULL, workspace, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
		return hutch_err_set(err, errno, "resize writable tmpfs (%s)", opts);
	return 0;
}

int hutch_layer_place(const char *workspace, const struct hutch_file *files, size_t nfiles,
		      const char *workdir, struct hutch_err *err)
{
	for (size_t i = 0; i < nfiles; i++)
		if (hutch_layer_place_file(workspace, &files[i], err) < 0)
			return -1;
	if (workdir && strcmp(workdir, HUTCH_WORKSPACE) != 0) {
		char rel[PATHBUF];
		int n = snprintf(rel, sizeof(rel), "%s/", workspace_rel(workdir));
		if (n < 0 || n >= PATHBUF)
			return hutch_err_setx(err, ENAMETOOLONG, "workdir too long");
		if (make_parents(workspace, rel, err) < 0)
			return -1;
	}
	return 0;
}

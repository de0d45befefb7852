#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cell/cell.h"
#include "sys/syscalls.h"
#include "util/err.h"

/*
 * The root filesystem of a cell, built in the child's own mount namespace:
 *
 *   /            tmpfs, read-only once built (only mount points and /etc)
 *   /usr /bin /sbin /lib*   the host's, bound read-only, nosuid, nodev
 *   /etc         generated passwd/group/hosts + a few host files, read-only
 *   /proc        the cell's own procfs; /proc/sys & co read-only, kcore & co masked
 *   /dev         tmpfs with null zero full random urandom tty, private devpts
 *   /workspace /tmp /dev/shm   one size-limited tmpfs (the disk limit), nosuid, nodev
 *
 * Nothing is created on the host: the new root is a tmpfs mounted over /tmp
 * in the child's namespace (after making every mount private), so when the
 * namespace dies, everything in it goes with it.
 *
 * Child-only code: no malloc, fixed buffers, errors into `err`.
 */

#define NEWROOT "/tmp"
#define STAGING NEWROOT "/.w"

/* Host paths forming the template "host". Symlinks (merged /usr) are copied
 * as symlinks, directories are bound read-only. */
static const char *const host_dirs[] = {"/usr",	  "/bin",   "/sbin",  "/lib",
					"/lib32", "/lib64", "/libx32"};

/* Host /etc entries the programs need (dynamic loader, alternatives, TLS
 * roots, Python's config, locale/time data). Nothing with secrets:
 * not shadow, not ssl/private, not the host's passwd. */
static const char *const host_etc[] = {
	"alternatives",
	"ld.so.cache",
	"ld.so.conf",
	"ld.so.conf.d",
	"localtime",
	"ssl/certs",
	"ssl/openssl.cnf",
	"ca-certificates",
	"python3",
	"python3.11",
	"nsswitch.conf",
	"host.conf",
	"mime.types",
	"protocols",
	"services",
	"bash.bashrc",
	"profile",
	"inputrc",
	"gai.conf",
	"locale.alias",
	"terminfo",
	"magic",
	"perl",
};

struct gen_file {
	const char *path;
	const char *text;
};

static const struct gen_file etc_files[] = {
	{"passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n"
		   "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n"
		   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
	{"group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"},
	{"hostname", "hutch\n"},
	{"hosts", "127.0.0.1\tlocalhost hutch\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
	{"resolv.conf", "# no network: hutch --net none\n"},
};

/* procfs entries that leak host state or change it (Docker's masked and
 * read-only paths, moby/moby oci/defaults.go). */
static const char *const proc_readonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
static const char *const proc_masked_files[] = {"kcore",       "keys",		"timer_list",
						"sched_debug", "latency_stats", "kmsg",
						"key-users",   "kpageflags",	"kpagecount"};
static const char *const proc_masked_dirs[] = {"acpi", "scsi", "asound", "driver"};

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

#define PATHBUF 512

static int path_join(char *out, const char *a, const char *b, struct hutch_err *err)
{
	int n = snprintf(out, PATHBUF, "%s/%s", a, b);

	if (n < 0 || n >= PATHBUF)
		return hutch_err_setx(err, ENAMETOOLONG, "path '%s/%s' too long", a, b);
	return 0;
}

/* Bind src on dst with the given MOUNT_ATTR_* set, through the new mount API
 * so that `recursive` binds get the attributes on every submount too. */
static int bind_with_attr(const char *src, const char *dst, uint64_t attr, bool recursive,
			  struct hutch_err *err)
{
	struct mount_attr ma = {.attr_set = attr};
	unsigned int rec = recursive ? AT_RECURSIVE : 0;
	int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec);

	if (fd < 0)
		return hutch_err_set(err, errno, "open_tree '%s'", src);
	if (attr && mount_setattr(fd, "", AT_EMPTY_PATH | rec, &ma, sizeof(ma)) < 0) {
		hutch_err_set(err, errno, "mount_setattr '%s'", src);
		close(fd);
		return -1;
	}
	if (move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		hutch_err_set(err, errno, "bind '%s' on '%s'", src, dst);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

#define RO_ATTR (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

static int make_file(const char *path, const char *text, mode_t mode, struct hutch_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	size_t len = text ? strlen(text) : 0;

	if (fd < 0)
		return hutch_err_set(err, errno, "create '%s'", path);
	if (len && write(fd, text, len) != (ssize_t)len) {
		hutch_err_set(err, errno, "write '%s'", path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int make_dir(const char *path, mode_t mode, struct hutch_err *err)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return hutch_err_set(err, errno, "mkdir '%s'", path);
	return 0;
}

/* Make a mount point for src at dst: a directory or an empty file. */
static int make_mount_point(const char *src, const char *dst, struct hutch_err *err)
{
	struct stat st;

	if (stat(src, &st) < 0)
		return hutch_err_set(err, errno, "stat '%s'", src);
	if (S_ISDIR(st.st_mode))
		return make_dir(dst, 0755, err);
	return make_file(dst, NULL, 0644, err);
}

static int setup_host_dirs(struct hutch_err *err)
{
	char dst[PATHBUF];
	char target[PATHBUF];
	struct stat st;

	for (size_t i = 0; i < sizeof(host_dirs) / sizeof(host_dirs[0]); i++) {
		if (lstat(host_dirs[i], &st) < 0)
			continue;
		if (path_join(dst, NEWROOT, host_dirs[i] + 1, err) < 0)
			return -1;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(host_dirs[i], target, sizeof(target) - 1);
			if (n < 0)
				return hutch_err_set(err, errno, "readlink '%s'", host_dirs[i]);
			target[n] = '\0';
			if (symlink(target, dst) < 0)
				return hutch_err_set(err, errno, "symlink '%s'", dst);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		if (make_dir(dst, 0755, err) < 0 ||
		    bind_with_attr(host_dirs[i], dst, RO_ATTR, true, err) < 0)
			return -1;
	}
	return 0;
}

static int setup_etc(struct hutch_err *err)
{
	char dst[PATHBUF];
	char src[PATHBUF];

	if (make_dir(NEWROOT "/etc", 0755, err) < 0 || make_dir(NEWROOT "/etc/ssl", 0755, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++) {
		if (path_join(dst, NEWROOT "/etc", etc_files[i].path, err) < 0 ||
		    make_file(dst, etc_files[i].text, 0644, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(host_etc) / sizeof(host_etc[0]); i++) {
		if (path_join(src, "/etc", host_etc[i], err) < 0 ||
		    path_join(dst, NEWROOT "/etc", host_etc[i], err) < 0)
			return -1;
		if (access(src, F_OK) < 0)
			continue;
		if (make_mount_point(src, dst, err) < 0 ||
		    bind_with_attr(src, dst, RO_ATTR, true, err) < 0)
			return -1;
	}
	return 0;
}

static int setup_proc(struct hutch_err *err)
{
	char path[PATHBUF];

	if (make_dir(NEWROOT "/proc", 0555, err) < 0)
		return -1;
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return hutch_err_set(err, errno, "mount proc");
	for (size_t i = 0; i < sizeof(proc_readonly) / sizeof(proc_readonly[0]); i++) {
		if (path_join(path, NEWROOT "/proc", proc_readonly[i], err) < 0)
			return -1;
		if (access(path, F_OK) == 0 && bind_with_attr(path, path, RO_ATTR, true, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(proc_masked_files) / sizeof(proc_masked_files[0]); i++) {
		if (path_join(path, NEWROOT "/proc", proc_masked_files[i], err) < 0)
			return -1;
		/* /dev/null (a device: no MOUNT_ATTR_NODEV) reads as empty */
		if (access(path, F_OK) == 0 &&
		    bind_with_attr("/dev/null", path,
				   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false,
				   err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(proc_masked_dirs) / sizeof(proc_masked_dirs[0]); i++) {
		if (path_join(path, NEWROOT "/proc", proc_masked_dirs[i], err) < 0)
			return -1;
		if (access(path, F_OK) == 0 &&
		    mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=0,mode=0555") < 0)
			return hutch_err_set(err, errno, "mask '%s'", path);
	}
	return 0;
}

static int setup_dev(struct hutch_err *err)
{
	static const char *const links[][2] = {{"ptmx", "pts/ptmx"},
					       {"fd", "/proc/self/fd"},
					       {"stdin", "/proc/self/fd/0"},
					       {"stdout", "/proc/self/fd/1"},
					       {"stderr", "/proc/self/fd/2"}};
	char src[PATHBUF];
	char dst[PATHBUF];

	if (make_dir(NEWROOT "/dev", 0755, err) < 0)
		return -1;
	if (mount("tmpfs", NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") <
	    0)
		return hutch_err_set(err, errno, "mount tmpfs on /dev");
	for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		if (path_join(src, "/dev", dev_nodes[i], err) < 0 ||
		    path_join(dst, NEWROOT "/dev", dev_nodes[i], err) < 0)
			return -1;
		/* Bound from the host: a user namespace may not mknod, and a
		 * bind keeps the device usable while the tmpfs stays nodev-free
		 * of anything else (no other node can be created: no CAP_MKNOD). */
		if (make_file(dst, NULL, 0666, err) < 0 ||
		    bind_with_attr(src, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, err) < 0)
			return -1;
	}
	if (make_dir(NEWROOT "/dev/pts", 0755, err) < 0 ||
	    make_dir(NEWROOT "/dev/shm", 01777, err) < 0)
		return -1;
	/* A private devpts instance: the host's terminals are not reachable. */
	if (mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=620") < 0)
		return hutch_err_set(err, errno, "mount devpts");
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (path_join(dst, NEWROOT "/dev", links[i][0], err) < 0)
			return -1;
		if (symlink(links[i][1], dst) < 0)
			return hutch_err_set(err, errno, "symlink '%s'", dst);
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

static int place_file(const char *ws, const struct hutch_file *f, struct hutch_err *err)
{
	const char *rel = workspace_rel(f->path);
	char path[PATHBUF];
	size_t done = 0;
	int fd;

	if (make_parents(ws, rel, err) < 0 || path_join(path, ws, rel, err) < 0)
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

static int setup_writable(const struct hutch_cell_spec *spec, struct hutch_err *err)
{
	char opts[128];
	/* Bound the inode count too: an empty-file bomb would otherwise grow
	 * kernel memory without touching the byte limit. */
	unsigned long long inodes = spec->disk_bytes / 4096;

	if (inodes < 16384)
		inodes = 16384;
	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0755",
		 (unsigned long long)spec->disk_bytes, inodes);
	if (make_dir(STAGING, 0755, err) < 0)
		return -1;
	if (mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return hutch_err_set(err, errno, "mount writable tmpfs (%s)", opts);
	if (make_dir(STAGING "/workspace", 0755, err) < 0 ||
	    make_dir(STAGING "/tmp", 01777, err) < 0 || make_dir(STAGING "/shm", 01777, err) < 0)
		return -1;
	if (chmod(STAGING "/tmp", 01777) < 0 || chmod(STAGING "/shm", 01777) < 0)
		return hutch_err_set(err, errno, "chmod tmp");
	if (chown(STAGING "/workspace", HUTCH_SANDBOX_UID, HUTCH_SANDBOX_GID) < 0)
		return hutch_err_set(err, errno, "chown workspace");
	for (size_t i = 0; i < spec->nfiles; i++)
		if (place_file(STAGING "/workspace", &spec->files[i], err) < 0)
			return -1;
	if (spec->workdir && strcmp(spec->workdir, HUTCH_WORKSPACE) != 0) {
		char rel[PATHBUF];
		int n = snprintf(rel, sizeof(rel), "%s/", workspace_rel(spec->workdir));
		if (n < 0 || n >= PATHBUF)
			return hutch_err_setx(err, ENAMETOOLONG, "workdir too long");
		if (make_parents(STAGING "/workspace", rel, err) < 0)
			return -1;
	}
	if (make_dir(NEWROOT "/workspace", 0755, err) < 0 ||
	    make_dir(NEWROOT "/tmp", 01777, err) < 0)
		return -1;
	if (bind_with_attr(STAGING "/workspace", NEWROOT "/workspace", 0, false, err) < 0 ||
	    bind_with_attr(STAGING "/tmp", NEWROOT "/tmp", 0, false, err) < 0 ||
	    bind_with_attr(STAGING "/shm", NEWROOT "/dev/shm", 0, false, err) < 0)
		return -1;
	return 0;
}

static int setup_misc_dirs(struct hutch_err *err)
{
	if (make_dir(NEWROOT "/var", 0755, err) < 0 || make_dir(NEWROOT "/run", 0755, err) < 0)
		return -1;
	if (symlink("/tmp", NEWROOT "/var/tmp") < 0)
		return hutch_err_set(err, errno, "symlink /var/tmp");
	return 0;
}

static int switch_root(struct hutch_err *err)
{
	if (chdir(NEWROOT) < 0)
		return hutch_err_set(err, errno, "chdir to new root");
	/* pivot_root(".", ".") stacks the old root under the new one; the
	 * detach below drops it, so no path leads back to the host. */
	if (hutch_sys_pivot_root(".", ".") < 0)
		return hutch_err_set(err, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return hutch_err_set(err, errno, "detach old root");
	if (chdir("/") < 0)
		return hutch_err_set(err, errno, "chdir /");
	if (umount2("/.w", MNT_DETACH) < 0)
		return hutch_err_set(err, errno, "detach staging");
	if (rmdir("/.w") < 0)
		return hutch_err_set(err, errno, "remove staging");
	/* The root tmpfs holds only mount points and /etc: make it read-only so
	 * the sandbox can write nowhere but /workspace, /tmp and /dev/shm. */
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
	    0)
		return hutch_err_set(err, errno, "remount / read-only");
	return 0;
}

int hutch_mount_build_root(const struct hutch_cell_spec *spec, struct hutch_err *err)
{
	/* Nothing we mount may propagate back to the host's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return hutch_err_set(err, errno, "make mounts private");
	if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0)
		return hutch_err_set(err, errno, "mount root tmpfs");
	if (setup_host_dirs(err) < 0 || setup_etc(err) < 0 || setup_misc_dirs(err) < 0 ||
	    setup_dev(err) < 0 || setup_proc(err) < 0 || setup_writable(spec, err) < 0)
		return -1;
	return switch_root(err);
}

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cell/cell.h"
#include "cell/layer.h"
#include "cell/mountutil.h"
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
	"matplotlibrc", /* Debian's matplotlib reads its defaults from here */
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
};

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

static int setup_host_dirs(struct hutch_err *err)
{
	char dst[PATHBUF];
	char target[PATHBUF];
	struct stat st;

	for (size_t i = 0; i < sizeof(host_dirs) / sizeof(host_dirs[0]); i++) {
		if (lstat(host_dirs[i], &st) < 0)
			continue;
		if (hutch_path_join(dst, NEWROOT, host_dirs[i] + 1, err) < 0)
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
		if (hutch_make_dir(dst, 0755, err) < 0 ||
		    hutch_bind(host_dirs[i], dst, RO_ATTR, true, err) < 0)
			return -1;
	}
	return 0;
}

/* full: slirp4netns's DNS forwarder; otherwise nothing to ask */
static int setup_resolv_conf(const struct hutch_cell_spec *spec, struct hutch_err *err)
{
	char dst[PATHBUF];

	if (hutch_path_join(dst, NEWROOT "/etc", "resolv.conf", err) < 0)
		return -1;
	return hutch_make_file(dst,
			       spec->net_full
				       ? "# hutch --net full (slirp4netns)\nnameserver 10.0.2.3\n"
				       : "# no name service: hutch --net none or allow:\n",
			       0644, err);
}

static int setup_etc(const struct hutch_cell_spec *spec, struct hutch_err *err)
{
	char dst[PATHBUF];
	char src[PATHBUF];

	if (hutch_make_dir(NEWROOT "/etc", 0755, err) < 0 ||
	    hutch_make_dir(NEWROOT "/etc/ssl", 0755, err) < 0 || setup_resolv_conf(spec, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++) {
		if (hutch_path_join(dst, NEWROOT "/etc", etc_files[i].path, err) < 0 ||
		    hutch_make_file(dst, etc_files[i].text, 0644, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(host_etc) / sizeof(host_etc[0]); i++) {
		if (hutch_path_join(src, "/etc", host_etc[i], err) < 0 ||
		    hutch_path_join(dst, NEWROOT "/etc", host_etc[i], err) < 0)
			return -1;
		if (access(src, F_OK) < 0)
			continue;
		if (hutch_make_mount_point(src, dst, err) < 0 ||
		    hutch_bind(src, dst, RO_ATTR, true, err) < 0)
			return -1;
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

	if (hutch_make_dir(NEWROOT "/dev", 0755, err) < 0)
		return -1;
	if (mount("tmpfs", NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") <
	    0)
		return hutch_err_set(err, errno, "mount tmpfs on /dev");
	for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		if (hutch_path_join(src, "/dev", dev_nodes[i], err) < 0 ||
		    hutch_path_join(dst, NEWROOT "/dev", dev_nodes[i], err) < 0)
			return -1;
		/* Bound from the host: a user namespace may not mknod, and a
		 * bind keeps the device usable while the tmpfs stays nodev-free
		 * of anything else (no other node can be created: no CAP_MKNOD). */
		if (hutch_make_file(dst, NULL, 0666, err) < 0 ||
		    hutch_bind(src, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, err) < 0)
			return -1;
	}
	if (hutch_make_dir(NEWROOT "/dev/pts", 0755, err) < 0 ||
	    hutch_make_dir(NEWROOT "/dev/shm", 01777, err) < 0)
		return -1;
	/* A private devpts instance: the host's terminals are not reachable. */
	if (mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=620") < 0)
		return hutch_err_set(err, errno, "mount devpts");
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (hutch_path_join(dst, NEWROOT "/dev", links[i][0], err) < 0)
			return -1;
		if (symlink(links[i][1], dst) < 0)
			return hutch_err_set(err, errno, "symlink '%s'", dst);
	}
	return 0;
}

static int setup_misc_dirs(struct hutch_err *err)
{
	if (hutch_make_dir(NEWROOT "/var", 0755, err) < 0 ||
	    hutch_make_dir(NEWROOT "/run", 0755, err) < 0)
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

/* A session's host directory on /workspace, over the tmpfs one. It was
 * opened before the root tmpfs hid /tmp, where the directory may live. */
static int bind_workspace(int dirfd, struct hutch_err *err)
{
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	int fd = open_tree(dirfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	int rc = -1;

	if (fd < 0)
		return hutch_err_set(err, errno, "open_tree of the session workspace");
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0)
		hutch_err_set(err, errno, "mount_setattr of the session workspace");
	else if (move_mount(fd, "", AT_FDCWD, NEWROOT "/workspace", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		hutch_err_set(err, errno, "bind the session workspace on /workspace");
	else
		rc = 0;
	close(fd);
	return rc;
}

int hutch_mount_build_root(const struct hutch_cell_spec *spec, struct hutch_err *err)
{
	int workspace = -1;

	if (spec->workspace_dir) {
		workspace =
			open(spec->workspace_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (workspace < 0)
			return hutch_err_set(err, errno, "open workspace '%s'",
					     spec->workspace_dir);
	}
	/* Nothing we mount may propagate back to the host's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return hutch_err_set(err, errno, "make mounts private");
	if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0)
		return hutch_err_set(err, errno, "mount root tmpfs");
	if (setup_host_dirs(err) < 0 || setup_etc(spec, err) < 0 || setup_misc_dirs(err) < 0 ||
	    setup_dev(err) < 0)
		return -1;
	if (hutch_make_dir(NEWROOT "/proc", 0555, err) < 0 ||
	    hutch_layer_proc(NEWROOT "/proc", err) < 0)
		return -1;
	if (hutch_layer_writable(NEWROOT, STAGING, spec->disk_bytes, err) < 0 ||
	    hutch_layer_place(STAGING "/workspace", spec->files, spec->nfiles, spec->workdir, err) <
		    0)
		return -1;
	if (workspace >= 0 && bind_workspace(workspace, err) < 0)
		return -1;
	if (workspace >= 0)
		close(workspace);
	return switch_root(err);
}

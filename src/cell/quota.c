#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/quota.h"
#include "util/err.h"

/*
 * A session workspace with a hard size limit: an ext4 filesystem in a
 * sparse file (so an idle 1 GiB workspace costs well under 1 MiB of disk),
 * on a loop device, mounted on the workspace directory. The host's state
 * directory has no per-directory quota to offer, and a tmpfs would not
 * survive a restart. The mount lives in the daemon's (the host's) mount
 * namespace, so it outlives the daemon; a reboot needs hutch_quota_mount
 * again. No journal: it would cost 32 MiB of real disk per session, and the
 * files API fsyncs what it writes.
 */

static const char *mkfs_path(void)
{
	static const char *const paths[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

bool hutch_quota_available(char *note, size_t note_size)
{
	const char *why = NULL;

	if (geteuid() != 0)
		why = "workspace quota needs root (loop devices); rootless, disk use is reported "
		      "but not capped";
	else if (access("/dev/loop-control", W_OK) < 0)
		why = "workspace quota needs /dev/loop-control; disk use is reported but not "
		      "capped";
	else if (!mkfs_path())
		why = "workspace quota needs mkfs.ext4 (e2fsprogs); disk use is reported but not "
		      "capped";
	if (why && note)
		snprintf(note, note_size, "%s", why);
	return why == NULL;
}

static int run_mkfs(const char *image, uid_t uid, gid_t gid, struct hutch_err *err)
{
	char owner[64];
	char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};
	pid_t pid;
	int status;

	const char *mkfs = mkfs_path();
	if (!mkfs)
		return hutch_err_setx(err, ENOENT, "no mkfs.ext4");
	snprintf(owner, sizeof(owner), "root_owner=%u:%u,nodiscard", (unsigned)uid, (unsigned)gid);
	char *const argv[] = {(char *)mkfs,   "-q", "-F",  "-m",	  "0", "-O",
			      "^has_journal", "-E", owner, (char *)image, NULL};
	int rc = posix_spawn(&pid, argv[0], NULL, NULL, argv, envp);
	if (rc != 0)
		return hutch_err_set(err, rc, "run %s", argv[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return hutch_err_set(err, errno, "wait for mkfs.ext4");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return hutch_err_setx(err, EIO, "mkfs.ext4 failed on '%s' (status %d)", image,
				      status);
	return 0;
}

/* Attach image to a free loop device (detached again automatically once
 * unmounted) and mount it on dir. */
static int attach_and_mount(const char *image, const char *dir, struct hutch_err *err)
{
	int img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	int rc = -1;

	if (img < 0 || ctl < 0) {
		hutch_err_set(err, errno, "open %s", img < 0 ? image : "/dev/loop-control");
		goto out;
	}
	for (int tries = 0; tries < 16; tries++) {
		char dev[32];
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			hutch_err_set(err, errno, "find a free loop device");
			goto out;
		}
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			hutch_err_set(err, errno, "open %s", dev);
			goto out;
		}
		struct loop_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)img;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
			int e = errno;
			close(lfd);
			if (e == EBUSY)
				continue; /* another process took it first */
			hutch_err_set(err, e, "attach '%s' to %s", image, dev);
			goto out;
		}
		if (mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") < 0)
			hutch_err_set(err, errno, "mount %s on '%s'", dev, dir);
		else
			rc = 0;
		close(lfd); /* autoclear: detached when unmounted */
		goto out;
	}
	hutch_err_setx(err, EBUSY, "no free loop device");
out:
	if (img >= 0)
		close(img);
	if (ctl >= 0)
		close(ctl);
	return rc;
}

int hutch_quota_create(const char *image, const char *dir, uint64_t bytes, uid_t uid, gid_t gid,
		       struct hutch_err *err)
{
	int fd = open(image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	char lost[700];

	if (fd < 0)
		return hutch_err_set(err, errno, "create '%s'", image);
	/* ext4 needs a few MiB for its own metadata */
	if (bytes < (8u << 20))
		bytes = 8u << 20;
	if (ftruncate(fd, (off_t)bytes) < 0) {
		hutch_err_set(err, errno, "size '%s'", image);
		close(fd);
		unlink(image);
		return -1;
	}
	close(fd);
	if (run_mkfs(image, uid, gid, err) < 0 || attach_and_mount(image, dir, err) < 0) {
		unlink(image);
		return -1;
	}
	snprintf(lost, sizeof(lost), "%s/lost+found", dir);
	(void)rmdir(lost); /* an empty workspace is empty; fsck recreates it if needed */
	return 0;
}

bool hutch_quota_is_mounted(const char *dir)
{
	char parent[700];
	struct stat a;
	struct stat b;

	snprintf(parent, sizeof(parent), "%s/..", dir);
	return stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

int hutch_quota_mount(const char *image, const char *dir, struct hutch_err *err)
{
	if (hutch_quota_is_mounted(dir))
		return 0; /* the mount outlived the previous daemon */
	return attach_and_mount(image, dir, err);
}

void hutch_quota_unmount(const char *dir)
{
	if (hutch_quota_is_mounted(dir))
		(void)umount2(dir, MNT_DETACH);
}

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cell/cell.h"
#include "util/err.h"

/*
 * Become the sandbox user with no capabilities at all: bounding set emptied
 * (so no execve can regain any, capabilities(7)), ambient set cleared,
 * SECBIT_NOROOT locked (uid 0 would not gain capabilities at execve either),
 * then the uid/gid switch and an explicit capset() to zero for the case of a
 * user namespace, where our uid is already the sandbox uid and the kernel
 * would not clear anything by itself. Child-only; async-signal-safe.
 */
int hutch_caps_drop_all(bool in_userns, struct hutch_err *err)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};

	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return hutch_err_set(err, errno, "drop capability %d from bounding set",
					     cap);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return hutch_err_set(err, errno, "clear ambient capabilities");
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0) < 0)
		return hutch_err_set(err, errno, "set securebits");
	/* Raw syscalls, not glibc's wrappers: these apply the change to every
	 * thread of the process through __nptl_setxid, and after a raw clone()
	 * of a multithreaded supervisor (a daemon's threads, the sessions'
	 * reaper) glibc still lists the parent's other threads, which do not
	 * exist here: the wrapper then waits forever on a futex (seen as a
	 * cell whose init never reaps its program). The kernel calls change
	 * the calling thread, which is the whole cell process.
	 * setgroups() is denied in a user namespace whose setgroups file says
	 * "deny" (we write that, user_namespaces(7)); there are no groups then. */
	if (!in_userns && syscall(SYS_setgroups, 0, NULL) < 0)
		return hutch_err_set(err, errno, "clear supplementary groups");
	if (syscall(SYS_setresgid, HUTCH_SANDBOX_GID, HUTCH_SANDBOX_GID, HUTCH_SANDBOX_GID) < 0)
		return hutch_err_set(err, errno, "setresgid %u", HUTCH_SANDBOX_GID);
	if (syscall(SYS_setresuid, HUTCH_SANDBOX_UID, HUTCH_SANDBOX_UID, HUTCH_SANDBOX_UID) < 0)
		return hutch_err_set(err, errno, "setresuid %u", HUTCH_SANDBOX_UID);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return hutch_err_set(err, errno, "capset to empty");
	/* no_new_privs: setuid binaries and file capabilities grant nothing,
	 * and it is required before an unprivileged seccomp filter. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return hutch_err_set(err, errno, "set no_new_privs");
	return 0;
}

/* For a zygote in a user namespace: its uid there is not 0, so execve would
 * drop every capability (capabilities(7)); carry them over as ambient
 * capabilities instead. They are the user namespace's, not the host's, and
 * every child drops them all (hutch_caps_drop_all clears the ambient set).
 * Child-only; async-signal-safe. */
int hutch_caps_keep_across_exec(struct hutch_err *err)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return hutch_err_set(err, errno, "capget");
	data[0].inheritable = data[0].permitted;
	data[1].inheritable = data[1].permitted;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return hutch_err_set(err, errno, "capset inheritable");
	for (int cap = 0; cap <= 63; cap++) {
		if (!(data[cap / 32].permitted & (1u << (cap % 32))))
			continue;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0 && errno != EINVAL)
			return hutch_err_set(err, errno, "raise ambient capability %d", cap);
	}
	return 0;
}

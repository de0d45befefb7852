#include <errno.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cell/seccomp.h"
#include "sys/linux-compat.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/mem.h"

/*
 * Shape: default allow, with the dangerous surface denied by EPERM (ENOSYS
 * for clone3), in the spirit of Docker's default profile and of the deny
 * list in bubblewrap's and Flatpak's. Every entry says which threat it
 * answers. Non-native architectures (i386 via int 0x80, x32) are killed by
 * libseccomp's bad-arch action, so the table cannot be bypassed through
 * another system call table. See seccomp(2), and Docker's
 * profiles/seccomp/default.json for the reasoning behind most entries.
 */
struct denied {
	const char *name;
	const char *why;
};

static const struct denied denied_calls[] = {
	/* Namespaces are the kernel's biggest attack surface for unprivileged
	 * users (CVE-2022-0185, CVE-2023-32233): no nesting, no joining. */
	{"unshare", "no new namespaces from inside the sandbox"},
	{"setns", "no joining other namespaces"},
	/* Mounting could hide or reveal parts of the tree. */
	{"mount", "the filesystem layout is fixed by the cell"},
	{"umount2", "cannot uncover what the cell masked"},
	{"pivot_root", "the root is fixed"},
	{"chroot", "the root is fixed"},
	{"fsopen", "new mount API: same as mount"},
	{"fsconfig", "new mount API: same as mount"},
	{"fsmount", "new mount API: same as mount"},
	{"fspick", "new mount API: same as mount"},
	{"move_mount", "new mount API: same as mount"},
	{"open_tree", "new mount API: same as mount"},
	{"mount_setattr", "new mount API: could make read-only mounts writable"},
	/* Debugging other processes reads their memory and secrets. */
	{"ptrace", "no tracing: reads and changes other processes"},
	{"process_vm_readv", "reads another process's memory"},
	{"process_vm_writev", "writes another process's memory"},
	{"kcmp", "compares kernel pointers of other processes (info leak)"},
	{"pidfd_getfd", "steals file descriptors from other processes"},
	/* Kernel subsystems with a long CVE history and no use in a sandbox. */
	{"bpf", "eBPF verifier bugs are a frequent escape route"},
	{"perf_event_open", "perf is a frequent escape route and leaks kernel info"},
	{"userfaultfd", "used to win kernel races in exploits"},
	{"io_uring_setup", "io_uring bypasses seccomp per operation; many CVEs"},
	{"io_uring_enter", "io_uring bypasses seccomp per operation; many CVEs"},
	{"io_uring_register", "io_uring bypasses seccomp per operation; many CVEs"},
	{"keyctl", "kernel keyrings are not namespaced"},
	{"add_key", "kernel keyrings are not namespaced"},
	{"request_key", "kernel keyrings are not namespaced"},
	{"fanotify_init", "watches the whole filesystem"},
	{"open_by_handle_at", "opens files by handle, bypassing the mount tree (shocker)"},
	{"name_to_handle_at", "companion of open_by_handle_at"},
	{"lookup_dcookie", "kernel profiling interface"},
	/* Whole-machine state. */
	{"kexec_load", "replaces the running kernel"},
	{"kexec_file_load", "replaces the running kernel"},
	{"init_module", "loads kernel code"},
	{"finit_module", "loads kernel code"},
	{"delete_module", "unloads kernel code"},
	{"swapon", "changes the machine's swap"},
	{"swapoff", "changes the machine's swap"},
	{"reboot", "reboots the machine (or its pid namespace)"},
	{"acct", "process accounting is machine-wide"},
	{"clock_settime", "the clock is not namespaced"},
	{"clock_adjtime", "the clock is not namespaced"},
	{"settimeofday", "the clock is not namespaced"},
	{"adjtimex", "the clock is not namespaced"},
	{"quotactl", "filesystem quotas are machine-wide"},
	{"quotactl_fd", "filesystem quotas are machine-wide"},
	{"syslog", "the kernel log leaks addresses"},
	{"vhangup", "hangs up the terminal of others"},
	{"iopl", "raw port I/O"},
	{"ioperm", "raw port I/O"},
	{"uselib", "obsolete loader interface"},
	{"_sysctl", "obsolete sysctl interface"},
	{"sysfs", "obsolete interface"},
	{"nfsservctl", "obsolete NFS server interface"},
	{NULL, NULL},
};

const char *const hutch_seccomp_denied_names[] = {
	"unshare",
	"setns",
	"mount",
	"umount2",
	"pivot_root",
	"chroot",
	"ptrace",
	"bpf",
	"keyctl",
	"add_key",
	"request_key",
	"perf_event_open",
	"userfaultfd",
	"kexec_load",
	"init_module",
	"finit_module",
	"swapon",
	"reboot",
	"acct",
	"clock_settime",
	"open_by_handle_at",
	"clone3",
	NULL,
};

/* Namespace flags clone() may not carry: same threat as unshare. */
static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,    CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

/* Personality bits that weaken the process (ASLR off, executable data,
 * page 0 mappable); the rest of personality() (e.g. PER_LINUX32) stays. */
static const unsigned long personality_bad_bits[] = {
	0x0040000 /* ADDR_NO_RANDOMIZE */,  0x0100000 /* MMAP_PAGE_ZERO */,
	0x0200000 /* ADDR_COMPAT_LAYOUT */, 0x0400000 /* READ_IMPLIES_EXEC */,
	0x0800000 /* ADDR_LIMIT_32BIT */,
};

static int add_rules(scmp_filter_ctx ctx, struct hutch_err *err)
{
	int rc;

	for (const struct denied *d = denied_calls; d->name; d++) {
		int nr = seccomp_syscall_resolve_name(d->name);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (rc < 0)
			return hutch_err_set(err, -rc, "seccomp rule for '%s'", d->name);
	}
	/* clone3 passes its flags in memory, which seccomp cannot read: answer
	 * ENOSYS so libc falls back to clone(), whose flags we can check. */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (rc < 0)
		return hutch_err_set(err, -rc, "seccomp rule for 'clone3'");
	for (size_t i = 0; i < sizeof(clone_ns_flags) / sizeof(clone_ns_flags[0]); i++) {
		rc = seccomp_rule_add(
			ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]));
		if (rc < 0)
			return hutch_err_set(err, -rc, "seccomp rule for 'clone'");
	}
	for (size_t i = 0; i < sizeof(personality_bad_bits) / sizeof(personality_bad_bits[0]);
	     i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, personality_bad_bits[i],
					      personality_bad_bits[i]));
		if (rc < 0)
			return hutch_err_set(err, -rc, "seccomp rule for 'personality'");
	}
	/* TIOCSTI pushes bytes into a terminal's input queue and TIOCLINUX can
	 * do the same on a virtual console: both type commands into whatever
	 * shell owns the terminal (CVE-2017-5226 in bubblewrap). The request
	 * is an int in the kernel, so compare the low 32 bits only. */
	static const unsigned long tty_injection[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; i < 2; i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, tty_injection[i]));
		if (rc < 0)
			return hutch_err_set(err, -rc, "seccomp rule for 'ioctl'");
	}
	return 0;
}

static int export_bpf(scmp_filter_ctx ctx, struct hutch_seccomp_prog *prog, struct hutch_err *err)
{
	_cleanup_close_ int fd = memfd_create("hutch-seccomp", MFD_CLOEXEC);
	struct stat st;
	int rc;

	if (fd < 0)
		return hutch_err_set(err, errno, "memfd_create");
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return hutch_err_set(err, -rc, "seccomp_export_bpf");
	if (fstat(fd, &st) < 0)
		return hutch_err_set(err, errno, "fstat seccomp program");
	if (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0)
		return hutch_err_setx(err, EINVAL, "seccomp program has odd size %lld",
				      (long long)st.st_size);
	struct sock_filter *filter = hutch_xmalloc((size_t)st.st_size);
	if (pread(fd, filter, (size_t)st.st_size, 0) != st.st_size) {
		free(filter);
		return hutch_err_set(err, EIO, "read seccomp program");
	}
	prog->fprog.len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	prog->fprog.filter = filter;
	return 0;
}

static struct hutch_seccomp_prog profile;
static struct hutch_err profile_err;
static int profile_rc = -1;
static pthread_once_t profile_once = PTHREAD_ONCE_INIT;

static void compile_profile(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx) {
		hutch_err_setx(&profile_err, ENOMEM, "seccomp_init failed");
		return;
	}
	if (add_rules(ctx, &profile_err) == 0 && export_bpf(ctx, &profile, &profile_err) == 0)
		profile_rc = 0;
	seccomp_release(ctx);
}

const struct hutch_seccomp_prog *hutch_seccomp_profile(struct hutch_err *err)
{
	pthread_once(&profile_once, compile_profile);
	if (profile_rc < 0) {
		if (err)
			*err = profile_err;
		return NULL;
	}
	return &profile;
}

/* The connect watch: connect(), and sendto() with a destination (a datagram
 * to an address; plain send() is sendto with NULL and stays out), go to the
 * supervisor, which logs them and answers. Everything else passes. */
static struct hutch_seccomp_prog watch;
static struct hutch_err watch_err;
static int watch_rc = -1;
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

static void compile_watch(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx) {
		hutch_err_setx(&watch_err, ENOMEM, "seccomp_init failed");
		return;
	}
	rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1,
				      SCMP_A4(SCMP_CMP_NE, 0));
	if (rc < 0)
		hutch_err_set(&watch_err, -rc, "seccomp notify rule");
	else if (export_bpf(ctx, &watch, &watch_err) == 0)
		watch_rc = 0;
	seccomp_release(ctx);
}

const struct hutch_seccomp_prog *hutch_seccomp_connwatch(struct hutch_err *err)
{
	pthread_once(&watch_once, compile_watch);
	if (watch_rc < 0) {
		if (err)
			*err = watch_err;
		return NULL;
	}
	return &watch;
}

int hutch_seccomp_load_listener(const struct hutch_seccomp_prog *prog, struct hutch_err *err)
{
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog->fprog);

	if (fd < 0)
		return hutch_err_set(err, errno, "load the connect watch filter");
	return (int)fd;
}

int hutch_seccomp_load(const struct hutch_seccomp_prog *prog, struct hutch_err *err)
{
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog->fprog, 0, 0) < 0)
		return hutch_err_set(err, errno, "load seccomp filter");
	return 0;
}

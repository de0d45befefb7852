/* probe: a static, unsanitized program run inside (and outside) sandboxes by
 * the attacker-side tests. Each subcommand tries one thing and prints a
 * one-word outcome ("OK" or the errno name), so tests assert on output and
 * not on tools the root filesystem may lack (crun tests/init.c, bubblewrap
 * tests/try-syscall.c).
 *
 *   probe syscall NAME        call NAME with harmless/bad arguments
 *   probe read PATH           print the file's contents, or the errno name
 *   probe write PATH          create/append PATH; OK or errno name
 *   probe exists PATH         OK if lstat succeeds
 *   probe ls DIR              one name per line
 *   probe id | caps | env | fds | hostname
 *   probe tcp IP PORT         connect; OK or errno name
 *   probe abstract NAME       connect to an abstract unix socket
 *   probe kill PID            kill(PID, 0); OK or errno name
 *   probe ptrace PID          PTRACE_ATTACH
 *   probe memhog MB           allocate and touch MB MiB, then print OK
 *   probe forkbomb            fork until it fails; print the first errno
 *   probe fill PATH           write to PATH until it fails; print errno name
 *   probe daemon              setsid, close fds, sleep forever in the background
 *   probe flood               write to stdout forever
 *   probe spin                burn CPU forever, ignoring SIGTERM
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int report(long rc)
{
	if (rc < 0) {
		const char *name = strerrorname_np(errno);
		printf("%s\n", name ? name : "E?");
		return 1;
	}
	printf("OK\n");
	return 0;
}

struct call {
	const char *name;
	long (*fn)(void);
};

static long c_unshare(void)
{
	return unshare(CLONE_NEWUSER);
}
static long c_unshare_ns(void)
{
	return unshare(CLONE_NEWNS);
}
static long c_setns(void)
{
	return setns(0, 0);
}
static long c_mount(void)
{
	return mount("none", "/tmp", "tmpfs", 0, NULL);
}
static long c_umount(void)
{
	return umount2("/proc", MNT_DETACH);
}
static long c_pivot_root(void)
{
	return syscall(SYS_pivot_root, "/tmp", "/tmp");
}
static long c_chroot(void)
{
	return chroot("/tmp");
}
static long c_ptrace(void)
{
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}
static long c_bpf(void)
{
	return syscall(SYS_bpf, BPF_PROG_LOAD, NULL, 0);
}
static long c_keyctl(void)
{
	return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0);
}
static long c_add_key(void)
{
	return syscall(SYS_add_key, "user", "x", "y", 1, -3);
}
static long c_perf(void)
{
	return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
}
static long c_userfaultfd(void)
{
	return syscall(SYS_userfaultfd, 0);
}
static long c_kexec(void)
{
	return syscall(SYS_kexec_load, 0, 0, NULL, 0);
}
static long c_init_module(void)
{
	return syscall(SYS_init_module, NULL, 0, "");
}
static long c_swapon(void)
{
	return syscall(SYS_swapon, "/nonexistent", 0);
}
static long c_reboot(void)
{
	return syscall(SYS_reboot, 0, 0, 0, NULL);
}
static long c_acct(void)
{
	return syscall(SYS_acct, NULL);
}
static long c_settime(void)
{
	struct timespec ts = {0, 0};
	return syscall(SYS_clock_settime, CLOCK_REALTIME, &ts);
}
static long c_open_by_handle(void)
{
	return syscall(SYS_open_by_handle_at, -1, NULL, 0);
}
static long c_personality(void)
{
	return syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */);
}
static long c_tiocsti(void)
{
	char c = 'x';
	return ioctl(0, 0x5412 /* TIOCSTI */, &c);
}
static long c_clone_newuser(void)
{
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return pid;
}
static long c_clone3(void)
{
	return syscall(SYS_clone3, NULL, 0);
}
static long c_io_uring(void)
{
	return syscall(SYS_io_uring_setup, 1, NULL);
}
static long c_mknod(void)
{
	return mknod("/tmp/probe-dev", S_IFCHR | 0600, makedev(1, 3));
}
static long c_getpid(void)
{
	return getpid() > 0 ? 0 : -1;
}

static const struct call calls[] = {
	{"unshare", c_unshare},
	{"unshare-mount", c_unshare_ns},
	{"setns", c_setns},
	{"mount", c_mount},
	{"umount", c_umount},
	{"pivot_root", c_pivot_root},
	{"chroot", c_chroot},
	{"ptrace", c_ptrace},
	{"bpf", c_bpf},
	{"keyctl", c_keyctl},
	{"add_key", c_add_key},
	{"perf_event_open", c_perf},
	{"userfaultfd", c_userfaultfd},
	{"kexec_load", c_kexec},
	{"init_module", c_init_module},
	{"swapon", c_swapon},
	{"reboot", c_reboot},
	{"acct", c_acct},
	{"clock_settime", c_settime},
	{"open_by_handle_at", c_open_by_handle},
	{"personality", c_personality},
	{"tiocsti", c_tiocsti},
	{"clone-newuser", c_clone_newuser},
	{"clone3", c_clone3},
	{"io_uring_setup", c_io_uring},
	{"mknod", c_mknod},
	{"getpid", c_getpid},
	{NULL, NULL},
};

static int do_syscall(const char *name)
{
	for (const struct call *c = calls; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return report(c->fn());
	fprintf(stderr, "probe: unknown syscall '%s'\n", name);
	return 2;
}

static int do_read(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return report(-1);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	if (n < 0)
		return report(-1);
	close(fd);
	return 0;
}

static int do_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, "probe\n", 6) != 6)
		return report(-1);
	close(fd);
	return report(0);
}

static int do_ls(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d)
		return report(-1);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			printf("%s\n", e->d_name);
	closedir(d);
	return 0;
}

static int do_caps(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return report(-1);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Cap", 3) == 0 || strncmp(line, "NoNewPrivs", 10) == 0 ||
		    strncmp(line, "Seccomp:", 8) == 0)
			fputs(line, stdout);
	fclose(f);
	return 0;
}

static int do_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return report(-1);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			printf("%s\n", e->d_name);
	closedir(d);
	return 0;
}

static int do_tcp(const char *ip, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return report(-1);
	return report(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
}

static int do_abstract(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	size_t n = strlen(name);

	if (fd < 0 || n + 1 > sizeof(sa.sun_path))
		return report(-1);
	memcpy(sa.sun_path + 1, name, n);
	return report(
		connect(fd, (struct sockaddr *)&sa, (socklen_t)(sizeof(sa.sun_family) + 1 + n)));
}

static int do_memhog(const char *mb)
{
	size_t n = (size_t)atol(mb) << 20;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return report(-1);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	return report(0);
}

static int do_forkbomb(void)
{
	for (int i = 0; i < 100000; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return report(-1);
		if (pid == 0) {
			pause();
			_exit(0);
		}
	}
	printf("NOLIMIT\n");
	return 1;
}

static int do_fill(const char *path)
{
	static char buf[1 << 16];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return report(-1);
	memset(buf, 'x', sizeof(buf));
	for (;;) {
		if (write(fd, buf, sizeof(buf)) < 0)
			return report(-1);
	}
}

static int do_daemon(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return report(-1);
	if (pid == 0) {
		setsid();
		if (fork() > 0)
			_exit(0);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
		for (;;)
			pause();
	}
	waitpid(pid, NULL, 0);
	return report(0);
}

static int do_flood(void)
{
	static char buf[1 << 16];

	memset(buf, 'y', sizeof(buf));
	for (;;)
		if (write(1, buf, sizeof(buf)) < 0)
			return 1;
}

static int do_spin(void)
{
	signal(SIGTERM, SIG_IGN);
	for (volatile unsigned long i = 0;; i++)
		;
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "";
	const char *b = argc > 3 ? argv[3] : "";
	struct utsname u;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(cmd, "syscall"))
		return do_syscall(a);
	if (!strcmp(cmd, "read"))
		return do_read(a);
	if (!strcmp(cmd, "write"))
		return do_write(a);
	if (!strcmp(cmd, "exists")) {
		struct stat st;
		return report(lstat(a, &st));
	}
	if (!strcmp(cmd, "ls"))
		return do_ls(a);
	if (!strcmp(cmd, "id"))
		return printf("uid=%d gid=%d euid=%d\n", getuid(), getgid(), geteuid()) < 0;
	if (!strcmp(cmd, "caps"))
		return do_caps();
	if (!strcmp(cmd, "env")) {
		for (char **e = environ; *e; e++)
			printf("%s\n", *e);
		return 0;
	}
	if (!strcmp(cmd, "fds"))
		return do_fds();
	if (!strcmp(cmd, "hostname"))
		return uname(&u) < 0 ? report(-1) : printf("%s\n", u.nodename) < 0;
	if (!strcmp(cmd, "tcp"))
		return do_tcp(a, b);
	if (!strcmp(cmd, "abstract"))
		return do_abstract(a);
	if (!strcmp(cmd, "kill"))
		return report(kill(atoi(a), 0));
	if (!strcmp(cmd, "ptrace"))
		return report(ptrace(PTRACE_ATTACH, atoi(a), NULL, NULL));
	if (!strcmp(cmd, "memhog"))
		return do_memhog(a);
	if (!strcmp(cmd, "forkbomb"))
		return do_forkbomb();
	if (!strcmp(cmd, "fill"))
		return do_fill(a);
	if (!strcmp(cmd, "daemon"))
		return do_daemon();
	if (!strcmp(cmd, "flood"))
		return do_flood();
	if (!strcmp(cmd, "spin"))
		return do_spin();
	fprintf(stderr, "usage: probe syscall|read|write|exists|ls|id|caps|env|fds|hostname|tcp|"
			"abstract|kill|ptrace|memhog|forkbomb|fill|daemon|flood|spin ...\n");
	return 2;
}

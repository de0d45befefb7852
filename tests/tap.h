/* A tiny TAP harness for unit tests (libuv task.h/runner.c in spirit).
 *
 * Each case runs in a forked child under alarm(), so a crash or a hang fails
 * that case, not the file. A case passes by returning; fails through an
 * ASSERT (file:line and both operands printed as a TAP diagnostic); skips
 * with SKIP("reason"), which fails instead when HUTCH_TEST_MUST_RUN=1 (CI).
 *
 *	static void test_parse_size_suffixes(void) { ... ASSERT_EQ(v, 1024); }
 *	static const struct tap_case cases[] = {
 *		TAP_CASE(test_parse_size_suffixes),
 *		TAP_END,
 *	};
 *	TAP_MAIN(cases)
 */
#ifndef HUTCH_TESTS_TAP_H
#define HUTCH_TESTS_TAP_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct tap_case {
	const char *name;
	void (*fn)(void);
};

#define TAP_CASE(fn)                                                                               \
	{                                                                                          \
#fn, fn                                                                            \
	}
#define TAP_END                                                                                    \
	{                                                                                          \
		NULL, NULL                                                                         \
	}
#define TAP_SKIP_EXIT 77

static int tap_skip_fd = -1;

#define TAP_FAIL(...)                                                                              \
	do {                                                                                       \
		fprintf(stderr, "# %s:%d: ", __FILE__, __LINE__);                                  \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

#define ASSERT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond))                                                                       \
			TAP_FAIL("assertion failed: %s", #cond);                                   \
	} while (0)

#define ASSERT_EQ(a, b)                                                                            \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b)                                                                      \
			TAP_FAIL("%s == %s: %lld != %lld", #a, #b, _a, _b);                        \
	} while (0)

#define ASSERT_NE(a, b)                                                                            \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a == _b)                                                                      \
			TAP_FAIL("%s != %s: both %lld", #a, #b, _a);                               \
	} while (0)

#define ASSERT_STREQ(a, b)                                                                         \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b) != 0)                                             \
			TAP_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)",         \
				 _b ? _b : "(null)");                                              \
	} while (0)

#define ASSERT_CONTAINS(hay, needle)                                                               \
	do {                                                                                       \
		const char *_h = (hay), *_n = (needle);                                            \
		if (!_h || !strstr(_h, _n))                                                        \
			TAP_FAIL("\"%s\" does not contain \"%s\"", _h ? _h : "(null)", _n);        \
	} while (0)

#define ASSERT_OK(expr) ASSERT_EQ((expr), 0)

/* expr returned -1 and filled struct hutch_err `e` with errno value `code` */
#define ASSERT_ERR(expr, e, want)                                                                  \
	do {                                                                                       \
		long long _r = (long long)(expr);                                                  \
		if (_r != -1 || (e).code != (want))                                                \
			TAP_FAIL("%s: rc %lld code %d (%s), want -1 and %d", #expr, _r, (e).code,  \
				 (e).msg, (want));                                                 \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		dprintf(tap_skip_fd, __VA_ARGS__);                                                 \
		exit(TAP_SKIP_EXIT);                                                               \
	} while (0)

static int tap_run_one(const struct tap_case *c, int n, int must_run)
{
	char reason[256] = "";
	int fds[2];
	int status = 0;
	pid_t pid;

	fflush(stdout);
	if (pipe(fds) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		tap_skip_fd = fds[1];
		alarm(30);
		c->fn();
		exit(0);
	}
	close(fds[1]);
	ssize_t r = read(fds[0], reason, sizeof(reason) - 1);
	reason[r > 0 ? r : 0] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("ok %d - %s\n", n, c->name);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == TAP_SKIP_EXIT) {
		if (must_run) {
			printf("not ok %d - %s # skipped but HUTCH_TEST_MUST_RUN=1: %s\n", n,
			       c->name, reason);
			return 1;
		}
		printf("ok %d - %s # SKIP %s\n", n, c->name, reason);
		return 0;
	}
	if (WIFSIGNALED(status))
		printf("# killed by signal %d%s\n", WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
	printf("not ok %d - %s\n", n, c->name);
	return 1;
}

static inline int tap_run(const struct tap_case *cases)
{
	const char *mr = getenv("HUTCH_TEST_MUST_RUN");
	int must_run = mr && strcmp(mr, "1") == 0;
	const char *only = getenv("TAP_ONLY");
	int n = 0;
	int failed = 0;

	for (const struct tap_case *c = cases; c->name; c++)
		n++;
	printf("1..%d\n", n);
	n = 0;
	for (const struct tap_case *c = cases; c->name; c++) {
		n++;
		if (only && !strstr(c->name, only)) {
			printf("ok %d - %s # SKIP not selected by TAP_ONLY\n", n, c->name);
			continue;
		}
		failed += tap_run_one(c, n, must_run);
	}
	return failed ? 1 : 0;
}

#define TAP_MAIN(cases)                                                                            \
	int main(void)                                                                             \
	{                                                                                          \
		return tap_run(cases);                                                             \
	}

#endif

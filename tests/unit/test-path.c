/* Unit tests for src/run/path.c: paths users give for files and workdirs. */
#include <errno.h>

#include "tap.h"
#include "run/path.h"

static void path_ok(const char *in, int allow_root, const char *want)
{
	struct hutch_err err = {0};
	char out[1100];

	memset(out, 'X', sizeof(out));
	if (hutch_sandbox_path(in, out, sizeof(out), allow_root, &err) != 0)
		TAP_FAIL("'%s' (allow_root %d) rejected: %s", in, allow_root, err.msg);
	ASSERT_STREQ(out, want);
}

static void path_fails(const char *in, int allow_root, int code)
{
	struct hutch_err err = {0};
	char out[1100] = "untouched";

	if (hutch_sandbox_path(in, out, sizeof(out), allow_root, &err) != -1)
		TAP_FAIL("'%s' (allow_root %d) accepted as '%s'", in ? in : "(null)", allow_root,
			 out);
	if (err.code != code)
		TAP_FAIL("'%s': code %d (%s), want %d", in ? in : "(null)", err.code, err.msg,
			 code);
	ASSERT(err.msg[0] != '\0');
}

static void test_path_accepts_relative(void)
{
	path_ok("a", 0, "/workspace/a");
	path_ok("a/b", 0, "/workspace/a/b");
	path_ok("main.py", 0, "/workspace/main.py");
	path_ok("dir.d/.hidden/..x/x..", 0, "/workspace/dir.d/.hidden/..x/x..");
	path_ok("sp ace/caf\xc3\xa9", 0, "/workspace/sp ace/caf\xc3\xa9");
}

static void test_path_accepts_workspace_absolute(void)
{
	path_ok("/workspace/a", 0, "/workspace/a");
	path_ok("/workspace/a/b/c", 0, "/workspace/a/b/c");
	path_ok("/workspace/workspace", 0, "/workspace/workspace");
}

static void test_path_rejects_empty(void)
{
	path_fails(NULL, 0, EINVAL);
	path_fails("", 0, EINVAL);
	path_fails("", 1, EINVAL);
}

static void test_path_rejects_dot_components(void)
{
	path_fails("..", 0, EINVAL);
	path_fails(".", 0, EINVAL);
	path_fails("./a", 0, EINVAL);
	path_fails("../a", 0, EINVAL);
	path_fails("a/../b", 0, EINVAL);
	path_fails("a/./b", 0, EINVAL);
	path_fails("a/..", 0, EINVAL);
	path_fails("a/.", 0, EINVAL);
	path_fails("/workspace/..", 0, EINVAL);
	path_fails("/workspace/../etc/passwd", 0, EINVAL);
	path_fails("/workspace/./a", 0, EINVAL);
	path_fails("..", 1, EINVAL);
	path_fails(".", 1, EINVAL);
	path_fails("a/../..", 1, EINVAL);
}

static void test_path_rejects_outside_workspace(void)
{
	path_fails("/etc/passwd", 0, EINVAL);
	path_fails("/", 0, EINVAL);
	path_fails("/", 1, EINVAL);
	path_fails("/workspacex/a", 0, EINVAL);
	path_fails("/workspacex", 1, EINVAL);
	path_fails("/work", 1, EINVAL);
	path_fails("//workspace/a", 0, EINVAL);
	path_fails("/tmp/a", 1, EINVAL);
	path_fails("/Workspace/a", 0, EINVAL);
}

static void test_path_rejects_empty_components(void)
{
	path_fails("a//b", 0, EINVAL);
	path_fails("/workspace//a", 0, EINVAL);
	path_fails("a//", 1, EINVAL);
	path_fails("a/b//", 1, EINVAL);
	path_fails("/workspace//", 1, EINVAL);
}

static void test_path_rejects_trailing_slash_for_files(void)
{
	path_fails("a/", 0, EINVAL);
	path_fails("/workspace/a/", 0, EINVAL);
	path_fails("/workspace", 0, EINVAL);
	path_fails("/workspace/", 0, EINVAL);
}

static void test_path_workdir_allow_root(void)
{
	path_ok("/workspace", 1, "/workspace");
	path_ok("/workspace/", 1, "/workspace");
	path_ok("a/", 1, "/workspace/a");
	path_ok("/workspace/a/b/", 1, "/workspace/a/b");
	path_ok("a/b", 1, "/workspace/a/b");
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	ASSERT(s != NULL);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void test_path_rejects_long_names(void)
{
	char *name = repeat('n', 255);
	char want[300];

	snprintf(want, sizeof(want), "/workspace/%s", name);
	path_ok(name, 0, want);
	free(name);

	name = repeat('n', 256);
	path_fails(name, 0, ENAMETOOLONG);
	/* two components of 100 and 155 bytes are fine */
	name[100] = '/';
	snprintf(want, sizeof(want), "/workspace/%s", name);
	path_ok(name, 0, want);
	free(name);
}

static void test_path_rejects_long_paths(void)
{
	/* 1024 bytes in all is the most: "a/a/.../a" */
	char *p = repeat('a', 1024);
	char *want = malloc(1100);

	for (size_t i = 1; i < 1024; i += 2)
		p[i] = '/';
	p[1023] = 'a';
	snprintf(want, 1100, "/workspace/%s", p);
	path_ok(p, 0, want);
	free(p);
	p = repeat('a', 1025);
	for (size_t i = 1; i < 1025; i += 2)
		p[i] = '/';
	path_fails(p, 0, ENAMETOOLONG);
	free(p);
	free(want);
}

/* The limit counts what is under /workspace, so both spellings of a path
 * agree and a normalised path is accepted again as it is. */
static void test_path_long_absolute_and_relative_agree(void)
{
	struct hutch_err err = {0};
	char *rel = repeat('a', 1024);
	char abs[1100];
	char out[1100];
	char again[1100];

	for (size_t i = 1; i < 1024; i += 2)
		rel[i] = '/';
	rel[1023] = 'a';
	snprintf(abs, sizeof(abs), "/workspace/%s", rel);
	ASSERT_OK(hutch_sandbox_path(rel, out, sizeof(out), 0, &err));
	ASSERT_STREQ(out, abs);
	ASSERT_OK(hutch_sandbox_path(out, again, sizeof(again), 0, &err));
	ASSERT_STREQ(again, abs);
	free(rel);
	rel = repeat('a', 1025);
	for (size_t i = 1; i < 1025; i += 2)
		rel[i] = '/';
	snprintf(abs, sizeof(abs), "/workspace/%s", rel);
	ASSERT_ERR(hutch_sandbox_path(rel, out, sizeof(out), 0, &err), err, ENAMETOOLONG);
	ASSERT_ERR(hutch_sandbox_path(abs, out, sizeof(out), 0, &err), err, ENAMETOOLONG);
	free(rel);
}

static void test_path_small_out_buffer(void)
{
	struct hutch_err err = {0};
	char out[16];

	ASSERT_OK(hutch_sandbox_path("abcd", out, sizeof(out), 0, &err));
	ASSERT_STREQ(out, "/workspace/abcd");
	ASSERT_ERR(hutch_sandbox_path("abcde", out, sizeof(out), 0, &err), err, ENAMETOOLONG);
}

static void test_path_err_names_the_path(void)
{
	struct hutch_err err = {0};
	char out[64];

	ASSERT_ERR(hutch_sandbox_path("/etc/passwd", out, sizeof(out), 0, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "/etc/passwd");
	ASSERT_ERR(hutch_sandbox_path("a/../b", out, sizeof(out), 0, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "a/../b");
	/* err may be NULL */
	ASSERT_EQ(hutch_sandbox_path("..", out, sizeof(out), 0, NULL), -1);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_path_accepts_relative),
	TAP_CASE(test_path_accepts_workspace_absolute),
	TAP_CASE(test_path_rejects_empty),
	TAP_CASE(test_path_rejects_dot_components),
	TAP_CASE(test_path_rejects_outside_workspace),
	TAP_CASE(test_path_rejects_empty_components),
	TAP_CASE(test_path_rejects_trailing_slash_for_files),
	TAP_CASE(test_path_workdir_allow_root),
	TAP_CASE(test_path_rejects_long_names),
	TAP_CASE(test_path_rejects_long_paths),
	TAP_CASE(test_path_long_absolute_and_relative_agree),
	TAP_CASE(test_path_small_out_buffer),
	TAP_CASE(test_path_err_names_the_path),
	TAP_END,
};

TAP_MAIN(cases)

/* The public C API end to end: hutch_run in-process, as an embedder uses it.
 * Needs namespaces (root, or unprivileged user namespaces). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "hutch.h"
#include "tap.h"
#include "util/buf.h"

static void need_sandbox(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	char *argv[] = {"/bin/true", NULL};

	hutch_request_init(&req);
	hutch_request_set_argv(&req, argv);
	ASSERT_OK(hutch_run(&req, NULL, &res, &err));
	if (res.status == HUTCH_STATUS_SANDBOX_ERROR)
		SKIP("cannot create sandboxes here: %s", res.failed_msg);
	hutch_result_release(&res);
	hutch_request_release(&req);
}

static void test_api_runs_python(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	const char *code = "import sys; print(sum(range(1000))); sys.exit(3)";

	need_sandbox();
	hutch_request_init(&req);
	ASSERT_OK(hutch_request_set_code(&req, "python", code, strlen(code)));
	ASSERT_OK(hutch_run(&req, NULL, &res, &err));
	ASSERT_EQ(res.status, HUTCH_STATUS_ERROR);
	ASSERT_EQ(res.exit_code, 3);
	ASSERT_STREQ(res.out.data, "499500\n");
	ASSERT_STREQ(res.path, "cold");
	ASSERT(res.timings.setup_us > 0);
	char *json = hutch_result_to_json(&res);
	ASSERT_CONTAINS(json, "\"exit_code\":3");
	free(json);
	hutch_result_release(&res);
	hutch_request_release(&req);
}

static struct hutch_buf streamed[3];

static void collect(void *ctx, int stream, const char *buf, size_t len)
{
	(void)ctx;
	hutch_buf_append(&streamed[stream], buf, len);
}

static void test_api_hooks_stream_exactly_the_result(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	struct hutch_run_hooks hooks = {collect, NULL};
	char *argv[] = {"sh", "-c", "seq 1 20000; seq 1 50 >&2", NULL};

	need_sandbox();
	hutch_request_init(&req);
	hutch_request_set_argv(&req, argv);
	req.limits.output_bytes = 1000; /* truncates stdout, not stderr */
	ASSERT_OK(hutch_run(&req, &hooks, &res, &err));
	ASSERT_EQ(res.status, HUTCH_STATUS_OK);
	ASSERT(res.out.truncated);
	ASSERT(!res.err.truncated);
	ASSERT_EQ(streamed[1].len, res.out.len);
	ASSERT(memcmp(streamed[1].data, res.out.data, res.out.len) == 0);
	ASSERT_EQ(streamed[2].len, res.err.len);
	ASSERT_CONTAINS(res.out.data, "bytes omitted]");
	hutch_result_release(&res);
	hutch_request_release(&req);
}

static void test_api_invalid_request_is_an_error_not_a_result(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;

	hutch_request_init(&req);
	ASSERT_ERR(hutch_run(&req, NULL, &res, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "nothing to run");
	hutch_request_release(&req);
}

static void test_api_setup_failure_is_sandbox_error(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	char *argv[] = {"/bin/true", NULL};
	struct rlimit old;
	struct rlimit rl;

	need_sandbox();
	hutch_request_init(&req);
	hutch_request_set_argv(&req, argv);
	/* no fd above 3 can be opened: the stdio pipes cannot be made. Only
	 * the soft limit is lowered, so it can be restored (LSan needs fds). */
	ASSERT_OK(getrlimit(RLIMIT_NOFILE, &old));
	rl.rlim_cur = 4;
	rl.rlim_max = old.rlim_max;
	ASSERT_OK(setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_OK(hutch_run(&req, NULL, &res, &err));
	ASSERT_OK(setrlimit(RLIMIT_NOFILE, &old));
	ASSERT_EQ(res.status, HUTCH_STATUS_SANDBOX_ERROR);
	ASSERT(res.failed_step[0] != '\0');
	ASSERT_NE(res.failed_errno, 0);
	ASSERT_EQ(res.exit_code, -1);
	hutch_result_release(&res);
	hutch_request_release(&req);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static void test_api_200_runs_leak_no_fds_or_children(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	char *argv[] = {"/bin/true", NULL};
	int before;

	need_sandbox();
	hutch_request_init(&req);
	hutch_request_set_argv(&req, argv);
	before = count_fds();
	for (int i = 0; i < 200; i++) {
		ASSERT_OK(hutch_run(&req, NULL, &res, &err));
		ASSERT_EQ(res.status, HUTCH_STATUS_OK);
		hutch_result_release(&res);
	}
	ASSERT_EQ(count_fds(), before);
	errno = 0;
	ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1); /* no child left, reaped or not */
	ASSERT_EQ(errno, ECHILD);
	hutch_request_release(&req);
}

static void test_api_in_process_pool_runs_fast(void)
{
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	struct hutch_pool *pool;
	const char *code = "import json; print(json.dumps([1, 2]))";

	need_sandbox();
	if (!getenv("HUTCH_ZYGOTE"))
		setenv("HUTCH_ZYGOTE", "build/hutch-zygote", 1);
	pool = hutch_pool_start("json", 1, 2, &err);
	if (!pool)
		SKIP("no zygote: %s", err.msg);
	hutch_request_init(&req);
	ASSERT_OK(hutch_request_set_code(&req, "python", code, strlen(code)));
	ASSERT(hutch_pool_can_serve(pool, &req));
	for (int i = 0; i < 5; i++) {
		ASSERT_OK(hutch_run_fast(pool, &req, NULL, &res, &err));
		ASSERT_STREQ(res.path, "fast");
		ASSERT_EQ(res.status, HUTCH_STATUS_OK);
		ASSERT_STREQ(res.out.data, "[1, 2]\n");
		hutch_result_release(&res);
	}
	req.limits.disk_bytes = 8 << 20;
	ASSERT(!hutch_pool_can_serve(pool, &req));
	hutch_pool_stop(pool);
	hutch_request_release(&req);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_api_in_process_pool_runs_fast),
	TAP_CASE(test_api_runs_python),
	TAP_CASE(test_api_hooks_stream_exactly_the_result),
	TAP_CASE(test_api_invalid_request_is_an_error_not_a_result),
	TAP_CASE(test_api_setup_failure_is_sandbox_error),
	TAP_CASE(test_api_200_runs_leak_no_fds_or_children),
	TAP_END,
};

TAP_MAIN(cases)

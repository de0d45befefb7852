/* libhutch: run untrusted code in a fresh, isolated Linux sandbox.
 *
 * The two objects every front end speaks are the ExecRequest and the
 * ExecResult (docs/api.md has their JSON form, which is the contract).
 *
 *	struct hutch_exec_request req;
 *	struct hutch_exec_result res;
 *	struct hutch_err err;
 *
 *	hutch_request_init(&req);
 *	hutch_request_set_code(&req, "python", "print(6*7)", 10);
 *	if (hutch_run(&req, NULL, &res, &err) < 0)
 *		fprintf(stderr, "%s\n", err.msg);      // the request was invalid
 *	else
 *		printf("%s", res.out.data);             // "42\n"
 *	hutch_result_release(&res);
 *	hutch_request_release(&req);
 *
 * Ownership: every pointer inside a request or a result is owned by it and
 * freed by the matching _release(). Functions taking a `const` object borrow
 * it. Errors: functions returning int return 0 (or a value >= 0) on success
 * and -1 on failure with `err` filled (errno value plus a one-line message).
 * None of these functions is async-signal-safe.
 */
#ifndef HUTCH_H
#define HUTCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HUTCH_VERSION "0.1.0"

/* An error: an errno value and one line of context. Lives in caller storage. */
struct hutch_err {
	int code;
	char msg[256];
};

/* Defaults, documented in README.md. */
#define HUTCH_DEFAULT_WALL_MS 30000u
#define HUTCH_DEFAULT_MEMORY  (512ull << 20)
#define HUTCH_DEFAULT_PIDS    128u
#define HUTCH_DEFAULT_OUTPUT  (1ull << 20)
#define HUTCH_DEFAULT_DISK    (1ull << 30)
#define HUTCH_DEFAULT_FILE    (1ull << 30)
#define HUTCH_MAX_STDIN	      (64ull << 20)
#define HUTCH_SANDBOX_UID     1000u
#define HUTCH_SANDBOX_GID     1000u
#define HUTCH_WORKSPACE	      "/workspace"

/* Limits of one execution. 0 means "no limit" only for cpu_ms and cpus;
 * the others always have a value (hutch_request_init sets the defaults). */
struct hutch_limits {
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t memory_bytes;
	uint64_t pids;
	uint64_t output_bytes;	 /* per stream */
	uint64_t file_bytes;	 /* largest file the program may write */
	uint64_t disk_bytes;	 /* writable space: /workspace + /tmp together */
	double cpus;		 /* CPU bandwidth in cores (cgroup cpu quota) */
	bool output_kill;	 /* kill the run when output passes the limit */
	uint64_t idle_output_ms; /* stop the run after this long without output; 0: never */
	/* network policy allow: caps per execution (0: the defaults, 256
	 * connections, 256 MiB out, 1 GiB in) */
	uint64_t net_connections;
	uint64_t net_bytes_out;
	uint64_t net_bytes_in;
};

/* A file placed in the sandbox before the program starts. */
struct hutch_file {
	char *path; /* inside the sandbox: relative to /workspace or under it */
	unsigned char *data;
	size_t len;
	unsigned int mode; /* permission bits, e.g. 0644 */
};

struct hutch_exec_request {
	char *language; /* python | node | bash | sh, or NULL when argv is set */
	char **argv;	/* NULL-terminated; the program and its arguments */
	char *code;	/* source for `language`, code_len bytes */
	size_t code_len;
	unsigned char *stdin_data;
	size_t stdin_len;
	struct hutch_file *files;
	size_t nfiles;
	char **env; /* "NAME=value" entries, nenv of them; nothing else enters */
	size_t nenv;
	char *workdir;	     /* default /workspace */
	char *template_name; /* default "host" */
	char *net;	     /* network policy: "none" */
	char *session_id;    /* optional, echoed in ids */
	char **labels;	     /* "key=value", echoed in the result */
	size_t nlabels;
	struct hutch_limits limits;
	bool want_cold; /* force the cold path even when a daemon is up */
	/* net "full": private ranges, metadata and the host's addresses too */
	bool net_allow_private;
};

enum hutch_status {
	HUTCH_STATUS_OK,
	HUTCH_STATUS_ERROR,
	HUTCH_STATUS_TIMEOUT,
	HUTCH_STATUS_OOM,
	HUTCH_STATUS_OUTPUT_LIMIT,
	HUTCH_STATUS_KILLED,
	HUTCH_STATUS_SANDBOX_ERROR,
};

/* Which mechanism enforced a limit. */
enum hutch_mech {
	HUTCH_MECH_NONE,
	HUTCH_MECH_CGROUP_V1,
	HUTCH_MECH_CGROUP_V2,
	HUTCH_MECH_RLIMIT,
	HUTCH_MECH_TMPFS,
	HUTCH_MECH_SUPERVISOR,
	HUTCH_MECH_IMAGE, /* a session workspace: an ext4 image of that size */
};

/* Captured output of one stream. When more than the limit was written,
 * `data` holds the first `head` bytes and the last `tail` bytes, joined by
 * a marker line that states how many bytes were left out. */
struct hutch_output {
	char *data; /* NUL-terminated for convenience; may hold any bytes */
	size_t len;
	uint64_t total; /* bytes the program wrote */
	size_t head;
	size_t tail;
	bool truncated;
};

struct hutch_timings {
	uint64_t acquire_us;  /* get a cell: cgroup, ids */
	uint64_t setup_us;    /* namespaces, mounts, filters, until execve */
	uint64_t run_us;      /* execve until the program's tree ended */
	uint64_t teardown_us; /* kill, reap, cgroup removal, accounting */
};

struct hutch_enforced {
	enum hutch_mech wall, cpu, memory, pids, output, file, disk, cpus;
	char note[160]; /* e.g. why cgroups were not available */
};

struct hutch_exec_result {
	char id[40];
	char session_id[40];
	char path[8]; /* "cold" or "fast" */
	enum hutch_status status;
	int exit_code;	    /* -1 when the program did not exit on its own */
	int signal;	    /* 0 when not killed by a signal */
	char limit_hit[16]; /* "" or wall_time|cpu_time|memory|pids|output|file_size|disk */
	struct hutch_output out;
	struct hutch_output err;
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t peak_memory_bytes;
	uint64_t bytes_written; /* bytes in the writable layer at the end */
	struct hutch_timings timings;
	struct hutch_enforced enforced;
	struct hutch_limits limits;
	/* status == sandbox_error: the failing step and errno */
	char failed_step[32];
	int failed_errno;
	char failed_msg[256];
	/* a structured error from the language runtime (Python), or NULLs */
	char *error_type;
	char *error_message;
	char *error_traceback;
	char **labels;
	size_t nlabels;
	/* A JSON object whose members are added to the result's JSON (session
	 * calls: value, display, kernel_restarted, note), or NULL. Owned. */
	char *extra_json;
	/* The egress log (a JSON array: every connection attempt through the
	 * network policy's proxy), or NULL for none. Owned. */
	char *egress_json;
};

/* Streaming hooks: called from hutch_run as output arrives. Optional. */
struct hutch_run_hooks {
	void (*on_output)(void *ctx, int stream /* 1 or 2 */, const char *buf, size_t len);
	void *ctx;
	/* When > 0: the run is killed (status killed) as soon as this fd reports
	 * a full hangup (POLLHUP), e.g. the connection of a client that went
	 * away; a socket whose peer only shut down its writing side is not. */
	int cancel_fd;
	/* When > 0: the program's stdin (dup'ed; the caller keeps the write
	 * end of a pipe to feed it), instead of the request's stdin data. */
	int stdin_fd;
	/* Give on_output every byte as it arrives, also past the head of a
	 * capped capture (a log that follows a long command); the result
	 * still keeps head + tail. */
	bool every_byte;
};

/* Set every field to its default (limits, template "host", net "none"). */
void hutch_request_init(struct hutch_exec_request *req);
/* Free everything the request owns and re-initialise it without allocating:
 * the defaults of init, with NULL template_name and net (meaning "host" and
 * "none"). A released request may be reused or dropped; it holds no memory. */
void hutch_request_release(struct hutch_exec_request *req);
/* Copy in code for a language. Returns -1 (EINVAL) for an unknown language. */
int hutch_request_set_code(struct hutch_exec_request *req, const char *language, const char *code,
			   size_t len);
/* Copy in a NULL-terminated argv. */
void hutch_request_set_argv(struct hutch_exec_request *req, char *const *argv);
/* Append "NAME=value" (copied). -1 (EINVAL) when NAME is not a valid name. */
int hutch_request_add_env(struct hutch_exec_request *req, const char *name_value,
			  struct hutch_err *err);
/* Append a file (path and data copied). */
void hutch_request_add_file(struct hutch_exec_request *req, const char *path, const void *data,
			    size_t len, unsigned int mode);

/* Check a request: languages, paths, limits. Pure; no I/O. */
int hutch_request_validate(const struct hutch_exec_request *req, struct hutch_err *err);

/* Parse an ExecRequest from JSON text (len bytes, need not be NUL-terminated).
 * Unknown fields, wrong types and bad values fail with EINVAL and a message
 * naming the field. Pure; no I/O. */
int hutch_request_from_json(struct hutch_exec_request *req, const char *json, size_t len,
			    struct hutch_err *err);

/* The ExecRequest as JSON (caller frees); hutch_request_from_json reads it. */
char *hutch_request_to_json(const struct hutch_exec_request *req);

/* Run a request in a fresh sandbox on the cold path. Returns -1 only when
 * the request is invalid; every other outcome, including a sandbox that
 * failed to set up (status sandbox_error), is a result. */
int hutch_run(const struct hutch_exec_request *req, const struct hutch_run_hooks *hooks,
	      struct hutch_exec_result *res, struct hutch_err *err);

/* The fast path in-process, for embedders (the daemon uses the same): a pool
 * of warm, pre-isolated sandboxes forked from a Python zygote. `preload` is
 * a comma-separated list of modules the zygote imports up front; `min` cells
 * are kept ready, growing with load up to `max`. The zygote program is
 * $HUTCH_ZYGOTE, or hutch-zygote beside the running binary, or in
 * $PREFIX/libexec/hutch. Thread-safe; NULL with err on failure. */
struct hutch_pool;
struct hutch_pool *hutch_pool_start(const char *preload, unsigned min, unsigned max,
				    struct hutch_err *err);
/* Whether req can run on the pool (else use hutch_run, the cold path). */
bool hutch_pool_can_serve(const struct hutch_pool *pool, const struct hutch_exec_request *req);
/* As hutch_run, on a warm cell; the result's path is "fast". */
int hutch_run_fast(struct hutch_pool *pool, const struct hutch_exec_request *req,
		   const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		   struct hutch_err *err);
/* Stop the pool: kills the zygote and every ready cell. */
void hutch_pool_stop(struct hutch_pool *pool);

/* The ExecResult as one JSON object (caller frees). */
char *hutch_result_to_json(const struct hutch_exec_result *res);
void hutch_result_release(struct hutch_exec_result *res);

const char *hutch_status_name(enum hutch_status status);
const char *hutch_mech_name(enum hutch_mech mech);

/* Remove what runs of dead hutch processes left behind (cgroups). Called by
 * hutch_run itself once per process; exposed for daemons and tests. */
void hutch_sweep_stale(void);

#ifdef __cplusplus
}
#endif

/* --- Sessions (docs/sessions.md): long-lived sandboxes with a kernel --- */
struct hutch_sessions;
/* The sessions kept under state_dir (created if missing); sessions a
 * previous process left there come back with their files, kernel stopped. */
struct hutch_sessions *hutch_sessions_open(const char *state_dir, struct hutch_err *err);
/* Stop every session's processes; their directories stay. */
void hutch_sessions_close(struct hutch_sessions *m);
/* One operation, {"op": "session.new" | "session.exec" | ...} as JSON; the
 * reply is JSON (caller frees): an ExecResult for exec and sh, an object
 * otherwise, or {"error": {"code", "message"}}. hooks stream exec and sh. */
char *hutch_session_call(struct hutch_sessions *m, const char *json, size_t len,
			 const struct hutch_run_hooks *hooks);

#endif

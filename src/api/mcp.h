/*
 * MCP (Model Context Protocol): JSON-RPC 2.0 messages in, JSON-RPC
 * responses out, independent of the transport (docs/mcp.md). `hutch mcp`
 * carries it over stdio, one message per line; `hutch serve` mounts the same
 * handler at /mcp (streamable HTTP).
 *
 * The handler keeps no per-client state: every message is answered from
 * the message alone, so one struct hutch_mcp may serve many clients and
 * threads at once, as long as its backend is thread-safe (both below are).
 */
#ifndef HUTCH_API_MCP_H
#define HUTCH_API_MCP_H

#include <stddef.h>

#include "hutch.h"

/* The largest message the transports accept (a files write of ~6 MiB). */
#define HUTCH_MCP_MAX_MESSAGE (8u << 20)

/* Where tool calls go. Each callback returns JSON text the caller frees,
 * or NULL with err when the call could not be made at all (a refused
 * request, a daemon gone). */
struct hutch_mcp_backend {
	/* ExecRequest JSON (docs/api.md) -> ExecResult JSON */
	char *(*run)(void *ctx, const char *request_json, struct hutch_err *err);
	/* a session operation (docs/sessions.md, "JSON operations") -> its
	 * reply, which may be {"error": {"code", "message"}} */
	char *(*session_call)(void *ctx, const char *op_json, struct hutch_err *err);
	void *ctx;
	const char *name; /* for logs: "daemon", "in-process" */
};

struct hutch_mcp;

/* A handler over b (copied; b->ctx is borrowed and must outlive it). */
struct hutch_mcp *hutch_mcp_new(const struct hutch_mcp_backend *b);
void hutch_mcp_free(struct hutch_mcp *m);

/* Answer one JSON-RPC message or batch of len bytes (need not be
 * NUL-terminated). Returns the response text (compact JSON, no newline;
 * caller frees), or NULL when nothing is to be sent back (notifications,
 * responses). Never fails on input: malformed input gets a JSON-RPC error. */
char *hutch_mcp_handle(struct hutch_mcp *m, const char *msg, size_t len);

/* The JSON-RPC error response for a message the transport refused before
 * parsing it (too large): code -32600 and message, id null. Caller frees. */
char *hutch_mcp_error_response(int code, const char *message);

/* --- backends --- */

/* Through a running daemon at socket_path (borrowed), frames Q and J
 * (docs/daemon.md); one connection per call. */
struct hutch_mcp_backend hutch_mcp_daemon_backend(const char *socket_path);

/* In-process: runs on pool when it can serve a request, else the cold
 * path (pool may be NULL); sessions on sessions (NULL: session tools answer
 * that sessions are unavailable). Both borrowed. */
struct hutch_mcp_local {
	struct hutch_pool *pool;
	struct hutch_sessions *sessions;
};
struct hutch_mcp_backend hutch_mcp_local_backend(struct hutch_mcp_local *local);

#endif

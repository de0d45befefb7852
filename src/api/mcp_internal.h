/* Inside the MCP handler (src/api/mcp*.c): the tool table, argument
 * schemas and the rendering of results. Pure except the backend calls. */
#ifndef HUTCH_API_MCP_INTERNAL_H
#define HUTCH_API_MCP_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "api/mcp.h"

/* JSON-RPC 2.0 error codes */
#define MCP_PARSE_ERROR	     -32700
#define MCP_INVALID_REQUEST  -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS   -32602
#define MCP_INTERNAL_ERROR   -32603

/* --- argument schemas (mcp_schema.c) --- */

enum mcp_type {
	MCP_STRING,
	MCP_INTEGER, /* >= 0: every count, size and duration of hutch */
	MCP_NUMBER,
	MCP_BOOLEAN,
	MCP_OBJECT,  /* members below */
	MCP_MAP,     /* an object of strings (env, labels) */
	MCP_STRINGS, /* an array of strings */
};

/* One input field. Tables end with a field whose name is NULL. */
struct mcp_field {
	const char *name;
	enum mcp_type type;
	bool is_required;
	const char *description;
	const struct mcp_field *members; /* MCP_OBJECT */
	const char *const *choices;	 /* MCP_STRING: the allowed values, NULL-ended */
};

/* The JSON Schema of an object with these fields (additionalProperties
 * false). New reference. */
json_t *hutch_mcp_schema(const struct mcp_field *fields);
/* Check args against fields: unknown, missing and mistyped fields fail
 * with EINVAL and a message naming the field ("limits.wall_ms"). */
int hutch_mcp_check(const struct mcp_field *fields, json_t *args, const char *prefix,
		    struct hutch_err *err);

/* --- tools (mcp_tools.c) --- */

/* {"tools": [...]}. New reference. */
json_t *hutch_mcp_tools_list(void);
/* Call a tool: the CallToolResult (errors of the tool itself are results
 * with isError), or NULL with err for a protocol error: EINVAL (bad
 * arguments) and ENOENT (unknown tool) are invalid params. */
json_t *hutch_mcp_tools_call(const struct hutch_mcp_backend *b, const char *name, json_t *args,
			     struct hutch_err *err);

/* --- results (mcp_result.c) --- */

/* A CallToolResult of content (stolen), structured content (stolen; may
 * be NULL) and isError. */
json_t *hutch_mcp_result(json_t *content, json_t *structured, bool is_error);
/* A CallToolResult with one text item and isError true. */
json_t *hutch_mcp_error_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"type": "text", "text": text}. New reference. */
json_t *hutch_mcp_text(const char *text);
/* The content of an ExecResult (with a session call's value and
 * displays): one text item (output, value, error, status) and an image
 * item for each PNG or JPEG rich output. New reference. */
json_t *hutch_mcp_exec_content(json_t *result);

#endif

#!/bin/bash
# The MCP server in-process (--cold: no daemon; sessions in the server's own
# process), driven by the official TypeScript SDK client: initialize, the 8
# tools and their schemas, every tool, images, error results and protocol
# errors (tests/mcp/client.mjs).
. "$(dirname "$0")/mcp-lib.bash"
need_sdk
MCP_EXPECT_PATH=cold sdk_client 'in-process \(--cold' --cold --state-dir "$SESS_DIR/local"

#!/bin/bash
# The same SDK test against a daemon: `hutch mcp` finds it (--socket) and
# forwards runs (frame Q) and session operations (frame J) to it.
. "$(dirname "$0")/mcp-lib.bash"
need_sdk
start_session_daemon
MCP_EXPECT_PATH=fast sdk_client "using the daemon at $HUTCH_SOCKET" --socket "$HUTCH_SOCKET"

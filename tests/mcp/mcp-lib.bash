#!/bin/bash
# Helpers for the MCP tests: the session tests' private daemon and state
# directory (tests/sessions/session-lib.bash), the official MCP TypeScript
# SDK (installed here from package-lock.json on first use) and MCP_CMD, the
# command that starts `hutch mcp` (as HUTCH_AS when set).
. "$(dirname "${BASH_SOURCE[0]}")/../sessions/session-lib.bash"

MCP_DIR=$ROOT/tests/mcp

# need_sdk: node and the SDK, or skip the file saying why.
need_sdk() {
	command -v node >/dev/null || skip_all "node is not installed (scripts/deps.sh installs nodejs)"
	if [ ! -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
		if ! (cd "$MCP_DIR" && npm ci --no-audit --no-fund --loglevel=error >&2); then
			skip_all "npm ci in tests/mcp failed: the MCP SDK is not installed"
		fi
	fi
}

# Rootless: the client starts this wrapper, which runs hutch as HUTCH_AS.
MCP_CMD=$HUTCH_BIN
if [ -n "${HUTCH_AS:-}" ]; then
	chown "$HUTCH_AS" "$SESS_DIR"
	MCP_CMD=$SESS_DIR/hutch-as-user
	printf '#!/bin/sh\ncd / && exec runuser -u %q -- env HUTCH_SOCKET=%q %q "$@"\n' \
		"$HUTCH_AS" "$HUTCH_SOCKET" "$HUTCH_BIN" >"$MCP_CMD"
	chmod 755 "$MCP_CMD"
fi

# sdk_client BACKEND_REGEX [hutch mcp options]: the SDK test (TAP on stdout).
sdk_client() {
	local re=$1
	shift
	node "$MCP_DIR/client.mjs" "$re" "$MCP_CMD" "$@"
}

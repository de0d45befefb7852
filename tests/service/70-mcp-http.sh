#!/bin/bash
# MCP over streamable HTTP at /mcp of `hutch serve`: the official TypeScript
# SDK client (tests/mcp/http-client.mjs) with two keys, and from an
# attacker's side: no key, a foreign Host or Origin (DNS rebinding), GET,
# malformed JSON.
. "$(dirname "$0")/service-lib.bash"
MCP_DIR=$ROOT/tests/mcp
command -v node >/dev/null || skip_all "node is not installed (scripts/deps.sh installs nodejs)"
if [ ! -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
	! (cd "$MCP_DIR" && npm ci --no-audit --no-fund --loglevel=error >&2); then
	skip_all "npm ci in tests/mcp failed: the MCP SDK is not installed"
fi
plan 20
start_serve
A=$(new_key alice)
B=$(new_key bob)
port=${URL##*:}
rpc='{"jsonrpc":"2.0","id":1,"method":"ping"}'

out=$(api "" POST /mcp -H 'Content-Type: application/json' -d "$rpc")
is "$(tail -1 <<<"$out")" 401 "no key: 401"
out=$(api "$A" POST /mcp -H 'Content-Type: application/json' -d "$rpc")
is "$(tail -1 <<<"$out")" 200 "ping with a key: 200"
like "$(head -1 <<<"$out")" '"result":\{\}' "and the JSON-RPC result"
out=$(api "$A" POST /mcp -H "Host: evil.example:$port" -H 'Content-Type: application/json' -d "$rpc")
is "$(tail -1 <<<"$out")" 403 "a Host that is not ours (DNS rebinding): 403"
like "$(head -1 <<<"$out")" "Host header" "saying why"
out=$(api "$A" POST /mcp -H "Origin: http://evil.example" -H 'Content-Type: application/json' -d "$rpc")
is "$(tail -1 <<<"$out")" 403 "a foreign Origin: 403"
out=$(api "$A" POST /mcp -H "Origin: http://localhost:$port" -H 'Content-Type: application/json' -d "$rpc")
is "$(tail -1 <<<"$out")" 200 "our own Origin: 200"
out=$(api "$A" GET /mcp)
is "$(tail -1 <<<"$out")" 405 "GET (no server stream offered): 405"
out=$(api "$A" POST /mcp -H 'Content-Type: application/json' -d '{"jsonrpc":')
is "$(tail -1 <<<"$out")" 400 "malformed JSON: 400"
like "$(head -1 <<<"$out")" '"code":-32700' "with the JSON-RPC parse error"
out=$(api "$A" POST /mcp -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}')
is "$(tail -1 <<<"$out")" 202 "a notification: 202, no body"

# the SDK's TAP, renumbered into ours (in this shell, so failures count)
while read -r line; do
	case $line in
	"ok "*) ok "${line#ok [0-9]* - }" ;;
	"not ok "*) not_ok "${line#not ok [0-9]* - }" ;;
	1..*) ;;
	*) echo "$line" ;;
	esac
done < <(node "$MCP_DIR/http-client.mjs" "$URL" "$A" "$B")
done_testing

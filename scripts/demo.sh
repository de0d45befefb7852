#!/bin/bash
# A short tour of hutch's main job: untrusted code in a fresh sandbox.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
H=build/hutch
PY=/usr/bin/python3
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
show() { step "$*"; "$@"; echo "[exit $?]"; }

show $H run -- python3 -c 'print(sum(range(1000)))'
show $H run --lang python -c 'import os, socket; print("uid", os.getuid(), "host", socket.gethostname())'
step "echo 'console.log(6*7)' | $H run --lang node"
echo 'console.log(6*7)' | $H run --lang node
step "$H run --json --timeout 2 --memory 256M -- sh -c 'yes'   (summarised)"
$H run --json --timeout 2 --memory 256M -- sh -c yes | $PY -c '
import json, sys
d = json.load(sys.stdin)
print({k: d[k] for k in ("status", "limit_hit", "stdout_bytes", "stdout_truncated", "wall_ms")})
print("timings:", d["timings"])
print("limits:", {k: v["enforced_by"] for k, v in d["limits"].items() if isinstance(v, dict)})'
show $H run --memory 64M --lang python -c 'x = bytearray(512 << 20)'
show $H run --lang python -c 'print(open("/etc/shadow").read())'
show $H run --lang python -c 'import socket
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
except OSError as e:
    print("no network:", e)'
step "$H run --json --lang python -c 'connect to 1.1.1.1:443'   (the attempt, in the egress log)"
$H run --json --lang python -c 'import socket
try:
    socket.create_connection(("1.1.1.1", 443), timeout=5)
except OSError as e:
    print(e)' | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["stdout"].strip()); print("egress:", json.dumps(d["egress"]))'
step "$H run --json --lang python -c '1/0'   (the structured error)"
$H run --json --lang python -c '1/0' | $PY -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["error"], indent=1))'
step "time for 20 cold runs of /bin/true"
t0=$(date +%s%N)
for _ in $(seq 20); do $H run -- /bin/true; done
t1=$(date +%s%N)
echo "$(((t1 - t0) / 20000000)) ms per cold run"
AGENT_STATE=$(mktemp -d /tmp/hutch-demo-agent.XXXXXX)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$AGENT_STATE"' EXIT

# The service: the same daemon with HTTP, SSE and MCP (docs/http.md, docs/mcp.md)
step "$H serve --listen 127.0.0.1:0 --insecure-local &   (no keys: loopback only)"
$H serve --listen 127.0.0.1:0 --insecure-local --socket "$AGENT_STATE/s.sock" \
	--state-dir "$AGENT_STATE/srv" --pool 2 --log-level warn 2>"$AGENT_STATE/serve.log" &
SRV=$!
URL=
for _ in $(seq 200); do
	URL=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$AGENT_STATE/serve.log" | tail -1 | sed 's/.*on //')
	[ -n "$URL" ] && break
	sleep 0.05
done
echo "listening on $URL"
step "curl -d '{\"language\":\"python\",\"code\":\"print(6*7)\"}' \$URL/v1/run"
curl -sS -d '{"language":"python","code":"print(6*7)"}' "$URL/v1/run" | $PY -c 'import json,sys; d=json.load(sys.stdin); print({k: d[k] for k in ("status", "stdout", "path", "wall_ms")})'
step "curl -N -H 'Accept: text/event-stream' ... /v1/run   (a command that prints, sleeps, prints: events as they happen)"
curl -sS -N -H 'Accept: text/event-stream' \
	-d '{"argv":["sh","-c","echo building...; sleep 1; echo done"]}' "$URL/v1/run" |
	while IFS= read -r line; do
		case $line in
		event:*) printf '%s %s ' "$(date +%T.%N | cut -c1-12)" "$line" ;;
		data:*) echo "${line:0:90}" ;;
		esac
	done
step "curl \$URL/mcp   (MCP over HTTP: tools/call run_code)"
curl -sS -H 'Content-Type: application/json' \
	-d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"import math; print(math.pi)"}}}' \
	"$URL/mcp" | $PY -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(r["content"][0]["text"])'
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null
SRV=
step "$H agent --file tests/agent/data/legacy.py 'run legacy.py'   (an English task; a visible debug retry)"
HUTCH_STATE_DIR=$AGENT_STATE $H agent --file tests/agent/data/legacy.py "run legacy.py"
echo "[exit $?]"
step "$H agent 'print a table of the squares of 1 to 5 using tabulate'   (no PyPI here: the stdlib instead)"
HUTCH_STATE_DIR=$AGENT_STATE $H agent "print a table of the squares of 1 to 5 using tabulate"
echo "[exit $?]"

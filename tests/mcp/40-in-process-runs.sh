#!/bin/bash
# Cold runs from a multithreaded process (the in-process MCP server: its
# session manager has a reaper thread) never hang: a cell's init used to
# wait forever in glibc's set*id broadcast to threads that do not exist in
# the cloned child (about 1 run in 8 here, before the fix in src/cell/caps.c).
. "$(dirname "$0")/mcp-lib.bash"
N=16
plan $((N + 1))

IN=$SESS_DIR/in.jsonl
for i in $(seq "$N"); do
	printf '{"jsonrpc":"2.0","id":"p%d","method":"ping"}\n' "$i"
	printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print(%d * 2)","limits":{"wall_ms":5000}}}}\n' "$i" "$i"
done >"$IN"
out=$(hutch mcp --state-dir "$SESS_DIR/local" <"$IN" 2>"$SESS_DIR/err" || true)
like "$(cat "$SESS_DIR/err")" "sessions under" "the server runs in-process, with its session manager"
for i in $(seq "$N"); do
	got=$(grep "\"id\":$i," <<<"$out" | jget result.structuredContent.status)
	is "$got" "ok" "run $i ends on its own (no hang at the uid switch)"
done
done_testing

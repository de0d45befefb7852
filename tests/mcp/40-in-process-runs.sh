#!/bin/bash
# Cold runs from a multithreaded process (the in-process MCP server: its
# session manager has a reaper thread) never hang: a cell's init used to
# wait forever in glibc's set*id broadcast to threads that do not exist in
# the cloned child (about 1 run in 8 here, before the fix in src/cell/caps.c).
# Tool calls run in parallel: three 2-second sleeps take well under 6 s.
. "$(dirname "$0")/mcp-lib.bash"
N=16
plan $((N + 3))

IN=$SESS_DIR/in.jsonl
for i in $(seq "$N"); do
	printf '{"jsonrpc":"2.0","id":"p%d","method":"ping"}\n' "$i"
	printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print(%d * 2)","limits":{"wall_ms":5000}}}}\n' "$i" "$i"
done >"$IN"
out=$(hutch mcp --state-dir "$SESS_DIR/local" <"$IN" 2>"$SESS_DIR/err" || true)
like "$(cat "$SESS_DIR/err")" "sessions under" "the server runs in-process, with its session manager"
for i in $(seq "$N"); do
	res=$(grep "\"id\":$i," <<<"$out" | jget result.structuredContent)
	got=$(jget status <<<"$res")
	if [ "$got" = ok ]; then
		ok "run $i ends on its own (no hang at the uid switch)"
	else
		not_ok "run $i ends on its own" "status $got, wall_ms $(jget wall_ms <<<"$res")," \
			"timings $(jget timings <<<"$res"), stderr $(jget stderr <<<"$res")"
	fi
done

for i in 1 2 3; do
	printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep 2; echo slept %d"}}}\n' "$i" "$i"
done >"$IN"
t0=$(date +%s%N)
out=$(hutch mcp --state-dir "$SESS_DIR/local" <"$IN" 2>/dev/null || true)
ms=$((($(date +%s%N) - t0) / 1000000))
is "$(grep -c '"status":"ok"' <<<"$out")" "3" "three calls at once all end ok"
if [ "$ms" -lt 5000 ]; then ok "in parallel ($ms ms for 3 x 2 s)"; else not_ok "in parallel" "took $ms ms"; fi
done_testing

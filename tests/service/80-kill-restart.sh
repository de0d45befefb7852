#!/bin/bash
# hutch serve SIGKILLed under load, then started again on the same state
# directory: the sessions are listed (for their owner only), their files are
# intact, they run code again (a fresh kernel, said so), and nothing of the
# killed server is left: no sandbox process, no cgroup.
. "$(dirname "$0")/service-lib.bash"
plan 9
start_serve
A=$(new_key alice)
B=$(new_key bob)

ids=()
for i in 1 2; do
	out=$(api "$A" POST /v1/sessions -d '{"language":"python"}')
	ids+=("$(body_of "$out" | jget session.id)")
	api "$A" PUT "/v1/sessions/${ids[-1]}/files?path=data$i.txt" --data-binary "payload $i" >/dev/null
	api "$A" POST "/v1/sessions/${ids[-1]}/exec" -d '{"code":"x = 41"}' >/dev/null
done

# load: four clients running code while the server dies
for _ in 1 2 3 4; do
	(while :; do
		curl -s -m 10 -o /dev/null -H "Authorization: Bearer $A" \
			-d '{"language":"python","code":"import time; time.sleep(0.05); print(1)"}' "$URL/v1/run" || true
	done) &
	at_exit "kill $! 2>/dev/null"
done
sleep 1.5
# the server itself ($SRV_PID is the subshell, or runuser, that started it)
old=$(pgrep -f "^$HUTCH_BIN serve --listen .* --socket $SRV_DIR/" | head -1)
# every process under the server: its zygote, pooled cells, session kernels
tree=$(ps -eo pid=,ppid= | awk -v root="$old" '
	{ parent[$1] = $2 }
	END { for (p in parent) { q = p; while (q in parent && q != root && q > 1) q = parent[q]; if (q == root && p != root) print p } }')
kill -KILL "$old"
wait "$SRV_PID" 2>/dev/null || true
SRV_PID=
alive=
for _ in $(seq 50); do
	alive=$(for p in $tree; do
		if [ -d "/proc/$p" ] && ! grep -q '^State:.Z' "/proc/$p/status" 2>/dev/null; then echo "$p"; fi
	done)
	[ -z "$alive" ] && break
	sleep 0.1
done
is "$(wc -w <<<"$tree" | tr -d ' ')>0 alive:${alive:-none}" "$(wc -w <<<"$tree" | tr -d ' ')>0 alive:none" "after SIGKILL, none of the old server's processes is left (PDEATHSIG)"

start_serve
out=$(api "$A" GET /v1/sessions)
listed=$(body_of "$out" | "$PY" -c 'import json,sys; print(" ".join(sorted(s["id"] for s in json.load(sys.stdin)["sessions"])))')
is "$listed" "$(printf '%s\n' "${ids[@]}" | sort | tr '\n' ' ' | sed 's/ $//')" "the restarted server lists both sessions to their owner"
out=$(api "$B" GET /v1/sessions)
is "$(body_of "$out" | jget sessions)" "[]" "and to no other key"
for i in 1 2; do
	out=$(api "$A" GET "/v1/sessions/${ids[i - 1]}/files?path=data$i.txt")
	is "$(body_of "$out")" "payload $i" "session $i: its file is intact"
done
out=$(api "$A" POST "/v1/sessions/${ids[0]}/exec" -d '{"code":"print(6 * 7)"}')
is "$(body_of "$out" | jget stdout)" "42" "a session runs code again after the restart"
is "$(body_of "$out" | jget kernel_restarted)" "true" "and says its kernel is a fresh one (kernel_restarted)"

# the old server's cgroups were swept by the new one
stale=$(find /sys/fs/cgroup -maxdepth 3 -path '*/hutch/*' -name "$old.*" 2>/dev/null | wc -l)
is "$stale" 0 "no cgroup of the killed server is left"
out=$(api "$A" POST /v1/run -d '{"language":"python","code":"print(1)"}')
is "$(body_of "$out" | jget status)" "ok" "and it runs code"
done_testing

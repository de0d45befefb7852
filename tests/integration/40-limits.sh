#!/bin/bash
# Limits: each exceeded limit is its own status, and hutch returns within
# the timeout + 1 s with nothing of the run left alive.
. "$(dirname "$0")/../lib.sh"
plan 32

# run_timed SECONDS_MAX NAME ARGS...: hjson ARGS, and check it returned in time
run_timed() {
	local max=$1 name=$2
	shift 2
	local t0 t1
	t0=$(date +%s%N)
	json=$(hjson "$@")
	t1=$(date +%s%N)
	local ms=$(((t1 - t0) / 1000000))
	if [ "$ms" -le "$max" ]; then ok "$name returned in ${ms} ms"; else not_ok "$name took ${ms} ms (max $max)"; fi
}

P=(--file "$PROBE:probe" -- /workspace/probe)

run_timed 2000 "infinite loop with --timeout 1" --timeout 1 -- sh -c 'while :; do :; done'
is "$(echo "$json" | jget status)" timeout "infinite loop: status timeout"
is "$(echo "$json" | jget limit_hit)" wall_time "infinite loop: limit_hit wall_time"

run_timed 2000 "SIGTERM-ignoring spinner with --timeout 1" --timeout 1 "${P[@]}" spin
is "$(echo "$json" | jget status)" timeout "spinner ignoring SIGTERM: status timeout"

set +e
t0=$(date +%s)
hutch run --timeout 1 -- sleep 10 2>/dev/null
rc=$?
set -e
is "$rc" 124 "timeout exits 124 without --json"

run_timed 3000 "memory bomb" --memory 64M "${P[@]}" memhog 512
st=$(echo "$json" | jget status)
mech=$(echo "$json" | jget limits.memory_bytes.enforced_by)
if [ "$mech" = rlimit ]; then
	# rootless without cgroups: RLIMIT_DATA makes the allocation fail
	like "$st" "error|oom" "memory bomb under rlimit fails ($st)"
	is "$(echo "$json" | jget stdout)" ENOMEM "memory bomb under rlimit: the allocation fails with ENOMEM"
else
	is "$st" oom "memory bomb: status oom ($mech)"
	is "$(echo "$json" | jget limit_hit)" memory "memory bomb: limit_hit memory"
fi
json=$(hjson --memory 256M "${P[@]}" memhog 64)
is "$(echo "$json" | jget stdout)" OK "64 MiB fit in a 256 MiB limit"
peak=$(echo "$json" | jget peak_memory_bytes)
if [ "$peak" -ge $((60 << 20)) ]; then ok "peak_memory_bytes counts the allocation ($peak)"; else not_ok "peak_memory_bytes $peak < 60 MiB"; fi

run_timed 5000 "fork bomb" --pids 32 --timeout 3 "${P[@]}" forkbomb
is "$(echo "$json" | jget stdout)" EAGAIN "fork bomb: fork fails with EAGAIN at the pids limit"
if [ "$(echo "$json" | jget limits.pids.enforced_by)" = rlimit ]; then
	is "$(echo "$json" | jget limits.pids.value)" 32 "fork bomb under RLIMIT_NPROC: the limit is reported"
else
	is "$(echo "$json" | jget limit_hit)" pids "fork bomb: limit_hit pids"
fi

run_timed 2500 "CPU time limit" --cpu-time 500ms --timeout 10 "${P[@]}" spin
is "$(echo "$json" | jget status)" timeout "CPU time: status timeout"
is "$(echo "$json" | jget limit_hit)" cpu_time "CPU time: limit_hit cpu_time"
cpu=$(echo "$json" | jget cpu_ms)
if [ "$cpu" -ge 400 ] && [ "$cpu" -le 2500 ]; then ok "cpu_ms near the limit ($cpu)"; else not_ok "cpu_ms $cpu"; fi

run_timed 3000 "daemonized child" --timeout 2 "${P[@]}" daemon
is "$(echo "$json" | jget status)" ok "daemonizing program exits ok"
sleep 0.2
# pgrep exits 1 when nothing matches, which is the outcome wanted here
left=$(pgrep -f "/workspace/probe daemon" || true)
is "$left" "" "no daemonized process survives the run"

run_timed 3000 "output flood" --timeout 1 --output-limit 64K "${P[@]}" flood
is "$(echo "$json" | jget stdout_truncated)" true "flood: stdout_truncated"
is "$(echo "$json" | jget status)" timeout "flood without --output-limit-kill runs until the timeout"
is "$(echo "$json" | jget stdout_truncation.head_bytes)" 32768 "flood: 32 KiB head kept"
is "$(echo "$json" | jget stdout_truncation.tail_bytes)" 32768 "flood: 32 KiB tail kept"
tot=$(echo "$json" | jget stdout_bytes)
if [ "$tot" -gt $((64 << 10)) ]; then ok "stdout_bytes counts everything written ($tot)"; else not_ok "stdout_bytes $tot"; fi
run_timed 1500 "output flood with --output-limit-kill" --timeout 5 --output-limit 64K --output-limit-kill "${P[@]}" flood
is "$(echo "$json" | jget status)" output_limit "flood with --output-limit-kill: status output_limit"

json=$(hjson --output-limit 100 -- sh -c 'seq 1 1000')
out=$(echo "$json" | jget stdout)
like "$out" "^1
2
3" "head+tail: the head is the start of the output"
like "$out" "bytes omitted\]" "head+tail: a marker says what was left out"
like "$out" "999
1000$" "head+tail: the tail is the end of the output"
done_testing

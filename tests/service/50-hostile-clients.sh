#!/bin/bash
# hutch serve against hostile or broken clients: slow-loris, garbage,
# oversized headers, a crowd at once. The server answers or closes, never
# hangs or dies, and a long run is not cut off by the idle timeout.
. "$(dirname "$0")/service-lib.bash"
plan 9
start_serve --idle-timeout 2
K=$(new_key alice)
hostport=${URL#http://}
host=${hostport%:*}
port=${hostport##*:}

# slow-loris: half a request, then silence; the server must hang up
t0=$(date +%s)
exec 3<>"/dev/tcp/$host/$port"
printf 'POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n' >&3
closed=no
if timeout 10 cat <&3 >/dev/null; then closed=yes; fi
exec 3>&-
t=$(($(date +%s) - t0))
is "$closed" yes "a slow-loris client is disconnected"
if ((t <= 6)); then ok "after the idle timeout (${t} s)"; else not_ok "after the idle timeout" "took ${t} s"; fi

# a body that never finishes
exec 3<>"/dev/tcp/$host/$port"
printf 'POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{"argv":' "$K" >&3
closed=no
if timeout 10 cat <&3 >/dev/null; then closed=yes; fi
exec 3>&-
is "$closed" yes "a body that stops coming is timed out too"

rc=0
r=$(printf 'GARBAGE \001\002\r\n\r\n' | timeout 10 bash -c "exec 3<>/dev/tcp/$host/$port; cat >&3; cat <&3") || rc=$?
if [ "$rc" -eq 0 ] && [[ -z $r || $r =~ ^HTTP/1.[01]\ 4 ]]; then
	ok "a garbage request gets a 4xx or a closed connection (${r%%$'\r'*})"
else
	not_ok "a garbage request gets a 4xx or a closed connection" "rc $rc: $r"
fi
big=$(head -c 100000 /dev/zero | tr '\0' a)
r=$(curl -sS -o /dev/null -w '%{http_code}' -H "X-Big: $big" "$URL/v1/health" || true)
like "$r" '^(4[0-9][0-9]|000)$' "a 100 kB header is refused ($r)"

# a crowd: 40 requests at once, all answered
pids=()
for i in $(seq 40); do
	curl -sS -m 60 -o "$SRV_DIR/crowd.$i" -w '%{http_code}' -H "Authorization: Bearer $K" \
		-d '{"argv":["echo","hi"]}' "$URL/v1/run" >"$SRV_DIR/crowd.$i.code" 2>/dev/null &
	pids+=($!)
done
wait "${pids[@]}" 2>/dev/null || true
n=0
for f in "$SRV_DIR"/crowd.*.code; do [ "$(cat "$f")" = 200 ] && n=$((n + 1)); done
is "$n" 40 "40 concurrent runs are all answered"

# a run longer than the idle timeout still gets its result
r=$(api "$K" POST /v1/run -d '{"argv":["sh","-c","sleep 3; echo done"]}')
is "$(body_of "$r" | jget stdout)" "done" "a 3 s run outlives a 2 s idle timeout"

is_alive "the server is alive"
if kill -0 "$SRV_PID" 2>/dev/null; then ok "and its process never died"; else not_ok "the server process died"; fi
done_testing

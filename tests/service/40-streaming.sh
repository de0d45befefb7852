#!/bin/bash
# hutch serve streams: with Accept: text/event-stream, /v1/run, .../exec and
# .../commands send stdout/stderr events as output happens, then one result
# event; a client that goes away stops the run.
. "$(dirname "$0")/service-lib.bash"
plan 15
start_serve
K=$(new_key alice)

# stamp: each line of the stream with the milliseconds since the start
stamp() {
	local t0
	t0=$(date +%s%3N)
	while IFS= read -r line; do echo "$(($(date +%s%3N) - t0)) $line"; done
}
# sse PATH BODY: the stamped stream of a POST
sse() {
	curl -sS -N -m 60 -H "Authorization: Bearer $K" -H 'Accept: text/event-stream' \
		-d "$2" "$URL$1" | stamp
}
# at EVENT DATA-REGEX: when the data line after "event: EVENT" matching it came
at() {
	awk -v ev="event: $1" -v re="$2" '$2" "$3 == ev { want = 1; next }
		want && $0 ~ re { print $1; exit } { want = 0 }' <<<"$out"
}

out=$(sse /v1/run '{"argv":["sh","-c","echo one; sleep 1; echo two >&2; echo three"]}')
t1=$(at stdout '"data":"one')
tr=$(at result '"status":"ok"')
like "$t1" '^[0-9]+$' "/v1/run streams a stdout event"
like "$(at stderr '"data":"two')" '^[0-9]+$' "and a stderr event"
like "$tr" '^[0-9]+$' "then a result event with the full result"
if [ -n "$t1" ] && [ -n "$tr" ] && ((tr - t1 >= 700)); then
	ok "stdout arrived as it happened, ${t1} ms in, the result at ${tr} ms"
else
	not_ok "stdout arrived as it happened" "first stdout at '$t1' ms, result at '$tr' ms" "$out"
fi
like "$(grep -c 'event: result' <<<"$out")" '^1$' "exactly one result event"
like "$out" '"stdout":"one\\nthree\\n"' "whose stdout is the whole output"

r=$(api "$K" POST /v1/sessions -d '{"language":"python"}')
S=/v1/sessions/$(body_of "$r" | jget session.id)
out=$(sse "$S/exec" '{"code":"import time\nprint(\"a\", flush=True)\ntime.sleep(1)\nprint(\"b\")\n6*7"}')
t1=$(at stdout '"data":"a')
tr=$(at result '"status":"ok"')
if [ -n "$t1" ] && [ -n "$tr" ] && ((tr - t1 >= 700)); then
	ok ".../exec streams (a at $t1 ms, result at $tr ms)"
else
	not_ok ".../exec streams" "$out"
fi
like "$out" '"text/plain":"42"' "and its result has the value"

out=$(sse "$S/commands" '{"command":"printf \"\\377\\n\"; echo ok"}')
like "$out" '"data_base64":"/w' "bytes that are not UTF-8 come with data_base64"
like "$out" 'event: result' ".../commands streams too"
r=$(curl -sS -H "Authorization: Bearer $K" -H 'Accept: text/event-stream' -d '{"command":"sleep 5","background":true}' "$URL$S/commands")
like "$r" '"command_id"' "a background command answers with its handle, not a stream"
r=$(api "$K" POST "$S/commands" -d '{"command":"echo early; sleep 1; echo late","background":true}')
cid=$(body_of "$r" | jget command.command_id)
out=$(sse "$S/commands/$cid" '{"action":"attach","timeout_ms":10000}')
t1=$(at stdout '"data":"(early|late)')
tr=$(awk '$2" "$3 == "event: result" { print $1 }' <<<"$out")
if [ -n "$t1" ] && [ -n "$tr" ] && [[ $out == *late* ]]; then
	ok "attach to a background command streams its output (first at $t1 ms, result at $tr ms)"
else
	not_ok "attach to a background command streams its output" "$out"
fi

# a client that disconnects mid-stream: the run is stopped, the server lives
curl -sS -N -m 1 -H "Authorization: Bearer $K" -H 'Accept: text/event-stream' \
	-d '{"argv":["sh","-c","echo start; sleep 30"]}' "$URL/v1/run" >/dev/null 2>&1 || true
sleep 1
is_alive "server alive after a client left mid-stream"
found=no
for _ in $(seq 50); do
	grep -q '"route":"/v1/run".*"exec_status":"killed"' "$SRV_LOG" && found=yes && break
	sleep 0.1
done
is "$found" yes "and the abandoned run was killed, not left running"
r=$(curl -sS -H "Authorization: Bearer $K" -H 'Accept: text/event-stream' -d '{"language":"python","cod":"1"}' -w '\n%{http_code}' "$URL/v1/run")
is "$(status_of "$r")" 400 "a bad request is a plain 400 even when a stream was asked"
done_testing

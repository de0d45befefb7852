#!/bin/bash
# hutch serve: /v1/run, health, metrics, and every kind of bad request
# answered with the right status and an error naming the problem.
. "$(dirname "$0")/service-lib.bash"
plan 30
start_serve --max-body 1M
KEY=$(new_key alice)

r=$(api "" GET /v1/health)
is "$(status_of "$r")" 200 "health needs no key"
is "$(body_of "$r" | jget ok)" true "and says ok"

r=$(api "$KEY" POST /v1/run -d '{"language":"python","code":"print(6*7)","labels":{"step":"1"}}')
is "$(status_of "$r")" 200 "POST /v1/run runs an ExecRequest"
is "$(body_of "$r" | jget stdout)" 42 "and returns the ExecResult"
is "$(body_of "$r" | jget labels.step)" 1 "labels are echoed"
r=$(api "$KEY" POST /v1/run -d '{"argv":["sh","-c","exit 3"]}')
is "$(body_of "$r" | jget exit_code)" 3 "a failing program is a result, not an HTTP error ($(status_of "$r"))"

r=$(api "$KEY" POST /v1/run -d '{"language":"python","cod":"1"}')
is "$(status_of "$r")" 400 "an unknown field is a 400"
like "$(body_of "$r" | jget error.message)" "unknown field 'cod'" "naming the field"
is "$(body_of "$r" | jget error.code)" EINVAL "with an error code"
r=$(api "$KEY" POST /v1/run -d '{"language":"python","code":"1","limits":{"pids":"many"}}')
like "$(body_of "$r" | jget error.message)" "limits.pids" "a wrong type names the field ($(status_of "$r"))"
r=$(api "$KEY" POST /v1/run -d '{"language":"python","code":"1","limits":{"wall_ms":-5}}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*limits.wall_ms" "a negative limit is a 400 naming it"
r=$(api "$KEY" POST /v1/run -d '{"language":"python","code":"1","limits":{"memory_bytes":99999999999999999}}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*memory_bytes" "a limit above the server's cap is a 400 naming it"
r=$(api "$KEY" POST /v1/run -d $'{"language": "python",\n "code": }')
is "$(status_of "$r")" 400 "malformed JSON is a 400"
like "$(body_of "$r" | jget error.message)" "line 2, column" "naming the line and column"
r=$(api "$KEY" POST /v1/run)
is "$(status_of "$r")" 400 "an empty body is a 400"

r=$(api "$KEY" GET /v1/nowhere)
is "$(status_of "$r")" 404 "an unknown route is a 404"
r=$(curl -sS -X PATCH -H "Authorization: Bearer $KEY" -D - -o /dev/null "$URL/v1/run")
like "$r" "HTTP/1.1 405" "a wrong method is a 405"
like "$r" "Allow: POST" "with an Allow header"

# 413: announced (Content-Length) and discovered while reading (chunked)
r=$(head -c 2000000 /dev/zero | api "$KEY" POST /v1/run --data-binary @-)
is "$(status_of "$r")" 413 "a body over --max-body is refused (Content-Length)"
like "$(body_of "$r" | jget error.message)" "limit of 1048576" "saying the limit"
r=$(head -c 2000000 /dev/zero | api "$KEY" POST /v1/run -H 'Transfer-Encoding: chunked' --data-binary @-)
is "$(status_of "$r")" 413 "and while reading a chunked body"

r=$(api "$KEY" GET "/v1/sessions?x=1")
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*'x'" "an unknown query parameter is a 400 naming it"

# node: the first request finds no node cell (the pool makes them once node
# requests come), a later one runs in one; the metrics count both
r=$(api "$KEY" POST /v1/run -d '{"language":"node","code":"console.log(6*7)"}')
is "$(body_of "$r" | jget stdout)" 42 "a node request runs"
for _ in $(seq 100); do
	m=$(curl -sS -H "Authorization: Bearer $KEY" "$URL/metrics")
	[[ $m =~ hutch_pool_node_cells\{kind=\"ready\"\}\ [1-9] ]] && break
	sleep 0.1
done
r=$(api "$KEY" POST /v1/run -d '{"language":"node","code":"console.log(process.pid)"}')
is "$(body_of "$r" | jget stdout)" 3 "the next runs in a node cell's node (pid 3)"
m=$(curl -sS -H "Authorization: Bearer $KEY" "$URL/metrics")
like "$m" 'hutch_pool_node_misses_total 1.*hutch_pool_node_served_total 1|hutch_pool_node_served_total 1.*hutch_pool_node_misses_total 1' \
	"metrics count node requests served by node cells and those that found none"

m=$(curl -sS -H "Authorization: Bearer $KEY" "$URL/metrics")
like "$m" 'hutch_executions_total\{status="ok"\} [1-9]' "metrics count executions by status"
like "$m" 'hutch_phase_duration_seconds_bucket\{phase="run",le="\+Inf"\} [1-9]' "with a latency histogram per phase"
like "$m" 'hutch_http_rejected_total\{reason="body_too_large"\} 2' "and rejected requests by reason"
like "$m" 'hutch_pool_cells\{kind="ready"\}' "and pool sizes"

# one JSON line per request; never the key, never the code
like "$(grep '"route":"/v1/run"' "$SRV_LOG" | head -1)" '"key":"alice".*"execution_id":"run_' "requests are logged as JSON with the key's name and execution id"
done_testing

#!/bin/bash
# POST /v1/agent of hutch serve: a task in English, the pipeline's trace back;
# with Accept: text/event-stream a "step" event per step before the result;
# bad requests named; the run step had no network; the Python client's agent().
. "$(dirname "$0")/service-lib.bash"
plan 14
start_serve
A=$(new_key alice)

out=$(api "$A" POST /v1/agent -d '{"task":"compute the mean and median of 4 8 15 16 23 42"}')
is "$(status_of "$out")" 200 "a task: 200"
body=$(body_of "$out")
is "$(jget status <<<"$body")" "success" "the pipeline succeeded"
like "$(jget output <<<"$body")" "15.5" "its verified output has the median"
is "$(jget executor <<<"$body")" "service" "it ran on the server's own sessions"
is "$("$PY" -c 'import json,sys; t=json.load(sys.stdin); print(t["attempts"][-1]["network"]["run"])' <<<"$body")" "none" "the run step had network none"

stream=$(curl -sS -N -m 120 -H "Authorization: Bearer $A" -H 'Accept: text/event-stream' \
	-d '{"task":"print the 12th Fibonacci number","language":"node"}' "$URL/v1/agent")
steps=$(grep -c '^event: step' <<<"$stream")
if ((steps >= 4)); then ok "streaming: $steps step events"; else not_ok "streaming: $steps step events" "$stream"; fi
is "$(grep '^event:' <<<"$stream" | tail -1)" "event: result" "then the result, last"
like "$(grep -m1 -A1 '^event: step' <<<"$stream" | tail -1)" '^data: \{"pipeline_id":"pipe_[0-9a-f]+","role":"Planner"' "a step is an object naming its role"

out=$(api "$A" POST /v1/agent -d '{"task":"x","bogus":1}')
is "$(status_of "$out") $(body_of "$out" | jget error.message)" "400 field 'bogus' is unknown" "an unknown field: 400 naming it"
out=$(api "$A" POST /v1/agent -d '{"language":"python"}')
is "$(status_of "$out") $(body_of "$out" | jget error.message)" "400 field 'task' is missing" "no task: 400"
out=$(api "$A" POST /v1/agent -d '{"task":"x","max_attempts":0}')
is "$(status_of "$out")" 400 "max_attempts 0: 400"

py=$(PYTHONPATH=$ROOT/clients/python "$PY" -c '
import hutch_client, sys
steps = []
t = hutch_client.agent("sort the numbers 5 3 9 1", url=sys.argv[1], api_key=sys.argv[2], on_step=steps.append)
print(t["status"], len(steps) >= 4, t["output"].split())' "$URL" "$A")
is "$py" "success True ['1', '3', '5', '9']" "the Python client: agent(task, on_step=...)"
metrics=$(curl -sS "$URL/metrics" -H "Authorization: Bearer $A")
like "$metrics" 'hutch_agent_pipelines_total\{status="success"\} [3-9]' "/metrics counts the agent's pipelines by outcome"
like "$metrics" 'hutch_agent_attempts_total [3-9]' "and their attempts"
done_testing

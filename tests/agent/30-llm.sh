#!/bin/bash
# LLM mode against a local OpenAI-compatible server with scripted replies
# (tests/agent/fake_llm.py): structured output and per-role models, a
# partial JSON reply, 429 then success, a request timeout, a multi-attempt
# debug loop; the API key reaches the server's Authorization header and
# nothing else: no sandbox environment, log line or trace.
. "$(dirname "$0")/../lib.sh"
plan 26

DIR=$(mktemp -d /tmp/hutch-agent-llm.XXXXXX)
FAKE_PID=
stop_fake() {
	if [ -n "$FAKE_PID" ]; then
		kill "$FAKE_PID" 2>/dev/null || true
		wait "$FAKE_PID" 2>/dev/null || true
		FAKE_PID=
	fi
}
at_exit stop_fake
at_exit 'rm -rf "$DIR"'
KEY=sk-test-SECRET-c0ffee-42
export HUTCH_STATE_DIR=$DIR/state HUTCH_LLM_API_KEY=$KEY FAKE_LLM_KEY=$KEY
export HUTCH_LLM_MODEL=fake-small HUTCH_LLM_BACKOFF=50ms HUTCH_LLM_PRICE_IN=1.5 HUTCH_LLM_PRICE_OUT=6

# scenario NAME SCRIPT_JSON: start the fake server with that script
scenario() {
	stop_fake
	printf '%s' "$2" >"$DIR/$1.script"
	rm -f "$DIR/port"
	: >"$DIR/$1.log"
	"$PY" "$ROOT/tests/agent/fake_llm.py" "$DIR/$1.script" "$DIR/port" "$DIR/$1.log" &
	FAKE_PID=$!
	for _ in $(seq 100); do
		[ -s "$DIR/port" ] && break
		sleep 0.05
	done
	HUTCH_LLM_BASE_URL=http://127.0.0.1:$(cat "$DIR/port")/v1
	export HUTCH_LLM_BASE_URL
}

# agent NAME ARGS...: hutch agent --llm --json, trace in NAME.json, log in NAME.err
agent() {
	local name=$1
	shift
	hutch agent --llm --json "$@" >"$DIR/$name.json" 2>"$DIR/$name.err" || true
}

# py EXPR NAME: evaluate EXPR with t = the trace, r = the server's requests
py() {
	"$PY" -c '
import json, sys
t = json.load(open(sys.argv[2] + ".json"))
r = [json.loads(l) for l in open(sys.argv[2] + ".log")]
print(eval(sys.argv[1]))' "$1" "$DIR/$2"
}

PLAN_FIB='{"language": "python", "dependencies": [], "steps": ["iterate to F(20)"], "expected_output": "6765", "checks": [{"type": "regex", "value": "^[0-9]+$"}], "note": "stdlib"}'
CODE_FIB='{"filename": "fib.py", "code": "a, b = 0, 1\nfor _ in range(20):\n    a, b = b, a + b\nprint(a)\n", "install_command": null, "run_command": "python3 fib.py"}'

# 1. structured output, per-role models, usage and cost
scenario ok "[{\"content\": $PLAN_FIB}, {\"content\": $CODE_FIB, \"usage\": [300, 80, 256]}]"
agent ok --model small-model --coder-model big-model "print the 20th Fibonacci number"
is "$(py 't["status"], t["output"].strip(), t["attempts_used"]' ok)" "('success', '6765', 1)" "structured plan and code: solved in one attempt"
is "$(py '[q["body"]["model"] for q in r]' ok)" "['small-model', 'big-model']" "--model for the planner, --coder-model for the coder"
is "$(py 'all(q["body"]["response_format"]["type"] == "json_schema" and q["body"]["response_format"]["json_schema"]["strict"] for q in r)' ok)" "True" "every request asks for strict json_schema output"
is "$(py '[q["body"]["response_format"]["json_schema"]["name"] for q in r]' ok)" "['execution_plan', 'code_artifact']" "one schema per role"
is "$(py 'r[0]["body"]["messages"][0] == r[1]["body"]["messages"][0]' ok)" "True" "the system prompt is one shared prefix (provider prompt caching)"
is "$(py '"20th Fibonacci" in r[1]["body"]["messages"][1]["content"]' ok)" "False" "the coder sees the plan, not the raw task"
like "$(py 'r[1]["body"]["messages"][1]["content"]' ok)" "iterate to F\(20\)" "but the plan's steps"
is "$(py 't["tokens"]' ok)" "{'prompt': 420, 'completion': 120}" "token counts add up in the trace"
is "$(py 'round(t["cost_usd"], 6)' ok)" "0.00135" "with a cost estimate from HUTCH_LLM_PRICE_IN/OUT"
is "$(py 't["attempts"][0]["llm"][0]["cached"]' ok)" "256" "cached prompt tokens are reported per step"
is "$(py 'all(q["bearer_ok"] for q in r)' ok)" "True" "the key is sent as the bearer token"

# 2. a partial JSON reply is asked again
scenario partial "[{\"content\": \"{\\\"language\\\": \\\"python\\\", \\\"depend\"}, {\"content\": $PLAN_FIB}, {\"content\": $CODE_FIB}]"
agent partial "print the 20th Fibonacci number"
is "$(py 't["status"], len(r)' partial)" "('success', 3)" "a partial JSON reply is retried, then the pipeline succeeds"
is "$(py 't["plan_step"]["llm"][0]["retries"]' partial)" "1" "and the retry is counted"

# a reply that is JSON but misses a field is asked for again, saying what was wrong
scenario field "[{\"content\": {\"dependencies\": []}}, {\"content\": $PLAN_FIB}, {\"content\": $CODE_FIB}]"
agent field "print the 20th Fibonacci number"
is "$(py 't["status"], len(r)' field)" "('success', 3)" "a plan missing a field is asked for once more"
like "$(py 'r[1]["body"]["messages"][1]["content"]' field)" "rejected: field 'language' is missing" "with the reason"

# 3. 429, then success (with backoff)
scenario busy "[{\"status\": 429}, {\"status\": 503}, {\"content\": $PLAN_FIB}, {\"content\": $CODE_FIB}]"
agent busy "print the 20th Fibonacci number"
is "$(py 't["status"], t["plan_step"]["llm"][0]["retries"]' busy)" "('success', 2)" "429 and 503 are retried with backoff"

# 4. a request timeout, then success
scenario slow "[{\"delay\": 3, \"content\": $PLAN_FIB}, {\"content\": $PLAN_FIB}, {\"content\": $CODE_FIB}]"
t0=$(date +%s%N)
HUTCH_LLM_TIMEOUT=1s agent slow "print the 20th Fibonacci number"
t1=$(date +%s%N)
is "$(py 't["status"], t["plan_step"]["llm"][0]["retries"]' slow)" "('success', 1)" "a request past HUTCH_LLM_TIMEOUT is abandoned and retried"
if (((t1 - t0) / 1000000 < 2900)); then ok "without waiting for the slow reply ($(((t1 - t0) / 1000000)) ms)"; else not_ok "took $(((t1 - t0) / 1000000)) ms"; fi

# a server that never answers well: an honest failure, not a hang
scenario down '[{"status": 500}, {"status": 500}, {"status": 500}, {"status": 500}]'
rc=0
hutch agent --llm "print the 20th Fibonacci number" >/dev/null 2>"$DIR/down.err" || rc=$?
is "$rc" "1" "a failing endpoint fails the pipeline (exit 1)"

# 5. a multi-attempt debug loop: NameError, then wrong output, then right
PLAN_SQRT='{"language": "python", "dependencies": [], "steps": ["print sqrt(2) to 3 places"], "expected_output": "1.414", "checks": [], "note": ""}'
CODE1='{"filename": "main.py", "code": "print(round(math.sqrt(2), 3))\n", "install_command": null, "run_command": "python3 main.py"}'
DBG1='{"category": "name", "root_cause": "math is not imported", "fix": "import math", "artifact": {"filename": "main.py", "code": "import math\nprint(round(math.sqrt(2), 2))\n", "install_command": null, "run_command": "python3 main.py"}}'
DBG2='{"category": "wrong_output", "root_cause": "rounded to 2 places", "fix": "round to 3", "artifact": {"filename": "main.py", "code": "import math\nprint(round(math.sqrt(2), 3))\n", "install_command": null, "run_command": "python3 main.py"}}'
scenario debug "[{\"content\": $PLAN_SQRT}, {\"content\": $CODE1}, {\"content\": $DBG1}, {\"content\": $DBG2}]"
agent debug "print the square root of 2 to three decimal places"
is "$(py 't["status"], t["attempts_used"], t["output"].strip()' debug)" "('success', 3, '1.414')" "the debug loop converges on the third attempt"
is "$(py '[a["diagnosis"]["category"] for a in t["attempts"] if a.get("diagnosis")]' debug)" "['name', 'wrong_output']" "with a diagnosis per failed attempt"
like "$(py 'r[2]["body"]["messages"][1]["content"]' debug)" "NameError" "the debugger is shown the error"

# 6. the key: in no sandbox, log or trace
CODE_ENV='{"filename": "env.py", "code": "import os\nfor k, v in sorted(os.environ.items()):\n    print(k, v)\n", "install_command": null, "run_command": "python3 env.py"}'
PLAN_ENV='{"language": "python", "dependencies": [], "steps": ["print the environment"], "expected_output": null, "checks": [{"type": "nonempty", "value": ""}], "note": ""}'
scenario env "[{\"content\": $PLAN_ENV}, {\"content\": $CODE_ENV}]"
agent env "print the environment"
is "$(py 't["status"]' env)" "success" "a program that prints its whole environment runs"
unlike "$(cat "$DIR/env.json")" "SECRET-c0ffee|HUTCH_LLM" "the key (and HUTCH_LLM_*) is not in the sandbox's environment or the trace"
unlike "$(cat "$DIR"/*.err)" "SECRET-c0ffee" "nor in any progress line"
hist=$(hutch agent history --json --limit 50; for id in $(hutch agent history --json | "$PY" -c 'import json,sys; [print(p["id"]) for p in json.load(sys.stdin)]'); do hutch agent history "$id"; done)
unlike "$hist" "SECRET-c0ffee" "nor in the history"

done_testing

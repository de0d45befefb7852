#!/bin/bash
# hutch agent through a running daemon (frames J), the plain-text front end
# (program output on stdout, progress on stderr, exit codes), the history
# (the debugger consults it first: a failure seen before is fixed by the
# rule that fixed it) and `hutch agent history` / `stats`.
. "$(dirname "$0")/../sessions/session-lib.bash"
plan 19
start_session_daemon
export HUTCH_STATE_DIR=$SESS_DIR/agent-state
DATA=$ROOT/tests/agent/data

out=$(hutch agent "compute the mean and median of 4 8 15 16 23 42" 2>"$SESS_DIR/err")
is "$out" "mean: 18.00
median: 15.50" "text mode prints the program's output"
like "$(cat "$SESS_DIR/err")" "\[pipeline pipe_[0-9a-f]+\] \[Executor\] \[attempt 1/3\] run step \(network none\)" "progress lines on stderr: [pipeline ID] [Role] [attempt n/N]"

trace=$(hutch agent --json --lang node "print the 20th Fibonacci number" 2>/dev/null)
is "$(jget executor <<<"$trace")" "daemon" "the executor used the daemon's sessions"
is "$(jget output <<<"$trace")" "6765" "and got the answer"
sid=$(jget attempts <<<"$trace" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["network"]["session"])')
like "$(hutch session list)" "^" "session list answers"
unlike "$(hutch session list)" "$sid" "the pipeline's session is gone when it ends"

rc=0
hutch agent "write a web server that serves cats" >/dev/null 2>"$SESS_DIR/err" || rc=$?
is "$rc" "1" "an impossible task exits 1"
like "$(cat "$SESS_DIR/err")" "failed after 0 attempt\(s\): unknown: no template fits" "and says why"

rc=0
hutch agent --file "$SESS_DIR/no-such.csv" "summarize no-such.csv" >/dev/null 2>&1 || rc=$?
is "$rc" "125" "a missing --file is hutch's usage error (125), not a failed task"
rc=0
hutch agent --max-attempts 0 "factorial of 5" >/dev/null 2>&1 || rc=$?
is "$rc" "125" "so is --max-attempts 0"

# the first time, the debugger finds the fix by its rules; the second time
# the history names the rule that fixed this signature
hutch agent --json --file "$DATA/legacy.py" "run legacy.py" >"$SESS_DIR/t1" 2>/dev/null || true
hutch agent --json --file "$DATA/legacy.py" "run legacy.py" >"$SESS_DIR/t2" 2>"$SESS_DIR/err" || true
first=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["attempts"][0]["diagnosis"]["from_history"])' "$SESS_DIR/t1")
second=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["attempts"][0]["diagnosis"]["from_history"])' "$SESS_DIR/t2")
is "$first" "False" "a first failure is fixed by the debugger's rules"
is "$second" "True" "the same failure again is fixed from the history"
like "$(cat "$SESS_DIR/err")" "\[Debugger\] \[attempt 1/3\] history: this error was fixed [0-9]+ time\(s\) by rule print_function" "and the log says so"

# two pipelines at once in their own processes (no daemon): each keeps
# its own sessions, the shared history takes both
(HUTCH_SOCKET=/nonexistent hutch agent -q "factorial of 20" >"$SESS_DIR/c1" 2>&1) &
p1=$!
(HUTCH_SOCKET=/nonexistent hutch agent -q --lang node "the first 8 primes" >"$SESS_DIR/c2" 2>&1) &
p2=$!
wait "$p1" "$p2" # not a bare wait: the session daemon runs in the background too
is "$(cat "$SESS_DIR/c1")" "2432902008176640000" "concurrent in-process pipelines: the first"
is "$(cat "$SESS_DIR/c2")" "2 3 5 7 11 13 17 19" "and the second"

list=$(hutch agent history)
like "$list" "pipe_[0-9a-f]+ .* success +2 attempt\(s\) .* run legacy.py" "agent history lists runs"
id=$(jget pipeline_id <"$SESS_DIR/t2")
is "$(hutch agent history "$id" | jget status)" "success" "agent history ID shows one run's trace"

stats=$(hutch agent stats)
like "$stats" "pipelines: 7" "agent stats counts pipelines (refused usage is no pipeline)"
like "$stats" "syntax +2 \(fixed 2\)" "and error categories with how often they were fixed"

done_testing

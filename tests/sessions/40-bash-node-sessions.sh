#!/bin/bash
# bash and node sessions through the daemon: a persistent shell (cwd,
# variables, functions, exit status per call) and a persistent JavaScript
# context (declarations, the final value, top-level await, errors,
# interrupts), each in its own sandbox.
. "$(dirname "$0")/session-lib.bash"
plan 16
start_session_daemon

sh=$(new_session --lang bash)
sess exec "$sh" 'mkdir -p proj/src && cd proj; export GREETING=hello; count=3; greet() { echo "$GREETING $1"; }' >/dev/null
is "$(sess exec "$sh" 'pwd')" "/workspace/proj" "bash: the cwd persists"
is "$(sess exec "$sh" 'greet world; echo $count')" "hello world
3" "bash: variables, exports and functions persist"
is "$(sess exec "$sh" 'bash -c "echo \$GREETING"')" "hello" "bash: exported variables reach child processes"
rc=0
hutch session exec "$sh" 'false' >/dev/null 2>&1 || rc=$?
is "$rc" "1" "bash: each call has its exit status"
out=$(hutch session exec --json --timeout 1s "$sh" 'sleep 60' || true)
is "$(jget status <<<"$out")" "timeout" "bash: a call past its timeout is interrupted"
is "$(sess exec "$sh" 'echo $count; pwd')" "3
/workspace/proj" "bash: and the shell keeps its state"
out=$(hutch session exec --json "$sh" 'exit 4' || true)
is "$(jget exit_code <<<"$out")" "4" "bash: exit ends the shell with its status"
like "$(jget note <<<"$out")" "shell" "bash: and the result says a new shell was started"
is "$(sess exec "$sh" 'ls /workspace')" "proj" "bash: files survive a new shell"

js=$(new_session --lang node)
sess exec "$js" 'let n = 20; function fib(k) { return k < 2 ? k : fib(k - 1) + fib(k - 2) }' >/dev/null
is "$(sess exec "$js" 'fib(n)')" "6765" "node: declarations persist; the final value is printed"
is "$(sess exec "$js" 'const v = await Promise.resolve(41); v + 1')" "42" "node: top-level await"
is "$(sess exec "$js" 'console.log("x" + v)')" "x41" "node: console.log goes to stdout; awaited declarations persist"
out=$(hutch session exec --json "$js" 'null.f()' || true)
is "$(jget error.type <<<"$out")" "TypeError" "node: errors are structured"
out=$(hutch session exec --json --timeout 1s "$js" 'while (true) {}' || true)
is "$(jget status <<<"$out")" "timeout" "node: a busy loop is interrupted"
is "$(sess exec "$js" 'n')" "20" "node: state survives the interrupt"
is "$(sess sh "$js" 'ls -A /workspace | wc -l')" "0" "node: its own empty workspace (no bash session files)"

done_testing

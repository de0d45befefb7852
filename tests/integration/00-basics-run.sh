#!/bin/bash
# Basics: commands, languages, exit codes, stdin, files, the JSON result.
. "$(dirname "$0")/../lib.sh"
plan 30

is "$(hutch run -- /usr/bin/python3 -c 'print(sum(range(1000)))')" 499500 "python one-liner prints 499500"
is "$(hutch run --lang python -c 'import os; print(os.getuid())')" 1000 "--lang python -c runs as uid 1000"
is "$(echo 'console.log(6*7)' | hutch run --lang node)" 42 "node code on stdin"
is "$(hutch run --lang bash -c 'x=5; echo $((x*2))')" 10 "--lang bash"
is "$(hutch run --lang sh -c 'echo $0')" /workspace/main.sh "--lang sh places code in /workspace/main.sh"
tmp=$(mktemp -d)
chmod 755 "$tmp" # readable by HUTCH_AS in the rootless pass
at_exit 'rm -rf "$tmp"'
printf 'import sys\nprint("file", sys.argv[1:])\n' > "$tmp/s.py"
is "$(hutch run --lang python "$tmp/s.py" a b)" "file ['a', 'b']" "--lang with a FILE argument and script args"

set +e
hutch run -- sh -c 'exit 7'; rc=$?
is "$rc" 7 "exit code passes through"
hutch run -- sh -c 'kill -SEGV $$'; rc=$?
is "$rc" $((128 + 11)) "killed by SIGSEGV exits 139"
out=$(hutch run -- /nonexistent-command 2>&1); rc=$?
set -e
is "$rc" 127 "missing command exits 127"
like "$out" "nonexistent-command" "missing command is named on stderr"

printf 'line1\nline2\n' > "$tmp/in.txt"
is "$(hutch run --stdin "$tmp/in.txt" -- wc -l)" 2 "--stdin FILE feeds the program"
is "$(printf 'abc' | hutch run --stdin - -- cat)" abc "--stdin - passes our stdin"
is "$(hutch run -- cat </dev/null)" "" "without --stdin the program's stdin is empty"

echo 'hello from host' > "$tmp/data.txt"
is "$(hutch run --file "$tmp/data.txt:data/in.txt" -- cat /workspace/data/in.txt)" "hello from host" "--file copies into /workspace"
is "$(hutch run --workdir sub/dir -- pwd)" /workspace/sub/dir "--workdir is created under /workspace"
is "$(hutch run --env FOO=bar --env X=1 -- sh -c 'echo $FOO$X')" bar1 "--env sets variables"

json=$(hjson --label step=3 -- sh -c 'echo out; echo err >&2; exit 3')
is "$(echo "$json" | jget status)" error "status error for non-zero exit"
is "$(echo "$json" | jget exit_code)" 3 "exit_code in JSON"
is "$(echo "$json" | jget stdout)" out "stdout in JSON"
is "$(echo "$json" | jget stderr)" err "stderr in JSON"
is "$(echo "$json" | jget labels.step)" 3 "labels echoed"
is "$(echo "$json" | jget path)" "$TEST_PATH" "path is $TEST_PATH"
like "$(echo "$json" | jget id)" '^run_[0-9a-f]{16}$' "execution id"
fields=$(echo "$json" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
need = ["id","status","exit_code","signal","stdout","stderr","stdout_truncated","stderr_truncated",
        "stdout_bytes","stderr_bytes","wall_ms","cpu_ms","peak_memory_bytes","timings","limits","egress","error"]
print(" ".join(k for k in need if k not in d) or "all")
print(sorted(d["timings"]) == ["acquire_us","run_us","setup_us","teardown_us"])')
is "$fields" "all
True" "every ExecResult field and phase timing is present"

json=$(hjson --lang python -c 'def f():
    return 1/0
f()')
is "$(echo "$json" | jget error.type)" ZeroDivisionError "python error type"
is "$(echo "$json" | jget error.message)" "division by zero" "python error message"
like "$(echo "$json" | jget error.traceback)" 'line 2, in f' "python traceback"

json=$(hjson -- sh -c 'printf "ok\377\376"')
is "$(echo "$json" | jget stdout_base64)" "b2v//g==" "invalid UTF-8 output is kept exactly in stdout_base64"

is "$(hutch --version | cut -d' ' -f1)" hutch "--version"
like "$(hutch run --help)" "--timeout DURATION" "run --help documents options"
done_testing

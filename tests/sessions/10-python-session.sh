#!/bin/bash
# A Python session through the CLI: state persists between calls, the last
# expression's value comes back, errors are structured, a timeout keeps the
# state, shell commands run in the same sandbox, reset forgets the
# interpreter but not the files, kill removes everything.
. "$(dirname "$0")/session-lib.bash"
plan 28
start_session_daemon

id=$(new_session --lang python --memory 512M)
like "$id" '^sess_[0-9a-f]+$' "session new prints the id as the last word"

sess exec "$id" 'import statistics; xs = [4, 8, 15, 16, 23, 42]' >/dev/null
is "$(sess exec "$id" 'statistics.median(xs)')" "15.5" "imports and variables persist; the final expression's value is printed"
is "$(sess exec "$id" 'def f(n): return n * 2')" "" "a definition prints nothing"
is "$(sess exec "$id" 'print("out"); f(21)')" "out
42" "printed output, then the value"
is "$(sess exec "$id" 'x = None')" "" "an assignment has no value"

out=$(hutch session exec --json "$id" '1/0' || true)
is "$(jget status <<<"$out")" "error" "an exception is status error"
is "$(jget error.type <<<"$out")" "ZeroDivisionError" "with the exception's type"
like "$(jget error.traceback <<<"$out")" "1/0" "and a traceback showing the line"
is "$(jget session_id <<<"$out")" "$id" "the result names the session"
like "$(jget limits.memory_bytes.enforced_by <<<"$out")" "^(cgroup v[12]|rlimit)$" "and which mechanism holds its memory limit"
is "$(sess exec "$id" 'len(xs)')" "6" "state survives an exception"

out=$(hutch session exec --json "$id" 'import sys; print("to err", file=sys.stderr); print("to out")' || true)
is "$(jget stdout <<<"$out")" "to out" "stdout of a call is its own"
is "$(jget stderr <<<"$out")" "to err" "stderr too"

# a call that outlives its timeout is interrupted; the session keeps its state
t0=$(date +%s%N)
rc=0
hutch session exec --timeout 1s "$id" 'import time; time.sleep(60)' >/dev/null 2>&1 || rc=$?
t1=$(date +%s%N)
is "$rc" "124" "a call past its timeout exits 124"
if (((t1 - t0) / 1000000 < 8000)); then ok "and is stopped promptly ($(((t1 - t0) / 1000000)) ms)"; else not_ok "timeout took $(((t1 - t0) / 1000000)) ms"; fi
is "$(sess exec "$id" 'xs[-1]')" "42" "state survives the interrupt"
out=$(hutch session exec --json --timeout 1s "$id" 'while True: pass' || true)
is "$(jget status <<<"$out")" "timeout" "a busy loop is interrupted too"
is "$(jget kernel_restarted <<<"$out")" "false" "without restarting the kernel"

# shell commands see the same files
sess exec "$id" 'open("data.txt", "w").write("from python\n")' >/dev/null
is "$(sess sh "$id" 'cat data.txt; pwd')" "from python
/workspace" "session sh runs in the same sandbox and workspace"
sess sh "$id" 'echo from-shell > shell.txt' >/dev/null
is "$(sess exec "$id" 'open("shell.txt").read().strip()')" "'from-shell'" "and python sees what the shell wrote"
rc=0
hutch session sh "$id" 'exit 7' >/dev/null 2>&1 || rc=$?
is "$rc" "7" "session sh exits with the command's status"

# reset forgets the interpreter, keeps the files
sess reset "$id" >/dev/null
out=$(hutch session exec --json "$id" 'xs' || true)
is "$(jget error.type <<<"$out")" "NameError" "reset forgets globals"
is "$(sess exec "$id" 'open("data.txt").read().strip()')" "'from python'" "reset keeps files"

info=$(sess info "$id")
is "$(jget session.state <<<"$info")" "running" "info: state"
like "$(jget session.calls <<<"$info")" '^[0-9]+$' "info: number of calls"
like "$(jget session.disk_used_bytes <<<"$info")" '^[1-9][0-9]*$' "info: disk used"

sess kill "$id" >/dev/null
out=$(hutch session exec "$id" '1' 2>&1 || true)
like "$out" "no session" "a killed session is gone"
gone=yes; [ -e "$STATE/sessions/$id" ] && gone=no
is "$gone" "yes" "and so is its directory"

done_testing

#!/bin/bash
# The heuristic task set (tests/agent/tasks.json): every task through
# `hutch agent --json` in this process's own sessions (no daemon), checked
# for status, output, attempt count, the debugger's categories and rules,
# network none on every run step (and egress denied where the task reaches
# out), distinct code per retry and the progress line format. Ends with the
# success rate and the mean attempts per success.
. "$(dirname "$0")/../lib.sh"

DIR=$(mktemp -d /tmp/hutch-agent-test.XXXXXX)
at_exit 'rm -rf "$DIR"'
export HUTCH_STATE_DIR=$DIR/state
TASKS=$ROOT/tests/agent/tasks.json
DATA=$ROOT/tests/agent/data

mapfile -t ids < <("$PY" -c 'import json, sys; [print(t["id"]) for t in json.load(open(sys.argv[1]))]' "$TASKS")
plan $((${#ids[@]} + 2))

# one task's command line: --lang, extra args, --file DATA/NAME...
task_args() {
	"$PY" - "$TASKS" "$1" "$DATA" <<'PYEOF'
import json, sys
t = {t["id"]: t for t in json.load(open(sys.argv[1]))}[sys.argv[2]]
args = (["--lang", t["lang"]] if "lang" in t else []) + t.get("args", [])
for f in t.get("files", []):
    args += ["--file", sys.argv[3] + "/" + f]
print("\0".join(args + [t["task"]]), end="")
PYEOF
}

solvable=0
solved=0
attempts_sum=0
for id in "${ids[@]}"; do
	mapfile -d '' -t args < <(task_args "$id")
	(cd "$DIR" && hutch agent --json "${args[@]}" >"$DIR/$id.json" 2>"$DIR/$id.err") || true
	passed=0
	if why=$("$PY" "$ROOT/tests/agent/check_task.py" "$TASKS" "$id" "$DIR/$id.json" "$DIR/$id.err" 2>&1); then
		passed=1
		ok "$id"
	else
		not_ok "$id" "$why" "$(tail -5 "$DIR/$id.err")"
	fi
	read -r expect status n < <("$PY" -c '
import json, sys
t = {t["id"]: t for t in json.load(open(sys.argv[1]))}[sys.argv[2]]
try:
    tr = json.load(open(sys.argv[3]))
except ValueError:
    tr = {}
print(t["expect"], tr.get("status", "none"), tr.get("attempts_used", 0))' "$TASKS" "$id" "$DIR/$id.json")
	if [ "$expect" = success ]; then
		solvable=$((solvable + 1))
		# solved: the pipeline said success and the output is the right one
		if [ "$status" = success ] && [ "$passed" = 1 ]; then
			solved=$((solved + 1))
			attempts_sum=$((attempts_sum + n))
		fi
	fi
done

rate=$("$PY" -c "print('%.1f' % (100 * $solved / max($solvable, 1)))")
mean=$("$PY" -c "print('%.2f' % ($attempts_sum / max($solved, 1)))")
echo "# heuristic task set: $solved/$solvable solvable tasks solved ($rate%), mean attempts per success $mean; $((${#ids[@]} - solvable)) tasks reported as failed on purpose"
is "$solved" "$solvable" "success rate $rate% on the solvable tasks, mean attempts $mean"

stats=$(hutch agent stats --json)
is "$(jget pipelines <<<"$stats")" "${#ids[@]}" "every pipeline is in the history (agent stats)"

done_testing

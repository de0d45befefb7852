#!/bin/bash
# Helpers for integration tests (bubblewrap libtest-core.sh in spirit).
# Every test prints TAP. HUTCH_BUILD picks the build (build or build/san);
# HUTCH_AS=<user> runs hutch as that unprivileged user (rootless mode).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HUTCH_BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
HUTCH_BIN=$BUILD/hutch
PROBE=$ROOT/build/probe
PY=/usr/bin/python3
TAP_N=0
TAP_FAILED=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# Cleanups run at exit, in order; tests add theirs with at_exit (a test's own
# `trap ... EXIT` would replace the library's).
EXIT_HOOKS=()
at_exit() { EXIT_HOOKS+=("$1"); }
run_exit_hooks() {
	for h in "${EXIT_HOOKS[@]}"; do eval "$h" || true; done
}
trap run_exit_hooks EXIT

# Rootless runs need binaries an unprivileged user can reach.
if [ -n "${HUTCH_AS:-}" ]; then
	RL_DIR=$(mktemp -d /tmp/hutch-rootless.XXXXXX)
	chmod 755 "$RL_DIR"
	cp "$HUTCH_BIN" "$BUILD/hutch-full" "$BUILD/hutch-zygote" "$PROBE" "$RL_DIR/"
	HUTCH_BIN=$RL_DIR/hutch
	PROBE=$RL_DIR/probe
	at_exit 'rm -rf "$RL_DIR"'
fi

# HUTCH_TEST_PATH=fast: the whole file runs against a private daemon (the
# fast path); each run's result is checked to have taken that path where the
# tests ask for --json. Default: cold (no daemon; HUTCH_SOCKET points nowhere).
TEST_PATH=${HUTCH_TEST_PATH:-cold}
DAEMON_PID=
start_daemon() {
	local dir
	dir=$(mktemp -d /tmp/hutch-test-daemon.XXXXXX)
	chmod 755 "$dir"
	export HUTCH_SOCKET=$dir/hutch.sock
	local cmd=("$HUTCH_BIN" daemon --socket "$HUTCH_SOCKET" --pool 2 --log-level warn)
	if [ -n "${HUTCH_AS:-}" ]; then
		chown "$HUTCH_AS" "$dir"
		runuser -u "$HUTCH_AS" -- env HUTCH_SOCKET="$HUTCH_SOCKET" "${cmd[@]}" 2>"$dir/log" &
	else
		"${cmd[@]}" 2>"$dir/log" &
	fi
	DAEMON_PID=$!
	for _ in $(seq 100); do
		[ -S "$HUTCH_SOCKET" ] && break
		sleep 0.05
	done
	DAEMON_DIR=$dir
}
stop_daemon() {
	if [ -n "$DAEMON_PID" ]; then
		kill "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
		DAEMON_PID=
		rm -rf "$DAEMON_DIR"
	fi
}
if [ "$TEST_PATH" = fast ]; then
	start_daemon
	at_exit stop_daemon
	# every file of the fast pass starts by proving it is on the fast path
	if ! "$HUTCH_BIN" run --json -- true 2>/dev/null | grep -q '"path":"fast"'; then
		[ -n "${HUTCH_AS:-}" ] && chmod 755 "$DAEMON_DIR"
		echo "Bail out! the daemon did not serve the fast path: $(cat "$DAEMON_DIR/log" 2>/dev/null)"
		exit 1
	fi
else
	export HUTCH_SOCKET=/nonexistent/hutch.sock
fi

plan() { echo "1..$1"; }

ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1"
}

not_ok() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $1"
	shift
	for line in "$@"; do echo "# $line"; done
}

# skip_all REASON: the whole file cannot run here. Fails under
# HUTCH_TEST_MUST_RUN=1 (CI), so a missing capability never hides.
skip_all() {
	if [ "${HUTCH_TEST_MUST_RUN:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - skipped but HUTCH_TEST_MUST_RUN=1: $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

skip() {
	TAP_N=$((TAP_N + 1))
	if [ "${HUTCH_TEST_MUST_RUN:-0}" = 1 ]; then
		TAP_FAILED=$((TAP_FAILED + 1))
		echo "not ok $TAP_N - $1 # skipped but HUTCH_TEST_MUST_RUN=1: $2"
	else
		echo "ok $TAP_N - $1 # SKIP $2"
	fi
}

# is ACTUAL EXPECTED NAME
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:      '$1'" "expected: '$2'"; fi
}

# isnt ACTUAL UNEXPECTED NAME
isnt() {
	if [ "$1" != "$2" ]; then ok "$3"; else not_ok "$3" "got '$1', which it must not be"; fi
}

# like ACTUAL REGEX NAME
like() {
	if [[ $1 =~ $2 ]]; then ok "$3"; else not_ok "$3" "got:   '${1:0:400}'" "wanted: /$2/"; fi
}

unlike() {
	if [[ ! $1 =~ $2 ]]; then ok "$3"; else not_ok "$3" "got:   '${1:0:400}'" "must not match: /$2/"; fi
}

done_testing() {
	[ "$TAP_FAILED" -eq 0 ]
}

# hutch ARGS...: run the CLI (as HUTCH_AS when set), stdin passed through.
hutch() {
	if [ -n "${HUTCH_AS:-}" ]; then
		local q
		printf -v q '%q ' "$HUTCH_BIN" "$@"
		(cd / && runuser -u "$HUTCH_AS" -- env HUTCH_SOCKET="$HUTCH_SOCKET" bash -c "$q")
	else
		"$HUTCH_BIN" "$@"
	fi
}

# probe_in ARGS...: run the probe inside a sandbox; prints its stdout.
# The probe exits 1 when its answer is an errno name (the expected answer of
# most attacks), so its exit status is not a failure of the test.
probe_in() {
	hutch run --file "$PROBE:probe" -- /workspace/probe "$@" 2>/dev/null || true
}

# jget FIELD[.SUB...]: a value from the JSON object on stdin ("null" if absent).
jget() {
	"$PY" -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("null" if v is None else (json.dumps(v) if isinstance(v, (dict, list, bool)) else v))
' "$1"
}

need_root() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root"
}

. "$(dirname "${BASH_SOURCE[0]}")/users.sh"

# hjson ARGS...: `hutch run --json ARGS`. Its exit status mirrors the
# program's (124 on timeout, 137 on OOM...), which is what many tests provoke;
# they assert on the JSON, so a status other than 0 does not end the script.
hjson() {
	hutch run --json "$@" || true
}

#!/bin/bash
# Run every test under prove: unit, fuzz corpus replay and integration with
# the release build; integration again as an unprivileged user (rootless);
# unit and integration with the ASan+UBSan build. Ends with one line:
# "N passed, N failed[, N skipped]".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. tests/users.sh
mkdir -p build
log=build/check.log
: >"$log"
status=0

pass() {
	local name=$1
	shift
	echo "== $name" | tee -a "$log"
	if ! "$@" 2>&1 | tee -a "$log"; then
		status=1
	fi
}

# shellcheck disable=SC2317 # called through pass
run_prove() { prove -v --timer "$@"; }

# prove runs binaries directly with --exec '' (it would hand them to perl)
# the unit test binaries (not the .d files the compiler leaves beside them)
units() { find "$1" -maxdepth 1 -type f -name 'test-*' ! -name '*.d' | sort; }
mapfile -t unit_bins < <(units build/tests)
mapfile -t san_unit_bins < <(units build/san/tests)
pass "unit tests" run_prove --exec '' "${unit_bins[@]}"
pass "fuzz corpus replay" run_prove --exec '' build/fuzz-replay
pass "integration, cold path" run_prove tests/integration/*.sh
pass "integration, fast path (a daemon)" env HUTCH_TEST_PATH=fast prove -v --timer tests/integration/*.sh
pass "session kernels (outside a sandbox)" prove -v --timer --exec /usr/bin/python3 tests/kernels/test_*.py
pass "sessions" run_prove tests/sessions/[0-9]*.sh
pass "MCP server (the TypeScript SDK client and raw JSON-RPC)" run_prove tests/mcp/[0-9]*.sh
pass "network policies (a fake internet in a namespace)" run_prove tests/net/[0-9]*.sh
pass "HTTP API (hutch serve)" run_prove tests/service/[0-9]*.sh
pass "agent (task set, daemon and history, LLM mode against a fake server)" run_prove tests/agent/[0-9]*.sh
user=$(test_user || true)
core=(tests/integration/00-basics-run.sh tests/integration/10-ns-isolation.sh
	tests/integration/20-mount-fs.sh tests/integration/40-limits.sh)
if [ -n "$user" ] && userns_works "$user"; then
	pass "integration, rootless as $user, cold path" env HUTCH_AS="$user" \
		prove -v --timer "${core[@]}"
	pass "integration, rootless as $user, fast path" env HUTCH_AS="$user" HUTCH_TEST_PATH=fast \
		prove -v --timer "${core[@]}" tests/integration/67-fast-node.sh
	# not 30-session-lifecycle.sh: pause and idle need a cgroup freezer, and no
	# cgroup is delegated to this user here (the test says so when run by hand)
	pass "sessions, rootless as $user" env HUTCH_AS="$user" prove -v --timer \
		tests/sessions/10-python-session.sh tests/sessions/20-session-attacks.sh \
		tests/sessions/40-bash-node-sessions.sh tests/sessions/50-stateful-task.sh \
		tests/sessions/60-transfer-snapshot.sh tests/sessions/70-commands.sh
	pass "network policies, rootless as $user" env HUTCH_AS="$user" prove -v --timer \
		tests/net/10-allow-proxy.sh tests/net/20-direct-and-full.sh
	pass "MCP server, rootless as $user" env HUTCH_AS="$user" prove -v --timer tests/mcp/[0-9]*.sh
	pass "HTTP API, rootless as $user" env HUTCH_AS="$user" prove -v --timer \
		tests/service/[0-9]*.sh
elif [ "${HUTCH_TEST_MUST_RUN:-0}" = 1 ]; then
	echo "not ok - rootless pass: no unprivileged user with user namespaces" | tee -a "$log"
	status=1
else
	echo "ok - rootless pass # SKIP no unprivileged user with user namespaces" | tee -a "$log"
fi
pass "unit tests, ASan+UBSan" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 prove -v --timer --exec '' "${san_unit_bins[@]}"
pass "integration, ASan+UBSan, cold path" env HUTCH_BUILD=build/san \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/integration/*.sh
pass "integration, ASan+UBSan, fast path" env HUTCH_BUILD=build/san HUTCH_TEST_PATH=fast \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/integration/*.sh

pass "sessions, ASan+UBSan" env HUTCH_BUILD=build/san \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/sessions/[0-9]*.sh
pass "agent, ASan+UBSan" env HUTCH_BUILD=build/san \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/agent/[0-9]*.sh
pass "network policies, ASan+UBSan" env HUTCH_BUILD=build/san \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/net/[0-9]*.sh
pass "MCP server, ASan+UBSan" env HUTCH_BUILD=build/san \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/mcp/[0-9]*.sh
pass "HTTP API, ASan+UBSan" env HUTCH_BUILD=build/san \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 prove -v --timer tests/service/[0-9]*.sh

# The cgroup v2 backend for real: a Debian kernel under qemu (software
# emulation) with cgroup_no_v1=all; ~40 s here.
pass "cgroup v2 in a qemu guest" tests/v2/run.sh

# Count the TAP lines of every pass.
passed=$(grep -cE '^\s*ok [0-9]+' "$log" | tr -d ' ')
skipped=$(grep -cE '^\s*ok [0-9]+.*# (SKIP|skip)' "$log" | tr -d ' ')
failed=$(grep -cE '^\s*not ok' "$log" | tr -d ' ')
skipped_files=$(grep -cE '^1\.\.0 # SKIP' "$log" | tr -d ' ')
passed=$((passed - skipped))
skipped=$((skipped + skipped_files))
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1 # a test file died without a "not ok" line; prove said so above
fi
echo "$passed passed, $failed failed, $skipped skipped"
exit $status

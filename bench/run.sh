#!/bin/bash
# hutch beside the other ways to run a Python snippet, in one run on one machine.
#
#   bench/run.sh              the comparison table, throughput and fast-path phases
#   bench/run.sh soak [N]     N executions (default 100000) through the daemon's socket,
#                             sampling its RSS, open fds, threads and processes
#   bench/run.sh sessions     stateful sessions (docs/sessions.md): exec/sh round trips,
#                             new/kill, pause/resume, memory per idle session (bench/sessions.py)
#   bench/run.sh node         the same table for a node snippet: hutch's warm node (a node
#                             started ahead in each node cell) against node started per run
#
# Rows, each for two workloads (A: a sum, B: json + re), BENCH_N runs after BENCH_WARMUP:
#   socket   hutch fast path over the daemon's socket (build/bench-client, keep-alive)
#   socket-paced  the same, one request every BENCH_GAP_MS (20) ms: a warm, refilled pool
#   cli-fast `hutch run --json --lang python -c` with HUTCH_SOCKET set (a process per run)
#   cold     `hutch run --cold --json --lang python -c`
#   bwrap    bubblewrap (--unshare-all, read-only /usr) + /usr/bin/python3
#   rlimit   a long-lived Python parent: subprocess.run with rlimits (bench/procsandbox.py)
#   plain    /usr/bin/python3, no isolation
#   docker   docker run --rm --network none, a minimal image made with `docker import`
# The process rows are timed by build/bench-client (posix_spawn to waitpid, output read
# through pipes and checked), the rlimit row by its own parent (time.perf_counter_ns).
#
# The script starts its own daemon (`hutch daemon --socket $tmp/hutch.sock`) and stops it
# at the end; without one, the fast-path rows say why they were skipped. It never starts
# dockerd: with no engine reachable the docker row is skipped. To include Docker, start an
# engine by hand first, e.g. `dockerd --iptables=false --bridge=none &`.
#
# Environment:
#   BENCH_N=200            measured runs per row and workload (BENCH_N=20: a quick look)
#   BENCH_WARMUP=10        unmeasured runs before each
#   BENCH_DOCKER_N=$BENCH_N  runs for the docker row (~0.5 s each here)
#   BENCH_TP_SECONDS=5     length of each throughput level
#   BENCH_TP_CLIENTS="1 2 8 32"  concurrent socket clients per level ("": no throughput)
#   BENCH_ROWS="socket socket-paced cli-fast cold bwrap rlimit plain docker"  the rows to run
#   BENCH_GAP_MS=20              socket-paced: the pause between its requests
#   node: BENCH_N (default 100 there), BENCH_WARMUP, BENCH_NODE_GAP_MS=250 (the pause
#         between the paced fast rows' requests; a node cell costs a node start-up)
#   BENCH_SOAK_EVERY=10000 soak: sample every this many executions
#   BENCH_SOAK_RECONNECT=1000  soak: open a new connection every this many (0: never)
#   BENCH_DAEMON_ARGS=     more options for `hutch daemon` (e.g. "--pool 8 --log-level warn")
#   sessions: BENCH_N (default 500 there), BENCH_WARMUP, BENCH_SESSIONS=100, BENCH_SH_N=100,
#             BENCH_NEW_N=20, BENCH_PAUSE_N=100, BENCH_TIMEOUT=120, BENCH_SETTLE=10
#             (see bench/sessions.py)
#   HUTCH=build/hutch      the hutch binary
# Output: the tables on stdout and in build/bench/results.txt (soak: build/bench/soak.txt;
# sessions: build/bench/sessions.txt; node: build/bench/node.txt); the raw per-run samples in build/bench/raw/
# (sessions: build/bench/sessions-raw/).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${BENCH_N:-200}
[ "${1:-}" != sessions ] || N=${BENCH_N:-500}
[ "${1:-}" != node ] || N=${BENCH_N:-100}
WARMUP=${BENCH_WARMUP:-10}
DOCKER_N=${BENCH_DOCKER_N:-$N}
TP_SECONDS=${BENCH_TP_SECONDS:-5}
TP_CLIENTS=${BENCH_TP_CLIENTS-1 2 8 32}
ROWS=${BENCH_ROWS:-socket socket-paced cli-fast cold bwrap rlimit plain docker}
GAP_MS=${BENCH_GAP_MS:-20}
HUTCH=${HUTCH:-build/hutch}
CLIENT=build/bench-client
PY=/usr/bin/python3 # never the python3 first on PATH (a pyenv shim here, 6x slower)
OUT=build/bench
RAW=$OUT/raw
DOCKER_IMAGE=hutch-bench-python:1

WORKLOADS=(A B)
declare -A CODE=(
	[A]='print(sum(range(1000)))'
	[B]='import json, re; print(json.dumps(re.findall(r"\d+", "a1b22c333")))'
)
declare -A EXPECT=([A]='499500' [B]='["1", "22", "333"]')

log() { printf 'bench: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

tmp=$(mktemp -d /tmp/hutch-bench.XXXXXX)
sock=$tmp/hutch.sock
daemon_pid=
daemon_note=
daemon_died=
daemon_log=$OUT/daemon.log
daemon_args=() # more options for `hutch daemon` from the mode (before BENCH_DAEMON_ARGS)

# Stops the daemon; says so on stderr (and in $daemon_died) if it had died on its own.
stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	if ! kill -0 "$daemon_pid" 2>/dev/null; then
		local rc=0
		wait "$daemon_pid" || rc=$?
		daemon_died="the daemon (pid $daemon_pid) exited by itself during the run, status $rc; its log: $daemon_log"
		log "$daemon_died"
		daemon_pid=
		return 0
	fi
	kill -TERM "$daemon_pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$daemon_pid" 2>/dev/null || true
	wait "$daemon_pid" 2>/dev/null || true
	daemon_pid=
}
# The session client (bench/sessions.py), while it runs: on Ctrl-C or SIGTERM it is sent
# SIGTERM and given 30 s to kill its sessions before the daemon is stopped.
client_pid=
stop_client() {
	[ -n "$client_pid" ] || return 0
	kill -TERM "$client_pid" 2>/dev/null || true
	for _ in $(seq 300); do
		kill -0 "$client_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$client_pid" 2>/dev/null || true
	wait "$client_pid" 2>/dev/null || true
	client_pid=
}
cleanup() {
	stop_client
	stop_daemon
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts `hutch daemon` on $sock and checks it serves one request on the fast path.
# Returns 1 with daemon_note saying why when it cannot.
start_daemon() {
	local help rc=0
	help=$("$HUTCH" daemon --help 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] && grep -qi "unknown command" <<<"$help"; then
		daemon_note="skipped: \`$HUTCH daemon\` does not exist yet ($(head -n1 <<<"$help"))"
		return 1
	fi
	mkdir -p "$OUT"
	# shellcheck disable=SC2086 # BENCH_DAEMON_ARGS is a list of words
	"$HUTCH" daemon --socket "$sock" "${daemon_args[@]}" ${BENCH_DAEMON_ARGS:-} \
		>"$daemon_log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 300); do
		if ! kill -0 "$daemon_pid" 2>/dev/null; then
			rc=0
			wait "$daemon_pid" || rc=$?
			daemon_pid=
			daemon_note="skipped: \`$HUTCH daemon\` exited with status $rc at start: $(tail -n3 "$daemon_log" | tr '\n' ' ')"
			return 1
		fi
		[ -S "$sock" ] && break
		sleep 0.1
	done
	if [ ! -S "$sock" ]; then
		stop_daemon
		daemon_note="skipped: \`$HUTCH daemon\` made no socket at $sock within 30 s"
		return 1
	fi
	if ! "$CLIENT" latency -s "$sock" -c "${CODE[A]}" -e "${EXPECT[A]}" -n 1 -w 0 \
		-o "$tmp/probe.txt" 2>"$tmp/probe.err" || ! grep -q '^1 ' "$tmp/probe.txt"; then
		daemon_note="skipped: the daemon did not serve a probe request: $(head -c 300 "$tmp/probe.err" | tr '\n' ' ')"
		stop_daemon
		return 1
	fi
	log "daemon up (pid $daemon_pid, socket $sock)"
}

wants() { [[ " $ROWS " == *" $1 "* ]]; }

# row ID LABEL: declares a row; note_row ID LABEL NOTE: one that did not run.
row() { printf '%s\t%s\t\n' "$1" "$2" >>"$RAW/rows.tsv"; }
note_row() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RAW/rows.tsv"; }

# spawn_row ID WORKLOAD N MODE CMD...: time CMD once per run with bench-client.
spawn_row() {
	local id=$1 wl=$2 n=$3 mode=$4
	shift 4
	log "$id $wl: $n runs"
	"$CLIENT" spawn -e "${EXPECT[$wl]}" -n "$n" -w "$WARMUP" -m "$mode" \
		-o "$RAW/$id.$wl.txt" -- "$@" || failed "$id $wl"
}

# A row that broke off keeps the runs it finished; the others still run.
failed() {
	log "$1: stopped early (status $?)"
	echo "$1: the measurement stopped early; see the messages above the table" >>"$RAW/notes.txt"
}

# A root filesystem with just python3, its standard library and the shared libraries
# they link, imported as a Docker image (import time is not measured).
docker_image() {
	if docker image inspect "$DOCKER_IMAGE" >/dev/null 2>&1; then
		return 0
	fi
	log "docker: building $DOCKER_IMAGE from a minimal rootfs"
	local root=$tmp/rootfs real f dir stdlib
	stdlib=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
	real=$(readlink -f "$PY")
	mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/tmp" "$root/etc"
	chmod 1777 "$root/tmp"
	ln -s usr/bin "$root/bin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	cp -a "$real" "$root/usr/bin/"
	ln -sf "$(basename "$real")" "$root/usr/bin/python3"
	cp -a --parents "$stdlib" "$root/"
	[ ! -d /etc/python3 ] || cp -a --parents /etc/python3* "$root/"
	# The shared libraries of python3 and of its extension modules, copied (dereferenced)
	# under the canonical directory of the name the loader asks for.
	while read -r f; do
		dir=$(readlink -f "$(dirname "$f")")
		mkdir -p "$root$dir"
		cp -L "$f" "$root$dir/"
	done < <(find "$stdlib/lib-dynload" -name '*.so' -print0 | xargs -0 ldd "$real" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' |
		sort -u)
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
	tar -C "$root" -c . | docker import - "$DOCKER_IMAGE" >/dev/null
}

# Sets docker_note and returns 1 when no engine is reachable.
docker_ready() {
	local err
	if ! command -v docker >/dev/null; then
		docker_note="docker: skipped (no engine reachable: the docker CLI is not installed)"
		return 1
	fi
	if ! err=$(timeout 30 docker info 2>&1 >/dev/null); then
		err=$(grep -v '^[[:space:]]*$' <<<"$err" | tail -n1)
		docker_note="docker: skipped (no engine reachable: ${err:-docker info failed})"
		return 1
	fi
	if ! docker_image 2>"$tmp/docker-image.err"; then
		docker_note="docker: skipped (could not build $DOCKER_IMAGE: $(tail -n1 "$tmp/docker-image.err"))"
		return 1
	fi
}

header() {
	local commit version
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	git diff --quiet HEAD -- src include 2>/dev/null || commit="$commit+dirty"
	version=$("$HUTCH" --version 2>&1 | head -n1)
	{
		echo "hutch bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $version (commit $commit)"
		echo "machine: $(uname -r), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); python: $("$PY" --version 2>&1) ($PY)"
		echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the numbers)"
		echo "each row: $N measured runs per workload after $WARMUP warm-up runs (docker: $DOCKER_N); every run's output checked"
	} >"$RAW/header.txt"
}

bench_table() {
	rm -rf "$RAW"
	mkdir -p "$RAW"
	printf 'A\t%s\nB\t%s\n' "${CODE[A]}" "${CODE[B]}" >"$RAW/workloads.tsv"
	: >"$RAW/rows.tsv"
	: >"$RAW/notes.txt"
	header

	local fast=0 wl c
	if wants socket || wants socket-paced || wants cli-fast || [ -n "$TP_CLIENTS" ]; then
		if start_daemon; then
			fast=1
		else
			log "fast path $daemon_note"
		fi
	fi

	local l_socket="hutch fast: socket, keep-alive"
	local l_cli="hutch fast: \`hutch run\` CLI"
	if wants socket; then
		if [ "$fast" = 1 ]; then
			row socket "$l_socket"
			for wl in "${WORKLOADS[@]}"; do
				log "socket $wl: $N runs"
				"$CLIENT" latency -s "$sock" -c "${CODE[$wl]}" -e "${EXPECT[$wl]}" \
					-n "$N" -w "$WARMUP" -o "$RAW/socket.$wl.txt" || failed "socket $wl"
			done
		else
			note_row socket "$l_socket" "$daemon_note"
		fi
	fi
	# The same, one request every GAP_MS: the pool has refilled between
	# requests, as the issue's "warm pool" asks; back to back, the refill
	# competes with the requests for the same cores.
	local l_paced="hutch fast: socket, ${GAP_MS} ms apart"
	if wants socket-paced; then
		if [ "$fast" = 1 ]; then
			row socket-paced "$l_paced"
			for wl in "${WORKLOADS[@]}"; do
				log "socket-paced $wl: $N runs, ${GAP_MS} ms apart"
				"$CLIENT" latency -s "$sock" -c "${CODE[$wl]}" -e "${EXPECT[$wl]}" \
					-n "$N" -w "$WARMUP" -g "$GAP_MS" -o "$RAW/socket-paced.$wl.txt" ||
					failed "socket-paced $wl"
			done
		else
			note_row socket-paced "$l_paced" "$daemon_note"
		fi
	fi
	if wants cli-fast; then
		if [ "$fast" = 1 ]; then
			row cli-fast "$l_cli"
			for wl in "${WORKLOADS[@]}"; do
				HUTCH_SOCKET=$sock spawn_row cli-fast "$wl" "$N" json-fast \
					"$HUTCH" run --json --lang python -c "${CODE[$wl]}"
			done
		else
			note_row cli-fast "$l_cli" "$daemon_note"
		fi
	fi
	if wants cold; then
		row cold "hutch cold: \`hutch run --cold\`"
		for wl in "${WORKLOADS[@]}"; do
			spawn_row cold "$wl" "$N" json \
				"$HUTCH" run --cold --json --lang python -c "${CODE[$wl]}"
		done
	fi
	if wants bwrap; then
		if command -v bwrap >/dev/null; then
			row bwrap "bubblewrap + python3"
			for wl in "${WORKLOADS[@]}"; do
				spawn_row bwrap "$wl" "$N" plain bwrap --unshare-all \
					--ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
					--symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp \
					-- "$PY" -c "${CODE[$wl]}"
			done
		else
			note_row bwrap "bubblewrap + python3" "skipped: bwrap is not installed (scripts/deps.sh installs it)"
		fi
	fi
	if wants rlimit; then
		row rlimit "python subprocess + rlimits"
		for wl in "${WORKLOADS[@]}"; do
			log "rlimit $wl: $N runs"
			"$PY" bench/procsandbox.py "$N" "$WARMUP" "$RAW/rlimit.$wl.txt" \
				"${EXPECT[$wl]}" "${CODE[$wl]}" || failed "rlimit $wl"
		done
	fi
	if wants plain; then
		row plain "python3, no isolation"
		for wl in "${WORKLOADS[@]}"; do
			spawn_row plain "$wl" "$N" plain "$PY" -c "${CODE[$wl]}"
		done
	fi
	if wants docker; then
		local docker_note=
		if docker_ready; then
			row docker "docker run --rm --network none"
			for wl in "${WORKLOADS[@]}"; do
				spawn_row docker "$wl" "$DOCKER_N" plain docker run --rm --network none \
					"$DOCKER_IMAGE" /usr/bin/python3 -c "${CODE[$wl]}"
			done
		else
			log "$docker_note"
			echo "$docker_note" >>"$RAW/notes.txt"
			note_row docker "docker run --rm --network none" "${docker_note#docker: }"
		fi
	fi

	if [ -n "$TP_CLIENTS" ]; then
		if [ "$fast" = 1 ]; then
			for wl in "${WORKLOADS[@]}"; do
				: >"$RAW/tp.$wl.txt"
				for c in $TP_CLIENTS; do
					log "throughput $wl: $c clients, $TP_SECONDS s"
					"$CLIENT" throughput -s "$sock" -c "${CODE[$wl]}" -e "${EXPECT[$wl]}" \
						-j "$c" -t "$TP_SECONDS" -w 2 >>"$RAW/tp.$wl.txt" ||
						failed "throughput $wl, $c clients"
				done
			done
		else
			echo "throughput over the socket: $daemon_note" >>"$RAW/notes.txt"
		fi
	fi
	stop_daemon
	[ -z "$daemon_died" ] || echo "$daemon_died" >>"$RAW/notes.txt"

	"$PY" bench/report.py "$RAW" | tee "$OUT/results.txt"
}

bench_soak() {
	local n=${1:-100000} every=${BENCH_SOAK_EVERY:-10000} reconnect=${BENCH_SOAK_RECONNECT:-1000}
	mkdir -p "$OUT"
	daemon_log=$OUT/soak-daemon.log
	if ! start_daemon; then
		die "soak: fast path $daemon_note"
	fi
	local rc=0
	{
		echo "hutch daemon soak: $n executions of workload A over the socket" \
			"(new connection every $reconnect), sampled every $every"
		echo "daemon pid $daemon_pid; rss_kB = VmRSS, fds = /proc/PID/fd entries," \
			"procs = its descendant processes, p50/p99 = latency in that window (µs)"
	} | tee "$OUT/soak.txt"
	"$CLIENT" soak -s "$sock" -c "${CODE[A]}" -e "${EXPECT[A]}" -n "$n" -i "$every" \
		-p "$daemon_pid" -r "$reconnect" | tee -a "$OUT/soak.txt" || rc=$?
	awk '$1 ~ /^[0-9]+$/ && $1 > 0 { if (!first) { first = 1; r0 = $2; f0 = $3; p0 = $5 }
		r1 = $2; f1 = $3; p1 = $5; e = $1 }
		END { if (first) printf "from the first sample after warm-up to %d: rss %+d kB, fds %+d, procs %+d\n",
			e, r1 - r0, f1 - f0, p1 - p0 }' "$OUT/soak.txt" | tee -a "$OUT/soak.txt"
	stop_daemon
	return "$rc"
}

# The session benchmark: its own daemon with a state directory under $tmp (removed at the
# end with $tmp), bench/sessions.py as the client. The client kills every session it made
# before it exits (Ctrl-C included); stopping the daemon ends any it could not.
bench_sessions() {
	mkdir -p "$OUT"
	daemon_log=$OUT/sessions-daemon.log
	daemon_args=(--state-dir "$tmp/state" --pool 1 --log-level warn)
	# The daemon holds ~6 fds per session and does not raise its own RLIMIT_NOFILE; with
	# the common soft limit of 1024 it stops at ~165 sessions (EMFILE). Raise the soft
	# limit (never past the hard one) for a big BENCH_SESSIONS, and say so in the table.
	local sessions=${BENCH_SESSIONS:-100} soft hard need notes=()
	[[ "$sessions" =~ ^[0-9]+$ ]] || die "BENCH_SESSIONS must be a number, not '$sessions'"
	need=$((sessions * 8 + 256))
	soft=$(ulimit -Sn)
	hard=$(ulimit -Hn)
	if [ "$soft" != unlimited ] && [ "$soft" -lt "$need" ]; then
		[ "$hard" = unlimited ] || [ "$hard" -ge "$need" ] || need=$hard
		if [ "$need" -gt "$soft" ] && ulimit -Sn "$need"; then
			notes+=(--note "open-file limit: raised from $soft to $need for the daemon (about 6 fds per session)")
			log "sessions: open-file limit raised from $soft to $need for $sessions sessions"
		fi
	fi
	if ! start_daemon; then
		die "sessions: $daemon_note"
	fi
	local commit rc=0
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	git diff --quiet HEAD -- src include kernels 2>/dev/null || commit="$commit+dirty"
	# In the background, so that a signal to this script is handled at once (wait returns);
	# the trap's cleanup then stops the client, which kills its sessions.
	BENCH_N=$N "$PY" bench/sessions.py --socket "$sock" --daemon-pid "$daemon_pid" \
		--out "$OUT/sessions.txt" --raw "$OUT/sessions-raw" \
		--label "$("$HUTCH" --version 2>&1 | head -n1) (commit $commit)" "${notes[@]}" &
	client_pid=$!
	wait "$client_pid" || rc=$?
	client_pid=
	stop_daemon
	if [ -n "$daemon_died" ]; then
		echo "$daemon_died" | tee -a "$OUT/sessions.txt"
		[ "$rc" -ne 0 ] || rc=1
	fi
	return "$rc"
}

# The node table (bench/run.sh node). A node cell costs a whole node start-up (~100 ms of
# CPU here) where a Python cell costs a fork, so the pool keeps as many as node requests
# ask for and refills them slowly: the paced rows leave BENCH_NODE_GAP_MS between
# requests, so each finds a node cell ready; the back-to-back row shows a drained pool
# (node then starts per run in a ready cell, as it did before node cells).
bench_node() {
	local gap=${BENCH_NODE_GAP_MS:-250} node_bin wl=N
	[[ "$gap" =~ ^[0-9]+$ ]] || die "BENCH_NODE_GAP_MS must be a number, not '$gap'"
	node_bin=$(command -v /usr/bin/node node | head -n1) || die "node: not installed"
	WORKLOADS=(N)
	CODE[N]='console.log([...Array(1000).keys()].reduce((a, b) => a + b))'
	EXPECT[N]=499500
	RAW=$OUT/node-raw
	rm -rf "$RAW"
	mkdir -p "$RAW"
	printf 'N\t%s\n' "${CODE[N]}" >"$RAW/workloads.tsv"
	: >"$RAW/rows.tsv"
	: >"$RAW/notes.txt"
	header
	daemon_log=$OUT/node-daemon.log
	start_daemon || die "node: fast path $daemon_note"
	row socket "hutch fast node: socket, ${gap} ms apart"
	log "socket node: $N runs, $gap ms apart"
	"$CLIENT" latency -l node -s "$sock" -c "${CODE[N]}" -e "${EXPECT[N]}" -n "$N" \
		-w "$WARMUP" -g "$gap" -o "$RAW/socket.N.txt" || failed "socket node"
	row socket-b2b "hutch fast node: socket, back to back"
	log "socket node: $N runs, back to back"
	"$CLIENT" latency -l node -s "$sock" -c "${CODE[N]}" -e "${EXPECT[N]}" -n "$N" \
		-w 0 -o "$RAW/socket-b2b.N.txt" || failed "socket node, back to back"
	sleep 2 # the node cells refill
	row cli-fast "hutch fast node: \`hutch run\` CLI, ${gap} ms apart"
	log "cli-fast node: $N runs, $gap ms apart"
	HUTCH_SOCKET=$sock "$CLIENT" spawn -e "${EXPECT[N]}" -n "$N" -w "$WARMUP" -m json-fast \
		-g "$gap" -o "$RAW/cli-fast.N.txt" -- "$HUTCH" run --json --lang node -c "${CODE[N]}" ||
		failed "cli-fast node"
	stop_daemon
	[ -z "$daemon_died" ] || echo "$daemon_died" >>"$RAW/notes.txt"
	row cold "hutch cold node: \`hutch run --cold\`"
	spawn_row cold "$wl" "$N" json "$HUTCH" run --cold --json --lang node -c "${CODE[N]}"
	if command -v bwrap >/dev/null && [[ $(readlink -f "$node_bin") == /usr/* ]]; then
		row bwrap "bubblewrap + node"
		spawn_row bwrap "$wl" "$N" plain bwrap --unshare-all \
			--ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
			--symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp \
			-- "$node_bin" -e "${CODE[N]}"
	else
		note_row bwrap "bubblewrap + node" "skipped: bwrap missing, or $node_bin outside /usr"
	fi
	row plain "node ($node_bin), no isolation"
	spawn_row plain "$wl" "$N" plain "$node_bin" -e "${CODE[N]}"
	"$PY" bench/report.py "$RAW" | tee "$OUT/node.txt"
}

[ -x "$HUTCH" ] || die "$HUTCH is missing: run make first"
[ -x "$CLIENT" ] || make -s "$CLIENT" >&2 || die "cannot build $CLIENT"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "BENCH_N must be a positive integer, not '$N'"

case "${1:-}" in
"") bench_table ;;
soak) bench_soak "${2:-100000}" ;;
sessions) bench_sessions ;;
node) bench_node ;;
*) die "usage: bench/run.sh [soak [N] | sessions | node]" ;;
esac

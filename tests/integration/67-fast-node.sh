#!/bin/bash
# The fast path's warm node: a node cell starts node ahead (src/zygote/node.c)
# and hands it the request. It must give what a fresh `node main.js` gives in
# a cold cell, run under the same credentials, filter and rules, and fall
# back to a fresh node whenever the one started ahead could differ.
export HUTCH_TEST_PATH=fast
. "$(dirname "$0")/../lib.sh"
need_root
command -v node >/dev/null || skip_all "no node on this machine"
plan 16

# Node in a node cell is the cell's C's child: pid 3 (pid 2 when node is a
# fresh program in a cell). The first node request finds no node cell (the
# pool makes them once node requests come); one follows in the background.
warm_pid() {
	local pid=
	for _ in $(seq 100); do
		pid=$(hutch run --lang node -c 'console.log(process.pid)' 2>/dev/null)
		[ "$pid" = 3 ] && break
		sleep 0.2
	done
	echo "$pid"
}
is "$(warm_pid)" 3 "node runs in a node started ahead once the pool has a node cell"

# Wait until our daemon has a node cell whose node is waiting for a request:
# the next node request takes it (only this file uses this daemon).
our_nodes() {
	local p a
	for p in $(pgrep -f '^node -r /tmp/.hutch-node-warm.js'); do
		a=$p
		while [ "$a" -gt 1 ] && [ "$a" != "$DAEMON_PID" ]; do
			a=$(awk '{print $4}' /proc/"$a"/stat 2>/dev/null || echo 1)
		done
		[ "$a" = "$DAEMON_PID" ] && echo "$p"
	done
}
# Ready: node blocked in read(0), on the pipe the request comes through
# (/proc/PID/syscall: "0 0x0 ..."); the cell then tells the pool at once.
wait_node_cell() {
	local p
	for _ in $(seq 150); do
		for p in $(our_nodes); do
			if [[ $(cut -d' ' -f1-2 /proc/"$p"/syscall 2>/dev/null) == "0 0x0" ]]; then
				sleep 0.05
				return 0
			fi
		done
		sleep 0.1
	done
	echo "# no node cell ready after 15 s"
}

# The same requests, cold and fast, give the same results (bar ids, timings,
# usage). Before each fast one, a node cell is ready, so it runs in a warm
# node unless the request is one it must not (NODE_OPTIONS, stdin).
norm() {
	"$PY" -c '
import json, sys
d = json.load(sys.stdin)
for k in ("id", "path", "timings", "wall_ms", "cpu_ms", "peak_memory_bytes", "bytes_written"):
    d.pop(k, None)
for e in d.get("egress") or []:
    e.pop("time_ms", None)
print(json.dumps(d, sort_keys=True))'
}
lib=$(mktemp /tmp/hutch-node-lib.XXXXXX)
in=$(mktemp /tmp/hutch-node-in.XXXXXX)
pkg=$(mktemp /tmp/hutch-node-pkg.XXXXXX)
at_exit "rm -f $lib $in $pkg"
echo 'exports.x = 41' >"$lib"
chmod 644 "$lib"
echo 'from stdin' >"$in"
echo '{"type": "module"}' >"$pkg"
chmod 644 "$in" "$pkg"
cases=(
	"--lang node -c console.log([1, 2, 3].reduce((a, b) => a + b))"
	"--lang node -c console.error('e'); process.exitCode = 3"
	"--lang node -c process.exit(4)"
	"--lang node -c throw new Error('boom')"
	"--lang node -c console.log("
	"--lang node -c Promise.reject(new TypeError('late'))"
	"--lang node -c process.kill(process.pid, 'SIGTERM')"
	"--env A=1 --lang node -c console.log(process.argv, process.execArgv, process.cwd(), Object.keys(process.env).sort())"
	"--env TZ=Asia/Tokyo --lang node -c console.log(new Date(0).toString())"
	"--env NODE_OPTIONS=--no-deprecation --lang node -c console.log(process.env.NODE_OPTIONS)"
	"--stdin $in --lang node -c console.log(require('fs').readFileSync(0, 'utf8'))"
	"--file $lib:lib.js --workdir /workspace --lang node -c console.log(require('./lib').x + 1, require.main === module, __filename)"
	"--file $pkg:package.json --lang node -c import os from 'os'; console.log(typeof os.cpus, import.meta.url)"
	"--lang node -c const fs = require('fs'); console.log(fs.readdirSync('/tmp'), fs.readdirSync('/workspace'), Object.keys(require.cache))"
	"--lang node -c console.log(require('fs').readFileSync('/proc/self/status', 'utf8').split('\n').filter(l => /^(Uid|Gid|Groups|Cap|NoNewPrivs|Seccomp)/.test(l)).join('\n'))"
	"--lang node -c try { require('fs').readFileSync('/etc/shadow') } catch (e) { console.log(e.code) }"
	"--lang node -c require('net').connect(80, '1.1.1.1').on('error', e => console.log(e.code))"
	"--cpu-time 300ms --lang node -c while (true) {}"
	"--timeout 500ms --lang node -c setInterval(() => {}, 1000)"
)
same=0
for c in "${cases[@]}"; do
	read -r -a words <<<"${c%% -c *}"
	words+=(-c "${c#* -c }")
	a=$(hjson --cold "${words[@]}" | norm)
	wait_node_cell
	b=$(hjson "${words[@]}" | norm)
	if [ "$a" = "$b" ]; then same=$((same + 1)); else echo "# differs for: $c"; echo "# cold: $a"; echo "# fast: $b"; fi
done
is "$same" "${#cases[@]}" "cold and fast node give identical results for ${#cases[@]} requests"
# Arguments and a working directory below /workspace reach the warm node.
args_cwd() { hutch run "$@" --workdir sub --lang node -c 'console.log(process.cwd(), process.argv.slice(2))' -- a "b c" ''; }
cold_args=$(args_cwd --cold)
wait_node_cell
is "$(args_cwd)" "$cold_args" "arguments and --workdir: as a fresh node gets them ($cold_args)"
# Out of memory, V8's report has timings and a pid in it: the outcome only.
oom() {
	hjson "$@" --memory 100M --lang node -c 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))' |
		"$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["limit_hit"], d["signal"])'
}
cold_oom=$(oom --cold)
wait_node_cell
is "$(oom)" "$cold_oom" "out of memory, a warm node ends as a fresh one does ($cold_oom)"

# Each node cell starts its own node: V8 seeds Math.random from the kernel
# in each (the issue's "node's Math.random reseeded").
draws=$(for _ in $(seq 10); do
	wait_node_cell
	hutch run --lang node -c 'console.log(Math.random(), require("crypto").randomUUID())'
done)
is "$(echo "$draws" | sort -u | wc -l)" 10 "10 warm nodes: Math.random and randomUUID never repeat"

# What does differ, by design (README "The fast path"): node is pid 3, its
# parent a hutch-cell. That parent is closed to it: no memory, no fds, no
# environment (not dumpable), no tracing (seccomp).
wait_node_cell
out=$(hutch run --lang node -c 'const fs = require("fs");
const p = `/proc/${process.ppid}`;
const tries = { mem: () => fs.readFileSync(`${p}/mem`), environ: () => fs.readFileSync(`${p}/environ`),
                fd: () => fs.readdirSync(`${p}/fd`) };
for (const [what, f] of Object.entries(tries)) {
  try { f(); console.log(what, "read") } catch (e) { console.log(what, e.code) }
}
console.log(fs.readFileSync(`${p}/comm`, "utf8").trim())' 2>&1)
is "$(echo "$out" | head -3 | tr '\n' ' ')" "mem EACCES environ EACCES fd EACCES " \
	"a warm node cannot read its cell's memory, environment or fds"
is "$(echo "$out" | tail -1)" hutch-cell "(its parent is the cell's C)"
wait_node_cell
is "$(hjson --lang node -c 'process.kill(process.ppid, "SIGKILL"); setTimeout(() => console.log("after"), 2000)' |
	"$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["signal"], repr(d["stdout"]))')" \
	"killed 9 ''" "a warm node that kills its cell's C ends its own run, at once"

# The warm-up leaves nothing behind: no file, no inherited node option.
wait_node_cell
is "$(hutch run --lang node -c 'const { execFileSync, fork } = require("child_process");
const fs = require("fs");
fs.writeFileSync("child.js", "console.log(process.execArgv.length, process.argv.length)");
fork("child.js").on("exit", c => console.log("fork exit", c))' 2>&1)" "0 2
fork exit 0" "a fork of a warm node starts like a fresh one (no -r of the warm-up)"

# Node's output goes straight to the engine: a large write arrives whole,
# and output after the program's end is not waited for.
wait_node_cell
is "$(hutch run --lang node -c 'process.stdout.write("x".repeat(300000))' | wc -c)" 300000 \
	"300 kB of output from a warm node arrive whole"

# Nothing of one run's node survives into the next: each cell starts its own.
wait_node_cell
hutch run --lang node -c 'globalThis.LEFT = 1; process.env.LEFT = "1";
require("fs").writeFileSync("/tmp/left", "x")' >/dev/null
wait_node_cell
is "$(hutch run --lang node -c 'console.log(typeof LEFT, "LEFT" in process.env,
require("fs").existsSync("/tmp/left"))')" "undefined false false" \
	"the next warm node sees no global, variable or file the last one left"

# Without node in the template (a daemon whose mount namespace hides it), a
# node request fails as a fresh node would, the pool says why once and stops
# trying for a while, and Python is not affected.
nonode=$(mktemp -d /tmp/hutch-nonode.XXXXXX)
chmod 755 "$nonode"
at_exit "rm -rf $nonode"
# shellcheck disable=SC2016 # expanded by the inner shell
unshare -m sh -c 'for d in /usr/local/bin /usr/bin /bin; do
	[ -e "$d/node" ] && mount --bind /dev/null "$d/node"; done
exec "$0" daemon --socket "$1/s" --pool 1 --log-level warn 2>"$1/log"' "$HUTCH_BIN" "$nonode" &
nodaemon=$!
at_exit "kill $nodaemon 2>/dev/null"
for _ in $(seq 100); do [ -S "$nonode/s" ] && break; sleep 0.05; done
outs=$(for _ in 1 2 3; do
	HUTCH_SOCKET=$nonode/s "$HUTCH_BIN" run --json --lang node -c 'console.log(1)' |
		"$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["exit_code"])'
	sleep 0.5
done | sort -u)
is "$outs" "error 126" "no node in the template: node requests fail as a fresh node does (error, 126)"
is "$(HUTCH_SOCKET=$nonode/s "$HUTCH_BIN" run --lang python -c 'print(2)')" 2 "and Python still runs"
is "$(grep -c 'no warm node: the new cell failed (node)' "$nonode/log")" 1 \
	"the pool says once why it has no node cells, and does not retry at once"
kill "$nodaemon" 2>/dev/null
wait "$nodaemon" 2>/dev/null

# A node started ahead and never used goes with the daemon (ours: other
# tests may run daemons of their own).
wait_node_cell
mapfile -t ours < <(our_nodes)
isnt "${#ours[@]}" 0 "node cells wait with their node started"
stop_daemon
sleep 0.5
left=0
for p in "${ours[@]}"; do [ -d /proc/"$p" ] && left=$((left + 1)); done
is "$left" 0 "no warm node outlives the daemon"
done_testing

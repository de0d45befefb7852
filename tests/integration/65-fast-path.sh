#!/bin/bash
# The fast path specifically: it is used when a daemon is up and not when it
# is not, gives the cold path's results, and forking a warm zygote leaks
# nothing between runs: no shared randomness, no view of the zygote or of
# siblings, none of the daemon's memory, no state from the previous run.
export HUTCH_TEST_PATH=fast
. "$(dirname "$0")/../lib.sh"
need_root
plan 19

json=$(hjson -- true)
is "$(echo "$json" | jget path)" fast "with a daemon up, runs take the fast path"
is "$(hjson --cold -- true | jget path)" cold "--cold takes the cold path"
is "$(HUTCH_SOCKET=/nonexistent/x.sock "$HUTCH_BIN" run --json -- true | jget path)" cold \
	"without a daemon, hutch run falls back to the cold path"
is "$(hjson --disk 8M -- true | jget path)" cold "a non-default disk size goes cold (pool cells are made for one size)"

# Same request, both paths: the same result but for ids, timings and usage.
norm() {
	"$PY" -c '
import json, sys
d = json.load(sys.stdin)
for k in ("id", "path", "timings", "wall_ms", "cpu_ms", "peak_memory_bytes", "bytes_written"):
    d.pop(k, None)
print(json.dumps(d, sort_keys=True))'
}
same=0
cases=(
	"--lang python -c print(sum(range(1000)))"
	"--lang python -c import sys; print('e', file=sys.stderr); sys.exit(3)"
	"--lang python -c 1/0"
	"--lang python -c raise SystemExit('bye')"
	"--lang python -c print("
	"--lang python -c import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
	"--lang python -c import subprocess; subprocess.Popen(['sleep', '30']); print('left a child')"
	"--env A=1 --lang python -c import os; print(sorted(os.environ))"
	"--lang bash -c echo \$0 \$PWD; exit 4"
	"--timeout 1 -- sh -c while :; do :; done"
	"-- /nonexistent-command"
)
for c in "${cases[@]}"; do
	read -r -a words <<<"${c%% -c *}"
	if [[ $c == *" -c "* ]]; then words+=(-c "${c#* -c }"); fi
	a=$(hjson --cold "${words[@]}" | norm)
	b=$(hjson "${words[@]}" | norm)
	if [ "$a" = "$b" ]; then same=$((same + 1)); else echo "# differs for: $c"; echo "# cold: $a"; echo "# fast: $b"; fi
done
is "$same" "${#cases[@]}" "cold and fast give identical results (bar ids, timings, usage) for ${#cases[@]} requests"

# 100 forks of one zygote: every child draws its own randomness.
draws=$(for _ in $(seq 100); do
	hutch run --lang python -c 'import random, os, uuid, secrets
print(random.random(), os.urandom(8).hex(), uuid.uuid4(), secrets.token_hex(8))' 2>/dev/null
done)
is "$(echo "$draws" | wc -l)" 100 "100 children ran"
for col in 1 2 3 4; do
	is "$(echo "$draws" | cut -d' ' -f$col | sort -u | wc -l)" 100 "100 children: field $col (random, urandom, uuid4, secrets) never repeats"
done

# Nothing of the zygote or of a sibling is visible.
zpid=$(pgrep -f '^hutch-zygote' | head -1)
is "$("$PROBE" kill "$zpid")" OK "outside: the zygote (pid $zpid) can be signalled"
is "$(probe_in kill "$zpid")" ESRCH "inside: the zygote does not exist"
marker=sibling-$$-$RANDOM
hutch run --timeout 20 --file "$PROBE:probe" -- /workspace/probe spin "$marker" >/dev/null 2>&1 &
spinner=$!
for _ in $(seq 50); do pgrep -f "^/workspace/probe spin $marker" >/dev/null && break; sleep 0.1; done
sib=$(pgrep -f "^/workspace/probe spin $marker" | head -1)
is "$(probe_in kill "$sib")" ESRCH "inside: a running sibling (pid $sib) does not exist"
kill "$spinner" 2>/dev/null || true
wait "$spinner" 2>/dev/null || true

# Nothing of the previous run survives in the next one.
hutch run --lang python -c 'import json, os, sys
open("/workspace/left", "w").write("x"); open("/tmp/left", "w").write("x")
json.LEFT = 1; os.environ["LEFT"] = "1"; sys.path.append("/left")' >/dev/null
is "$(hutch run --lang python -c 'import json, os, sys
print(os.path.exists("/workspace/left"), os.path.exists("/tmp/left"), hasattr(json, "LEFT"),
      "LEFT" in os.environ, "/left" in sys.path)')" "False False False False False" \
	"the next run sees no file, module global, variable or path the last one left"

# The daemon's memory never reaches a cell: plant a secret in a daemon,
# then look for it in the memory of its zygote and of a running cell.
secret=planted-$RANDOM-$RANDOM-secret
sdir=$(mktemp -d /tmp/hutch-secret.XXXXXX)
at_exit "kill \$sdaemon 2>/dev/null; rm -rf $sdir"
HUTCH_PLANTED=$secret "$HUTCH_BIN" daemon --socket "$sdir/s.sock" --pool 1 2>/dev/null &
sdaemon=$!
for _ in $(seq 100); do [ -S "$sdir/s.sock" ] && break; sleep 0.05; done
HUTCH_SOCKET=$sdir/s.sock "$HUTCH_BIN" run --timeout 20 --lang python -c 'import time; time.sleep(15)' &
srun=$!
sleep 1.5
scan() {
	"$PY" - "$1" "$secret" <<'PYEOF'
import sys
pid, needle = sys.argv[1], sys.argv[2].encode()
found = 0
try:
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            # skip what cannot hold data we planted: unreadable, vvar, and
            # the huge reservations of a sanitized build (ASan's shadow)
            if "r" not in line.split()[1] or "[vvar]" in line or hi - lo > (1 << 30):
                continue
            # read in chunks: a sanitized daemon maps terabytes of shadow
            for at in range(lo, hi, 1 << 24):
                try:
                    mem.seek(at)
                    chunk = mem.read(min(hi - at, (1 << 24) + len(needle)))
                except (OSError, OverflowError, MemoryError):
                    break
                if needle in chunk:
                    found += 1
                    break
    print(found)
except OSError as e:
    print(f"unreadable: {e}")
PYEOF
}
# descendants of a pid, from /proc/*/stat (field 4 is the parent)
descendants() {
	local queue=("$1") p
	while [ ${#queue[@]} -gt 0 ]; do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		# shellcheck disable=SC2013 # pids are words
		for c in $(awk -v p="$p" '$4 == p {print $1}' /proc/[0-9]*/stat 2>/dev/null); do
			echo "$c"
			queue+=("$c")
		done
	done
}
szyg=$(pgrep -P "$sdaemon" | head -1)
# the cell running our sleep: a hutch-cell under that zygote whose stdout is
# a pipe (waiting for it: on a loaded machine the pool may still be filling)
scell=
for _ in $(seq 100); do
	for p in $(descendants "$szyg"); do
		if grep -q '^Name:.hutch-cell' /proc/"$p"/status 2>/dev/null &&
			[[ $(readlink /proc/"$p"/fd/1 2>/dev/null) == pipe:* ]]; then
			scell=$p
		fi
	done
	[ -n "$scell" ] && break
	sleep 0.1
done
isnt "$(scan "$sdaemon")" 0 "outside: the secret is in the daemon's memory (the control)"
is "$(scan "$szyg")" 0 "the secret is nowhere in the zygote's memory"
if [ -n "$scell" ]; then
	is "$(scan "$scell")" 0 "the secret is nowhere in the memory of the cell running the code"
else
	not_ok "could not find the cell running the code"
fi
kill "$srun" 2>/dev/null || true
wait "$srun" 2>/dev/null || true
is "$(find /proc/"$szyg"/fd -mindepth 1 -printf '%f\n' 2>/dev/null | sort -n | tr '\n' ' ')" "0 1 2 3 4 " \
	"the zygote holds no fd of the daemon's but stdio, its control socket and its program"
# A warm run ends without waiting for the kernel to tear its copy of the
# zygote down: a keeper that shares it, and holds no fd, takes that over
# (cell/zygote.h). None outlives its cell: every hutch-cell left (ready
# cells) still holds its fds.
for _ in $(seq 30); do hutch run --lang python -c 'pass' >/dev/null; done
sleep 1
keepers=0
for p in $(pgrep -x hutch-cell); do
	[ -d /proc/"$p"/fd ] && [ -z "$(ls /proc/"$p"/fd 2>/dev/null)" ] && keepers=$((keepers + 1))
done
is "$keepers" 0 "after 30 warm runs, no keeper (a hutch-cell without fds) is left"
done_testing

#!/bin/bash
# Pause and resume (no CPU while paused), auto-pause when idle and
# transparent resume, the ttl, daemon SIGKILL and restart with files
# intact, a kernel that dies, and bad requests on the socket.
. "$(dirname "$0")/session-lib.bash"
plan 25
start_session_daemon

cpu() { jget session.cpu_ms <<<"$(sess info "$1")"; }

id=$(new_session --lang python)
# a thread that burns CPU in the background of the kernel
sess exec "$id" 'import threading
def spin():
    while True: pass
threading.Thread(target=spin, daemon=True).start()' >/dev/null
sleep 0.5
c0=$(cpu "$id")
sleep 1
c1=$(cpu "$id")
if ((c1 - c0 > 300)); then ok "a running session uses CPU ($((c1 - c0)) ms in 1 s)"; else not_ok "running: only $((c1 - c0)) ms"; fi
out=$(hutch session pause --json "$id" || true)
NO_FREEZER=
if [ "$(jget error.message <<<"$out")" != null ]; then
	# rootless without a delegated cgroup: the reason is in the message
	NO_FREEZER=$(jget error.message <<<"$out")
	skip "pause: the session is paused" "$(jget error.message <<<"$out")"
	skip "a paused session uses no CPU" "no cgroup"
	skip "resume takes < 10 ms" "no cgroup"
	skip "resumed" "no cgroup"
else
	is "$(jget session.state <<<"$out")" "paused" "pause: the session is paused"
	sleep 0.3
	c2=$(cpu "$id")
	sleep 1
	c3=$(cpu "$id")
	if ((c3 - c2 < 20)); then ok "a paused session uses no CPU ($((c3 - c2)) ms in 1 s)"; else not_ok "paused but used $((c3 - c2)) ms"; fi
	out=$(sess resume "$id")
	took=$(jget took_us <<<"$out")
	if ((took < 10000)); then ok "resume takes < 10 ms (${took} µs)"; else not_ok "resume took ${took} µs"; fi
	is "$(jget session.state <<<"$out")" "running" "resumed"
fi
sess kill "$id" >/dev/null

# idle sessions pause themselves and wake on the next call
id=$(new_session --lang python --idle-timeout 1s)
sess exec "$id" 'y = 7' >/dev/null
sleep 2
state=$(jget session.state <<<"$(sess info "$id")")
if [ -n "$NO_FREEZER" ]; then
	skip "an idle session is paused after --idle-timeout" "$NO_FREEZER"
else
	is "$state" "paused" "an idle session is paused after --idle-timeout"
fi
is "$(sess exec "$id" 'y * 6')" "42" "the next call resumes it transparently, state intact"

# the ttl ends a session at its deadline
id2=$(new_session --lang python --ttl 1s)
sleep 2
out=$(hutch session info "$id2" 2>&1 || true)
like "$out" "no session" "a session past its --ttl is gone"

# the workspace has a hard size cap (root: an ext4 image of --disk)
q=$(new_session --lang python --disk 16M)
quota=$(jget session.disk_quota.enforced_by <<<"$(sess info "$q")")
if [ "$quota" = "ext4 image" ]; then
	out=$(sess sh "$q" 'head -c 40M /dev/zero > big 2>&1; echo "rc=$?"; stat -c %s big')
	like "$out" "rc=1" "writing past --disk in the workspace fails (ENOSPC)"
	size=$(tail -1 <<<"$out")
	if ((size < 17 * 1024 * 1024)); then ok "and stops at the cap ($size bytes)"; else not_ok "wrote $size bytes past a 16M cap"; fi
else
	skip "writing past --disk in the workspace fails" "$(jget session.disk_quota.note <<<"$(sess info "$q")")"
	skip "and stops at the cap" "no quota here"
fi
sess kill "$q" >/dev/null

# the daemon dies hard and comes back: sessions and files are there
sess exec "$id" 'open("keep.txt", "w").write("survives")' >/dev/null
hutch session files "$id" write dir/api.txt "also" >/dev/null
stop_session_daemon KILL
sleep 0.2
start_session_daemon
list=$(sess list)
like "$list" "$id" "after SIGKILL and restart, session list shows the session"
is "$(jget session.state <<<"$(sess info "$id")")" "dead" "its processes ended with the daemon (state dead)"
out=$(hutch session exec --json "$id" 'open("keep.txt").read()')
like "$out" "survives" "its files are intact"
is "$(jget kernel_restarted <<<"$out")" "true" "the result says a fresh kernel was started"
like "$(jget note <<<"$out")" "restarted" "and why"
is "$(hutch session files "$id" read dir/api.txt)" "also" "files written through the API survive too"

# killed in the middle of a files-API write: the file is the old or the new one, never half
head -c 30000000 /dev/urandom >"$SESS_DIR/big.bin"
chmod 644 "$SESS_DIR/big.bin"
hutch session files "$id" write target.bin "old" >/dev/null
(hutch session files "$id" write target.bin --from "$SESS_DIR/big.bin" >/dev/null 2>&1 || true) &
writer=$!
# kill the daemon while the temp file is being written (seen from the host)
seen=no
for _ in $(seq 400); do
	# shellcheck disable=SC2153 # STATE comes from session-lib.bash
	if compgen -G "$STATE/sessions/$id/workspace/.hutch-tmp-*" >/dev/null; then
		seen=yes
		break
	fi
	sleep 0.01
done
stop_session_daemon KILL
wait "$writer" || true
start_session_daemon
got=$(hutch session files "$id" read target.bin | sha256sum | cut -c1-16)
old=$(printf old | sha256sum | cut -c1-16)
new=$(sha256sum <"$SESS_DIR/big.bin" | cut -c1-16)
if [ "$got" = "$old" ] || [ "$got" = "$new" ]; then
	ok "a daemon killed mid-write leaves the old file or the new one ($([ "$got" = "$old" ] && echo old || echo new); temp file seen before the kill: $seen)"
else
	not_ok "after a kill mid-write the file is neither old nor new" "size: $(hutch session files --json "$id" stat target.bin | jget stat.size)"
fi

# a kernel that dies is restarted, and the result says so
out=$(hutch session exec --json "$id" 'import os; os._exit(3)' || true)
is "$(jget kernel_restarted <<<"$out")" "true" "a kernel that exits is restarted"
is "$(sess exec "$id" '1 + 1')" "2" "and the session works after"

# memory: the session's limit stops a hog, and the session lives on
id3=$(new_session --lang python --memory 128M)
out=$(hutch session exec --json "$id3" 'x = bytearray(512 * 1024 * 1024); x[::4096] = b"x" * len(x[::4096])' || true)
like "$(jget status <<<"$out")" "^(oom|error)$" "a memory hog is stopped by the session's limit"
is "$(sess exec "$id3" '"alive"')" "'alive'" "the session is usable after"

# bad input gets a clear error, never a crash
out=$(hutch session exec "sess_doesnotexist" '1' 2>&1 || true)
like "$out" "no session 'sess_doesnotexist'" "an unknown id is named in the error"
out=$("$PY" - "$HUTCH_SOCKET" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def ask(p):
    s.sendall(struct.pack("<I", len(p) + 1) + b"J" + p)
    hdr = s.recv(5); n = struct.unpack("<I", hdr[:4])[0]
    body = b""
    while len(body) < n - 1: body += s.recv(65536)
    return body.decode()
for p in [b'{"op":', b'[]', b'{"op":"session.nope","id":"x"}', b'{"op":"session.new","language":"python","bogus":1}', b'{"op":"session.new","language":"cobol"}']:
    print(ask(p))
EOF
)
like "$out" "malformed JSON" "malformed JSON is named"
like "$out" "unknown field 'bogus'" "unknown fields are named"
if [ -S "$HUTCH_SOCKET" ] && kill -0 "$SDAEMON_PID"; then ok "the daemon is still up"; else not_ok "daemon died"; fi

done_testing

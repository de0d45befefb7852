#!/bin/bash
# The daemon's socket from the attacker's and the clumsy client's side: bad
# frames and bad JSON get a clear error and never take the daemon down;
# other users are refused; the warm Python path leaks no fd into the code.
export HUTCH_TEST_PATH=fast
. "$(dirname "$0")/../lib.sh"
need_root
plan 18

# frames SOCKET TYPE:PAYLOAD...: send raw frames on one connection and print
# each reply frame as "TYPE PAYLOAD" (docs/daemon.md). Special items:
# "raw:HEX" sends bytes as they are; "close" stops sending.
frames() {
	"$PY" - "$@" <<'PYEOF'
import socket, struct, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
sock.settimeout(20)
def frame(t, payload):
    return struct.pack("<I", len(payload) + 1) + t.encode() + payload
for item in sys.argv[2:]:
    if item.startswith("raw:"):
        sock.sendall(bytes.fromhex(item[4:]))
        continue
    t, payload = item[0], item[2:].encode()
    sock.sendall(frame(t, payload))
sock.shutdown(socket.SHUT_WR)
buf = b""
while True:
    try:
        chunk = sock.recv(65536)
    except socket.timeout:
        print("TIMEOUT")
        break
    if not chunk:
        break
    buf += chunk
while len(buf) >= 5:
    n = struct.unpack("<I", buf[:4])[0]
    print(chr(buf[4]), buf[5:4 + n].decode(errors="replace"))
    buf = buf[4 + n:]
PYEOF
}

sock=$HUTCH_SOCKET
is "$(stat -c %a "$sock")" 600 "the socket is mode 0600"

out=$(frames "$sock" 'Q:{"argv": ["true"')
like "$out" '^R \{"error":\{"code":"EINVAL","message":"malformed JSON at line 1' "malformed JSON: an error with its position"
out=$(frames "$sock" 'Q:{"argv": ["true"], "limits": {"timeout": 5}}')
like "$out" "unknown field 'limits.timeout'" "an unknown field is named"
out=$(frames "$sock" 'Q:{"argv": ["true"], "limits": {"pids": -1}}')
like "$out" "limits.pids" "a negative limit is named"
out=$(frames "$sock" 'Q:[1, 2]')
like "$out" "must be a JSON object" "a request that is not an object is refused"
out=$(frames "$sock" 'Z:hello')
like "$out" "unknown frame type 'Z'" "an unknown frame type is refused"
# a header announcing 200 MiB: refused before anything is read or allocated
out=$(frames "$sock" raw:010000c851)
like "$out" '"code":"EMSGSIZE".*over the' "an oversized frame is refused"
out=$(frames "$sock" raw:0000000051)
like "$out" "frame of length 0" "a zero-length frame is refused"
out=$(frames "$sock" raw:64000000517b2261)
like "$out" "truncated frame" "a frame cut short is refused"
out=$(frames "$sock" raw:0100)
like "$out" "truncated frame header" "a header cut short is refused"
out=$(frames "$sock" 'Q:{"argv": ["true"]}' 'Q:{"language": "python", "code": "print(7*6)"}')
# (the client has shut down its writing side by then: half-closed, not gone)
is "$(echo "$out" | grep -c '^R {"id":"run_')" 2 "two requests on one connection get two results"
like "$out" '"stdout":"42\\n"' "...the second one runs to the end after the client half-closed"
out=$(frames "$sock" 'S:{"language": "python", "code": "import sys; print(1); print(2, file=sys.stderr)"}')
# stdout and stderr are separate pipes: their relative order is not fixed
like "$(echo "$out" | cut -c1 | tr -d '\n')" '^(OE|EO)R$' "streaming: stdout and stderr frames come before the result"
is "$(hjson -- true | jget path)" fast "after all of that, the daemon still serves"

# Another user may not use this daemon, even if the socket's mode lets them in.
u=$(test_user) || u=
if [ -n "$u" ]; then
	chmod 0777 "$DAEMON_DIR"
	chmod 0666 "$sock"
	out=$(runuser -u "$u" -- "$HUTCH_BIN" run --json -- true 2>&1 || true) # refused: exit 125
	chmod 0600 "$sock"
	like "$out" "uid not allowed by this daemon" "another uid is refused (SO_PEERCRED)"
else
	skip "another uid is refused (SO_PEERCRED)" "cannot create an unprivileged test user"
fi

# The warm Python path runs the code in the cell's own process: the channel
# to the daemon is closed first, so the code sees the cold path's fds.
code='import os; print(sorted(int(f) for f in os.listdir("/proc/self/fd")))'
fast=$(hutch run --lang python -c "$code")
cold=$(hutch run --cold --lang python -c "$code")
is "$fast" "[0, 1, 2, 3]" "warm Python sees fds 0-2 only (3 is listdir's own)"
is "$fast" "$cold" "...the same as on the cold path"

set +e
out=$("$HUTCH_BIN" daemon --socket "$sock" 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ] && [[ $out =~ "already listening" ]]; then ok "a second daemon on a live socket is refused"; else not_ok "second daemon: rc $rc: $out"; fi
done_testing

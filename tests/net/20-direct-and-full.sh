#!/bin/bash
# Direct connections and network policy full, from the attacker's side,
# against the fake internet (tests/net/fake-internet.bash).
#
# Under none and allow:, a program that ignores the proxy and connects (or
# sends a datagram) straight to an address fails at once and the attempt is
# in the result's egress log: on the cold path, the fast path, in session
# kernels and session commands. Under full, public addresses work; private
# ranges, the cloud metadata address, the host's own addresses and the
# host's loopback do not (unless --net-allow-private, loopback never), not
# even through calls the connect watch does not see (sendmsg), and the
# program cannot change its routes. Nothing reaches in. Root and (HUTCH_AS)
# rootless.
. "$(dirname "$0")/../lib.sh"
need_root
. "$(dirname "$0")/fake-internet.bash"
if [ -n "${HUTCH_AS:-}" ]; then plan 21; else plan 31; fi
internet_up

# egress FIELD INDEX < result
egress() { "$PY" -c 'import json,sys; e=json.load(sys.stdin)["egress"]; i=int(sys.argv[2]); print(e[i].get(sys.argv[1]) if len(e) > i else "none")' "$1" "$2"; }
nentries() { "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["egress"]))'; }
oneline() { tr '\n' ' ' | sed 's/ *$//'; }
# verdicts < result: "address:port:verdict" of every entry, one per line
verdicts() { "$PY" -c 'import json,sys; [print("%s:%s:%s:%s" % (e["protocol"], e["address"], e["port"], e["verdict"])) for e in json.load(sys.stdin)["egress"]]'; }

# --- none: direct attempts fail at once and are logged ---
out=$(hjson --cold -- sh -c "curl -sS -m 10 http://$INET_IP/; echo curl=\$?")
like "$(jget stdout <<<"$out")" "curl=7" "none: a direct TCP connect fails"
is "$(verdicts <<<"$out")" "tcp:$INET_IP:80:denied" "and is logged with protocol, address, port and verdict"
like "$(egress reason 0 <<<"$out")" "policy none" "with the reason"
if (($(jget wall_ms <<<"$out") < 3000)); then ok "at once, not after curl's 10 s timeout"; else not_ok "took $(jget wall_ms <<<"$out") ms"; fi

udp=$(
	cat <<PYEOF
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for dst in [("$INET_IP", 53), ("127.0.0.1", 9)]:
    try:
        s.sendto(b"x", dst); print("sent", dst[0])
    except OSError as e:
        print("refused", dst[0], e.errno)
PYEOF
)
out=$(hjson --cold -- "$PY" -c "$udp")
like "$(jget stdout <<<"$out")" "refused $INET_IP 101" "none: a datagram to an address fails with ENETUNREACH"
is "$(verdicts <<<"$out")" "udp:$INET_IP:53:denied" "logged as udp; the one to loopback goes through unlogged"

out=$(hjson --cold --net allow:allowed.hutch.test -- sh -c "curl -sS -m 10 http://allowed.hutch.test/ >/dev/null; $PY -c 'import socket; socket.create_connection((\"$INET_IP\", 7), timeout=10)' 2>&1 | tail -1")
is "$(verdicts <<<"$out" | sort | tr '\n' ' ')" "http:$INET_IP:80:allowed tcp:$INET_IP:7:denied " "allow: the proxied request is allowed, the one that bypasses the proxy is denied"
like "$(jget egress <<<"$out")" "only the proxy" "and its reason points at the proxy"

# --- full ---
out=$(hjson --cold --net full -- sh -c "curl -sS -m 10 http://$INET_IP/")
like "$(jget stdout <<<"$out")" "hello from $INET_IP" "full: a public address is reachable"
is "$(verdicts <<<"$out")" "tcp:$INET_IP:80:allowed" "and logged as allowed"

out=$(hjson --cold --net full -- sh -c 'for a in 10.1.2.3 169.254.169.254 192.168.1.1; do curl -sS -m 10 http://$a/ >/dev/null 2>&1; echo "$a $?"; done')
is "$(jget stdout <<<"$out" | oneline)" "10.1.2.3 7 169.254.169.254 7 192.168.1.1 7" "full: private, metadata and LAN addresses fail"
if (($(jget wall_ms <<<"$out") < 3000)); then ok "at once"; else not_ok "took $(jget wall_ms <<<"$out") ms"; fi
like "$(egress reason 1 <<<"$out")" "link-local \(cloud metadata\)" "and the reason names the range"

out=$(hjson --cold --net full --net-connections 2 -- sh -c "for i in 1 2 3; do curl -sS -m 10 -o /dev/null http://$INET_IP/ 2>/dev/null; echo \$?; done")
is "$(jget stdout <<<"$out" | oneline) $(egress verdict 2 <<<"$out")" "0 0 7 rate_limited" "full: --net-connections 2 refuses the third connection, logged as rate_limited"

# datagrams through sendmsg() are not watched: the routes still stop them
sendmsg=$(
	cat <<PYEOF
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for dst in ["10.1.2.3", "169.254.169.254"]:
    try:
        s.sendmsg([b"x"], [], 0, (dst, 53)); print("sent", dst)
    except OSError as e:
        print("refused", dst, e.errno)
PYEOF
)
out=$(hjson --cold --net full -- "$PY" -c "$sendmsg")
is "$(jget stdout <<<"$out" | oneline)" "refused 10.1.2.3 113 refused 169.254.169.254 113" "full: sendmsg() to private and metadata addresses fails too (routes, not the watch)"

out=$(hjson --cold --net full -- sh -c 'ip route del 10.0.0.0/8 2>&1; ip route add default dev lo 2>&1; echo done')
like "$(jget stdout <<<"$out")" "Operation not permitted" "full: the program cannot change its routes"

# the host's own address and its loopback, with a listener on each
# (each listener writes a line per connection it accepts to $accepts)
port=$((20000 + RANDOM % 20000))
accepts=$(mktemp)
at_exit "rm -f '$accepts'"
"$PY" -c "
import socket, threading, time
def serve(s, a):
    while True:
        c, _ = s.accept(); c.close()
        with open('$accepts', 'a') as f: f.write(a + '\\n')
for a in ['$INET_HOST_IP', '127.0.0.1']:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a, $port)); s.listen(16)
    threading.Thread(target=serve, args=(s, a), daemon=True).start()
time.sleep(120)" &
lpid=$!
at_exit "kill $lpid 2>/dev/null"
sleep 0.5
probe="import socket,sys
for a in sys.argv[1:]:
    try:
        socket.create_connection((a, $port), timeout=5).close(); print(a, 'connected')
    except OSError as e:
        print(a, 'failed', e.errno)"
out=$(hjson --cold --net full -- "$PY" -c "$probe" "$INET_HOST_IP" 10.0.2.2)
is "$(jget stdout <<<"$out" | oneline)" "$INET_HOST_IP failed 101 10.0.2.2 failed 101" "full: the host's own address and its loopback (10.0.2.2) are out of reach"
# With --net-allow-private, 10.0.2.2 is not the host's loopback
# (--disable-host-loopback): slirp4netns sends it out as a plain address,
# so whether it connects depends on the network around this machine. What
# must hold: the host's address is reached, its loopback never is.
: >"$accepts"
out=$(hjson --cold --net full --net-allow-private -- "$PY" -c "$probe" "$INET_HOST_IP" 10.0.2.2 127.0.0.1)
sleep 0.3
is "$(jget stdout <<<"$out" | head -1):$(sort -u "$accepts" | oneline)" "$INET_HOST_IP connected:$INET_HOST_IP" "--net-allow-private opens the host's address (the listener is real), never its loopback listener"

# the same events in the JSON log, with the execution id and the labels
logf=$(mktemp)
at_exit "rm -f '$logf'"
out=$(HUTCH_LOG_FORMAT=json hutch run --json --cold --log-level info --label agent=coder --label step=3 -- sh -c "curl -s -m 10 http://$INET_IP:9/; true" 2>"$logf" || true)
is "$("$PY" -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1]) if "\"egress\"" in l][0]; print(e["execution_id"], e["labels"], e["address"], e["port"], e["verdict"])' "$logf")" "$(jget id <<<"$out") {'agent': 'coder', 'step': '3'} $INET_IP 9 denied" "the JSON log has the attempt, with its execution id and labels"
out=$(hutch run --json --net wide -- true 2>&1 || true)
like "$out" "unknown network policy 'wide'" "an unknown policy is refused, naming the known ones"
out=$(hutch run --json --net-allow-private -- true 2>&1 || true)
like "$out" "network_allow_private applies only to network 'full'" "--net-allow-private without full is refused"

if [ -n "${HUTCH_AS:-}" ]; then
	internet_down
	exit "$TAP_FAILED"
fi

# nothing reaches in: slirp4netns listens on nothing on the host
out=$( (hjson --cold --net full -- sh -c "$PY -c 'import socket,time; s=socket.socket(); s.bind((\"0.0.0.0\", 8000)); s.listen(); time.sleep(3)'" >/dev/null) &
	sleep 1.5
	pids=$(pgrep -x slirp4netns | tr '\n' ',')
	echo "slirp=${pids%,}"
	for p in ${pids//,/ }; do ss -Hlntup | grep "pid=$p," || true; done
	wait)
like "$out" "slirp=[0-9]" "full: slirp4netns runs for the cell"
is "$(sed -n '2,$p' <<<"$out")" "" "and listens on no host port (no ingress)"

# --- the fast path and sessions see direct attempts too ---
sdir=$(mktemp -d)
at_exit 'rm -rf "$sdir"'
export HUTCH_SOCKET=$sdir/s.sock
"$HUTCH_BIN" daemon --socket "$HUTCH_SOCKET" --state-dir "$sdir/state" --pool 1 --log-level warn 2>"$sdir/log" &
dpid=$!
at_exit "kill $dpid 2>/dev/null; wait $dpid 2>/dev/null"
for _ in $(seq 100); do [ -S "$HUTCH_SOCKET" ] && break; sleep 0.05; done
out=$(hjson -- sh -c "curl -sS -m 10 http://$INET_IP:8080/ 2>&1")
is "$(jget path <<<"$out"):$(verdicts <<<"$out")" "fast:tcp:$INET_IP:8080:denied" "the fast path logs a direct connect as denied"
out=$(hjson -- sh -c 'curl -sS -m 5 http://127.0.0.1:3128/ 2>&1; echo " rc=$?"')
like "$(jget path <<<"$out") $(jget stdout <<<"$out")" "^fast .*rc=7" "none on the fast path: the pooled cell's proxy port refuses (its listener was closed)"
out=$(hjson --net allow:allowed.hutch.test -- sh -c "curl -sS -m 10 http://allowed.hutch.test/; curl -sS -m 10 http://other.hutch.test/; $PY -c 'import socket; socket.create_connection((\"$INET_IP\", 7), timeout=10)' 2>/dev/null")
like "$(jget path <<<"$out") $(jget stdout <<<"$out")" "^fast hello from allowed.hutch.test" "allow: on the fast path reaches the allowed name through the proxy"
is "$(verdicts <<<"$out" | sort | oneline)" "http:$INET_IP:80:allowed http:None:80:denied tcp:$INET_IP:7:denied" "and logs the allowed, the denied name and the direct attempt"

id=$("$HUTCH_BIN" session new --lang python | awk 'END { print $NF }')
out=$("$HUTCH_BIN" session exec --json "$id" "import socket
try:
    socket.create_connection(('$INET_IP', 81), timeout=10)
except OSError as e:
    print(e.errno)" || true)
is "$(jget stdout <<<"$out" | tr -d '\n'):$(egress address 0 <<<"$out"):$(egress port 0 <<<"$out")" "101:$INET_IP:81" "a session kernel's direct connect fails and is in that call's egress"
out=$("$HUTCH_BIN" session sh --json "$id" "curl -sS -m 10 http://$INET_IP:82/ 2>&1" || true)
is "$(verdicts <<<"$out")" "tcp:$INET_IP:82:denied" "so is a session command's (and only its own)"
"$HUTCH_BIN" session kill "$id" >/dev/null

id=$("$HUTCH_BIN" session new --lang bash --net full | awk 'END { print $NF }')
out=$("$HUTCH_BIN" session sh --json "$id" "curl -sS -m 10 http://$INET_IP/" || true)
like "$(jget stdout <<<"$out")" "hello from $INET_IP" "a session made with full reaches a public address"
out=$("$HUTCH_BIN" session net "$id" none 2>&1 || true)
like "$out" "chosen when the session is made" "and cannot switch away from full (said why)"
"$HUTCH_BIN" session kill "$id" >/dev/null

internet_down
done_testing

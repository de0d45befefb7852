#!/bin/bash
# Network policy allow: from the attacker's side, against a small internet
# of our own (tests/net/fake-internet.bash: a namespace with HTTP, HTTPS and
# echo servers at TEST-NET addresses, and names for them in /etc/hosts).
# Allowed names work through the proxy (curl and Python); everything else is
# denied and logged: other names, the IP of an allowed server, names that
# resolve to loopback, metadata or private addresses, a mismatched SNI, raw
# sockets; the proxy survives malformed and slow clients; two runs at once
# each get their own log. Runs as root and (HUTCH_AS) rootless.
. "$(dirname "$0")/../lib.sh"
need_root
. "$(dirname "$0")/fake-internet.bash"
if [ -n "${HUTCH_AS:-}" ]; then plan 28; else plan 31; fi
internet_up

# run_net POLICY CMD: `hutch run --json --net POLICY -- sh -c CMD`
run_net() { hjson --cold --net "$1" -- sh -c "$2"; }
# egress FIELD INDEX < result: one field of one egress entry
egress() { "$PY" -c 'import json,sys; e=json.load(sys.stdin)["egress"]; i=int(sys.argv[2]); print(e[i].get(sys.argv[1]) if len(e) > i else "none")' "$1" "$2"; }
nentries() { "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["egress"]))'; }

out=$(run_net allow:allowed.hutch.test 'curl -sS -m 10 http://allowed.hutch.test/')
like "$(jget stdout <<<"$out")" "hello from allowed.hutch.test" "an allowed name works over plain HTTP (curl)"
is "$(egress verdict 0 <<<"$out")" "allowed" "and is logged as allowed"
is "$(egress address 0 <<<"$out")" "$INET_IP" "with the address the proxy connected to"
like "$(egress bytes_in 0 <<<"$out")" '^[1-9][0-9]*$' "and the bytes that came back"

cert=$(mktemp /tmp/hutch-net-cert.XXXXXX)
cp "$INET_DIR/cert.pem" "$cert"
chmod 644 "$cert"
at_exit 'rm -f "$cert"'
out=$(hjson --cold --net allow:allowed.hutch.test --file "$cert:cert.pem" -- \
	sh -c 'curl -sS -m 10 --cacert /workspace/cert.pem https://allowed.hutch.test/')
like "$(jget stdout <<<"$out")" "hello from allowed.hutch.test" "an allowed name works over HTTPS (CONNECT, TLS through the tunnel)"
is "$(egress protocol 0 <<<"$out")" "https" "logged as https"

out=$(run_net allow:allowed.hutch.test "$PY -c 'import ssl, urllib.request as u; c = ssl._create_unverified_context(); print(u.urlopen(\"https://allowed.hutch.test/\", context=c).read().decode())'")
like "$(jget stdout <<<"$out")" "hello from allowed.hutch.test" "Python's urllib uses the proxy too"

out=$(run_net allow:allowed.hutch.test 'curl -sS -m 10 http://other.hutch.test/; echo; curl -sS -m 10 -o /dev/null -w "%{http_code}" https://other.hutch.test/ || true')
like "$(jget stdout <<<"$out")" "other.hutch.test:80: not in the allowlist" "a name not listed is refused, with the reason"
is "$(egress verdict 0 <<<"$out")/$(egress verdict 1 <<<"$out")" "denied/denied" "both attempts are logged as denied"

out=$(run_net allow:allowed.hutch.test "curl -sS -m 10 http://$INET_IP/")
is "$(egress verdict 0 <<<"$out")" "denied" "the IP of an allowed server, not listed, is denied"

out=$(run_net 'allow:loop.hutch.test,meta.hutch.test,private.hutch.test' 'for h in loop meta private; do curl -sS -m 10 http://$h.hutch.test/; echo; done')
is "$(egress verdict 0 <<<"$out")/$(egress verdict 1 <<<"$out")/$(egress verdict 2 <<<"$out")" "denied/denied/denied" "names resolving to loopback, metadata and private addresses are denied"
like "$(egress reason 1 <<<"$out")" "link-local" "the reason names the range"

# a ClientHello for another name than the CONNECT host (domain fronting)
front=$(cat <<PYEOF
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT allowed.hutch.test:443 HTTP/1.1\r\nHost: allowed.hutch.test\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())
c = ssl._create_unverified_context()
try:
    t = c.wrap_socket(s, server_hostname="other.hutch.test")
    print("handshake done")
except Exception as e:
    print("refused:", type(e).__name__)
PYEOF
)
out=$(hjson --cold --net allow:allowed.hutch.test -- "$PY" -c "$front")
like "$(jget stdout <<<"$out")" "refused" "a TLS ClientHello for another name is cut off (no domain fronting)"
like "$(egress reason 0 <<<"$out")" "SNI 'other.hutch.test' does not match" "and logged with both names"

# the same, with the ClientHello in the same write as the CONNECT
early=$(cat <<'PYEOF'
import socket, ssl
c = ssl._create_unverified_context()
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = c.wrap_bio(inc, out, server_hostname="other.hutch.test")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT allowed.hutch.test:443 HTTP/1.1\r\n\r\n" + hello)
s.settimeout(5)
data = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except Exception:
    pass
print("server answered" if b"\r\n\r\n\x16\x03" in data else "cut off")
PYEOF
)
out=$(hjson --cold --net allow:allowed.hutch.test -- "$PY" -c "$early")
is "$(jget stdout <<<"$out")" "cut off" "a mismatched ClientHello sent with the CONNECT is cut off too"

# programs that ignore the proxy get nothing, fast
out=$(run_net allow:allowed.hutch.test "$PY -c 'import socket,time; t=time.time()
try:
    socket.create_connection((\"$INET_IP\", 7), timeout=5); print(\"connected\")
except OSError as e: print(type(e).__name__, round(time.time()-t, 2))'")
like "$(jget stdout <<<"$out")" "^OSError 0\.[0-9]+|^OSError 0$|Unreachable" "a raw socket past the proxy fails at once"
out=$(hjson --cold -- "$PY" -c "import socket
try:
    socket.create_connection((\"$INET_IP\", 80), timeout=5); print('connected')
except OSError as e: print('failed', e.errno)")
like "$(jget stdout <<<"$out")" "^failed" "under none, nothing leaves either"

# the proxy against clumsy and hostile clients
bad=$(cat <<'PYEOF'
import socket, time
def ask(data, wait=5):
    s = socket.create_connection(("127.0.0.1", 3128)); s.settimeout(wait)
    s.sendall(data)
    try: r = s.recv(200)
    except Exception: r = b"(timeout)"
    s.close(); return r.split(b"\r\n")[0].decode(errors="replace") or "(closed)"
print(ask(b"CONNECT\r\n\r\n"))
print(ask(b"GARBAGE / HTTP/9.9\r\n\r\n"))
print(ask(b"GET / HTTP/1.1\r\nHost: allowed.hutch.test\r\n" + b"X: " + b"a" * 20000 + b"\r\n\r\n"))
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"GET http://allowed"); time.sleep(0.5); s.close()
print(ask(b"GET http://allowed.hutch.test/ HTTP/1.1\r\nHost: allowed.hutch.test\r\n\r\n"))
PYEOF
)
out=$(hjson --cold --net allow:allowed.hutch.test -- "$PY" -c "$bad")
stdout=$(jget stdout <<<"$out")
like "$stdout" "^HTTP/1.1 400" "a CONNECT without a target gets 400"
like "$(sed -n 2p <<<"$stdout")" "400" "a request that is not a proxy request gets 400"
like "$(sed -n 3p <<<"$stdout")" "400|closed" "a 20 KB header is refused"
like "$(sed -n 4p <<<"$stdout")" "200" "and after all that, the proxy still serves"

# two runs at once: each log has only its own attempts
SESS_TMP=$(mktemp -d)
at_exit 'rm -rf "$SESS_TMP"'
hjson --cold --net allow:allowed.hutch.test -- sh -c 'for i in 1 2 3; do curl -sS -m 10 http://allowed.hutch.test/a$i >/dev/null; done' >"$SESS_TMP/a.json" &
pa=$!
hjson --cold --net allow:other.hutch.test -- sh -c 'for i in 1 2; do curl -sS -m 10 http://other.hutch.test/b$i >/dev/null; done' >"$SESS_TMP/b.json" &
pb=$!
wait "$pa" "$pb" || true
is "$(nentries <"$SESS_TMP/a.json")/$(nentries <"$SESS_TMP/b.json")" "3/2" "two runs at once each log their own attempts"
is "$("$PY" -c 'import json,sys; print(sorted({e["host"] for e in json.load(open(sys.argv[1]))["egress"]}))' "$SESS_TMP/b.json")" "['other.hutch.test']" "and only theirs"

# caps: at most 256 connections per execution
out=$(run_net allow:allowed.hutch.test "$PY -c '
import socket
ss = []
for i in range(300):
    s = socket.create_connection((\"127.0.0.1\", 3128)); ss.append(s)
print(len(ss))'")
verdicts=$("$PY" -c 'import json,sys,collections; e=json.load(sys.stdin)["egress"]; c=collections.Counter(x["verdict"] for x in e); print(len(e), c["rate_limited"])' <<<"$out")
is "$verdicts" "300 44" "past 256 connections, attempts are rate_limited (all 300 logged, the last 44 limited)"
[ "$verdicts" = "300 44" ] || echo "# the program said: $(jget stdout <<<"$out") $(jget stderr <<<"$out" | tail -c 300)"

# caps set by the request
out=$(hjson --cold --net allow:allowed.hutch.test --net-connections 2 -- sh -c 'for i in 1 2 3; do curl -sS -m 10 -o /dev/null http://allowed.hutch.test/; done')
is "$(egress verdict 2 <<<"$out")" "rate_limited" "--net-connections 2: the third connection is rate_limited"
is "$(jget limits.net_connections.value <<<"$out")" "2" "and the result names the cap"
out=$(hjson --cold --net allow:allowed.hutch.test --net-bytes-in 4K -- sh -c 'curl -sS -m 10 -o /dev/null http://allowed.hutch.test/bytes/100000; echo "curl exit $?"')
is "$(egress verdict 0 <<<"$out")" "rate_limited" "--net-bytes-in 4K: a 100 KB download is cut off"
if (($(egress bytes_in 0 <<<"$out") < 100000)); then ok "before it all arrived"; else not_ok "$(egress bytes_in 0 <<<"$out") bytes came in"; fi

# a session's policy, changed while it runs
if [ -z "${HUTCH_AS:-}" ]; then
	sdir=$(mktemp -d)
	at_exit 'rm -rf "$sdir"'
	export HUTCH_SOCKET=$sdir/s.sock
	"$HUTCH_BIN" daemon --socket "$HUTCH_SOCKET" --state-dir "$sdir/state" --pool 1 --log-level warn 2>"$sdir/log" &
	dpid=$!
	at_exit "kill $dpid 2>/dev/null; wait $dpid 2>/dev/null"
	for _ in $(seq 100); do [ -S "$HUTCH_SOCKET" ] && break; sleep 0.05; done
	id=$("$HUTCH_BIN" session new --lang python --net allow:allowed.hutch.test | awk 'END { print $NF }')
	out=$("$HUTCH_BIN" session sh --json "$id" 'curl -sS -m 10 http://allowed.hutch.test/' || true)
	like "$(jget stdout <<<"$out")" "hello from allowed.hutch.test" "a session with allow: reaches the allowed name"
	"$HUTCH_BIN" session net "$id" none >/dev/null
	out=$("$HUTCH_BIN" session sh --json "$id" 'curl -sS -m 10 http://allowed.hutch.test/' || true)
	is "$(egress verdict 0 <<<"$out")" "denied" "after session net none, the same request is denied"
	out=$("$HUTCH_BIN" session net "$id" 'allow:bad name' 2>&1 || true)
	like "$out" "not a domain" "a bad policy for a live session is refused with the reason"
	"$HUTCH_BIN" session kill "$id" >/dev/null
fi # rootless: the session tests run as that user in tests/sessions/

done_testing

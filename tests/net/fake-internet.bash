#!/bin/bash
# A fake internet for the network-policy tests: sourced by test scripts that
# run as root. Nothing here reaches the real internet.
#
#	. tests/net/fake-internet.bash
#	internet_up          # or the test bails out with the reason
#	curl http://allowed.hutch.test/     -> "hello from allowed.hutch.test"
#
# internet_up makes a network namespace ($INET_NS) joined to the host by a
# veth pair, host side 198.51.100.1/24, namespace side 198.51.100.2/24 and
# 198.51.100.3/24. These are TEST-NET-2 (RFC 5737): they look public, as the
# proxy refuses private ranges, and are never routed on the real internet.
# The host reaches them over the veth directly: no forwarding, no NAT.
# In the namespace, on every address:
#	:80   HTTP  GET <any path>  200 "hello from <Host header>\n"
#	            GET /bytes/N    200, N bytes of "x" (at most 100 MB)
#	            POST/PUT        200 "received N bytes\n" (Content-Length or
#	                            chunked)
#	      every reply has "X-Inet-Addr: <the server address that answered>"
#	:443  HTTPS the same, with a self-signed certificate for
#	            allowed.hutch.test and other.hutch.test ($INET_DIR/cert.pem)
#	:7    TCP echo
# Every request is one line of $INET_LOG (see server.py below):
#	<http|https|echo> <method> <host> <path> sni=<name|-> from=<ip> bytes=<n>
# Names, appended to /etc/hosts with a marker naming this shell's PID:
#	allowed.hutch.test, other.hutch.test  198.51.100.2
#	second.hutch.test                     198.51.100.3
#	loop.hutch.test                       127.0.0.1
#	meta.hutch.test                       169.254.169.254 (cloud metadata)
#	private.hutch.test                    10.1.2.3
#
# Exports: INET_NS, INET_IP (198.51.100.2), INET_IP2 (198.51.100.3),
# INET_HOST_IP (198.51.100.1), INET_HOST_IF, INET_DIR (temp dir: cert.pem,
# key.pem, server.log), INET_LOG (requests.log there).
#
# internet_down undoes all of it, also after a partial internet_up, and may
# run twice. internet_up registers it with tests/lib.sh's at_exit when the
# caller has one, else chains it into the EXIT trap. One fake internet per
# host at a time: the addresses and names are fixed, and internet_up fails
# if 198.51.100.0/24 is already in use. Call both from the main shell, not a
# subshell: the state lives in shell variables.

INET_ID=$$
INET_NS=hutch-inet-$INET_ID
# interface names are at most 15 bytes (IFNAMSIZ); a PID has at most 7 digits
INET_HOST_IF=hi${INET_ID}h
INET_PEER_IF=hi${INET_ID}n
INET_HOST_IP=198.51.100.1
INET_IP=198.51.100.2
INET_IP2=198.51.100.3
INET_DIR=
INET_LOG=
INET_PID=
INET_HOSTS_MARK="# hutch-fake-internet $INET_ID"
INET_TIMEOUT=${INET_TIMEOUT:-15}
INET_REGISTERED=
INET_PY=/usr/bin/python3
export INET_NS INET_IP INET_IP2 INET_HOST_IP INET_HOST_IF INET_DIR INET_LOG

# The servers: one process, a thread per connection, so a stuck client
# blocks nobody. Written to $INET_DIR/server.py by internet_up.
_inet_server_py() {
	cat <<'PYEOF'
import http.server
import os
import socket
import socketserver
import ssl
import sys
import threading

DIR = sys.argv[1]
LOCK = threading.Lock()


def log(*fields):
    with LOCK, open(os.path.join(DIR, "requests.log"), "a") as f:
        f.write(" ".join(str(x) for x in fields) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hutch-fake-internet"
    timeout = 30

    def log_message(self, fmt, *args):
        pass  # requests.log has them, one line each

    def reply(self, body, nbytes):
        sni = getattr(self.request, "hutch_sni", None) or "-"
        log(self.server.scheme, self.command, self.headers.get("Host", "-"),
            self.path, "sni=" + sni, "from=" + self.client_address[0],
            "bytes=%d" % nbytes)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Inet-Addr", self.request.getsockname()[0])
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/bytes/"):
            try:
                n = min(int(self.path[7:]), 100 << 20)
            except ValueError:
                n = 0
            self.reply(b"x" * n, 0)
            return
        host = self.headers.get("Host", "-")
        self.reply(("hello from %s\n" % host).encode(), 0)

    do_HEAD = do_GET

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            n = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return n
                n += len(self.rfile.read(size))
                self.rfile.readline()
        left = int(self.headers.get("Content-Length", "0"))
        n = 0
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            n += len(chunk)
            left -= len(chunk)
        return n

    def do_POST(self):
        n = self.read_body()
        self.reply(("received %d bytes\n" % n).encode(), n)

    do_PUT = do_POST


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, scheme, ctx=None):
        self.scheme = scheme
        super().__init__(("0.0.0.0", port), Handler)
        if ctx:
            # the handshake runs in the connection's thread (finish_request),
            # not in accept(), where a silent client would stall the server
            self.socket = ctx.wrap_socket(self.socket, server_side=True,
                                          do_handshake_on_connect=False)

    def server_bind(self):
        # HTTPServer.server_bind() asks DNS for our name: there is no DNS here
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "fake-internet", self.server_address[1]

    def finish_request(self, request, client_address):
        if self.scheme == "https":
            request.settimeout(30)
            request.do_handshake()
        super().finish_request(request, client_address)


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(30)
        n = 0
        try:
            while True:
                data = self.request.recv(65536)
                if not data:
                    break
                self.request.sendall(data)
                n += len(data)
        except OSError:
            pass
        log("echo", "-", "-", "-", "sni=-", "from=" + self.client_address[0],
            "bytes=%d" % n)


class EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def remember_sni(sock, name, ctx):
    try:
        sock.hutch_sni = name  # for requests.log; never fail a handshake
    except AttributeError:
        pass


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(DIR, "cert.pem"), os.path.join(DIR, "key.pem"))
ctx.sni_callback = remember_sni
servers = [Server(80, "http"), Server(443, "https", ctx), EchoServer(("0.0.0.0", 7), Echo)]
# listening now: connections queue until serve_forever() takes them
open(os.path.join(DIR, "ready"), "w").close()
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
servers[0].serve_forever()
PYEOF
}

_inet_err() {
	echo "fake-internet: $*" >&2
}

# Registers internet_down once: with the caller's at_exit (tests/lib.sh),
# or in front of whatever EXIT trap the caller already has.
_inet_register() {
	local prev
	[ -n "$INET_REGISTERED" ] && return 0
	INET_REGISTERED=1
	if declare -F at_exit >/dev/null; then
		at_exit internet_down
		return 0
	fi
	prev=$(trap -p EXIT)
	prev=${prev#"trap -- "}
	prev=${prev%" EXIT"}
	if [ -n "$prev" ]; then
		eval "prev=$prev"
		# shellcheck disable=SC2064 # expand the caller's command now
		trap "internet_down; $prev" EXIT
	else
		trap internet_down EXIT
	fi
	# without these, a ^C or a kill ends bash without running the EXIT trap
	[ -z "$(trap -p INT)" ] && trap 'exit 130' INT
	[ -z "$(trap -p TERM)" ] && trap 'exit 143' TERM
	return 0
}

_inet_hosts_add() {
	local m=$INET_HOSTS_MARK
	printf '%s\n' \
		"$INET_IP allowed.hutch.test other.hutch.test $m" \
		"$INET_IP2 second.hutch.test $m" \
		"127.0.0.1 loop.hutch.test $m" \
		"169.254.169.254 meta.hutch.test $m" \
		"10.1.2.3 private.hutch.test $m" >>/etc/hosts
}

# Removes exactly our lines: the marker ends them, and it names our PID.
# The file is rewritten in place, not replaced: /etc/hosts may be a bind
# mount (containers), which rename() cannot replace.
_inet_hosts_remove() {
	local tmp
	grep -qF -- " $INET_HOSTS_MARK" /etc/hosts 2>/dev/null || return 0
	tmp=$(mktemp /tmp/hutch-inet-hosts.XXXXXX) || return 1
	# grep -v exits 1 when no line is left: not an error here
	grep -v -- " $INET_HOSTS_MARK\$" /etc/hosts >"$tmp" || true
	cat "$tmp" >/etc/hosts
	rm -f "$tmp"
}

# Succeeds when HTTP, HTTPS (by name, checking the certificate) and echo all
# answer from the host.
_inet_answers() {
	local want="hello from allowed.hutch.test" got
	got=$(curl -fsS --noproxy '*' -m 3 http://allowed.hutch.test/ 2>/dev/null) || return 1
	[ "$got" = "$want" ] || return 1
	got=$(curl -fsS --noproxy '*' -m 3 --cacert "$INET_DIR/cert.pem" \
		https://allowed.hutch.test/ 2>/dev/null) || return 1
	[ "$got" = "$want" ] || return 1
	got=$(inet_echo "$INET_IP" ping 2>/dev/null) || return 1
	[ "$got" = ping ]
}

# inet_echo HOST DATA: sends DATA to HOST:7, prints what came back.
inet_echo() {
	"$INET_PY" - "$1" "$2" <<'PYEOF'
import socket, sys
s = socket.create_connection((sys.argv[1], 7), timeout=3)
s.sendall(sys.argv[2].encode())
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
print(got.decode(errors="replace"))
PYEOF
}

_inet_setup_net() {
	local used
	used=$(ip -4 -o addr show to 198.51.100.0/24 2>/dev/null | awk '{print $2}' | head -1)
	if [ -n "$used" ]; then
		_inet_err "198.51.100.0/24 is already on '$used': another fake internet is up?"
		return 1
	fi
	if ! {
		ip netns add "$INET_NS" &&
			ip link add "$INET_HOST_IF" type veth peer name "$INET_PEER_IF" &&
			ip link set "$INET_PEER_IF" netns "$INET_NS" &&
			ip addr add "$INET_HOST_IP/24" dev "$INET_HOST_IF" &&
			ip link set "$INET_HOST_IF" up &&
			ip -n "$INET_NS" link set lo up &&
			ip -n "$INET_NS" addr add "$INET_IP/24" dev "$INET_PEER_IF" &&
			ip -n "$INET_NS" addr add "$INET_IP2/24" dev "$INET_PEER_IF" &&
			ip -n "$INET_NS" link set "$INET_PEER_IF" up &&
			ip -n "$INET_NS" route add default via "$INET_HOST_IP"
	}; then
		_inet_err "cannot set up namespace '$INET_NS' and veth '$INET_HOST_IF'"
		return 1
	fi
}

_inet_make_cert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$INET_DIR/key.pem" -out "$INET_DIR/cert.pem" -days 2 \
		-subj "/CN=allowed.hutch.test" \
		-addext "subjectAltName=DNS:allowed.hutch.test,DNS:other.hutch.test" \
		>"$INET_DIR/openssl.log" 2>&1 || {
		_inet_err "openssl req failed: $(cat "$INET_DIR/openssl.log")"
		return 1
	}
	# readable by the unprivileged user of rootless runs; the key is not
	chmod 644 "$INET_DIR/cert.pem"
	chmod 600 "$INET_DIR/key.pem"
}

_inet_wait() {
	local deadline=$((SECONDS + INET_TIMEOUT))
	until [ -e "$INET_DIR/ready" ] && _inet_answers; do
		if ! kill -0 "$INET_PID" 2>/dev/null; then
			_inet_err "the servers died: $(cat "$INET_DIR/server.log")"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			_inet_err "no answer from http, https and echo on $INET_IP after" \
				"${INET_TIMEOUT}s; server log: $(cat "$INET_DIR/server.log")"
			return 1
		fi
		sleep 0.1
	done
}

# internet_up: everything above; returns 1 with the reason on stderr, after
# undoing what it had done.
internet_up() {
	_inet_register
	if [ "$(id -u)" -ne 0 ]; then
		_inet_err "needs root"
		return 1
	fi
	INET_DIR=$(mktemp -d /tmp/hutch-inet.XXXXXX) || return 1
	chmod 755 "$INET_DIR"
	INET_LOG=$INET_DIR/requests.log
	: >"$INET_LOG"
	_inet_server_py >"$INET_DIR/server.py"
	if ! _inet_make_cert || ! _inet_setup_net; then
		internet_down
		return 1
	fi
	ip netns exec "$INET_NS" "$INET_PY" "$INET_DIR/server.py" "$INET_DIR" \
		</dev/null >"$INET_DIR/server.log" 2>&1 &
	INET_PID=$!
	_inet_hosts_add
	if ! _inet_wait; then
		internet_down
		return 1
	fi
	return 0
}

# internet_down: stops the servers, deletes the namespace and the veth,
# removes our /etc/hosts lines and the temp dir. Safe to call at any time.
internet_down() {
	local pids
	if [ -n "$INET_PID" ]; then
		kill "$INET_PID" 2>/dev/null || true
		wait "$INET_PID" 2>/dev/null || true
		INET_PID=
	fi
	if ip netns list 2>/dev/null | grep -q "^$INET_NS\( \|$\)"; then
		# anything else still in our namespace (a partial up, a server's
		# child): the namespace outlives nothing we started
		pids=$(ip netns pids "$INET_NS" 2>/dev/null || true)
		if [ -n "$pids" ]; then
			# shellcheck disable=SC2086 # one PID per word
			kill -KILL $pids 2>/dev/null || true
		fi
		ip netns del "$INET_NS" 2>/dev/null || true
	fi
	# the peer went with the namespace, and the pair with it; not so when
	# internet_up stopped before moving the peer
	if ip link show "$INET_HOST_IF" >/dev/null 2>&1; then
		ip link del "$INET_HOST_IF" 2>/dev/null || true
	fi
	_inet_hosts_remove
	if [ -n "$INET_DIR" ]; then
		rm -rf "$INET_DIR"
		INET_DIR=
		INET_LOG=
	fi
	return 0
}

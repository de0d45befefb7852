#!/bin/bash
# Attacker side, namespaces and identity: host files, host environment, host
# processes, host network, abstract sockets, fds, capabilities. Each attack
# is also tried outside the sandbox, so a test cannot pass by being broken.
. "$(dirname "$0")/../lib.sh"
plan 26

secret=hutch-secret-$$-$RANDOM
secret_dirs=(/root /var/tmp)
for d in "${secret_dirs[@]}"; do
	echo "$secret" > "$d/hutch-secret-$$"
	chmod 644 "$d/hutch-secret-$$"
done
cleanup() {
	for d in "${secret_dirs[@]}"; do rm -f "$d/hutch-secret-$$"; done
	[ -n "${listener:-}" ] && kill "$listener" 2>/dev/null
	[ -n "${abstract:-}" ] && kill "$abstract" 2>/dev/null
	[ -n "${sleeper:-}" ] && kill "$sleeper" 2>/dev/null
	true
}
at_exit cleanup

for d in "${secret_dirs[@]}"; do
	is "$("$PROBE" read "$d/hutch-secret-$$")" "$secret" "outside: $d secret is readable"
	is "$(probe_in read "$d/hutch-secret-$$")" ENOENT "inside: $d secret does not exist"
done
is "$(probe_in exists /etc/shadow)" ENOENT "inside: no /etc/shadow"
is "$(probe_in exists /home)" ENOENT "inside: no /home"

export HUTCH_HOST_SECRET=$secret
like "$("$PROBE" env)" "$secret" "outside: the secret is in our environment"
env_in=$(probe_in env)
unlike "$env_in" "$secret" "inside: the host environment does not enter"
is "$(echo "$env_in" | cut -d= -f1 | sort | tr '\n' ' ')" "HOME LANG PATH TMPDIR " "inside: only PATH HOME LANG TMPDIR"
is "$(probe_in read /proc/1/environ)" EACCES "inside: /proc/1/environ (init) is unreadable"
unlike "$(probe_in read /proc/1/cmdline | tr -d '\0')" "hutch|secret|--" "inside: init's command line is scrubbed"
unlike "$(probe_in read /proc/self/environ | tr -d '\0')" "$secret" "inside: /proc/self/environ has no host secret"
unset HUTCH_HOST_SECRET

sleep 300 &
sleeper=$!
is "$("$PROBE" kill $sleeper)" OK "outside: a host process can be signalled"
is "$(probe_in kill $sleeper)" ESRCH "inside: the host process does not exist"
is "$(probe_in read /proc/1/comm)" hutch-init "inside: pid 1 is the cell's own init"
procs=$(hutch run -- sh -c 'ls /proc | grep -c "^[0-9]"') || procs="run failed"
if [[ $procs =~ ^[0-9]+$ ]] && [ "$procs" -le 5 ]; then ok "inside: only the cell's processes are in /proc ($procs)"; else not_ok "inside: $procs processes visible"; fi

port=$((20000 + RANDOM % 20000))
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(50)
while True:
    c, _ = s.accept(); c.close()
' "$port" &
listener=$!
name=hutch-abstract-$$
"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind("\0" + sys.argv[1]); s.listen(50)
while True:
    c, _ = s.accept(); c.close()
' "$name" &
abstract=$!
sleep 0.5
is "$("$PROBE" tcp 127.0.0.1 "$port")" OK "outside: the loopback listener answers"
is "$(probe_in tcp 127.0.0.1 "$port")" ECONNREFUSED "inside: host loopback is not reachable"
is "$(probe_in tcp 10.0.2.2 80)" ENETUNREACH "inside: no route anywhere"
is "$("$PROBE" abstract "$name")" OK "outside: the abstract unix socket answers"
is "$(probe_in abstract "$name")" ECONNREFUSED "inside: the host's abstract socket is not reachable"

is "$(probe_in fds | tr '\n' ' ')" "0 1 2 " "inside: only fds 0-2 are open"
exec 9</etc/hostname
is "$(probe_in fds | tr '\n' ' ')" "0 1 2 " "inside: an fd hutch inherited does not leak in"
exec 9<&-
is "$(probe_in hostname)" hutch "inside: own hostname"
caps=$(probe_in caps)
like "$caps" "CapEff:.0000000000000000" "inside: no effective capabilities"
like "$caps" "CapBnd:.0000000000000000" "inside: empty bounding set"
done_testing

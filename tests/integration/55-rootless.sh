#!/bin/bash
# Rootless: an ordinary user (no root, no setuid helper) runs sandboxes with
# a user namespace, and whatever cannot be enforced without root or cgroup
# delegation is reported in `limits`, never silently skipped. (check.sh also
# reruns the basics, isolation, filesystem and limits files as that user.)
# Rootless on the cold path; check.sh's rootless pass also runs the basics,
# isolation, filesystem and limits files as the user, on both paths.
export HUTCH_TEST_PATH=cold
. "$(dirname "$0")/../lib.sh"
need_root
u=$(test_user) || skip_all "cannot create an unprivileged test user"
userns_works "$u" || skip_all "unprivileged user namespaces are disabled on this kernel"
plan 9
export HUTCH_AS=$u
RL_DIR=$(mktemp -d /tmp/hutch-rootless.XXXXXX)
chmod 755 "$RL_DIR"
cp "$HUTCH_BIN" "$PROBE" "$RL_DIR/"
HUTCH_BIN=$RL_DIR/hutch
PROBE=$RL_DIR/probe
at_exit 'rm -rf "$RL_DIR"'

is "$(runuser -u "$u" -- id -u)" "$(id -u "$u")" "the test user is unprivileged (uid $(id -u "$u"))"
is "$(hutch run -- /usr/bin/python3 -c 'print(sum(range(1000)))')" 499500 "rootless: python runs"
is "$(probe_in id)" "uid=1000 gid=1000 euid=1000" "rootless: the sandbox uid is 1000 inside"
like "$(probe_in caps)" "CapEff:.0000000000000000" "rootless: no capabilities inside"
json=$(hjson --memory 128M --pids 64 -- true)
mem=$(echo "$json" | jget limits.memory_bytes.enforced_by)
note=$(echo "$json" | jget limits.note)
case $mem in
rlimit)
	isnt "$note" null "rootless without cgroups: limits.note says why ($note)"
	is "$(echo "$json" | jget limits.pids.enforced_by)" rlimit "rootless without cgroups: pids by rlimit"
	;;
*)
	ok "rootless with a delegated cgroup: memory by $mem"
	ok "rootless with a delegated cgroup: (no note needed)"
	;;
esac
is "$(echo "$json" | jget limits.disk_bytes.enforced_by)" "tmpfs size" "rootless: disk limit by tmpfs size"
# The sandbox's processes run as the user on the host, not as root.
"$HUTCH_BIN" --version >/dev/null
marker=rootless-$$-$RANDOM
runuser -u "$u" -- "$HUTCH_BIN" run --cold --timeout 10 --file "$PROBE:probe" -- /workspace/probe spin "$marker" >/dev/null 2>&1 &
spinner=$!
for _ in $(seq 50); do pgrep -f "^/workspace/probe spin $marker" >/dev/null && break; sleep 0.1; done
owner=$(ps -o user= -p "$(pgrep -f "^/workspace/probe spin $marker" | head -1)" 2>/dev/null || true)
is "$owner" "$u" "rootless: sandboxed processes belong to the user on the host"
pkill -f "hutch run --cold --timeout 10 --file $PROBE" || true
wait "$spinner" || true
is "$(pgrep -f "^/workspace/probe spin $marker" || true)" "" "rootless: killing hutch ends the sandbox"
done_testing

#!/bin/bash
# Attacker side, filesystem: the template is read-only, /proc is the cell's
# own and its dangerous files are read-only or masked, /dev is minimal, the
# writable space is bounded.
. "$(dirname "$0")/../lib.sh"
plan 28

for p in /usr/probe-x /etc/probe-x /probe-x /bin/probe-x /lib/probe-x; do
	r=$(probe_in write "$p")
	if [ "$r" = EROFS ] || [ "$r" = EACCES ]; then ok "inside: cannot write $p ($r)"; else not_ok "inside: wrote $p: $r"; fi
done
is "$(probe_in write /workspace/x)" OK "inside: /workspace is writable"
is "$(probe_in write /tmp/x)" OK "inside: /tmp is writable"
is "$(probe_in write /dev/shm/x)" OK "inside: /dev/shm is writable"

r=$(probe_in write /proc/sys/kernel/hostname)
if [ "$r" = EROFS ] || [ "$r" = EACCES ]; then ok "inside: /proc/sys is read-only ($r)"; else not_ok "inside: /proc/sys write: $r"; fi
# Which of these exist depends on the kernel's configuration.
if [ -e /proc/sysrq-trigger ]; then
	r=$(probe_in write /proc/sysrq-trigger)
	if [ "$r" = EROFS ] || [ "$r" = EACCES ]; then ok "inside: /proc/sysrq-trigger is read-only ($r)"; else not_ok "inside: sysrq: $r"; fi
else
	is "$(probe_in exists /proc/sysrq-trigger)" ENOENT "inside: no /proc/sysrq-trigger (this kernel has none)"
fi
for f in kcore keys timer_list; do
	if [ -e /proc/$f ]; then
		is "$(probe_in read /proc/$f)" "" "inside: /proc/$f is masked (reads empty)"
	else
		is "$(probe_in exists /proc/$f)" ENOENT "inside: no /proc/$f (this kernel has none)"
	fi
done

is "$(probe_in ls /dev | sort | tr '\n' ' ')" "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " "inside: /dev holds only the minimal set"
if [ -e /dev/kvm ]; then
	is "$("$PROBE" exists /dev/kvm)" OK "outside: /dev/kvm exists"
else
	ok "outside: no /dev/kvm on this machine (checked inside anyway)"
fi
is "$(probe_in exists /dev/kvm)" ENOENT "inside: no /dev/kvm"
# a machine (or container) may have no block device at all, and then lsblk
# prints nothing: /dev/vda is checked inside anyway
blk=$(lsblk -dnpo NAME 2>/dev/null | head -1 || true)
blk=${blk:-/dev/vda}
if [ -b "$blk" ]; then ok "outside: block device $blk exists"; else ok "outside: no block device found (checked $blk inside anyway)"; fi
is "$(probe_in exists "$blk")" ENOENT "inside: no block device $blk"
r=$(probe_in syscall mknod)
if [ "$r" = EPERM ] || [ "$r" = EACCES ]; then ok "inside: mknod refused ($r)"; else not_ok "inside: mknod: $r"; fi

json=$(hjson --disk 2M --file "$PROBE:probe" -- /workspace/probe fill /workspace/big)
is "$(echo "$json" | jget stdout)" ENOSPC "inside: filling the disk stops at the --disk limit"
is "$(echo "$json" | jget limit_hit)" disk "limit_hit says disk"
json=$(hjson --disk 2M --file "$PROBE:probe" -- /workspace/probe fill /tmp/big)
is "$(echo "$json" | jget stdout)" ENOSPC "inside: /tmp shares the --disk limit"
json=$(hjson --file-size 100K --file "$PROBE:probe" -- /workspace/probe fill /workspace/big)
is "$(echo "$json" | jget limit_hit)" file_size "--file-size stops a large file (SIGXFSZ)"
is "$(echo "$json" | jget status)" killed "a file-size kill is status killed"

# Symlinks resolve inside the sandbox's root, never to the host's files.
# (cat is expected to fail: its message is what is asserted.)
echo "hutch-secret" > /root/hutch-link-secret-$$
is "$(hutch run -- sh -c "ln -s /root/hutch-link-secret-$$ /workspace/l && cat /workspace/l" 2>&1 || true)" \
	"cat: /workspace/l: No such file or directory" "inside: a symlink to a host path finds nothing"
r=$(probe_in read /proc/1/root/root/hutch-link-secret-$$)
if [ "$r" = ENOENT ] || [ "$r" = EACCES ]; then ok "inside: /proc/1/root leads to the sandbox's root ($r)"; else not_ok "/proc/1/root: $r"; fi
is "$(probe_in read /proc/self/root/etc/hostname)" hutch "inside: /proc/self/root is the sandbox's root"
rm -f /root/hutch-link-secret-$$

# Each run starts clean: nothing written by the previous one survives.
hutch run -- sh -c 'echo leftover > /workspace/state; echo leftover > /tmp/state' >/dev/null
is "$(probe_in exists /workspace/state)$(probe_in exists /tmp/state)" ENOENTENOENT "a new run does not see the last run's files"
done_testing

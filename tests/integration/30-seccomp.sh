#!/bin/bash
# Attacker side, system calls: each denied call fails inside; where an
# unprivileged process outside could make it, it succeeds outside (so the
# denial is the filter's doing, not the call's).
. "$(dirname "$0")/../lib.sh"
plan 33

u=$(test_user) || skip_all "no unprivileged user to compare with"
# the probe exits 1 whenever it reports an errno name: that is its answer
outside() { runuser -u "$u" -- "$PROBE" syscall "$1" </dev/null 2>/dev/null || true; }
# These succeed (or fail for another reason than EPERM) for an ordinary user.
for call in ptrace keyctl add_key personality; do
	is "$(outside $call)" OK "outside: $call works for an unprivileged user"
done
if userns_works "$u"; then
	is "$(outside clone-newuser)" OK "outside: an unprivileged user may create a user namespace"
	is "$(outside unshare)" OK "outside: unshare(CLONE_NEWUSER) works"
else
	skip "outside: user namespaces" "unprivileged user namespaces are disabled here"
	skip "outside: unshare" "unprivileged user namespaces are disabled here"
fi
isnt "$(outside io_uring_setup)" EPERM "outside: io_uring_setup is not refused with EPERM"

for call in unshare unshare-mount setns mount umount pivot_root chroot ptrace bpf keyctl add_key \
	perf_event_open userfaultfd kexec_load init_module swapon reboot acct clock_settime \
	open_by_handle_at personality tiocsti clone-newuser io_uring_setup; do
	is "$(probe_in syscall $call)" EPERM "inside: $call is denied"
done
is "$(probe_in syscall clone3)" ENOSYS "inside: clone3 answers ENOSYS (so libc falls back to clone)"
is "$(probe_in syscall getpid)" OK "inside: ordinary calls work"
done_testing

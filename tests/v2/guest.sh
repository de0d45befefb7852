#!/bin/sh
# Stage 2 of the check-v2 guest: PID 1 after switch_root (busybox sh).
#
# Mounts the API filesystems with cgroup2 as the only cgroup hierarchy (the
# kernel runs with cgroup_no_v1=all), runs hutch and the cgroup driver, and
# writes unnumbered TAP lines ("ok - ...", "not ok - ...", "# ...") to
# /dev/ttyS1, which the host numbers and counts (tests/v2/run.sh). Ends with
# "# guest done" and powers off. Never exits: PID 1 exiting panics the kernel.
# No python here: the JSON results are read with grep, cut and sed.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs -o mode=1777 tmpfs /tmp

stty -F /dev/ttyS1 raw -echo 2>/dev/null
exec 3>/dev/ttyS1

last=""

# t STATUS DESCRIPTION: one TAP line, ok when STATUS (that of the test just
# run, "$?") is 0; on failure, the result of the last hutch run as diagnostics.
t() {
	if [ "$1" = 0 ]; then
		echo "ok - $2" >&3
	else
		echo "not ok - $2" >&3
		if [ -n "$last" ]; then
			echo "# exit status: $(cat "/tmp/$last.rc")" >&3
			sed 's/^/# stdout: /' "/tmp/$last.json" >&3
			sed 's/^/# stderr: /' "/tmp/$last.err" >&3
		fi
	fi
}

# run NAME HUTCH-RUN-ARGS...: `hutch run --json` with the probe placed at
# /workspace/probe; the result in /tmp/NAME.json, stderr and status beside it.
run() {
	last=$1
	shift
	hutch run --json --file /probe:probe "$@" >"/tmp/$last.json" 2>"/tmp/$last.err"
	echo "$?" >"/tmp/$last.rc"
}

# str NAME KEY: the first string value of KEY in the result ("" for null).
str() {
	grep -o "\"$2\":\"[^\"]*\"" "/tmp/$1.json" | head -n1 | cut -d'"' -f4
}

# num NAME KEY: the first integer value of KEY (the top-level one: it comes
# before "limits", where the same names hold objects).
num() {
	v=$(grep -o "\"$2\":[0-9][0-9]*" "/tmp/$1.json" | head -n1 | cut -d: -f2)
	echo "${v:--1}"
}

# enforced NAME LIMIT: limits.LIMIT.enforced_by.
enforced() {
	grep -o "\"$2\":{\"value\":[0-9.e+-]*,\"enforced_by\":\"[^\"]*\"" "/tmp/$1.json" |
		head -n1 | sed 's/.*"enforced_by":"\([^"]*\)"/\1/'
}

echo "# guest: $(uname -r), $(nproc) CPUs, cmdline: $(cat /proc/cmdline)" >&3

# The guest itself: cgroup2 only, with the controllers hutch needs.
! grep -q " cgroup " /proc/mounts && grep -q " /sys/fs/cgroup cgroup2 " /proc/mounts
t $? "guest: no cgroup v1 hierarchy, cgroup2 at /sys/fs/cgroup"
ctls=$(cat /sys/fs/cgroup/cgroup.controllers)
missing=""
for c in memory pids cpu; do
	echo " $ctls " | grep -q " $c " || missing="$missing $c"
done
[ -z "$missing" ]
t $? "guest: memory, pids and cpu controllers available ($ctls)"

# hutch chooses the v2 backend.
run basic -- /workspace/probe memhog 1
[ "$(str basic status)" = ok ]
t $? "run: probe memhog 1 is ok (status $(str basic status))"
[ "$(enforced basic memory_bytes)" = "cgroup v2" ]
t $? "run: memory limit enforced_by \"cgroup v2\" (got \"$(enforced basic memory_bytes)\")"
[ "$(enforced basic pids)" = "cgroup v2" ]
t $? "run: pids limit enforced_by \"cgroup v2\" (got \"$(enforced basic pids)\")"

# memory.max
run oom --memory 64M -- /workspace/probe memhog 200
[ "$(str oom status)" = oom ] && [ "$(str oom limit_hit)" = memory ]
t $? "memory: memhog 200 under --memory 64M is oom (status $(str oom status), limit_hit $(str oom limit_hit))"
[ "$(cat /tmp/oom.rc)" = 137 ]
t $? "memory: hutch exits 137 after the OOM kill (got $(cat /tmp/oom.rc))"
peak=$(num oom peak_memory_bytes)
[ "$peak" -gt 0 ] && [ "$peak" -le 67108864 ]
t $? "memory: peak memory at most the 64M limit ($peak bytes)"
run fits --memory 400M -- /workspace/probe memhog 200
[ "$(str fits status)" = ok ] && [ "$(str fits stdout)" = 'OK\n' ]
t $? "memory: memhog 200 under --memory 400M is ok (status $(str fits status), stdout $(str fits stdout))"
peak=$(num fits peak_memory_bytes)
[ "$peak" -ge 209715200 ]
t $? "memory: peak memory of that run at least 200 MiB ($peak bytes)"

# pids.max
run fork --pids 16 -- /workspace/probe forkbomb
[ "$(str fork stdout)" = 'EAGAIN\n' ]
t $? "pids: forkbomb under --pids 16 prints EAGAIN (stdout $(str fork stdout))"
[ "$(str fork limit_hit)" = pids ]
t $? "pids: limit_hit is \"pids\" (got \"$(str fork limit_hit)\")"

# cpu.max: a spinner under --cpus 0.2 gets about a fifth of a CPU; the same
# spinner without it (the control) gets a whole one. The cgroup holds the
# cell from before its set-up (slow under TCG, and throttled too) until the
# end, so CPU time is compared with set-up + run, not with the run alone.
run cpus --cpus 0.2 --timeout 2 -- /workspace/probe spin
[ "$(str cpus status)" = timeout ]
t $? "cpu: spin under --cpus 0.2 --timeout 2 times out (status $(str cpus status))"
[ "$(enforced cpus cpus)" = "cgroup v2" ]
t $? "cpu: cpus enforced_by \"cgroup v2\" (got \"$(enforced cpus cpus)\")"
cpu=$(num cpus cpu_ms)
wall=$(num cpus wall_ms)
life=$(($(num cpus setup_us) / 1000 + wall))
[ "$wall" -ge 500 ] && [ "$cpu" -gt 0 ] && [ $((cpu * 100)) -lt $((life * 60)) ]
t $? "cpu: cpu_ms $cpu is below 60% of the cell's $life ms (set-up + wall_ms $wall)"
run spin --timeout 2 -- /workspace/probe spin
cpu=$(num spin cpu_ms)
wall=$(num spin wall_ms)
life=$(($(num spin setup_us) / 1000 + wall))
[ "$wall" -ge 500 ] && [ $((cpu * 100)) -gt $((life * 70)) ]
t $? "cpu: control, spin without --cpus: cpu_ms $cpu is above 70% of the cell's $life ms (set-up + wall_ms $wall)"

# cpu_ms (--cpu-time): the supervisor polls cpu.stat.
run cputime --cpu-time 500ms --timeout 20 -- /workspace/probe spin
[ "$(str cputime status)" = timeout ] && [ "$(str cputime limit_hit)" = cpu_time ]
t $? "cpu-time: spin under --cpu-time 500ms stops (status $(str cputime status), limit_hit $(str cputime limit_hit))"
[ "$(enforced cputime cpu_ms)" = "cgroup v2" ] && [ "$(num cputime wall_ms)" -lt 5000 ]
t $? "cpu-time: enforced_by \"$(enforced cputime cpu_ms)\", stopped after $(num cputime wall_ms) ms"

# Rootless: an ordinary user (uid 1000) with a delegated cgroup v2 subtree,
# laid out as systemd's user@.service does it: the user owns user-1000 (its
# cgroup.procs, cgroup.subtree_control and cgroup.threads), its shell lives
# in a leaf below it, and its parent enables only memory and pids (systemd's
# default for users: no cpu). Cells go under HUTCH_CGROUP_PARENT.
ud=/sys/fs/cgroup/user.slice/user-1000
mkdir -p $ud/shell
echo "+memory +pids" >/sys/fs/cgroup/user.slice/cgroup.subtree_control
chown 1000:1000 $ud $ud/cgroup.procs $ud/cgroup.subtree_control $ud/cgroup.threads
# as_user NAME HUTCH-RUN-ARGS...: like run, as uid 1000 in $ud/shell.
as_user() {
	last=$1
	shift
	sh -c 'echo $$ >"$0/shell/cgroup.procs" && exec su -s /bin/sh user -c "$1"' "$ud" \
		"HUTCH_CGROUP_PARENT=$ud/hutch hutch run --json --file /probe:probe $* \
		>/tmp/$last.json 2>/tmp/$last.err; echo \$? >/tmp/$last.rc"
}
as_user rootless --memory 64M -- /workspace/probe memhog 200
[ "$(str rootless status)" = oom ] && [ "$(enforced rootless memory_bytes)" = "cgroup v2" ]
t $? "rootless: memhog 200 under --memory 64M is oom by cgroup v2 (status $(str rootless status), $(enforced rootless memory_bytes))"
as_user rootfork --pids 16 -- /workspace/probe forkbomb
[ "$(str rootfork stdout)" = 'EAGAIN\n' ] && [ "$(str rootfork limit_hit)" = pids ]
t $? "rootless: forkbomb under --pids 16 hits pids.max (stdout $(str rootfork stdout), limit_hit $(str rootfork limit_hit))"
as_user rootcpu --cpus 0.5 -- /workspace/probe memhog 1
[ "$(str rootcpu status)" = ok ] && [ "$(enforced rootcpu cpus)" = none ]
t $? "rootless without cpu delegated: --cpus runs, enforced_by \"none\" (status $(str rootcpu status), \"$(enforced rootcpu cpus)\")"
left=$(find $ud/hutch -mindepth 1 -type d 2>/dev/null)
[ -d $ud/hutch ] && [ -z "$left" ]
t $? "rootless: no cgroup left under $ud/hutch (${left:-none})"
last=""

# freeze, cgroup.kill, destroy and sweep through libhutch's own API.
/driver >&3 2>/tmp/driver.err
rc=$?
[ "$rc" = 0 ]
t $? "driver: exited 0 (status $rc)"
sed 's/^/# driver stderr: /' /tmp/driver.err >&3

# Nothing left behind.
left=$(find /sys/fs/cgroup/hutch -mindepth 1 -type d 2>/dev/null)
[ -d /sys/fs/cgroup/hutch ] && [ -z "$left" ]
t $? "cleanup: no cgroup left under /sys/fs/cgroup/hutch (${left:-none})"

echo "# guest done" >&3
exec 3>&-
sync
sleep 1
poweroff -f

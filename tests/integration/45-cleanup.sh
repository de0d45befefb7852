#!/bin/bash
# Nothing left behind: after every run, and when hutch itself is SIGKILLed
# mid-run, no process, mount, cgroup or temp file of the run remains; and
# 500 runs back to back do not grow hutch's own fds, mounts or cgroups.
. "$(dirname "$0")/../lib.sh"
plan 9

cgroup_dirs() {
	# hutch cgroups whose owner (the pid their name starts with) is dead: a
	# leak. Live owners (this test's daemon, other hutch processes on the
	# machine) are not judged here.
	find /sys/fs/cgroup -maxdepth 3 -path '*/hutch/*' -type d 2>/dev/null | sort |
		while read -r d; do
			owner=${d##*/}
			owner=${owner%%.*}
			kill -0 "$owner" 2>/dev/null || echo "$d"
		done
}
daemon_cgroups() {
	find /sys/fs/cgroup/pids -maxdepth 2 -path "*/hutch/${DAEMON_PID:-none}.*" -type d 2>/dev/null | wc -l
}
# hutch makes nothing on the host's disk; look for anything named after it
# (other than the rootless test copies lib.sh makes).
# Mounts a leaking cell would leave in the host's table (procfs, tmpfs,
# devpts, binds of /usr...); other tools' (docker's) are not ours to count.
host_mounts() { grep -c -v -E '/var/lib/docker|/run/docker' /proc/self/mountinfo; }
tmp_entries() {
	find /tmp /var/tmp /dev/shm /run -maxdepth 1 -iname '*hutch*' ! -name 'hutch-rootless.*' 2>/dev/null | sort
}

before_cg=$(cgroup_dirs)
before_tmp=$(tmp_entries)
before_mounts=$(host_mounts)

marker=hutch-killed-$$-$RANDOM
"$HUTCH_BIN" run --timeout 60 --file "$PROBE:probe" -- /workspace/probe spin "$marker" &
hpid=$!
for _ in $(seq 50); do
	pgrep -f "^/workspace/probe spin $marker" >/dev/null && break
	sleep 0.1
done
# (pgrep exits 1 on no match; the assertions read its output)
isnt "$(pgrep -f "^/workspace/probe spin $marker" || true)" "" "the sandboxed program is running"
kill -9 $hpid
wait $hpid 2>/dev/null || true # it was SIGKILLed: 137 is expected
gone=no
for _ in $(seq 30); do
	if ! pgrep -f "^/workspace/probe spin $marker" >/dev/null; then gone=yes; break; fi
	sleep 0.1
done
is "$gone" yes "SIGKILL of hutch kills the sandbox's processes (PDEATHSIG, pid namespace)"

# The next hutch sweeps the cgroup the killed one could not remove.
hutch run -- true
is "$(cgroup_dirs)" "$before_cg" "the next run sweeps the killed run's cgroup"
is "$(host_mounts)" "$before_mounts" "no mount of the run is visible on the host"
is "$(tmp_entries)" "$before_tmp" "no temp file or directory is left on the host"

# 500 runs in one process would be the library's case; here, 500 CLI runs.
# hutch's own fds are checked by running it with a few fds open and making
# sure none leak into the sandbox (10-ns-isolation) and none remain here.
daemon_fds() { find /proc/"$DAEMON_PID"/fd -mindepth 1 2>/dev/null | wc -l; }
[ "$TEST_PATH" = fast ] && dfds_before=$(daemon_fds)
t0=$(date +%s)
for _ in $(seq 500); do
	hutch run -- true || { echo "# a run failed"; break; }
done
t1=$(date +%s)
echo "# 500 runs in $((t1 - t0)) s"
if [ "$TEST_PATH" = fast ]; then
	# each ready cell holds 3 fds; the pool holds at most 32 cells
	dfds=$(daemon_fds)
	if [ "$dfds" -le $((dfds_before + 3 * 32)) ] && [ "$dfds" -le 128 ]; then
		ok "500 runs: the daemon's fds stay bounded ($dfds_before before, $dfds after)"
	else
		not_ok "500 runs: the daemon's fds grew from $dfds_before to $dfds"
	fi
else
	# each CLI run is its own process; the library's fds are checked by
	# tests/unit/test-api.c over 200 in-process runs
	is "$(pgrep -c -P $$ -x hutch || true)" 0 "500 runs: no hutch process of ours left"
fi
is "$(cgroup_dirs)" "$before_cg" "500 runs: no cgroup left"
is "$(host_mounts)" "$before_mounts" "500 runs: mounts did not grow"
if [ "$TEST_PATH" = fast ]; then
	sleep 1 # finished cells' cgroups are removed in the background
	n=$(daemon_cgroups)
	if [ "$n" -le 40 ]; then ok "500 runs: the daemon holds $n cgroups (its pool, at most 32)"; else not_ok "daemon cgroups piled up: $n"; fi
else
	is "$(pgrep -c -f '^hutch-init' || true)" 0 "500 runs: no cell process left"
fi
done_testing

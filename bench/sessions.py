"""Session benchmarks: a measuring client for `bench/run.sh sessions` (docs/sessions.md).

usage: /usr/bin/python3 bench/sessions.py --socket PATH --daemon-pid PID --out FILE
                                          [--raw DIR] [--label TEXT]

Speaks the daemon's frame protocol (docs/daemon.md) itself over one kept-alive unix socket
connection: a `J` frame (u32 LE length of 1 + payload, the type byte, the JSON op) out, the
`R` frame back (`O`/`E` frames, if any, are skipped). No CLI processes in the timed loops;
every time is time.perf_counter_ns() around one request and its reply.

Environment (defaults in brackets):
  BENCH_N [500]          exec round trips per language
  BENCH_WARMUP [10]      unmeasured calls before each series
  BENCH_SH_N [100]       session.sh round trips
  BENCH_NEW_N [20]       session.new / session.kill per language
  BENCH_PAUSE_N [100]    pause/resume pairs
  BENCH_SESSIONS [100]   idle python sessions for the density measurement (0: skip it)
  BENCH_TIMEOUT [120]    seconds to wait for any one reply before giving up
  BENCH_SETTLE [10]      density: seconds after the kill for the last MemAvailable reading

Every session this script creates is killed before it exits, also after an error, Ctrl-C
or SIGTERM. The table goes to stdout and to --out; progress and errors to stderr; the raw
samples (one per line, microseconds) to --raw.
"""

import argparse
import json
import math
import os
import signal
import socket
import struct
import sys
import time

GIB = 1 << 30
SPIN = ("import threading\n"
        "def spin():\n"
        "    while True: pass\n"
        "threading.Thread(target=spin, daemon=True).start()")


def env_int(name, default, minimum=0):
    text = os.environ.get(name, "")
    if text == "":
        return default
    try:
        v = int(text)
    except ValueError:
        die(f"{name} must be an integer, not '{text}'")
    if v < minimum:
        die(f"{name} must be at least {minimum}, not {v}")
    return v


def log(msg):
    print(f"bench sessions: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(msg)
    sys.exit(1)


class BenchError(Exception):
    pass


# --- statistics ---------------------------------------------------------------------------

def quantile(xs, q):
    """Nearest-rank quantile (p99 of 500 samples is the 495th smallest)."""
    xs = sorted(xs)
    if not xs:
        return None
    rank = max(1, min(len(xs), math.ceil(q * len(xs) - 1e-9)))
    return xs[rank - 1]


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def ms(us):
    """Microseconds as milliseconds, 3 significant digits."""
    if us is None:
        return "-"
    v = us / 1000
    if v < 1:
        return f"{v:.3f}"
    if v < 10:
        return f"{v:.2f}"
    if v < 100:
        return f"{v:.1f}"
    return f"{v:.0f}"


def mib(nbytes):
    return "-" if nbytes is None else f"{nbytes / (1 << 20):.1f}"


# --- the protocol -------------------------------------------------------------------------

class Client:
    """One connection to the daemon; call() sends a J frame and returns the R frame's JSON."""

    def __init__(self, path, timeout):
        self.path = path
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as e:
            self.sock.close()
            raise BenchError(f"cannot connect to the daemon at {path}: {e}") from None

    def close(self):
        self.sock.close()

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except socket.timeout:
                raise BenchError(f"no reply from the daemon within {self.timeout:g} s "
                                 "(BENCH_TIMEOUT)") from None
            if not chunk:
                raise BenchError("the daemon closed the connection")
            buf += chunk
        return bytes(buf)

    def call(self, req):
        payload = json.dumps(req, separators=(",", ":")).encode()
        try:
            self.sock.sendall(struct.pack("<I", 1 + len(payload)) + b"J" + payload)
        except OSError as e:
            raise BenchError(f"sending {req.get('op')} to the daemon: {e}") from None
        while True:
            length, ftype = struct.unpack("<IB", self._recv_exact(5))
            if length < 1 or length > (128 << 20):
                raise BenchError(f"bad frame length {length} from the daemon")
            body = self._recv_exact(length - 1)
            if ftype == ord("R"):
                return json.loads(body)
            if ftype not in (ord("O"), ord("E")):
                raise BenchError(f"unexpected frame type {chr(ftype)!r} from the daemon")

    def timed(self, req):
        """(reply, microseconds for the round trip)."""
        t0 = time.perf_counter_ns()
        reply = self.call(req)
        return reply, (time.perf_counter_ns() - t0) / 1000

    def op(self, req):
        """A call whose reply must not be an error; (reply, µs)."""
        reply, us = self.timed(req)
        err = reply.get("error") if isinstance(reply, dict) else None
        if err and not ("status" in reply):
            raise BenchError(f"{req.get('op')}: {err.get('code')}: {err.get('message')}")
        return reply, us


class Sessions:
    """Creates and kills sessions, remembering which are still alive."""

    def __init__(self, client):
        self.c = client
        self.live = []

    def new(self, language):
        reply, us = self.c.op({"op": "session.new", "language": language})
        sid = reply["session"]["id"]
        self.live.append(sid)
        return sid, us

    def kill(self, sid):
        _, us = self.c.op({"op": "session.kill", "id": sid})
        self.live.remove(sid)
        return us

    def exec(self, sid, code):
        return self.c.timed({"op": "session.exec", "id": sid, "code": code})

    def kill_all(self):
        """Best effort, on a fresh connection if the old one is in an unknown state."""
        if not self.live:
            return
        left = list(self.live)
        self.live.clear()
        try:
            c = Client(self.c.path, 30)
        except BenchError as e:
            log(f"cleanup: {e}; the daemon's exit ends the {len(left)} sessions left")
            return
        failed = 0
        for sid in left:
            try:
                c.call({"op": "session.kill", "id": sid})
            except (BenchError, OSError):
                failed += 1
        c.close()
        log(f"cleanup: killed {len(left) - failed} sessions"
            + (f" ({failed} failed; the daemon's exit ends them)" if failed else ""))


def value_text(reply):
    v = reply.get("value")
    return v.get("text/plain") if isinstance(v, dict) else None


def exec_ok(reply):
    return reply.get("status") == "ok" and not reply.get("kernel_restarted")


def run_us(reply):
    return (reply.get("timings") or {}).get("run_us")


# --- /proc --------------------------------------------------------------------------------

def proc_table():
    """{pid: (ppid, comm)} for every process we can read."""
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        lp, rp = stat.find("("), stat.rfind(")")
        fields = stat[rp + 2:].split()
        procs[int(name)] = (int(fields[1]), stat[lp + 1:rp])
    return procs


def session_processes(daemon_pid):
    """({root_pid: [pids]} for the session trees, [pids] of the zygote's tree).

    The daemon's children are its zygote (comm hutch-zygote...) and one cell init per
    session; a session's processes are its init and everything under it.
    """
    procs = proc_table()
    children = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)

    def tree(root):
        out, todo = [], [root]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(children.get(p, []))
        return out

    sessions, zygote = {}, []
    for child in children.get(daemon_pid, []):
        if procs[child][1].startswith("hutch-zygot"):
            zygote += tree(child)
        else:
            sessions[child] = tree(child)
    return sessions, zygote, procs


def smaps_rollup(pid):
    """{'Rss': bytes, 'Pss': bytes, 'Pss_Anon': ..., ...} or None if the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    except OSError:
        return None
    return out


def meminfo_all():
    """{key: bytes} from /proc/meminfo."""
    out = {}
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                out[parts[0].rstrip(":")] = int(parts[1]) * (1024 if len(parts) == 3 else 1)
    return out


def meminfo(key="MemAvailable"):
    v = meminfo_all().get(key)
    if v is None:
        raise BenchError(f"no {key} in /proc/meminfo")
    return v


# The kernel's own memory that grows with sessions (page tables, stacks, namespaces,
# cgroups, mounts): in MemAvailable, but in no process's Pss.
KERNEL_KEYS = ("PageTables", "KernelStack", "SUnreclaim", "SReclaimable", "Shmem")


def meminfo_settled(samples=3, gap=0.5):
    """/proc/meminfo, each field the median of a few readings (other work moves it)."""
    reads = []
    for i in range(samples):
        if i:
            time.sleep(gap)
        reads.append(meminfo_all())
    return {k: median([r.get(k, 0) for r in reads]) for k in reads[0]}


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def nofile_limit(pid):
    """The soft RLIMIT_NOFILE of a process, from /proc/PID/limits."""
    try:
        with open(f"/proc/{pid}/limits", encoding="ascii") as f:
            for line in f:
                if line.startswith("Max open files"):
                    return line.split()[3]
    except (OSError, IndexError):
        pass
    return None


def memory_cgroups():
    """The memory controller's cgroup count from /proc/cgroups (dying ones included)."""
    try:
        with open("/proc/cgroups", encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] == "memory":
                    return int(parts[2])
    except (OSError, ValueError, IndexError):
        pass
    return None


def seconds(s):
    return f"{s * 1000:.0f} ms" if s < 10 else f"{s:.1f} s"


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


# --- the benchmark ------------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.n = env_int("BENCH_N", 500, 1)
        self.warmup = env_int("BENCH_WARMUP", 10)
        self.sh_n = env_int("BENCH_SH_N", 100, 1)
        self.new_n = env_int("BENCH_NEW_N", 20, 1)
        self.pause_n = env_int("BENCH_PAUSE_N", 100, 1)
        self.density = env_int("BENCH_SESSIONS", 100)
        self.timeout = env_int("BENCH_TIMEOUT", 120, 1)
        self.client = Client(args.socket, self.timeout)
        self.s = Sessions(self.client)
        self.lines = []
        self.notes = []

    def out(self, line=""):
        self.lines.append(line)

    def raw(self, name, samples):
        if not self.args.raw:
            return
        os.makedirs(self.args.raw, exist_ok=True)
        with open(os.path.join(self.args.raw, name + ".txt"), "w", encoding="ascii") as f:
            for x in samples:
                f.write(f"{x:.0f}\n" if isinstance(x, float) else f"{x}\n")

    # 1. exec round trips
    def exec_series(self, language, setup, code, check):
        sid, _ = self.s.new(language)
        if setup:
            reply, _ = self.s.exec(sid, setup)
            if not exec_ok(reply):
                raise BenchError(f"{language}: setup {setup!r} failed: {json.dumps(reply)[:300]}")
        log(f"exec {language}: {self.warmup} + {self.n} calls of {code!r}")
        ok_calls = 0
        for _ in range(self.warmup):
            reply, _ = self.s.exec(sid, code)
            ok_calls += exec_ok(reply)
        times, daemon, fail = [], [], 0
        for _ in range(self.n):
            reply, us = self.s.exec(sid, code)
            if exec_ok(reply):
                ok_calls += 1
                times.append(us)
                if run_us(reply) is not None:
                    daemon.append(run_us(reply))
            else:
                fail += 1
                if fail <= 3:
                    log(f"exec {language}: a call failed: {json.dumps(reply)[:300]}")
        state = "-"
        if check:
            reply, _ = self.s.exec(sid, check)
            got = value_text(reply)
            want = str(ok_calls)
            state = (f"x == {got}: ok" if got == want
                     else f"x == {got}, expected {want}: LOST STATE")
        self.s.kill(sid)
        self.raw(f"exec-{language}", times)
        return times, daemon, fail, state

    def bench_exec(self):
        rows = [("python", "x = 0", "x += 1", "x"),
                ("bash", None, "true", None),
                ("node", "let x = 0", "x += 1", "x")]
        self.out(f"exec round trip over the socket (session.exec, one connection): "
                 f"{self.n} calls after {self.warmup} warm-up")
        self.out(f"{'':22}{'median ms':>10}{'p99 ms':>9}{'mean ms':>9}{'daemon ms':>11}"
                 f"{'ok':>6}{'fail':>6}  state kept")
        for language, setup, code, check in rows:
            times, daemon, fail, state = self.exec_series(language, setup, code, check)
            label = f"{language}: {code}"
            self.out(f"{label:22}{ms(median(times)):>10}{ms(quantile(times, 0.99)):>9}"
                     f"{ms(mean(times)):>9}{ms(median(daemon)):>11}{len(times):>6}{fail:>6}"
                     f"  {state}")
        self.out("daemon ms: the median of the result's timings.run_us (daemon to kernel and "
                 "back); state kept: x read back after all calls (warm-up included)")
        self.out()

    # 2. session.sh
    def bench_sh(self):
        sid, _ = self.s.new("python")
        log(f"sh: {min(self.warmup, 10)} + {self.sh_n} calls of `true`")
        req = {"op": "session.sh", "id": sid, "command": "true"}
        for _ in range(min(self.warmup, 10)):
            self.client.timed(req)
        times, daemon, fail = [], [], 0
        for _ in range(self.sh_n):
            reply, us = self.client.timed(req)
            if reply.get("status") == "ok" and reply.get("exit_code") == 0:
                times.append(us)
                if run_us(reply) is not None:
                    daemon.append(run_us(reply))
            else:
                fail += 1
                if fail <= 3:
                    log(f"sh: a call failed: {json.dumps(reply)[:300]}")
        self.s.kill(sid)
        self.raw("sh", times)
        self.out(f"session.sh round trip: `bash -c true` entered into a running python session, "
                 f"{self.sh_n} calls")
        self.out(f"{'':22}{'median ms':>10}{'p99 ms':>9}{'mean ms':>9}{'daemon ms':>11}"
                 f"{'ok':>6}{'fail':>6}")
        self.out(f"{'sh: true':22}{ms(median(times)):>10}{ms(quantile(times, 0.99)):>9}"
                 f"{ms(mean(times)):>9}{ms(median(daemon)):>11}{len(times):>6}{fail:>6}")
        self.out()

    # 3. session.new / first exec / kill
    def bench_lifecycle(self):
        self.out(f"session lifecycle: {self.new_n} sessions per language, one at a time "
                 "(after one unmeasured)")
        self.out(f"{'':10}{'new median':>11}{'new p99':>9}{'1st exec':>10}{'kill median':>13}"
                 f"{'kill p99':>10}  (ms)")
        first = {"python": "1", "bash": "true", "node": "1"}
        for language in ("python", "bash", "node"):
            log(f"lifecycle {language}: 1 + {self.new_n} new/exec/kill")
            sid, _ = self.s.new(language)
            self.s.exec(sid, first[language])
            self.s.kill(sid)
            new, ex, kill, fail = [], [], [], 0
            for _ in range(self.new_n):
                sid, us = self.s.new(language)
                new.append(us)
                reply, us = self.s.exec(sid, first[language])
                if exec_ok(reply):
                    ex.append(us)
                else:
                    fail += 1
                kill.append(self.s.kill(sid))
            self.raw(f"new-{language}", new)
            self.raw(f"kill-{language}", kill)
            self.out(f"{language:10}{ms(median(new)):>11}{ms(quantile(new, 0.99)):>9}"
                     f"{ms(median(ex)):>10}{ms(median(kill)):>13}{ms(quantile(kill, 0.99)):>10}"
                     + (f"  ({fail} first execs failed)" if fail else ""))
        self.out("new: session.new until the reply (the kernel is started and ready); "
                 f"1st exec: the median of the first call after new ({first['python']!r} / "
                 f"{first['bash']!r} / {first['node']!r}); kill: session.kill")
        self.out()

    # 4. pause / resume
    def cpu_ms(self, sid):
        reply, _ = self.client.op({"op": "session.info", "id": sid})
        return reply["session"]["cpu_ms"], reply["session"]["state"]

    def cpu_over(self, sid, span=1.0):
        c0, _ = self.cpu_ms(sid)
        t0 = time.perf_counter()
        time.sleep(span)
        c1, state = self.cpu_ms(sid)
        return c1 - c0, time.perf_counter() - t0, state

    def bench_pause(self):
        sid, _ = self.s.new("python")
        reply, _ = self.s.exec(sid, SPIN)
        if not exec_ok(reply):
            raise BenchError(f"pause: starting the spinning thread failed: "
                             f"{json.dumps(reply)[:300]}")
        log(f"pause/resume: {self.pause_n} pairs on a session with a spinning thread")
        busy, busy_s, _ = self.cpu_over(sid)
        pause_rt, pause_took, resume_rt, resume_took, bad = [], [], [], [], 0
        for i in range(self.pause_n):
            reply, us = self.client.op({"op": "session.pause", "id": sid})
            pause_rt.append(us)
            pause_took.append(reply.get("took_us"))
            bad += reply["session"]["state"] != "paused"
            reply, us = self.client.op({"op": "session.resume", "id": sid})
            resume_rt.append(us)
            resume_took.append(reply.get("took_us"))
            bad += reply["session"]["state"] != "running"
        self.client.op({"op": "session.pause", "id": sid})
        paused, paused_s, pstate = self.cpu_over(sid)
        self.client.op({"op": "session.resume", "id": sid})
        after, after_s, _ = self.cpu_over(sid)
        reply, _ = self.s.exec(sid, "1 + 1")
        alive = "ok" if exec_ok(reply) and value_text(reply) == "2" else \
            f"FAILED: {json.dumps(reply)[:200]}"
        self.s.kill(sid)
        self.raw("pause-rt", pause_rt)
        self.raw("resume-rt", resume_rt)
        self.raw("pause-took", [x for x in pause_took if x is not None])
        self.raw("resume-took", [x for x in resume_took if x is not None])
        took_p = [x for x in pause_took if x is not None]
        took_r = [x for x in resume_took if x is not None]
        self.out(f"pause/resume: {self.pause_n} pairs on a python session whose thread spins "
                 "(`while True: pass`)")
        self.out(f"{'':10}{'client median':>14}{'client p99':>11}{'took_us median':>16}"
                 f"{'took_us p99':>12}  (ms)")
        for name, rt, took in (("pause", pause_rt, took_p), ("resume", resume_rt, took_r)):
            self.out(f"{name:10}{ms(median(rt)):>14}{ms(quantile(rt, 0.99)):>11}"
                     f"{ms(median(took)):>16}{ms(quantile(took, 0.99)):>12}")
        self.out(f"CPU (session.info cpu_ms): running {busy} ms in {busy_s:.2f} s; "
                 f"paused {paused} ms in {paused_s:.2f} s (state {pstate}); "
                 f"resumed {after} ms in {after_s:.2f} s")
        self.out(f"replies in the wrong state: {bad}; an exec after the last resume: {alive}")
        self.out()

    # 5. density
    def snapshot(self):
        """Memory of the session processes, summed, with a breakdown by command name."""
        trees, zygote, procs = session_processes(self.args.daemon_pid)
        total = {"Pss": 0, "Rss": 0, "Pss_Anon": 0, "Pss_File": 0, "Pss_Shmem": 0}
        by_comm = {}
        nproc = 0
        for pids in trees.values():
            for pid in pids:
                r = smaps_rollup(pid)
                if r is None:
                    continue
                nproc += 1
                comm = procs[pid][1]
                b = by_comm.setdefault(comm, {"n": 0, "Pss": 0, "Rss": 0, "Pss_Anon": 0,
                                              "Pss_File": 0})
                b["n"] += 1
                for k in total:
                    total[k] += r.get(k, 0)
                for k in ("Pss", "Rss", "Pss_Anon", "Pss_File"):
                    b[k] += r.get(k, 0)
        zyg = {"n": 0, "Pss": 0}
        for pid in zygote:
            r = smaps_rollup(pid)
            if r:
                zyg["n"] += 1
                zyg["Pss"] += r.get("Pss", 0)
        return len(trees), nproc, total, by_comm, zyg

    def bench_density(self):
        k = self.density
        if k == 0:
            self.out("density: skipped (BENCH_SESSIONS=0)")
            self.out()
            return
        dpid = self.args.daemon_pid
        trees0, _, _, _, _ = self.snapshot()
        if trees0:
            log(f"density: {trees0} session trees exist before the measurement")
        mem0 = meminfo_settled()
        avail0 = mem0["MemAvailable"]
        drss0, dfd0 = status_kb(dpid, "VmRSS"), fd_count(dpid)
        dthr0 = status_kb(dpid, "Threads")
        cg0 = memory_cgroups()
        log(f"density: creating {k} python sessions (one exec each); "
            f"MemAvailable {avail0 / GIB:.2f} GiB")
        new, ex, fail = [], [], 0
        t0 = time.perf_counter()
        ids = []
        stopped = None
        for i in range(k):
            try:
                sid, us = self.s.new("python")
            except BenchError as e:
                stopped = f"session.new number {i + 1} failed: {e}"
                log(f"density: {stopped}")
                break
            ids.append(sid)
            new.append(us)
            reply, us = self.s.exec(sid, "1")
            if exec_ok(reply) and value_text(reply) == "1":
                ex.append(us)
            else:
                fail += 1
                if fail <= 3:
                    log(f"density: an exec failed: {json.dumps(reply)[:300]}")
            if (i + 1) % 50 == 0:
                log(f"density: {i + 1}/{k} sessions, MemAvailable "
                    f"{meminfo() / GIB:.2f} GiB")
        create_s = time.perf_counter() - t0
        n = len(ids)
        time.sleep(1)  # let the kernels settle
        mem1 = meminfo_settled()
        avail1 = mem1["MemAvailable"]
        trees, nproc, total, by_comm, zyg = self.snapshot()
        drss1, dfd1 = status_kb(dpid, "VmRSS"), fd_count(dpid)
        dthr1 = status_kb(dpid, "Threads")
        cg1 = memory_cgroups()
        peaks = []
        for sid in ids:
            reply, _ = self.client.op({"op": "session.info", "id": sid})
            peaks.append(reply["session"].get("peak_memory_bytes") or 0)
        log(f"density: killing {n} sessions")
        kill = []
        t0 = time.perf_counter()
        for sid in ids:
            kill.append(self.s.kill(sid))
        t_killed = time.perf_counter()
        kill_s = t_killed - t0
        # The kernel frees some of a killed session's memory later (cgroups, namespaces,
        # RCU): one reading soon after the kill, one after BENCH_SETTLE seconds.
        time.sleep(1)
        mem2 = meminfo_settled()
        at2 = time.perf_counter() - t_killed - 0.5  # the middle reading
        cg2 = memory_cgroups()
        avail2 = mem2["MemAvailable"]
        settle = env_int("BENCH_SETTLE", 10)
        time.sleep(max(0.0, settle - 2.0))
        mem3 = meminfo_settled()
        at3 = time.perf_counter() - t_killed - 0.5
        avail3 = mem3["MemAvailable"]
        for name, mem in (("before", mem0), ("with", mem1), ("after", mem2), ("settled", mem3)):
            self.raw(f"density-meminfo-{name}", [f"{k} {v}" for k, v in mem.items()])
        trees2, nproc2, _, _, _ = self.snapshot()
        self.raw("density-new", new)
        self.raw("density-kill", kill)

        self.out(f"density: {n} idle python sessions (of {k} asked), each after one exec of "
                 f"`1` ({fail} failed)")
        if stopped:
            self.out(f"  STOPPED EARLY: {stopped}")
        if n == 0:
            self.out()
            return
        per = lambda x: x / n  # noqa: E731
        self.out(f"  create: {seconds(create_s)} in all; session.new median {ms(median(new))} ms, "
                 f"p99 {ms(quantile(new, 0.99))} ms; first exec median {ms(median(ex))} ms")
        self.out(f"  processes: {nproc} in {trees} session trees (daemon children other than "
                 f"the zygote); the zygote's tree ({zyg['n']} processes, Pss "
                 f"{mib(zyg['Pss'])} MiB) is left out")
        pss_per, avail_per = per(total["Pss"]), per(avail0 - avail1)
        self.out(f"{'  memory per session':34}{'MiB':>8}{'sessions per 16 GiB':>22}")
        self.out(f"{'  Pss (smaps_rollup), summed':34}{mib(pss_per):>8}"
                 f"{16 * GIB / pss_per if pss_per > 0 else 0:>22.0f}")
        self.out(f"{'    of which anon / file / shmem':34}{mib(per(total['Pss_Anon'])):>8}"
                 f"  / {mib(per(total['Pss_File']))} / {mib(per(total['Pss_Shmem']))}")
        self.out(f"{'  MemAvailable drop':34}{mib(avail_per):>8}"
                 f"{16 * GIB / avail_per if avail_per > 0 else 0:>22.0f}")
        self.out(f"{'  Rss, summed (counts shared twice)':34}{mib(per(total['Rss'])):>8}"
                 f"{16 * GIB / per(total['Rss']) if total['Rss'] else 0:>22.0f}")
        self.out(f"{'  cgroup peak (info), median':34}{mib(median(peaks)):>8}")
        self.out("  kernel memory per session (/proc/meminfo deltas, KiB): " + ", ".join(
            f"{key} {(mem1.get(key, 0) - mem0.get(key, 0)) / n / 1024:+.0f}"
            for key in KERNEL_KEYS))
        self.out("  by process (per session: Pss, Pss anon, Pss file, Rss; MiB):")
        for comm, b in sorted(by_comm.items(), key=lambda kv: -kv[1]["Pss"]):
            self.out(f"    {comm:16} {b['n']:>5} procs {mib(per(b['Pss'])):>7} "
                     f"{mib(per(b['Pss_Anon'])):>7} {mib(per(b['Pss_File'])):>7} "
                     f"{mib(per(b['Rss'])):>7}")
        if drss0 is not None and drss1 is not None:
            self.out(f"  daemon: VmRSS {drss0 / 1024:.1f} -> {drss1 / 1024:.1f} MiB "
                     f"({(drss1 - drss0) / n:+.0f} KiB per session); open fds {dfd0} -> {dfd1} "
                     f"(limit {nofile_limit(dpid)}); threads {dthr0} -> {dthr1}")
        self.out(f"  kill: {seconds(kill_s)} in all; session.kill median {ms(median(kill))} ms, "
                 f"p99 {ms(quantile(kill, 0.99))} ms; afterwards {nproc2} session processes")
        rel = lambda a: f"{(a - avail0) / (1 << 20):+.0f} MiB"  # noqa: E731
        self.out(f"  MemAvailable: {avail0 / GIB:.2f} GiB before; with the sessions "
                 f"{rel(avail1)}; after the kill {rel(avail2)} at {at2:.0f} s, "
                 f"{rel(avail3)} at {at3:.0f} s (other work on the machine moves it too)")
        if cg0 is not None:
            self.out(f"  memory cgroups (/proc/cgroups, dying ones included): {cg0} before, "
                     f"{cg1} with the sessions, {cg2} after the kill")
        self.out()

    def run(self):
        reply, _ = self.client.timed({"op": "session.list"})
        if "error" in reply:
            raise BenchError(f"the daemon does not serve sessions: "
                             f"{reply['error'].get('code')}: {reply['error'].get('message')}")
        load = open("/proc/loadavg", encoding="ascii").read().split()[:3]
        self.out(f"hutch session bench, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                 f"{self.args.label}")
        with open("/proc/meminfo", encoding="ascii") as f:
            total = int(f.readline().split()[1]) / (1 << 20)
        self.out(f"machine: {os.uname().release}, {os.cpu_count()} cores, {total:.0f} GiB; "
                 f"load average at start: {' '.join(load)}")
        self.out(f"client: {sys.executable} on one unix socket connection, J frames; "
                 "p99 is nearest-rank")
        self.out()
        self.bench_exec()
        self.bench_sh()
        self.bench_lifecycle()
        self.bench_pause()
        self.bench_density()
        self.out("fork: not implemented (see docs/sessions.md)")
        for note in self.notes + self.args.note:
            self.out(note)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--daemon-pid", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--raw")
    ap.add_argument("--label", default="hutch")
    ap.add_argument("--note", action="append", default=[], help="a line for the table's end")
    args = ap.parse_args()

    # SIGTERM (and SIGHUP) end the run the way Ctrl-C does, so the sessions get killed.
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    # Started in the background by bench/run.sh, which leaves SIGINT ignored: take Ctrl-C
    # anyway (the script forwards it as SIGTERM too).
    signal.signal(signal.SIGINT, stop)

    bench = None
    rc = 0
    try:
        bench = Bench(args)
        bench.run()
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except BenchError as e:
        log(f"error: {e}")
        rc = 1
    finally:
        if bench is not None:
            try:
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_IGN)
                bench.s.kill_all()
            finally:
                bench.client.close()
    if bench is None or rc != 0:
        if bench is not None and bench.lines:
            log("the table so far:\n" + "\n".join(bench.lines))
        return rc
    text = "\n".join(bench.lines) + "\n"
    sys.stdout.write(text)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tests of kernels/bash.py through the harness (TAP). Run: /usr/bin/python3 this file."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Kernel, check, done  # noqa: E402


def bash_processes_of(pid):
    """PIDs of the processes whose parent is PID (the shells a kernel started)."""
    kids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.append(int(name))
    return kids


k = Kernel("bash")
check(k.ready.get("language") == "bash" and k.ready.get("version", "")[:1].isdigit(),
      "ready names bash and its version: %r" % k.ready)

# state between calls
r = k.exec("mkdir -p sub && cd sub")
check(r["status"] == "ok" and r["exit_code"] == 0 and r["value"] is None, "cd: ok, exit 0")
r = k.exec("pwd")
check(r["stdout"] == os.path.join(k.cwd, "sub") + "\n", "cwd persists: %r" % r["stdout"])
k.exec("cd ..")
k.exec("plain=1; export EXPORTED=2; greet() { echo \"hello $1\"; }; alias hi='echo alias-hi'")
r = k.exec("echo $plain $EXPORTED; greet you; hi; sh -c 'echo child sees ${EXPORTED}${plain}'")
check(r["stdout"] == "1 2\nhello you\nalias-hi\nchild sees 2\n",
      "variables, functions, aliases persist; only exported ones reach children: %r"
      % r["stdout"])

# exit status per call, streams
r = k.exec("false")
check(r["status"] == "error" and r["exit_code"] == 1, "false: error, exit 1")
r = k.exec("(exit 7)")
check(r["exit_code"] == 7, "exit status of the last command: %r" % r.get("exit_code"))
r = k.exec("true")
check(r["status"] == "ok" and r["exit_code"] == 0, "next call is ok again")
r = k.exec("echo out; echo err >&2")
check(r["stdout"] == "out\n" and r["stderr"] == "err\n", "stdout and stderr apart: %r" % r)
r = k.exec("cat <<'EOF'\n$not expanded 'quote\nEOF\necho after")
check(r["stdout"] == "$not expanded 'quote\nafter\n", "heredoc: %r" % r["stdout"])

# bad code does not hang the kernel
r = k.exec("echo 'unbalanced")
check(r["status"] == "error" and r["exit_code"] == 2 and "matching" in r["stderr"],
      "unbalanced quote: exit 2, bash says why: %r" % r["stderr"])
r = k.exec("if then fi")
check(r["status"] == "error" and "syntax error" in r["stderr"], "syntax error reported")
r = k.exec("echo $plain")
check(r["stdout"] == "1\n", "state survives the syntax errors")

# stdin is not the kernel's command pipe
t = time.time()
r = k.exec("cat; read line; echo read=$?", timeout=10)
check(r["status"] == "ok" and r["stdout"] == "read=1\n" and time.time() - t < 5,
      "cat and read get EOF at once: %r" % r["stdout"])

# background jobs
t = time.time()
r = k.exec("sleep 100 & echo started", timeout=10)
check(r["status"] == "ok" and r["stdout"] == "started\n" and time.time() - t < 5,
      "a background job does not hold the call")
k.exec("(sleep 0.3; echo late) &")
time.sleep(0.8)
r = k.exec("echo now")
check("late\n" in r["stdout"] and r["stdout"].endswith("now\n"),
      "background output shows up with a later call: %r" % r["stdout"])

# interrupt
t = time.time()
r = k.exec("inside=1; cd sub; sleep 100; echo not-reached", timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted" and "not-reached" not in r["stdout"]
      and time.time() - t < 5, "interrupt stops sleep 100: %r" % r["status"])
r = k.exec("echo $inside $plain; pwd")
check(r["stdout"] == "1 1\n%s\n" % os.path.join(k.cwd, "sub"),
      "state survives the interrupt: %r" % r["stdout"])
k.exec("cd ..")
r = k.exec("for i in 1 2 3; do sleep 100; echo loop $i; done", timeout=10,
           interrupt_after=0.5)
check(r["status"] == "interrupted" and "loop" not in r["stdout"],
      "interrupt abandons a whole loop, not only its sleep: %r" % r["stdout"])
r = k.exec("f() { sleep 100; echo in-f; }; f; echo after-f", timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted" and r["stdout"] == "", "interrupt inside a function")
r = k.exec("jobs -r | wc -l")
check(r["stdout"].strip() == "1", "the background sleep survived the interrupts")
r = k.exec("trap '' INT; sleep 100", timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted" and "new shell" in r.get("note", ""),
      "a call that ignores SIGINT: the shell is replaced in time: %r" % r.get("note"))
k.exec("trap - INT")

# exit
shells = bash_processes_of(k.proc.pid)
r = k.exec("doomed=1; exit 3")
check(r["status"] == "error" and r["exit_code"] == 3, "exit 3: error, exit_code 3")
check("state was lost" in r.get("note", "") and "state was lost" in r["stderr"],
      "exit 3: the done frame and stderr say a new shell was started")
r = k.exec("echo doomed=$doomed; pwd")
check(r["stdout"] == "doomed=\n%s\n" % k.cwd, "a working fresh shell in the start cwd: %r"
      % r["stdout"])
check(bash_processes_of(k.proc.pid) != shells, "it is another process")
r = k.exec("exit 0")
check(r["status"] == "ok" and r["exit_code"] == 0, "exit 0 is ok")

# a lot of output
r = k.exec("seq 1 200000", timeout=20)
check(r["status"] == "ok" and r["stdout"].count("\n") == 200000
      and r["stdout"].endswith("199999\n200000\n"), "200000 lines arrive whole")

# reset
k.exec("keep=1; cd sub; echo data > kept.txt; sleep 100 &")
r = k.reset()
check(r == {"type": "done", "id": None, "status": "ok"}, "reset answers done: %r" % r)
r = k.exec("echo keep=$keep; pwd; cat sub/kept.txt; jobs | wc -l")
check(r["stdout"] == "keep=\n%s\ndata\n0\n" % k.cwd,
      "after reset: variables and cwd are fresh, files stay: %r" % r["stdout"])

# EOF on fd 3: the kernel and its shell go away
shells = bash_processes_of(k.proc.pid)
k.close()
check(k.proc.returncode == 0, "EOF on fd 3: exit 0 (%r)" % k.proc.returncode)
time.sleep(0.2)
check(not any(os.path.exists("/proc/%d" % p) for p in shells), "the shell is gone too")

# the kernel ends when the daemon goes away, even in a busy call, and on protocol errors
k = Kernel("bash")
k.send({"op": "exec", "id": "busy", "code": 'sleep 100'})
time.sleep(0.3)
k.ours.close()
try:
    k.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    k.proc.kill()
    k.proc.wait()
check(k.proc.returncode == 0, "EOF during a busy call ends the kernel: %r" % k.proc.returncode)

k = Kernel("bash")
k.ours.sendall(b"\x03\x00\x00\x00{x}")
try:
    k.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    k.proc.kill()
    k.proc.wait()
err = k.proc.stderr.read().decode()
check(k.proc.returncode == 2 and "JSON" in err, "a malformed frame: a message and exit 2 (%r)" % err)

done()

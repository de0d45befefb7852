"""Drive a session kernel (docs/kernels.md) outside any sandbox, for its own tests.

    k = Kernel("python")            # or "bash", "node"
    r = k.exec("x = 1\nx + 1")      # -> dict: the done frame plus "stdout", "stderr", "displays"
    k.interrupt(); k.reset(); k.close()

Run with /usr/bin/python3 (the python3 first on PATH may be a shim without Debian's packages).
"""
import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "..", "..", "kernels")
# As the daemon starts them (src/session/kernel.c): a short bootstrap that runs the source
# it reads from stdin.
PYTHON = ["/usr/bin/python3", "-I", "-c",
          "import sys; exec(compile(sys.stdin.read(), '<hutch-kernel>', 'exec'))"]
COMMANDS = {
    "python": PYTHON,
    "bash": PYTHON,
    "node": ["/usr/bin/node", "-e",
             "require('vm').runInThisContext(require('fs').readFileSync(0, 'utf8'),"
             " {filename: 'hutch-kernel.js'})"],
}
FILES = {"python": "python.py", "bash": "bash.py", "node": "node.js"}


class Kernel:
    def __init__(self, language, cwd=None):
        with open(os.path.join(KERNELS, FILES[language])) as f:
            src = f.read()
        self.ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.cwd = cwd or tempfile.mkdtemp(prefix="hutch-kernel-test.")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.cwd, "LANG": "C.UTF-8",
               "TMPDIR": self.cwd}
        self.proc = subprocess.Popen(
            COMMANDS[language], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=(3,), cwd=self.cwd, env=env,
            preexec_fn=lambda: os.dup2(theirs.fileno(), 3))
        theirs.close()
        self.proc.stdin.write(src.encode())  # the kernel reads all of it before anything else
        self.proc.stdin.close()
        # proc.stdout/stderr become the drains: their read() still gives what is left at EOF.
        self.stdout = self.proc.stdout = _Drain(self.proc.stdout)
        self.stderr = self.proc.stderr = _Drain(self.proc.stderr)
        self.buf = b""
        self.next_id = 0
        self.ready = self.recv(timeout=30)
        assert self.ready.get("type") == "ready", self.ready

    def send(self, obj):
        data = json.dumps(obj).encode()
        self.ours.sendall(struct.pack("<I", len(data)) + data)

    def recv(self, timeout=30):
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack("<I", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    frame, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    return json.loads(frame)
            r, _, _ = select.select([self.ours], [], [], timeout)
            if not r:
                raise TimeoutError("no frame from the kernel in %ss" % timeout)
            chunk = self.ours.recv(65536)
            if not chunk:
                raise EOFError("kernel closed its control socket")
            self.buf += chunk

    def exec(self, code, timeout=30, interrupt_after=None):
        self.next_id += 1
        cid = "c%d" % self.next_id
        self.send({"op": "exec", "id": cid, "code": code})
        displays = []
        out = err = ""
        while True:
            t = interrupt_after if interrupt_after is not None else timeout
            try:
                msg = self.recv(timeout=t)
            except TimeoutError:
                if interrupt_after is None:
                    raise
                self.interrupt()
                interrupt_after = None
                continue
            out += self.stdout.take()
            err += self.stderr.take()
            if msg.get("type") == "display":
                displays.append(msg)
            elif msg.get("type") == "done":
                assert msg.get("id") == cid, (msg, cid)
                msg.update(stdout=out, stderr=err, displays=displays)
                return msg

    def interrupt(self):
        self.send({"op": "interrupt"})

    def reset(self):
        self.send({"op": "reset"})
        return self.recv()

    def close(self):
        self.ours.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Drain:
    """Read a kernel's output pipe all the time, as the daemon does: a call that writes more
    than a pipe holds would otherwise block before its done frame could be read. take()
    returns what came so far, including what the pipe holds at that moment."""

    def __init__(self, f):
        self.f = f
        self.fd = f.fileno()
        os.set_blocking(self.fd, False)
        self.lock = threading.Lock()
        self.data = b""
        self.eof = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read_available(self):  # with self.lock held
        while not self.eof:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                self.eof = True
            self.data += chunk

    def _run(self):
        try:
            while not self.eof:
                select.select([self.fd], [], [])
                with self.lock:
                    self._read_available()
        except (OSError, ValueError):
            pass  # closed under us

    def take(self):
        with self.lock:
            self._read_available()
            data, self.data = self.data, b""
        return data.decode(errors="replace")

    def close(self):
        self.f.close()

    def read(self):
        """Like the pipe's read(): all that is left, once the writer closed it."""
        self.thread.join()
        with self.lock:
            data, self.data = self.data, b""
        return data


def check(cond, what):
    """TAP-ish: print ok/not ok and remember failures."""
    check.n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", check.n, what))
    if not cond:
        check.failed += 1
    sys.stdout.flush()


check.n = 0
check.failed = 0


def done():
    print("1..%d" % check.n)
    sys.exit(1 if check.failed else 0)

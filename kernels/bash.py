"""hutch session kernel for bash (docs/kernels.md).

Runs inside a cell under `/usr/bin/python3 -I -c <bootstrap>`, which reads this source from
stdin and runs it, with fd 3 the control socket and fd 1/2 the daemon's output pipes.
Standard library only.

One persistent bash does the work. For each call the code goes to a private file that the
shell `source`s, so cd, variables, functions and aliases stay between calls; the shell then
writes "<call number> <$?>" to a private FIFO, which is how we learn the call ended.

Why an *interactive* shell (`bash -i`, stdin a pipe, no terminal): on SIGINT a
non-interactive bash either dies (no trap) or, with a trap, runs the next command of a loop
or script. Only an interactive bash abandons the whole command line it is running and
goes back to reading input, which is what "interrupt this call, keep the state" means.
What being interactive costs is handled in INIT (prompts, history) and by starting the
shell with stderr on /dev/null (its "no job control in this shell" notice).
"""
import json
import os
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

CTL_FD = 3
FRAME_MAX = 64 << 20
# After SIGINT: re-send the status line if none came (the signal may have hit the status
# line itself), and give up on the shell (kill it, start another) a bit before the daemon's
# 2 s grace would give up on the whole kernel.
PROBE_AFTER = 0.3
KILL_AFTER = 1.5
START_TIMEOUT = 15.0

# Sent to every new shell once its stderr is connected. Prompts are emptied (an interactive
# shell prints them to stderr), history is off so nothing is written to ~/.bash_history,
# and `!` is not special in the shell's own input lines.
INIT = (
    "PS1=; PS2=; PS0=; unset PROMPT_COMMAND MAILCHECK HISTFILE; "
    "set +o history +o histexpand"
)


# --- frames on fd 3 ---------------------------------------------------------------------

class Channel:
    """Length-prefixed JSON frames over the control socket."""

    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)
        self.buf = b""

    def fileno(self):
        return self.sock.fileno()

    def send(self, obj):
        # "replace": lone surrogates become "?" rather than escapes strict parsers reject.
        data = json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace")
        try:
            self.sock.sendall(struct.pack("<I", len(data)) + data)
        except OSError:
            raise DaemonGone() from None

    def read_some(self):
        """Read what the socket has (one recv); False at EOF."""
        try:
            chunk = self.sock.recv(1 << 16)
        except OSError:
            return False
        self.buf += chunk
        return bool(chunk)

    def take(self):
        """The next complete frame in the buffer, or None."""
        if len(self.buf) < 4:
            return None
        (n,) = struct.unpack("<I", self.buf[:4])
        if n > FRAME_MAX:
            fatal("control frame of %d bytes is over the limit" % n)
        if len(self.buf) < 4 + n:
            return None
        frame, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        try:
            msg = json.loads(frame)
        except ValueError as e:
            fatal("bad JSON on fd 3: %s" % e)
        op = msg.get("op") if isinstance(msg, dict) else None
        if op not in ("exec", "interrupt", "reset") or (
                op == "exec" and not isinstance(msg.get("code"), str)):
            fatal("unexpected frame on fd 3: %.200s" % frame.decode("utf-8", "replace"))
        return msg


class DaemonGone(Exception):
    """The control socket is closed: time to go."""


class Fatal(Exception):
    """Something the kernel cannot go on after (a protocol error, no bash)."""


def fatal(why):
    raise Fatal(why)


# --- the shell ----------------------------------------------------------------------------

class ShellDied(Exception):
    """The shell exited (or could not be written to); .code is its exit status."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


class Shell:
    """One `bash -i` in its own process group, fed command lines on a pipe."""

    def __init__(self, home, private):
        self.home = home
        self.cell = os.path.join(private, "cell")
        self.fifo = os.path.join(private, "status")
        self.seq = 0
        self.pending = b""  # status text read but not yet a whole line
        self.version = ""
        self.proc = None
        self._start()

    # start / stop

    def _start(self):
        # The shell's stderr is /dev/null until INIT, so its start-up notices do not reach
        # the daemon; the real stderr waits on a spare fd and is moved to 2 by the first line.
        err = os.dup(2)
        try:
            self.proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc", "--noediting", "-i"],
                stdin=subprocess.PIPE, stdout=None, stderr=subprocess.DEVNULL, bufsize=0,
                pass_fds=(err,), cwd=self.home, process_group=0)
        finally:
            os.close(err)
        self.pidfd = open_pidfd(self.proc.pid)
        self.status_fd = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK)
        self.pending = b""
        try:
            # The first status line doubles as the handshake and carries the version.
            self._write("exec 2>&%d %d>&-; %s\n\\builtin echo 0 \"$BASH_VERSION\" >%s\n"
                        % (err, err, INIT, shlex.quote(self.fifo)))
            what, version = self.wait_status(0, time.monotonic() + START_TIMEOUT)
        except ShellDied as e:
            self.stop()
            fatal("bash exited while starting (status %d)" % e.code)
        if what != "status":
            self.stop()
            fatal("bash did not start in %d s" % START_TIMEOUT)
        self.version = version

    def stop(self):
        """Kill the shell and everything in its process group (its background jobs)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        os.close(self.status_fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.proc = None

    def restart(self):
        self.stop()
        self._start()

    # talking to it

    def _write(self, text):
        """Write TEXT (a few short lines) in one go: bash reads its input a byte at a time,
        and may be gone by the time a second write would come."""
        data = text.encode()
        try:
            while data:
                data = data[self.proc.stdin.write(data):]
        except BrokenPipeError:
            raise ShellDied(self.exit_code()) from None

    def start_call(self, code):
        """Hand CODE to the shell; returns the call's number for wait_status."""
        if self.proc.poll() is not None:
            raise ShellDied(self.exit_code())
        with open(self.cell, "w", encoding="utf-8", errors="replace") as f:
            f.write(code)
        self.seq += 1
        # Two lines: SIGINT abandons the first, and the second still reports $? (130).
        # `\builtin` escapes the user's aliases and functions; `< /dev/null` keeps the code
        # away from our command pipe.
        self._write("\\builtin source %s </dev/null\n%s"
                    % (shlex.quote(self.cell), self._status_line()))
        return self.seq

    def probe(self):
        """Send the status line of the current call again."""
        self._write(self._status_line())

    def _status_line(self):
        # The braces' 2>/dev/null keeps a user's `set -x` from tracing this line.
        return "{ \\builtin echo %d $? >%s; } 2>/dev/null\n" % (self.seq, shlex.quote(self.fifo))

    def interrupt(self):
        # bash is the leader of its group; without job control its foreground commands
        # are in the group too, and its background jobs ignore SIGINT.
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def exit_code(self):
        """The exit status of a dead shell, shell-style (128 + signal)."""
        rc = self.proc.wait()
        return 128 - rc if rc < 0 else rc

    def wait_status(self, seq, deadline, other=None):
        """Wait for the status line of call SEQ.

        Returns ("status", text after the number), ("input", None) when OTHER (something
        with a fileno) turns readable, or ("timeout", None) at DEADLINE. Raises ShellDied if
        the shell exits first. Lines of other calls (late answers to a probe) are skipped.
        """
        while True:
            rest = self._find_line(seq)
            if rest is not None:
                return "status", rest
            now = time.monotonic()
            if now >= deadline:
                return "timeout", None
            watch = [self.status_fd] + ([other] if other is not None else [])
            if self.pidfd is not None:
                watch.append(self.pidfd)
            # Without a pidfd, wake up now and then to look for a dead shell.
            timeout = deadline - now if self.pidfd is not None else min(deadline - now, 0.2)
            ready, _, _ = select.select(watch, [], [], timeout)
            if self.status_fd in ready:
                continue  # read it before looking at the shell: it may have said goodbye
            if self.proc.poll() is not None:
                rest = self._find_line(seq)
                if rest is not None:
                    return "status", rest
                raise ShellDied(self.exit_code())
            if other is not None and other in ready:
                return "input", None

    def _find_line(self, seq):
        for line in self._take_lines():
            num, _, rest = line.partition(" ")
            if num == str(seq):
                return rest
        return None

    def _take_lines(self):
        while True:
            try:
                chunk = os.read(self.status_fd, 4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        return [l.decode(errors="replace") for l in lines]


def open_pidfd(pid):
    """A pidfd that turns readable when PID exits, or None (then we poll)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


# --- the kernel ---------------------------------------------------------------------------

class Kernel:
    def __init__(self, chan, private):
        self.chan = chan
        self.home = os.getcwd()
        self.private = private
        self.shell = Shell(self.home, private)
        self.queued = []  # frames that came while a call ran (only interrupt belongs there)

    def serve(self):
        self.chan.send({"type": "ready", "language": "bash", "version": self.shell.version})
        while True:
            msg = self.queued.pop(0) if self.queued else self._next_frame()
            if msg is None:
                return
            op = msg.get("op")
            if op == "exec":
                self.exec(msg.get("id"), msg["code"])
            elif op == "reset":
                self.shell.restart()
                self.chan.send({"type": "done", "id": None, "status": "ok"})
            # an interrupt between calls has nothing to stop

    def _next_frame(self):
        """Block for the next frame; None at EOF."""
        while True:
            msg = self.chan.take()
            if msg is not None:
                return msg
            if not self.chan.read_some():
                return None

    def exec(self, cid, code):
        notes = []
        try:
            seq = self.shell.start_call(code)
        except ShellDied as e:
            # It died between calls (killed from outside?): say so, run on a fresh one.
            notes.append(self._replace_shell(e.code, "before this call"))
            seq = self.shell.start_call(code)
        status, exit_code, note = self._wait(seq)
        if note:
            notes.append(note)
        self._done(cid, status, exit_code, notes)

    def _wait(self, seq):
        """Wait for the end of call SEQ, serving interrupts: (status, exit code, note)."""
        interrupted_at = None  # when we sent SIGINT
        probed = False
        while True:
            if self._take_interrupts() and interrupted_at is None:
                interrupted_at = time.monotonic()
                self.shell.interrupt()
            if interrupted_at is None:
                deadline = time.monotonic() + 3600
            else:
                deadline = interrupted_at + (KILL_AFTER if probed else PROBE_AFTER)
            try:
                what, rest = self.shell.wait_status(seq, deadline, other=self.chan)
                if what == "timeout" and interrupted_at is not None and not probed:
                    # SIGINT may have hit the status line itself: ask again.
                    probed = True
                    self.shell.probe()
                    continue
            except ShellDied as e:
                note = self._replace_shell(e.code, "during this call")
                if interrupted_at is not None:
                    return "interrupted", None, note
                return ("ok" if e.code == 0 else "error"), e.code, note
            if what == "status":
                code = int(rest) if rest.strip().isdigit() else 1
                # A call that ended well just before the signal took effect still is "ok".
                if interrupted_at is not None and code != 0:
                    return "interrupted", None, None
                return ("ok" if code == 0 else "error"), code, None
            if what == "input":
                if not self.chan.read_some():
                    raise DaemonGone()
            elif interrupted_at is not None:  # no answer, even to the probe
                note = self._replace_shell(None, "after the interrupt")
                return "interrupted", None, note

    def _take_interrupts(self):
        """Consume the buffered frames; True if one was an interrupt (others wait)."""
        seen = False
        while (msg := self.chan.take()) is not None:
            if msg.get("op") == "interrupt":
                seen = True
            else:
                self.queued.append(msg)
        return seen

    def _replace_shell(self, code, when):
        if code is None:
            why = "the shell did not stop on SIGINT and was killed"
        else:
            why = "shell exited (status %d) %s" % (code, when)
        note = "%s; a new shell was started in %s, state was lost" % (why, self.home)
        self.shell.restart()
        # The daemon keeps only status/value/error/exit_code of done: say it on stderr too.
        os.write(2, ("hutch: %s\n" % note).encode())
        return note

    def _done(self, cid, status, exit_code, notes):
        frame = {"type": "done", "id": cid, "status": status, "value": None, "error": None}
        if exit_code is not None:
            frame["exit_code"] = exit_code
        if notes:
            frame["note"] = "; ".join(notes)
        self.chan.send(frame)



def main():
    # The code and the status FIFO live in a private (0700) directory, outside the workspace
    # when /tmp can be used, and hidden from a plain `ls /tmp`.
    tmp = "/tmp" if os.access("/tmp", os.W_OK) else None
    private = tempfile.mkdtemp(prefix=".hutch-bash.", dir=tmp)
    os.mkfifo(os.path.join(private, "status"), 0o600)
    kernel = None
    status = 0
    try:
        kernel = Kernel(Channel(CTL_FD), private)
        kernel.serve()
    except DaemonGone:
        pass
    except Fatal as e:
        os.write(2, ("hutch bash kernel: %s\n" % e).encode("utf-8", "replace"))
        status = 2
    finally:
        if kernel is not None:
            kernel.shell.stop()
        shutil.rmtree(private, ignore_errors=True)
    sys.exit(status)


main()

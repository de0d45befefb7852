"""hutch session kernel for Python (docs/kernels.md).

Runs inside a cell as `/usr/bin/python3 -I -c <this source>`. fd 3 is the control socket
(frames: u32 little-endian length + one UTF-8 JSON object); fd 1 and fd 2 are the calls'
stdout and stderr.

Three threads: the main thread runs user code (Python runs signal handlers there, so an
interrupt becomes KeyboardInterrupt in user code); a reader thread owns reads on fd 3 and
turns {"op":"interrupt"} into a SIGINT; a writer thread owns writes on fd 3, so an
interrupt can never cut a frame in half.
"""
import ast
import base64
import builtins
import importlib.machinery
import io
import json
import linecache
import os
import platform
import queue
import signal
import socket
import struct
import sys
import tempfile
import threading
import traceback
import types

MAX_FRAME = 64 << 20  # the daemon treats bigger frames as a protocol error
CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect
KERNEL_GLOBALS = globals()  # frames running with these globals are ours, not the user's

# Before anything can import matplotlib: a headless backend (the variable also reaches
# subprocesses) and a writable config dir that is not the workspace.
os.environ["MPLBACKEND"] = "Agg"
if "MPLCONFIGDIR" not in os.environ:
    try:
        os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="hutch-matplotlib-")
    except OSError:
        pass  # matplotlib falls back to a directory of its own choosing

state = types.SimpleNamespace(
    running=False,  # True while user code may run: only then does an interrupt raise
    call_id=None,
    cells=0,  # numbers the "<cell-N>" file names; never reset, so linecache keys stay unique
    loop=None,  # the asyncio loop of top-level await, created on first use
    ns=None,
)
ctl = socket.socket(fileno=3)
ctl.set_inheritable(False)  # user subprocesses must not write frames of their own
inbox = queue.Queue()  # exec and reset requests, for the main thread
outbox = queue.Queue()  # encoded frames, for the writer thread
MAIN_THREAD = threading.main_thread().ident
STDOUT, STDERR = sys.stdout, sys.stderr


# ---- control channel ---------------------------------------------------------------


def die(why):
    os.write(2, ("hutch python kernel: %s\n" % why).encode("utf-8", "replace"))
    os._exit(2)


def read_exact(n):
    """n bytes from fd 3, or fewer if the daemon closed it."""
    chunks, got = [], 0
    while got < n:
        try:
            chunk = ctl.recv(min(n - got, 1 << 20))
        except OSError:
            chunk = b""
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def reader():
    try:
        while True:
            head = read_exact(4)
            if not head:
                os._exit(0)  # the daemon closed the channel: leave quietly
            if len(head) < 4:
                die("truncated frame header on fd 3")
            (n,) = struct.unpack("<I", head)
            if n > MAX_FRAME:
                die("frame of %d bytes on fd 3 is over the limit" % n)
            body = read_exact(n)
            if len(body) < n:
                die("truncated frame on fd 3")
            try:
                msg = json.loads(body)
            except ValueError as e:
                die("bad JSON on fd 3: %s" % e)
            op = msg.get("op") if isinstance(msg, dict) else None
            if op == "interrupt":
                # Only a running call is interrupted; an interrupt that raced with the end
                # of its call is dropped here or, if already sent, by on_sigint.
                if state.running:
                    signal.pthread_kill(MAIN_THREAD, signal.SIGINT)
            elif op == "reset" or (op == "exec" and isinstance(msg.get("code"), str)):
                inbox.put(msg)
            else:
                die("unexpected frame on fd 3: %.200s" % body.decode("utf-8", "replace"))
    except Exception as e:  # a bug here would otherwise leave a kernel that never answers
        die("reader failed: %r" % e)


def writer():
    while True:
        data = outbox.get()
        try:
            ctl.sendall(data)
        except OSError:
            os._exit(0)  # the daemon is gone


def send(frame):
    # ensure_ascii=False and "replace": lone surrogates become "?" instead of \ud800
    # escapes, which strict JSON parsers reject.
    data = json.dumps(frame, ensure_ascii=False).encode("utf-8", "replace")
    if len(data) > MAX_FRAME:
        note = {"text/plain": "<output dropped: %d bytes is over the frame limit>" % len(data)}
        frame = dict(frame, **{k: note for k in ("data", "value") if frame.get(k)})
        if frame.get("error"):
            frame["error"] = {k: v[:1 << 20] for k, v in frame["error"].items()}
        data = json.dumps(frame, ensure_ascii=False).encode("utf-8", "replace")
    outbox.put(struct.pack("<I", len(data)) + data)


def flush():
    for stream in (sys.stdout, sys.stderr, STDOUT, STDERR):
        try:
            stream.flush()
        except Exception:
            pass


# ---- rich output ---------------------------------------------------------------------

REPR_METHODS = (
    ("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"), ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
)


def attempt(fn, *args, **kwargs):
    """fn(*args, **kwargs), or None if it fails: a broken _repr_*_ must not lose the value."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        print("hutch: %s failed (output format skipped):" % getattr(fn, "__name__", fn),
              file=sys.stderr)
        traceback.print_exc()
        return None


def rich(obj, name, **kwargs):
    """obj.name(**kwargs) if obj has such a method, else None."""
    method = attempt(getattr, obj, name, None)
    return attempt(method, **kwargs) if callable(method) else None


def encode(mime, value):
    """One bundle entry as JSON: text as str, binary as base64, JSON as itself."""
    if isinstance(value, tuple) and len(value) == 2:
        value = value[0]  # (data, metadata), as IPython allows
    if isinstance(value, (bytes, bytearray)):
        if mime.startswith("text/"):
            return bytes(value).decode("utf-8", "replace")
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, str):
        return value
    if value is not None and mime.endswith("json") and attempt(json.dumps, value):
        return value
    return None


def figure_png(obj):
    figure = sys.modules.get("matplotlib.figure")
    if figure is None or not isinstance(obj, figure.Figure):
        return None
    buf = io.BytesIO()
    obj.savefig(buf, format="png", bbox_inches="tight")
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(obj)  # shown once: the end-of-call sweep must not send it again
    return buf.getvalue()


def bundle(obj):
    data = {}
    if not isinstance(obj, type):  # a class has the _repr_*_ methods, but unbound
        raw = rich(obj, "_repr_mimebundle_", include=None, exclude=None)
        if isinstance(raw, tuple):
            raw = raw[0]  # (data, metadata)
        for mime, value in (raw.items() if isinstance(raw, dict) else ()):
            value = encode(mime, value) if isinstance(mime, str) else None
            if value is not None:
                data[mime] = value
        for mime, name in REPR_METHODS:
            value = encode(mime, rich(obj, name)) if mime not in data else None
            if value is not None:
                data[mime] = value
        png = attempt(figure_png, obj)
        if png:
            data["image/png"] = encode("image/png", png)
    if "text/plain" not in data:
        data["text/plain"] = repr(obj)  # like the REPL, a failing repr() fails the call
    return data


def display(*objs):
    """Show each object as a rich output of the current call (like IPython's display)."""
    for obj in objs:
        data = bundle(obj)
        if state.running:  # from a thread that outlived its call: nowhere to send it
            flush()
            send({"type": "display", "id": state.call_id, "data": data})


def show_figures(*args, **kwargs):
    """plt.show(), also run at the end of every call (as Jupyter's inline backend does):
    send each open figure as a display frame and close it."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    try:
        for num in pyplot.get_fignums():
            display(pyplot.figure(num))
    finally:
        pyplot.close("all")


class PyplotHook:
    """Import hook: patch plt.show right after matplotlib.pyplot is first imported, which
    may be in the middle of a call."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None  # let the import go on as if we were not here
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.show = show_figures

        spec.loader.exec_module = exec_module  # this loader instance serves this module only
        return spec


# ---- running a call ------------------------------------------------------------------


def fresh_namespace():
    """A new __main__ module (so pickle and multiprocessing find user classes) holding only
    what the user should see."""
    main = types.ModuleType("__main__")
    for name in ("__doc__", "__package__", "__loader__", "__spec__"):
        del main.__dict__[name]
    main.__dict__.update(__builtins__=builtins, display=display)
    sys.modules["__main__"] = main
    return main.__dict__


def compile_cell(code):
    """Code objects for a cell, REPL style: (statements, final expression or None)."""
    state.cells += 1
    name = "<cell-%d>" % state.cells
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)  # for tracebacks
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        tree = ast.parse(code, name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        return compile(tree, name, "exec", flags), last and compile(last, name, "eval", flags)
    except SyntaxError as e:
        if e.text is None and e.filename == name and e.lineno:  # errors found after parsing
            e.text = linecache.getline(name, e.lineno)
        raise


def run(code):
    result = eval(code, state.ns)
    if code.co_flags & CO_COROUTINE:  # top-level await: the result is the coroutine
        result = run_coroutine(result)
    return result


def run_coroutine(coro):
    import asyncio

    if state.loop is None or state.loop.is_closed():
        state.loop = asyncio.new_event_loop()
    task = state.loop.create_task(coro)
    try:
        return state.loop.run_until_complete(task)
    except BaseException:
        # An interrupted cell must not wake up inside a later one: cancel it and let it
        # unwind now.
        task.cancel()
        try:
            state.loop.run_until_complete(task)
        except BaseException:
            pass
        raise


def user_traceback(tb):
    """tb from the first cell frame on, without the kernel's frames (e.g. on_sigint's)."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    cells = [i for i, t in enumerate(entries)
             if t.tb_frame.f_code.co_filename.startswith("<cell-")]
    entries = entries[cells[0]:] if cells else []
    trimmed = None
    for t in reversed(entries):
        if t.tb_frame.f_globals is not KERNEL_GLOBALS:
            trimmed = types.TracebackType(trimmed, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return trimmed


def describe(exc):
    """The done frame's error; the traceback also goes to stderr, as in the REPL."""
    try:
        tb = user_traceback(exc.__traceback__)
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except Exception:
        text = "%s\n" % type(exc).__name__
    try:
        message = str(exc)
    except Exception:
        message = "<str() failed>"
    try:
        sys.stderr.write(text)
    except Exception:
        pass
    return {"type": type(exc).__name__, "message": message, "traceback": text}


def on_sigint(signum, frame):
    # Between calls (an interrupt that raced with the end of its call) there is nothing to
    # interrupt, and a KeyboardInterrupt in the kernel's own code could lose a frame.
    if state.running:
        raise KeyboardInterrupt


def call(msg):
    state.call_id = msg.get("id")
    status, value, error = "ok", None, None
    try:
        state.running = True  # from here on, an interrupt raises KeyboardInterrupt
        try:
            body, last = compile_cell(msg["code"])
            run(body)
            result = run(last) if last else None
            value = None if result is None else bundle(result)
        finally:
            try:
                show_figures()
            finally:
                state.running = False
    except BaseException as exc:  # SystemExit too: user code does not end the kernel
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
        error = describe(exc)
    flush()
    send({"type": "done", "id": state.call_id, "status": status, "value": value, "error": error})


def reset():
    state.ns = fresh_namespace()
    sys.stdout, sys.stderr = STDOUT, STDERR


def main():
    signal.signal(signal.SIGINT, on_sigint)
    for stream in (STDOUT, STDERR):
        stream.reconfigure(line_buffering=True)  # pipes are block-buffered by default
    sys.meta_path.insert(0, PyplotHook)
    state.ns = fresh_namespace()
    sys.path.insert(0, "")  # like the REPL: modules in the cwd (/workspace) are importable
    threading.Thread(target=reader, name="hutch-reader", daemon=True).start()
    threading.Thread(target=writer, name="hutch-writer", daemon=True).start()
    send({"type": "ready", "language": "python", "version": platform.python_version()})
    while True:
        try:
            msg = inbox.get()
            if msg["op"] == "exec":
                call(msg)
            else:
                reset()
                send({"type": "done", "id": None, "status": "ok"})
        except KeyboardInterrupt:
            pass  # only from a SIGINT handler the user installed; the kernel lives on


main()

# The fast path's Python runner: loaded once into the zygote's embedded
# interpreter (src/zygote/python.c); every forked cell calls _hutch_exec for
# its one request. Not a module of its own: its names live in a private
# globals dict, never in the program's __main__.
#
# _hutch_exec runs one program the way `python3 PATH ARGS` would: __main__
# module, sys.argv, the script's directory first on sys.path, the uncaught
# exception printed by sys.excepthook (without our frame), SystemExit codes,
# non-daemon threads joined and atexit run.
#
# _hutch_warm runs the same steps on a sample program, without the exit
# steps, and puts back what it changed. Called once in the zygote (what it
# compiles and caches is then shared by every fork) and once in each new
# cell at pool time, so the copy-on-write faults of a first run are taken
# then, in the background, not on a request's path.
import atexit
import builtins
import os
import sys
import types


def _exit_code(e):
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        print(c, file=sys.stderr)
    except Exception:
        pass
    return 1


def _enter(path, argv, env):
    os.environ.clear()
    for kv in env:
        k, _, v = kv.partition("=")
        os.environ[k] = v
    sys.argv = [path] + list(argv)
    sys.path.insert(0, os.path.dirname(path))
    # Forks share the zygote's RNG state: reseed from the kernel.
    import random

    random.seed()
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        npr.seed()
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    return main


def _run(main, path, src=None):
    try:
        if src is None:
            with open(path, "rb") as f:
                src = f.read()
        exec(compile(src, path, "exec"), main.__dict__)
    except SystemExit as e:
        return _exit_code(e)
    except BaseException as e:
        # drop our own frame: the report reads as python3's would
        tb = e.__traceback__.tb_next if e.__traceback__ else None
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    return 0


def _hutch_exec(path, argv, env):
    rc = _run(_enter(path, argv, env), path)
    try:
        t = sys.modules.get("threading")
        if t is not None:
            t._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as e:
        rc = _exit_code(e)
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    return rc


_WARM_SOURCE = (
    "import json, re, random\n"
    "x = [i * 2 for i in range(50)]\n"
    "y = sum(x)\n"
    "z = str(y) + repr(x[:3]) + f'{y:>8}'\n"
    "d = {'a': [1, 2.5, 'x'], 'b': None}\n"
    "json.loads(json.dumps(d)); re.findall(r'\\d+', 'a1b22'); random.random()\n"
    "def f(a, *args, **kw):\n"
    "    return a, args, kw\n"
    "class C:\n"
    "    pass\n"
    "f(1, 2, k=3); C()\n"
)


def _hutch_warm():
    saved = (dict(os.environ), list(sys.argv), list(sys.path), sys.modules.get("__main__"))
    try:
        path = "/workspace/main.py"
        main = _enter(path, [], ["PATH=/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8"])
        _run(main, os.devnull)  # the file-reading path, on an empty file
        _run(main, path, _WARM_SOURCE.encode())
        for s in (sys.stdout, sys.stderr):
            s.write("")
            s.flush()
    finally:
        os.environ.clear()
        os.environ.update(saved[0])
        sys.argv[:] = saved[1]
        sys.path[:] = saved[2]
        if saved[3] is not None:
            sys.modules["__main__"] = saved[3]

"""The "ProcessSandbox" pattern, timed from a long-lived Python parent.

Each run: a fresh temporary directory as the working directory, a minimal environment,
rlimits set in the child by preexec_fn (address space, CPU time, file size, processes),
subprocess.run(..., capture_output=True, timeout=...). This is the common "sandbox" of
agent frameworks that do not isolate with namespaces.

usage: /usr/bin/python3 bench/procsandbox.py N WARMUP OUT EXPECT CODE
OUT gets one line per measured run in bench-client's format:
    ok total_us -1 -1 -1 -1 -
"""

import resource
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"
MEMORY = 512 << 20
CPU_SECONDS = 30
FILE_BYTES = 1 << 30
PROCS = 128


def set_limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_NPROC, (PROCS, PROCS))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_once(code):
    with tempfile.TemporaryDirectory(prefix="sandbox-") as work:
        env = {"PATH": "/usr/bin:/bin", "HOME": work, "LANG": "C.UTF-8", "TMPDIR": work}
        return subprocess.run(
            [PYTHON, "-c", code],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            preexec_fn=set_limits,
            check=False,
        )


def main():
    n, warmup, out_path, expect, code = sys.argv[1:6]
    n, warmup = int(n), int(warmup)
    want = (expect + "\n").encode()
    failures = 0
    with open(out_path, "w", encoding="ascii") as out:
        for i in range(warmup + n):
            t0 = time.perf_counter_ns()
            proc = run_once(code)
            us = (time.perf_counter_ns() - t0) // 1000
            ok = proc.returncode == 0 and proc.stdout == want
            if not ok:
                failures += 1
                if failures <= 5:
                    print(f"procsandbox: run {i} failed: exit {proc.returncode}, "
                          f"stdout {proc.stdout[:200]!r}, stderr {proc.stderr[:200]!r}",
                          file=sys.stderr)
            if i >= warmup:
                out.write(f"{int(ok)} {us} -1 -1 -1 -1 -\n")


if __name__ == "__main__":
    main()

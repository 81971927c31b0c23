"""Run a command as a child process and report its wall time and peak resident memory (ru_maxrss)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass


@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    stdout: str
    stdout_lines: int = 0


def measure(cmd: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
            keep_stdout: bool = True) -> Run:
    """Wall time and peak RSS of ``cmd``, from the kernel's accounting of that one child. Its output goes to
    a temporary file; with ``keep_stdout=False`` it is only counted (``Run.stdout`` is empty, its lines in
    ``stdout_lines``): a large output held here would inflate the peak RSS the kernel reports for the children
    forked after."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        if keep_stdout:
            text = out.read().decode()
            return Run(elapsed, usage.ru_maxrss / 1024, text, text.count("\n"))
        lines = sum(block.count(b"\n") for block in iter(lambda: out.read(1 << 24), b""))
        return Run(elapsed, usage.ru_maxrss / 1024, "", lines)

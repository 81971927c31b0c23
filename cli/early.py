"""Ingest started before the command line is parsed: ``flows`` and ``score`` of a capture file begin reading it on
a helper thread while the main thread imports the command line (typer, the commands) and, for ``score``, replay
and scoring.

Why: on a large capture the kernels compiled ahead of time (``jitcache.aot``) decode and analyse with the GIL let
go, so a thread that ingests while another imports uses the second core, which the imports alone leave idle. The
main thread then takes the capture the helper read (:func:`take`) where it would have called ``ingest_capture``.

Only a plain command line is read ahead, and only when its result cannot differ from the command's own call: the
first word ``flows`` or ``score``, then capture files (regular files, not ``-`` or a pipe) and options among
:data:`FLAGS` (or :data:`VALUED`, with their value) that do not change ingest; for ``score``, stderr not a terminal
(on a terminal its progress bar follows ingest). Ingest then runs with the default memory budget, as the command
will call it, and only with the kernels compiled ahead of time (``cli.kernel_choice`` chooses them for every command
that reads a capture where they are built; the helper makes that choice before any kernel module is imported, the
same choice the command would make, and the command's own call waits for it). Anything else — another command or
option, the captures after the first, JIT or plain-Python kernels — is read by the command itself as before. An
error the helper met (a bad capture) is raised by :func:`take` in the command, where the command's own call would
have raised it.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ackreplay.ingest import CaptureIngest

#: Options, per command, that take no value and do not change what ingest reads.
FLAGS = {
    "flows": frozenset({"--json"}),
    "score": frozenset({"--no-sidecar", "--allow-vantage", "--all-flows", "--legend", "--no-legend",
                        "--rank-not-reproducible", "--include-incomparable"}),
}
#: Options, per command, followed by a value, that do not change what ingest reads (the flows kept are chosen
#: after it).
VALUED = {
    "flows": frozenset({"-F", "--filter"}),
    "score": frozenset({"-f", "--format", "-e", "--estimators", "-p", "--param", "--truth", "-o", "--out", "--flow",
                        "--host", "--port", "-F", "--filter"}),
}


class _Early:
    """One capture read ahead on a helper thread: its path, memory budget, and then its ingest or error."""

    def __init__(self, path: Path, memory_budget: int, quiet_numpy: bool) -> None:
        self.path = path
        self.memory_budget = memory_budget
        self.quiet_numpy = quiet_numpy
        self.result: CaptureIngest | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="ackreplay-early-ingest", daemon=True)

    def _run(self) -> None:
        try:
            from ackreplay.cli.kernel_choice import choose_kernels
            from ackreplay.jitcache import kernel_mode

            choose_kernels([self.path])
            if not kernel_mode.ahead_of_time():  # the command ingests itself (JIT: it may announce compiling first)
                return
            import numpy as np

            from ackreplay.ingest.capture import ingest_capture
        except Exception:  # (not expected) the command makes its choice and imports again, and meets it there
            return
        try:
            # ``score`` ingests under np.errstate(all="ignore") (``cli.score_cmd.score_input``); it is per thread
            with np.errstate(all="ignore") if self.quiet_numpy else np.errstate():
                self.result = ingest_capture(self.path, memory_budget=self.memory_budget)
        except BaseException as exc:  # raised again in the command, by take()
            self.error = exc


_early: _Early | None = None


def plan(argv: list[str]) -> tuple[str, Path] | None:
    """The command and the capture to read ahead for the arguments ``argv`` (after the program's name), or None."""
    if len(argv) < 2 or argv[0] not in FLAGS:
        return None
    command, flags, valued = argv[0], FLAGS[argv[0]], VALUED[argv[0]]
    files: list[str] = []
    words = iter(argv[1:])
    for word in words:
        if word in valued:
            if next(words, None) is None:
                return None
        elif word in flags:
            continue
        elif word.startswith("-"):
            return None
        else:
            files.append(word)
    if not files:
        return None
    try:
        if not stat.S_ISREG(os.stat(files[0]).st_mode):
            return None
    except OSError:
        return None
    return command, Path(files[0])


def start(argv: list[str]) -> None:
    """Start reading the capture ahead when ``argv`` (the command line after the program's name) allows it (see the
    module). Only the command-line process calls this (``cli.main.main``), after ``kernel_choice.enable``."""
    global _early
    planned = plan(argv) if _early is None else None
    if planned is None or (planned[0] == "score" and (sys.stderr is None or sys.stderr.isatty())):
        return  # (score on a terminal draws its progress bar as it ingests)
    from ackreplay.ingest.budget import DEFAULT_MEMORY_BUDGET

    command, path = planned
    _early = _Early(path, DEFAULT_MEMORY_BUDGET, quiet_numpy=command == "score")
    _early.thread.start()


def take(path: Path, memory_budget: int | None) -> CaptureIngest | None:
    """The ingest of ``path`` read ahead with ``memory_budget`` (bytes), once, or None (not read ahead: the caller
    ingests it). An error met reading it ahead is raised here."""
    global _early
    early = _early
    if early is None or early.memory_budget != memory_budget or not _same_file(early.path, path):
        return None
    early.thread.join()
    _early = None
    if early.error is not None:
        raise early.error
    return early.result


def finish() -> None:
    """Wait for a capture still being read ahead that the command did not take (it failed before)."""
    global _early
    if _early is not None:
        _early.thread.join()
        _early = None


def _same_file(a: Path, b: Any) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, TypeError):
        return False

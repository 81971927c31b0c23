"""Capture arguments as the shell gives them: a file, ``-`` for standard input, or a pipe or device
(``/dev/stdin``, ``<(zcat …)``) that cannot be read twice or sought.

Ingest reads a regular file (it seeks, reads ahead and may re-open it), so a stream is first copied to a
temporary file in ``$TMPDIR``, which is removed as soon as the capture has been processed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, BinaryIO

import typer

from ackreplay.ingest.budget import DEFAULT_MEMORY_BUDGET

STDIN = "-"
#: ``--filter``: a pcap-filter expression selecting connections (``ingest.flowfilter``).
FilterOption = Annotated[str | None, typer.Option(
    "--filter", "-F", metavar="EXPR", help="Keep only connections matching this pcap-filter expression "
    "(tcpdump syntax: host, net, port, portrange, src/dst, ip/ip6/tcp, and/or/not), e.g. 'port 5201 and net "
    "10.0.0.0/8'.")]
#: ``--estimators``: names and group words (``estimators.GROUPS``).
ESTIMATORS_HELP = ("Comma-separated estimators, or group words: highspeed (newreno, stcp, hstcp, htcp, westwood_plus, "
                   "bic, cubic: the controls Mascolo & Vacirca, PFLDnet 2006, compare; docs/controls.md), all "
                   "(every estimator), default (be, re, crb, abse, tibet, tibet_tx, newbr, "
                   "westwood_plus, bbr_bw, newreno: what runs when none is named).")
#: ``--memory-budget`` (MB), of every command that reads captures.
MemoryBudget = Annotated[int, typer.Option(
    "--memory-budget", min=1, metavar="MB",
    help="Working-set budget of one capture's ingest and replay; a larger capture spills packet columns and "
         "tables to temporary files ($TMPDIR) and is analysed in connection groups, and replay runs no more "
         "estimators side by side than fit.")]
DEFAULT_MEMORY_BUDGET_MB = DEFAULT_MEMORY_BUDGET >> 20
CHUNK = 1 << 20


def is_stream(path: Path) -> bool:
    """``-``, or a path that exists but is not a regular file (a FIFO, a character device, a socket)."""
    if str(path) == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # ingest reports the missing file with its own code
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def label(path: Path) -> str:
    """How a capture argument is named in messages and documents (``stdin`` for ``-``)."""
    return "stdin" if str(path) == STDIN else str(path)


def _source(path: Path) -> BinaryIO:
    if str(path) == STDIN:
        if sys.stdin is None or sys.stdin.isatty():
            raise OSError("no capture on standard input (pipe one in: tcpdump -w - | ackreplay score -)")
        return sys.stdin.buffer
    return open(path, "rb")


@contextlib.contextmanager
def regular_file(path: Path) -> Iterator[Path]:
    """A regular file holding the capture named by ``path``: the file itself, or a temporary copy of a stream."""
    if not is_stream(path):
        yield path
        return
    with contextlib.ExitStack() as stack:
        src = _source(path)
        if src is not sys.stdin.buffer:
            stack.callback(src.close)
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ackreplay-stdin-")))
        target = tmp / ("stdin" if str(path) == STDIN else path.name or "stream")
        with open(target, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
        yield target

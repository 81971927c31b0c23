"""Compiled kernels or plain Python for this command: chosen before any kernel loads.

A command that reads captures (``flows``, ``acks``, ``score``, ``graph``, ``report``, ``compare``) calls
:func:`choose_kernels` with its inputs first. Where the extension of kernels compiled ahead of time from the current
sources is built (``jitcache.aot``, ``ackreplay warmup --ahead-of-time``), the kernels come from it, whatever the
size: numba is not imported, and loading the extension costs less than even plain Python's kernels on a 600-packet
capture (``score`` 0.27 against 0.31 s, ``flows`` 0.21 against 0.23 s, measured). Without it, when the inputs hold
at most :data:`PLAIN_MAX_PACKETS` packet records in all, the kernels run as plain Python (``jitcache.kernel_mode``):
numba is not imported and no compiled kernel is loaded, which on such a capture costs more than the kernels' work
itself; anything else — a larger capture, standard input, a file that cannot be counted — runs numba's JIT kernels.
``ACKREPLAY_KERNELS=plain|compiled|aot`` in the environment overrides the choice. The results are the same every
way (``tests/test_plain_kernels.py``, ``tests/test_aot.py``).

Only the command-line process chooses (``cli.main.main`` calls :func:`enable`): a process that runs commands
in-process (a test calling ``app()``, a notebook) keeps compiled kernels, so that kernels it imports later are not
plain Python because one command read a small capture.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ackreplay.jitcache import kernel_mode

#: The most packet records (all inputs together) run as plain Python. On 600 packets (``cli/data/warmup.pcap``)
#: plain Python spends ~0.05 s in the kernels for ``score``, compiled code ~0.3 s loading numba and its
#: cached kernels; plain Python's cost grows with the packets, compiled code's hardly.
PLAIN_MAX_PACKETS = 2000
#: The most bytes read to count them (a capture this size holds more records unless they are large).
PLAIN_MAX_BYTES = PLAIN_MAX_PACKETS * 1600

_enabled = False


def enable() -> None:
    """This process is the command line: its command chooses how to run the kernels."""
    global _enabled
    _enabled = True


def choose_kernels(files: Iterable[Path]) -> None:
    """Run this process's kernels from the ahead-of-time extension where it is built, else as plain Python if
    ``files`` hold few enough packets (see the module)."""
    if not _enabled or kernel_mode.chosen_by_environment() or kernel_mode.plain_python() \
            or kernel_mode.ahead_of_time():
        return
    if not kernel_mode.use_ahead_of_time() and few_packets(files):
        kernel_mode.use_plain_python()


def few_packets(files: Iterable[Path]) -> bool:
    """Whether ``files`` hold at most :data:`PLAIN_MAX_PACKETS` packet records in all (False for standard input or
    a file that cannot be counted)."""
    from ackreplay.ingest.record_count import count_records

    total = 0
    for path in files:
        if str(path) == "-" or not path.is_file():
            return False
        n = count_records(path, PLAIN_MAX_BYTES)
        if n is None:
            return False
        total += n
        if total > PLAIN_MAX_PACKETS:
            return False
    return True

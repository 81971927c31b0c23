"""``ackreplay``: replay real TCP ACK streams through Westwood-family bandwidth estimators.

The commands are defined in ``cli.app`` (``from ackreplay.cli.main import app`` still gives them): :func:`main`
starts reading a large capture ahead (``cli.early``) before it imports them.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from ackreplay.cli import collection, early, kernel_choice

if TYPE_CHECKING:
    from ackreplay.cli.app import app as app


def __getattr__(name: str) -> Any:
    if name == "app":
        from ackreplay.cli.app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The ``ackreplay`` console script: run the command, then leave without tearing the interpreter down.

    Before the commands are imported, ``flows`` or ``score`` of a capture file may start ingesting it on a helper
    thread (``cli.early``), so that the imports and ingest share the two cores.

    Tearing down numba's and Polars' modules at exit costs ~0.15 s, a fifth of a short command's time.
    After the command returns (or exits with a code) the exit handlers run and the output is flushed as
    in a normal exit; the process then ends with ``os._exit``. Only when no other thread is alive — replay's
    idle helper threads are stopped first — a command that left threads running (the service) exits the
    normal way.
    """
    kernel_choice.enable()
    collection.pause()  # a short process: no garbage collector passes over the imported modules (``cli.collection``)
    early.start(sys.argv[1:])
    from ackreplay.cli.app import app

    try:
        app()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    early.finish()  # a capture read ahead for a command that failed before taking it
    parallel = sys.modules.get("ackreplay.replay.parallel")
    if parallel is not None:  # replay's helper threads, idle once the command returned
        parallel.shutdown_helpers()
    if threading.active_count() > 1:
        sys.exit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head): nothing more to say
            code = code or 1
    os._exit(code or 0)


if __name__ == "__main__":
    main()

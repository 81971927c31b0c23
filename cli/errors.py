"""Exit codes and error printing shared by every CLI command: never a traceback for bad input."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

#: Exit codes (documented in README and docs/cli.md).
EXIT_USAGE = 2  # bad arguments (Typer/Click's own code)
EXIT_BAD_INPUT = 3  # a capture that cannot be ingested
EXIT_NOT_FOUND = 4  # a flow id the capture does not have
EXIT_OUTPUT = 5  # the output file cannot be written


def fail(code: int, error: str, message: str) -> NoReturn:
    """Print ``ackreplay: error [code]: message`` on stderr and exit."""
    print(f"ackreplay: error [{error}]: {message}", file=sys.stderr)
    raise typer.Exit(code)


def warn(message: str) -> None:
    print(f"ackreplay: warning: {message}", file=sys.stderr)


@contextmanager
def ingest_errors(path: str) -> Iterator[None]:
    """Turn ingest errors for ``path`` into a clean message and exit code 3."""
    from ackreplay.ingest.errors import IngestError

    try:
        yield
    except IngestError as exc:
        fail(EXIT_BAD_INPUT, exc.code, f"{path}: {exc}")


def guarded(fn: Callable[[], None]) -> None:
    try:
        fn()
    except OSError as exc:
        fail(EXIT_OUTPUT, "output_error", str(exc))

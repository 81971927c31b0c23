"""One progress bar on stderr for a whole command (``rich``), gone when the command ends.

Only on a terminal: piped or redirected stderr gets nothing. The bar covers every input file (one unit
each; within a file the ingest and replay stages report their fraction) and is transient: it leaves no
line behind, so the table printed on stdout afterwards stands alone.
"""

from __future__ import annotations

import sys
from typing import Any

#: Where each stage's progress falls within a file's unit: reading and ingest take the first half, replay the
#: second, so that the bar only ever moves forward.
STAGES = {"reading": (0.0, 0.0), "ingest": (0.0, 0.5), "replay": (0.5, 1.0)}


class Progress:
    """``with Progress(files) as bar: … score_input(path, bar=bar.file(name)) …``."""

    def __init__(self, files: int = 1, enabled: bool | None = None) -> None:
        self.files = max(files, 1)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.index = -1
        self.label = ""
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                     TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("", total=self.files)
        return self

    def __exit__(self, *_: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def file(self, label: str) -> Progress:
        """Start the next input file, its name drawn at once: an input read faster than the bar's refresh period
        (a small capture with kernels that need no loading) would otherwise never be named."""
        self.index += 1
        self.label = label
        self("reading", 0.0)
        if self._bar is not None:
            self._bar.refresh()
        return self

    def __call__(self, stage: str, fraction: float) -> None:
        if self._bar is not None:
            lo, hi = STAGES.get(stage, (0.0, 1.0))
            within = lo + (hi - lo) * min(max(fraction, 0.0), 1.0)
            n = f" ({self.index + 1}/{self.files})" if self.files > 1 else ""
            self._bar.update(self._task, completed=self.index + within, description=f"{self.label}{n} {stage}")

    def done(self) -> None:
        """The current file is finished."""
        if self._bar is not None:
            self._bar.update(self._task, completed=self.index + 1)

"""The what-if's refusals: a machine-readable ``code`` and a message naming what is missing or wrong."""

from __future__ import annotations


class WhatIfError(ValueError):
    """A what-if that cannot run (``code``: ``unknown_algorithm``, ``path_incomplete``,
    ``path_low_confidence``, ``shared_bottleneck``, ``bad_duration``; the service's ``whatif_too_large``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

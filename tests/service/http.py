"""Waiting for a server started by a test to answer on loopback."""

from __future__ import annotations

import time
from pathlib import Path

import httpx


def wait_ready(base: str, *, timeout: float = 90, log: Path | None = None) -> None:
    """Poll ``{base}/api/v1/ready`` until it answers 200 (the log's tail explains a failure)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/api/v1/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"{base} did not become ready:\n{tail}")
        time.sleep(0.2)

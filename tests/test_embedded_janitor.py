"""The embedded server's janitor: it releases waiting tasks on every pass, sweeps orphans every sixth, and ends
with the app (``api.app.start_janitor``'s event, set at the app's shutdown)."""

from __future__ import annotations

import threading

import pytest

import ackreplay.api.app as app_module


def test_the_janitor_releases_each_pass_and_stops_when_told(monkeypatch: pytest.MonkeyPatch) -> None:
    released, swept = threading.Semaphore(0), []
    monkeypatch.setattr(app_module, "JANITOR_RELEASE_SECONDS", 0.01)
    monkeypatch.setattr(app_module, "release_soon", released.release)
    monkeypatch.setattr(app_module, "maybe_sweep_orphans", lambda: swept.append(1))
    stop = app_module.start_janitor()
    for _ in range(13):
        assert released.acquire(timeout=10)
    stop.set()
    janitor = [t for t in threading.enumerate() if t.name == "ackreplay-janitor"]
    for t in janitor:
        t.join(timeout=10)
    assert not [t for t in janitor if t.is_alive()]
    assert len(swept) >= 3  # passes 0, 6 and 12

"""``cli.early``: which command lines read their capture ahead on a helper thread, and what the command then gets.

That the outputs are the same is checked where the command line runs in fresh processes with the kernels compiled
ahead of time (``tests/test_aot.py``: ``score -f json`` and ``flows --json``, compared by value with JIT's).
"""

from __future__ import annotations

import threading

import pytest

from ackreplay.cli import early
from ackreplay.ingest import IngestError
from ackreplay.ingest.budget import DEFAULT_MEMORY_BUDGET
from tests.conftest import ROOT

SAMPLE = ROOT / "samples" / "sample.pcap"


@pytest.mark.parametrize(("argv", "planned"), [
    (["flows", str(SAMPLE)], ("flows", SAMPLE)),
    (["flows", "--json", str(SAMPLE)], ("flows", SAMPLE)),
    (["flows", "-F", "port 80", str(SAMPLE)], ("flows", SAMPLE)),
    (["score", "-f", "json", str(SAMPLE), str(SAMPLE)], ("score", SAMPLE)),
    (["score", str(SAMPLE), "-e", "all", "--allow-vantage", "--no-sidecar"], ("score", SAMPLE)),
    (["flows"], None),  # no capture
    (["flows", "--json"], None),
    (["score", str(SAMPLE), "-f"], None),  # an option without its value
    (["flows", "--memory-budget", "64", str(SAMPLE)], None),  # changes ingest
    (["score", "--format=json", str(SAMPLE)], None),  # not a form read here
    (["score", "-", "-f", "json"], None),  # standard input
    (["score", "/dev/stdin"], None),  # not a regular file
    (["score", str(SAMPLE.with_name("missing.pcap"))], None),
    (["graph", str(SAMPLE)], None),  # another command
    (["estimators"], None),
])
def test_only_plain_flows_and_score_command_lines_are_read_ahead(argv: list[str], planned: object) -> None:
    assert early.plan(argv) == planned


def _read_ahead(monkeypatch: pytest.MonkeyPatch, result: object = None, error: BaseException | None = None) -> None:
    job = early._Early(SAMPLE, DEFAULT_MEMORY_BUDGET, quiet_numpy=False)
    job.result, job.error = result, error  # type: ignore[assignment]
    job.thread = threading.Thread(target=lambda: None)
    job.thread.start()
    monkeypatch.setattr(early, "_early", job)


def test_the_capture_read_ahead_is_taken_once_for_its_file_and_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = object()
    _read_ahead(monkeypatch, result=marker)
    assert early.take(SAMPLE, DEFAULT_MEMORY_BUDGET >> 1) is None  # another budget: the command ingests
    assert early.take(ROOT / "README.md", DEFAULT_MEMORY_BUDGET) is None  # another file
    assert early.take(SAMPLE.parent / ".." / "samples" / SAMPLE.name, DEFAULT_MEMORY_BUDGET) is marker
    assert early.take(SAMPLE, DEFAULT_MEMORY_BUDGET) is None  # taken


def test_an_error_met_reading_ahead_is_raised_in_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _read_ahead(monkeypatch, error=IngestError("bad capture"))
    with pytest.raises(IngestError, match="bad capture"):
        early.take(SAMPLE, DEFAULT_MEMORY_BUDGET)

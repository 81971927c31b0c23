"""The kernels as plain Python (what the command line runs on small captures, ``jitcache.kernel_mode``) give what
the compiled kernels give: on small captures of several kinds, ``score -f json`` and ``flows --json`` are run in
fresh processes both ways (``ACKREPLAY_KERNELS=plain|compiled``) and their documents compared by value
(``tests/valuecompare.py``: floats within a relative 1e-9, everything else equal). And the record count that makes
the choice is the one ingest finds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ackreplay.cli.kernel_choice import PLAIN_MAX_BYTES, PLAIN_MAX_PACKETS
from ackreplay.ingest import ingest_capture
from ackreplay.ingest.record_count import count_records
from tests.conftest import ROOT
from tests.valuecompare import differences, report

DATA = ROOT / "tests" / "data"
#: Small captures of several kinds: the warm-up capture (two connections, fast-retransmit losses, replayed), a
#: lossy testbed pair (gzip), retransmissions, a pcapng with many connections, a receiver-side half-duplex one,
#: reassembly, an HTTP download of 672 packets.
CAPTURES = [
    ROOT / "cli" / "data" / "warmup.pcap",
    DATA / "pairs" / "midloss.pcap.gz",
    DATA / "public" / "gh-arkime__wireshark-retrans.pcap",
    DATA / "public" / "gh-zeek__tcp_retransmit-fast009.pcap",
    DATA / "public" / "gh-packets__http_espn.pcapng",
    DATA / "public" / "gh-zeek__ssh_ssh.client-side-half-duplex.pcap.gz",
    DATA / "public" / "gh-zeek__tcp_reassembly.pcap",
    DATA / "public" / "gh-zeek__http_206_example_a.pcap.gz",
]


def run_cli(kernels: str, *args: str) -> Any:
    """``ackreplay ARGS``'s JSON output in a fresh process, its kernels ``plain`` or ``compiled``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACKREPLAY_KERNELS": kernels}
    done = subprocess.run([sys.executable, "-m", "ackreplay.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=600, cwd=ROOT, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_plain_python_scores_as_compiled(capture: Path) -> None:
    args = ("score", str(capture), "-f", "json", "--allow-vantage", "-e", "all")
    compiled, plain = run_cli("compiled", *args), run_cli("plain", *args)
    assert compiled["captures"][0]["flows"], capture  # something was replayed and scored
    diffs = list(differences(compiled, plain))
    assert not diffs, report(capture.name, diffs)


@pytest.mark.parametrize("capture", CAPTURES[:4], ids=lambda p: p.name)
def test_plain_python_lists_flows_as_compiled(capture: Path) -> None:
    compiled, plain = run_cli("compiled", "flows", str(capture), "--json"), run_cli("plain", "flows", str(capture),
                                                                                     "--json")
    diffs = list(differences(compiled, plain))
    assert not diffs, report(capture.name, diffs)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_the_record_count_is_ingests(capture: Path) -> None:
    assert count_records(capture, PLAIN_MAX_BYTES) == ingest_capture(capture).stats.records <= PLAIN_MAX_PACKETS


def test_a_larger_capture_is_not_counted(tmp_path: Path) -> None:
    big = tmp_path / "big.pcap"
    big.write_bytes((ROOT / "cli" / "data" / "warmup.pcap").read_bytes() * 60)  # (not a valid capture past 71 kB)
    assert count_records(big, PLAIN_MAX_BYTES) is None
    text = tmp_path / "notes.pcap"
    text.write_text("not a capture")
    assert count_records(text, PLAIN_MAX_BYTES) is None


def test_warmup_with_plain_kernels_says_there_is_nothing_to_compile() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACKREPLAY_KERNELS": "plain"}
    done = subprocess.run([sys.executable, "-m", "ackreplay.cli.main", "warmup"], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT, check=True)
    assert "nothing to compile" in done.stdout

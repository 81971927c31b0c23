"""``ingest.capture_metadata.metadata_files`` picks, for every capture of the repository and of the shared set
(and for made-up names covering each rule), the file(s) the two lookups it replaced picked: the ground truth's
(``core.capture_scoring.sidecar_truth``: the first one found, the testbed's JSON only) and the what-if's
(``whatif.captured``: every one, ns-3's and an ns-3 run's other flows' too). The old lookups are kept here, as
they were written, as the reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackreplay.core.capture_scoring import sidecar_truth
from ackreplay.ingest.capture_metadata import metadata_files
from tests.conftest import CAPTURE_SUFFIXES, ROOT, shared_captures


def old_truth_file(path: Path) -> Path | None:
    """``sidecar_truth``'s lookup of the testbed's JSON before the change (the file it read, None: none)."""
    plain = path.with_name(path.name[:-3]) if path.name.endswith(".gz") else path  # x.pcap.gz → x.json
    meta = plain.with_suffix(".json")
    for tag in ("_rcv", "_mid"):  # the testbed's other vantage points share the sender capture's JSON
        if not meta.exists() and plain.stem.endswith(tag):
            meta = plain.with_name(plain.stem[: -len(tag)] + ".json")
    return meta if meta.exists() else None


def old_whatif_files(capture: Path) -> list[Path]:
    """``whatif.captured._metadata_files`` before the change (it could list a file twice; its callers took the
    first usable one, so a repeat changed nothing: compared once each)."""
    plain = capture.with_name(capture.name.removesuffix(".gz")).with_suffix("")
    stems = [plain.name, plain.name.split(".")[0]]  # (an ns-3 run's other flows: x.newreno.pcap.gz)
    for tag in ("_rcv", "_mid"):  # the testbed's other vantage points share the sender capture's JSON
        if plain.name.endswith(tag):
            stems.append(plain.name.removesuffix(tag))
    out = [capture.with_name(s + ext) for s in stems for ext in (".ns3.json", ".json")]
    return list(dict.fromkeys(p for p in out if p.is_file()))


def repository_captures() -> list[Path]:
    found = [p for p in (ROOT / "tests" / "data").rglob("*") if p.name.removesuffix(".gz").endswith(CAPTURE_SUFFIXES)]
    return sorted(found) + shared_captures()


def test_the_captures_are_found_and_some_have_metadata() -> None:
    caps = repository_captures()
    assert len(caps) > 80
    assert sum(old_truth_file(c) is not None for c in caps) > 20  # (the comparison below is not over nothing)
    assert sum(any(f.name.endswith(".ns3.json") for f in old_whatif_files(c)) for c in caps) > 10


@pytest.mark.parametrize("capture", repository_captures(), ids=lambda p: str(p.relative_to(p.parents[2])))
def test_each_capture_gets_the_files_the_old_lookups_picked(capture: Path) -> None:
    new_truth = metadata_files(capture)
    assert (new_truth[0] if new_truth else None) == old_truth_file(capture)
    assert metadata_files(capture, ns3=True, run_stem=True) == old_whatif_files(capture)


LAYOUTS = [  # (files beside the capture, the capture)
    (["x.json"], "x.pcap.gz"), (["x.json"], "x.pcapng"), (["x.json"], "x"), (["x.json", "x_rcv.json"], "x_rcv.pcap"),
    (["x.json"], "x_rcv.pcap.gz"), (["x.json"], "x_mid.pcap.gz"), (["x.json", "x.ns3.json"], "x.newreno.pcap.gz"),
    (["x.newreno.json", "x.json"], "x.newreno.pcap.gz"), (["a.b.json", "a.json"], "a.b_rcv.pcap"),
    (["x.ns3.json"], "x.pcap.gz"), ([], "x.pcap.gz"), (["x_rcv.ns3.json", "x.json"], "x_rcv.pcap"),
]


@pytest.mark.parametrize(("files", "name"), LAYOUTS)
def test_each_rule_picks_as_before(tmp_path: Path, files: list[str], name: str) -> None:
    for f in files:
        (tmp_path / f).write_text("{}")
    capture = tmp_path / name
    new_truth = metadata_files(capture)
    assert (new_truth[0] if new_truth else None) == old_truth_file(capture)
    assert metadata_files(capture, ns3=True, run_stem=True) == old_whatif_files(capture)


def test_the_truth_is_read_from_the_sender_captures_json(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"bottleneck_rate_bps": 10000000}')
    found = sidecar_truth(tmp_path / "x_rcv.pcap.gz")
    assert found.source == str(tmp_path / "x.json")
    assert found.truth is not None and found.truth.bottleneck_bps == pytest.approx(1e7, rel=1e-12)
    assert sidecar_truth(tmp_path / "y.pcap.gz") == (None, None)

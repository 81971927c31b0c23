"""The metadata documents stored beside a capture: the capture testbed's JSON (``x.pcap.gz`` → ``x.json``) and an
ns-3 run's (``x.ns3.json``). Ground truth (``core.capture_scoring.sidecar_truth``) and the sender's control
(``whatif.captured``) are both read from them; this is the one place that says which files they are."""

from __future__ import annotations

from pathlib import Path

#: The testbed's other vantage points (receiver, middle of the path) share the sender capture's JSON.
VANTAGE_TAGS = ("_rcv", "_mid")


def metadata_files(capture: Path, *, ns3: bool = False, run_stem: bool = False) -> list[Path]:
    """The metadata files beside ``capture`` that exist, the most specific first: its own stem's
    (``x.pcap.gz``, ``x.pcapng``, ``x`` → ``x.json``), then — with ``run_stem`` — the stem before its first dot
    (``x.newreno.pcap.gz`` → ``x.json``: an ns-3 run's other flows), then the sender capture's for a
    ``x_rcv``/``x_mid`` capture (``x.json``). With ``ns3``, each stem's ``x.ns3.json`` comes before its
    ``x.json``. A file is listed once."""
    plain = capture.with_name(capture.name.removesuffix(".gz")).with_suffix("").name
    stems = [plain]
    if run_stem:
        stems.append(plain.split(".")[0])
    stems += [plain.removesuffix(tag) for tag in VANTAGE_TAGS if plain.endswith(tag)]
    exts = (".ns3.json", ".json") if ns3 else (".json",)
    found = [capture.with_name(s + ext) for s in stems for ext in exts]
    return list(dict.fromkeys(p for p in found if p.is_file()))

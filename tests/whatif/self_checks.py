"""The self-check on the captures in the repository whose sender's control is known (their metadata names it):
``python -m tests.whatif.self_checks`` prints docs/whatif.md's table (the largest bulk flow of each sender-side
capture of tests/data/{testbed,ns3,paths,pairs,limits}, and the testbed's receiver-side one), then the table of
the Linux BBR senders of tests/data/bbr (their README names the control: every flow ran BBR but the CUBIC one of
``bbr_cubic_2f``, which the capture's flows show apart by their ports)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import NamedTuple

from ackreplay.core.capture_scoring import build_estimators, score_file
from ackreplay.whatif.captured import CapturedFlow, SenderControl, sender_control
from ackreplay.whatif.cross import CrossFlow
from ackreplay.whatif.errors import WhatIfError
from ackreplay.whatif.figures import PathRange
from ackreplay.whatif.flows import flight_by_flow, flow_inputs
from ackreplay.whatif.runs import RunCache, SelfCheck, consistent_range, self_check
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"


class Checked(NamedTuple):
    check: SelfCheck
    path: PathRange
    captured: CapturedFlow
    sender: SenderControl
    cross: list[CrossFlow]


#: The Linux BBR senders of tests/data/bbr (the README's runs; the sender-side captures and the receiver-side one
#: whose sender is rebuilt), and each flow's control by its sender's port where they differ (``bbr_cubic_2f``: the
#: first flow, client port 40001, BBR; the second CUBIC).
BBR_CAPTURES = tuple(sorted((DATA / "bbr").glob("*.pcap.gz")))
BBR_PORTS = {"bbr_cubic_2f_10M_rtt40_buf2bdp.pcap.gz": {"40001": "bbr", "40002": "cubic"}}


def given_control(capture: Path, sender: str) -> str | None:
    """The control a flow's sender ran where no metadata beside the capture names it: the BBR captures'."""
    if capture.parent.name != "bbr":
        return None
    return BBR_PORTS.get(capture.name, {}).get(sender.rsplit(":", 1)[-1], "bbr")


@cache
def checked(capture: Path) -> Checked | WhatIfError:
    """The self-check of the capture's largest bulk flow, or why its path carries no what-if."""
    sc = score_file(capture, build_estimators(["newreno"], {}), keep_series=False)
    by_id = sc.ingest.flows.by_id()
    fr = max(sc.replay.flows, key=lambda fr: by_id[fr.flow_id].bytes)

    def control(sender: str) -> SenderControl:
        return sender_control(capture, sender, given_control(capture, sender))

    try:
        rng, captured, cross = flow_inputs(fr, by_id[fr.flow_id], sc.replay.path_groups, by_id, control,
                                           capture=capture, flights=flight_by_flow(sc.replay.flows))
    except WhatIfError as exc:
        return exc
    sender = control(by_id[fr.flow_id].sender)
    run = RunCache()  # (the search's run at the bound is the self-check's where the buffer stays there)
    rng = consistent_range(rng, captured, sender, 1, cross, run)
    return Checked(self_check(rng, captured, sender, 1, cross, run), rng, captured, sender, cross)


def captures() -> list[Path]:
    out = sorted((DATA / "testbed").glob("*.pcap.gz")) + sorted((DATA / "ns3").glob("*.pcap.gz"))
    for folder in ("paths", "pairs", "limits"):
        out += [p for p in sorted((DATA / folder).glob("*.pcap.gz")) if not p.name.endswith(("_rcv.pcap.gz",
                                                                                              "_mid.pcap.gz"))]
    return out


def cells(got: Checked | WhatIfError) -> str:
    """A self-check's cells: control, goodput ratio, loss-event ratio, verdict (or the refusal)."""
    if isinstance(got, WhatIfError):
        return f"— | — | — | refused: `{got.code}`"
    c = got.check
    ratio = "—" if c.goodput_ratio is None else f"{c.goodput_ratio:.3f}"
    loss = "—" if c.loss_rate_ratio is None else f"{c.loss_rate_ratio:.3f}"
    verdict = "passed" if c.passed else f"{'failed' if c.code == 'not_reproduced' else 'withheld'}: `{c.code}`"
    return f"{c.algorithm} | {ratio} | {loss} | {verdict}"


def table(of: tuple[Path, ...] | None = None) -> str:
    rows = ["| capture | control | goodput ratio | loss-event ratio | self-check |", "|---|---|---:|---:|---|"]
    for capture in captures() if of is None else of:
        name = f"{capture.parent.name}/{capture.name.removesuffix('.pcap.gz')}"
        rows.append(f"| {name} | {cells(checked(capture))} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
    print()
    print(table(BBR_CAPTURES))

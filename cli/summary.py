"""Summaries over several captures for the terminal: the combined board of ``score`` (every bulk flow of
every capture) and ``compare``'s two captures side by side. Both rank by the documented composite error
(``estimators.ranking``: per flow (|err| + |ln ss/ideal|)/2, median over flows) and show the spread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ackreplay.cli.score_table import block_table

if TYPE_CHECKING:
    from ackreplay.core.scoring import ScoredCapture

#: (ranking score, header (name, unit), digits)
SUMMARY_SCORES = (
    ("composite_error", ("composite", "median"), 3),
    ("mean_abs_rel_error", ("|err|", "median"), 3),
    ("mean_signed_rel_error", ("bias", "median"), 3),
    ("ssthresh_over_ideal_median", ("ss/ideal", "median"), 2),
)


def bulk_flows(sc: ScoredCapture) -> dict[Any, dict[str, dict[str, Any]]]:
    """{(capture, flow id): {estimator: scores}} for the capture's replayed bulk flows."""
    from ackreplay.estimators.replay import bulk_flow_ids

    bulk = set(bulk_flow_ids(sc.ingest.flows, sc.truth))
    return {(str(sc.path), fr.flow_id): fr.scores for fr in sc.replay.flows if fr.flow_id in bulk}


def _fmt(v: float | None, digits: int) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def combined_summary(scored: Sequence[ScoredCapture], width: int | None = 80) -> str:
    """One board over every bulk flow of every capture: rank by median composite error, with its IQR."""
    from ackreplay.estimators.ranking import board

    per_flow: dict[Any, dict[str, dict[str, Any]]] = {}
    for sc in scored:
        per_flow.update(bulk_flows(sc))
    head = f"== all {len(scored)} captures: {len(per_flow)} bulk flows"
    if not per_flow:
        return head + " (nothing to combine)"
    b = board(per_flow)["scores"]
    comp = b["composite_error"]["estimators"]
    names = sorted(comp, key=lambda n: (comp[n].get("rank") or 1e9, n))
    headers = [("rank", "#"), ("flows", "n"), *(h for _, h, _ in SUMMARY_SCORES), ("composite", "IQR")]
    cells = [[str(comp[n].get("rank", "-")), str(comp[n]["flows"]),
              *(_fmt(b[k]["estimators"][n]["median"], d) for k, _, d in SUMMARY_SCORES),
              f"{_fmt(comp[n]['q1'], 3)}..{_fmt(comp[n]['q3'], 3)}"] for n in names]
    return head + "\n" + block_table("estimator", names, headers, cells, width)


def compare_text(a: ScoredCapture, b: ScoredCapture, width: int | None = 80) -> str:
    """Two captures side by side: per estimator, each capture's median composite error, |err| and bias over
    its bulk flows, and the change from A to B."""
    from ackreplay.estimators.ranking import board

    boards = []
    for sc in (a, b):
        flows = bulk_flows(sc)
        boards.append((len(flows), board(flows)["scores"] if flows else {}))
    head = [f"A = {a.path} ({boards[0][0]} bulk flows)", f"B = {b.path} ({boards[1][0]} bulk flows)"]
    names = sorted({n for _, bd in boards for n in bd.get("composite_error", {}).get("estimators", {})})

    def med(i: int, score: str, n: str) -> float | None:
        return boards[i][1].get(score, {}).get("estimators", {}).get(n, {}).get("median")

    headers = [("composite", "A"), ("composite", "B"), ("change", "B-A"), ("|err|", "A"), ("|err|", "B"),
               ("bias", "A"), ("bias", "B"), ("rank", "A"), ("rank", "B")]
    order = sorted(names, key=lambda n: (med(1, "composite_error", n) is None, med(1, "composite_error", n) or 0))
    cells = []
    for n in order:
        ca, cb = med(0, "composite_error", n), med(1, "composite_error", n)
        ranks = [str(bd.get("composite_error", {}).get("estimators", {}).get(n, {}).get("rank", "-"))
                 for _, bd in boards]
        cells.append([_fmt(ca, 3), _fmt(cb, 3), "-" if ca is None or cb is None else f"{cb - ca:+.3f}",
                      _fmt(med(0, "mean_abs_rel_error", n), 3), _fmt(med(1, "mean_abs_rel_error", n), 3),
                      _fmt(med(0, "mean_signed_rel_error", n), 3), _fmt(med(1, "mean_signed_rel_error", n), 3),
                      *ranks])
    return "\n".join(head) + "\n" + block_table("estimator", order, headers, cells, width)

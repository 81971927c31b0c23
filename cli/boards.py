"""Summaries over several captures for the terminal: the combined board of ``score`` (every bulk flow of
every capture) and ``compare``'s two captures side by side. Both rank by the documented composite error
(``scoring.ranking``: per flow (|err| + |ln ss/ideal|)/2, median over flows) and show the spread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ackreplay.cli.score_table import block_table

if TYPE_CHECKING:
    from ackreplay.core.capture_scoring import ScoredCapture

#: (ranking score, header (name, unit), digits)
SUMMARY_SCORES = (
    ("composite_error", ("composite", "median"), 3),
    ("mean_abs_rel_error", ("|err|", "median"), 3),
    ("mean_signed_rel_error", ("bias", "median"), 3),
    ("ssthresh_over_ideal_median", ("ss/ideal", "median"), 2),
)


def bulk_flows(sc: ScoredCapture) -> dict[Any, dict[str, dict[str, Any]]]:
    """{(capture, flow id): {estimator: scores}} for the capture's replayed bulk flows."""
    from ackreplay.replay.capture import bulk_flow_ids

    bulk = set(bulk_flow_ids(sc.ingest.flows, sc.truth))
    return {(str(sc.path), fr.flow_id): fr.scores for fr in sc.replay.flows if fr.flow_id in bulk}


def incomparable_flows(sc: ScoredCapture) -> set[Any]:
    """The keys (as :func:`bulk_flows`') of the capture's replayed flows the estimators cannot be compared on
    (``scoring.comparable``)."""
    return {(str(sc.path), fr.flow_id) for fr in sc.replay.flows if fr.comparable_reason is not None}


def incomparable_note(count: int, included: bool, width: int | None) -> str:
    """The line under a board that says how many bulk flows were left out of it (or kept, when asked) as not
    comparable; empty when none."""
    import textwrap

    if not count:
        return ""
    text = (f"ranked as asked (--include-incomparable): {count} bulk flow(s) not comparable" if included else
            f"left out: {count} bulk flow(s) not comparable (too little network-limited time or too few loss events "
            f"for the estimators, or limited by the application or the receiver most of the time; the JSON's "
            f"comparable_reason says which); --include-incomparable ranks them too")
    return "\n" + (textwrap.fill(text, width, break_long_words=False) if width else text)


def rank_text(entry: dict[str, Any]) -> str:
    """A rank, ``=`` after it when its interval overlaps another estimator's (a tie: their order may be chance)."""
    rank = entry.get("rank")
    return "-" if rank is None else f"{rank}{'=' if entry.get('ties') else ''}"


def ci_text(entry: dict[str, Any], digits: int) -> str:
    ci = entry.get("ci")
    return "-" if not ci else f"{ci[0]:.{digits}f}..{ci[1]:.{digits}f}"


def statistics_note(full: dict[str, Any], width: int | None) -> str:
    """What the board's statistics are, and its warning under the minimum sample."""
    import textwrap

    text = (f"95% CI: bootstrap interval of the median ({full['resamples']} resamples over "
            f"{full['resampled']}, seeded); = after a rank: its interval overlaps another's (a tie); ! after n: "
            f"under {full['min_flows']} flows")
    if full.get("warning"):
        text += f". Warning: {full['warning']}"
    return "\n" + (textwrap.fill(text, width, break_long_words=False) if width else text)


def _fmt(v: float | None, digits: int) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def left_out_note(left_out: dict[str, int], included: bool, width: int | None) -> str:
    """The line under a board that says which estimators' scores were left out of it (or kept, when asked) for
    not being reproducible from their flows' vantage; empty when none."""
    import textwrap

    if not left_out:
        return ""
    which = ", ".join(f"{n} on {c} flow(s)" for n, c in sorted(left_out.items()))
    text = (f"ranked as asked (--rank-not-reproducible), although not reproducible from their vantage: {which}"
            if included else f"left out as not reproducible from their vantage (they depend on the ACKs' timing "
            f"at the sender): {which}; --rank-not-reproducible ranks them too")
    return "\n" + (textwrap.fill(text, width, break_long_words=False) if width else text)


def combined_summary(scored: Sequence[ScoredCapture], width: int | None = 80,
                     include_not_reproducible: bool = False, include_incomparable: bool = False) -> str:
    """One board over every bulk flow of every capture: rank by median composite error, with its IQR. Scores
    labelled not reproducible from their flow's vantage are left out unless ``include_not_reproducible``, flows
    not comparable unless ``include_incomparable``."""
    from ackreplay.scoring.ranking import board

    per_flow: dict[Any, dict[str, dict[str, Any]]] = {}
    left: set[Any] = set()
    for sc in scored:
        per_flow.update(bulk_flows(sc))
        left |= incomparable_flows(sc)
    head = f"== all {len(scored)} captures: {len(per_flow)} bulk flows"
    if not per_flow:
        return head + " (nothing to combine)"
    full = board(per_flow, include_not_reproducible=include_not_reproducible, incomparable=left,
                 include_incomparable=include_incomparable, groups={k: k[0] for k in per_flow})
    notes = (left_out_note(full["left_out"], include_not_reproducible, width)
             + incomparable_note(full["incomparable"], include_incomparable, width) + statistics_note(full, width))
    b = full["scores"]
    comp = b["composite_error"]["estimators"]
    names = sorted((n for n in comp if comp[n]["flows"]), key=lambda n: (comp[n].get("rank") or 1e9, n))
    if not names:
        return head + " (no estimator has a score on them to rank)" + notes
    headers = [("rank", "#"), ("flows", "n"), *(h for _, h, _ in SUMMARY_SCORES), ("composite", "95% CI"),
               ("composite", "IQR")]
    cells = [[rank_text(comp[n]), str(comp[n]["flows"]) + ("!" if comp[n]["few"] else ""),
              *(_fmt(b[k]["estimators"][n]["median"], d) for k, _, d in SUMMARY_SCORES), ci_text(comp[n], 3),
              f"{_fmt(comp[n]['q1'], 3)}..{_fmt(comp[n]['q3'], 3)}"] for n in names]
    return head + "\n" + block_table("estimator", names, headers, cells, width) + notes


def compare_text(a: ScoredCapture, b: ScoredCapture, width: int | None = 80,
                 include_not_reproducible: bool = False, include_incomparable: bool = False) -> str:
    """Two captures side by side: per estimator, each capture's median composite error, |err| and bias over
    its bulk flows, and the change from A to B (scores not reproducible from their vantage left out unless
    ``include_not_reproducible``, flows not comparable unless ``include_incomparable``)."""
    from ackreplay.scoring.ranking import board

    boards = []
    left_out: dict[str, int] = {}
    incomparable = 0
    stats: dict[str, Any] = {}
    for sc in (a, b):
        flows = bulk_flows(sc)
        full = board(flows, include_not_reproducible=include_not_reproducible, incomparable=incomparable_flows(sc),
                     include_incomparable=include_incomparable) if flows else {}
        for n, c in full.get("left_out", {}).items():
            left_out[n] = left_out.get(n, 0) + c
        incomparable += full.get("incomparable", 0)
        if full:
            stats = {**full, "warning": stats.get("warning") or full["warning"]}
        boards.append((len(flows), full.get("scores", {})))
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
        ranks = [rank_text(bd.get("composite_error", {}).get("estimators", {}).get(n, {})) for _, bd in boards]
        cells.append([_fmt(ca, 3), _fmt(cb, 3), "-" if ca is None or cb is None else f"{cb - ca:+.3f}",
                      _fmt(med(0, "mean_abs_rel_error", n), 3), _fmt(med(1, "mean_abs_rel_error", n), 3),
                      _fmt(med(0, "mean_signed_rel_error", n), 3), _fmt(med(1, "mean_signed_rel_error", n), 3),
                      *ranks])
    return ("\n".join(head) + "\n" + block_table("estimator", order, headers, cells, width)
            + left_out_note(left_out, include_not_reproducible, width)
            + incomparable_note(incomparable, include_incomparable, width)
            + (statistics_note(stats, width) if stats else ""))

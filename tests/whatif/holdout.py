"""The hold-out captures (tests/data/holdout, made by its make.sh after the what-if's code was fixed and never
tuned against): the self-check of each capture's largest bulk flow (:func:`tests.whatif.self_checks.checked`) and
the path inferred for that flow against the testbed's ground truth, figure by figure within the tolerances of
docs/path-calibration.md. ``python -m tests.whatif.holdout`` prints docs/whatif.md's "Hold-out captures" table."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from ackreplay.core.capture_scoring import build_estimators, score_file
from tests.estimators.path_calibration import FIGURES, hit, truth_of
from tests.whatif.self_checks import DATA, cells, checked

HOLDOUT = DATA / "holdout"


def captures() -> list[Path]:
    return sorted(HOLDOUT.glob("*.pcap.gz"))


def meta_of(capture: Path) -> Path:
    return capture.with_name(capture.name.removesuffix(".pcap.gz") + ".json")


@cache
def flow_path(capture: Path) -> dict[str, Any]:
    """The path inferred for the capture's largest flow (the one the self-check re-enacts), as a score document
    shows it."""
    sc = score_file(capture, build_estimators(["newreno"], {}), keep_series=False)
    by_id = sc.ingest.flows.by_id()
    fr = max(sc.replay.flows, key=lambda fr: by_id[fr.flow_id].bytes)
    return dict(fr.path or {})


def figure_errors(capture: Path) -> dict[str, tuple[float | None, str | None, bool | None]]:
    """Per figure: the relative error against the truth (the base RTT's against the nearer end of its
    configured-to-ping range, 0 inside it; a random-loss rate's absolute value where the path dropped nothing at
    random), its grade and whether it is within its tolerance (None where the path shows no figure)."""
    truth = truth_of(meta_of(capture))
    path = flow_path(capture)
    out: dict[str, tuple[float | None, str | None, bool | None]] = {}
    for figure in FIGURES:
        value = path.get(figure)
        if value is None:
            out[figure] = (None, path.get("confidence"), None)
            continue
        want = truth[figure]
        if figure == "base_rtt_s":
            lo, hi = want
            err = 0.0 if lo <= value <= hi else (value - lo) / lo if value < lo else (value - hi) / hi
        elif figure == "random_loss_rate" and want == 0:
            err = float(value)
        else:
            err = (value - want) / want
        out[figure] = (err, path.get("confidence"), hit(figure, value, want))
    return out


def parameters(capture: Path) -> str:
    """The scenario in short, from its ground truth."""
    d = json.loads(meta_of(capture).read_text())
    loss = d.get("random_loss_prob_data") or 0
    return (f"{'+'.join(d['cc'])} {d['bottleneck_rate_bps'] / 1e6:g} Mbit/s, {d['base_rtt_configured_ms']:g} ms, "
            f"{d['buffer_over_bdp']:g} BDP" + (f", {loss:.1%} loss" if loss else ""))


def _cell(err: float | None, ok: bool | None, figure: str) -> str:
    if err is None:
        return "—"
    shown = f"{err:.2%}" if figure == "random_loss_rate" and abs(err) < 0.01 and not ok else f"{err:+.1%}"
    return shown + ("" if ok else " ✗")


def table() -> str:
    rows = ["| capture | scenario | control | goodput ratio | loss-event ratio | self-check | capacity | base RTT "
            "| buffer/BDP | random loss | grade |", "|---|---|---|---:|---:|---|---:|---:|---:|---:|---|"]
    for capture in captures():
        name = capture.name.removesuffix(".pcap.gz")
        got = checked(capture)
        errors = figure_errors(capture)
        grade = next((g for _, g, _ in errors.values() if g), "—")
        figs = " | ".join(_cell(e, ok, f) for f, (e, _, ok) in errors.items())
        rows.append(f"| {name} | {parameters(capture)} | {cells(got)} | {figs} | {grade} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())

"""``ackreplay model``: what the analytic models predict on a path (docs/models.md; the path: docs/path.md §9,
``path.analytic``) — the path a capture shows, or one given by its figures.

The two models it prints (docs/models.md has their formulas and full citations):

- the NewReno/Westwood+ sharing model of Möller, Barakat, Avrachenkov, Altman, "Inter-protocol fairness between TCP
  New Reno and TCP Westwood+", NGI 2007 (Props. 1–4): each flow's share of the capacity C at a buffer/BDP, and with
  their fix ("floor-half": Westwood+ never sets ssthresh below half its window, §IV);
- the busy-link rule (one flow keeps the link busy iff B ≥ b/(1−b)·BDP, b the window's decrease factor at a loss)
  and a single-flow utilisation model per congestion control, as in the high-speed TCP buffer-provisioning
  comparison (docs/models.md#the-buffer-study).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from ackreplay.cli.errors import EXIT_NOT_FOUND, EXIT_USAGE, fail
from ackreplay.cli.inputs import DEFAULT_MEMORY_BUDGET_MB, MemoryBudget
from ackreplay.cli.render import terminal_width

#: The figures the models read: (the path's key, name, option giving it, the unit it is given in, its scale to the
#: key's unit); the option's value without a capture when not given.
FIGURES: tuple[tuple[str, str, str, str, float], ...] = (
    ("capacity_bps", "capacity", "--capacity", "Mbit/s", 1e6),
    ("base_rtt_s", "base RTT", "--rtt", "ms", 1e-3),
    ("buffer_over_bdp", "buffer/BDP", "--buffer-bdp", "", 1.0),
)
DEFAULTS = {"capacity_bps": 200e6, "base_rtt_s": 0.1, "buffer_over_bdp": 1.0}


class Figure(NamedTuple):
    """One figure the models read: its value (None: missing) and where it comes from, or why it is missing."""

    value: float | None
    source: str
    note: str


@dataclass
class CapturePath:
    """The path a capture shows on one flow: which flow and why that one, its path (empty without one) and its
    decisions at each loss (the buffer study's rule per replayed decision)."""

    file: str
    flow_id: int | None
    chosen: str
    path: dict[str, Any] = field(default_factory=dict)
    decision_rows: list[Any] = field(default_factory=list)
    complete: list[int] = field(default_factory=list)  # the replayed flows whose path has every figure


def model(
    capture: Annotated[Path | None, typer.Argument(metavar="CAPTURE",
        help="A capture (pcap, pcapng, optionally gzipped; - reads standard input): the models run on the path it "
             "shows, for --flow or the largest bulk flow. Without one, on --buffer-bdp/--capacity/--rtt.")] = None,
    flow: Annotated[int | None, typer.Option("--flow", help="With a capture: the flow whose path to use (as "
                    "`ackreplay flows` lists them).")] = None,
    buffer_bdp: Annotated[float | None, typer.Option(
        "--buffer-bdp", help="Bottleneck buffer as a multiple of the BDP (default 1; with a capture: a what-if in "
                             "place of the capture's figure).")] = None,
    curve: Annotated[str | None, typer.Option(
        "--curve", help="A range LO:HI[:POINTS] of buffer/BDP: print the NewReno/Westwood+ shares of Möller et al. "
                         "(NGI 2007) over it.")] = None,
    capacity_mbit: Annotated[float | None, typer.Option(
        "--capacity", help="Capacity, Mbit/s, for the busy-link rule and single-flow model (default 200; with a "
                             "capture: a what-if).")] = None,
    rtt_ms: Annotated[float | None, typer.Option(
        "--rtt", help="Base RTT, ms, for the busy-link rule and single-flow model (default 100; with a capture: a "
                        "what-if).")] = None,
    allow_vantage: Annotated[bool, typer.Option("--allow-vantage", help="With a capture: also replay flows not "
                             "captured at the sender whose sender view cannot be rebuilt.")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of text.")] = False,
) -> None:
    """Analytic models on a path: the NewReno/Westwood+ shares of Möller et al., NGI 2007 (with and without their
    floor-half fix: Westwood+ never below half its window) and, per congestion control, the busy-link rule
    B ≥ b/(1−b)·BDP (b: the window's decrease factor at a loss) with one flow's utilisation — on the path a capture
    shows or at a buffer/BDP. Formulas and citations: docs/models.md."""
    given = {"capacity_bps": None if capacity_mbit is None else capacity_mbit * 1e6,
             "base_rtt_s": None if rtt_ms is None else rtt_ms / 1e3, "buffer_over_bdp": buffer_bdp}
    if curve:
        if capture is not None:
            fail(EXIT_USAGE, "bad_option", "--curve prints the NewReno/Westwood+ shares over a range of "
                 "buffer/BDP: it takes no capture")
        print_curve(curve, as_json)
        return
    if capture is None:
        if flow is not None:
            fail(EXIT_USAGE, "bad_option", "--flow names a flow of a capture: give the capture too")
        figures = {k: Figure(DEFAULTS[k] if v is None else v, "given", "") for k, v in given.items()}
        doc = models_on(figures)
        print(json.dumps(doc, indent=1) if as_json else models_text(doc, figures))
        return
    found = capture_path(capture, flow, allow_vantage, memory_budget)
    figures = path_figures(found, given)
    doc = {"file": found.file, "flow_id": found.flow_id, "chosen": found.chosen,
           "figures": {k: f._asdict() for k, f in figures.items()}, **models_on(figures, found.decision_rows)}
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    print(capture_text(found, figures, doc))


def print_curve(curve: str, as_json: bool) -> None:
    """``--curve LO:HI[:POINTS]``: Möller et al.'s (2007) shares over a range of buffer/BDP, plain and with the
    floor-half fix."""
    from ackreplay.path.analytic import newreno_westwood_curve

    try:
        parts = [float(x) for x in curve.split(":")]
    except ValueError:
        parts = []
    if len(parts) not in (2, 3) or not 0 < parts[0] < parts[1]:
        raise typer.BadParameter("--curve LO:HI[:POINTS] with 0 < LO < HI")
    points = int(parts[2]) if len(parts) == 3 else 12
    rows = [{"plain": p, "floor_half": f} for p, f in zip(newreno_westwood_curve(parts[0], parts[1], points),
                                                          newreno_westwood_curve(parts[0], parts[1], points, True),
                                                          strict=True)]
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    print("NewReno/Westwood+ shares of the capacity, one flow each (Möller et al., NGI 2007; docs/models.md). "
          "floor-half fix: Westwood+'s ssthresh never below half its window.")
    print("buffer/BDP  NewReno  Westwood+  W+/NR   | floor-half fix: NewReno  Westwood+")
    for r in rows:
        p, f = r["plain"], r["floor_half"]
        print(f"{p['buffer_over_bdp']:10.3f}  {p['newreno']:7.3f}  {p['westwood_plus']:9.3f}  {p['ratio']:6.3f}"
              f"  | {f['newreno']:22.3f}  {f['westwood_plus']:9.3f}")


def replayed_paths(capture: Path, flow: int | None, estimators: list[str], allow_vantage: bool, memory_budget: int
                   ) -> tuple[Any, str, Any, dict[int, Any]]:
    """Replay ``capture`` as ``score`` does (the same path inference, shared bottlenecks included) with
    ``estimators``: the scored capture, its label, its flows' summaries and its replayed flows by id. A ``flow``
    the capture does not have exits 4."""
    from ackreplay.cli.inputs import label
    from ackreplay.cli.score_cmd import score_input
    from ackreplay.cli.warmup import announce_cold
    from ackreplay.core.capture_scoring import build_estimators

    announce_cold()
    sc = score_input(capture, build_estimators(estimators, {}), allow_vantage=allow_vantage,
                     memory_budget=memory_budget << 20, keep_series=False)
    name = label(capture)
    by_id = sc.ingest.flows.by_id()
    if flow is not None and flow not in by_id:
        fail(EXIT_NOT_FOUND, "flow_not_found", f"{name}: no flow {flow} (it has {len(by_id)}: `ackreplay flows "
             f"{name}` lists them)")
    return sc, name, by_id, {fr.flow_id: fr for fr in sc.replay.flows}


def capture_path(capture: Path, flow: int | None, allow_vantage: bool, memory_budget: int) -> CapturePath:
    """Replay ``capture`` as ``score`` does (the same path inference, shared bottlenecks included) and take the path
    of ``flow``, or of the largest bulk flow (the largest replayed flow when none is bulk); a flow that was not
    replayed, or a capture with none, gives an empty path and says why. An unknown ``flow`` exits 4."""
    from ackreplay.cli.flow_lists import skipped_lines

    # the decision rules the buffer study models, replayed so that their verdicts at this flow's losses show too
    sc, name, by_id, replayed = replayed_paths(capture, flow, ["highspeed"], allow_vantage, memory_budget)
    complete = [fid for fid, fr in replayed.items() if fr.path and all(fr.path.get(k) is not None for k, *_ in FIGURES)]
    if flow is not None:
        if flow not in replayed:
            return CapturePath(name, flow, f"flow {flow} was not replayed: {sc.replay.skipped.get(flow, '')}",
                               complete=complete)
        chosen = f"flow {flow}"
    elif replayed:
        bulk = [fid for fid in replayed if sc.bulk(by_id[fid].bytes)]
        flow = max(bulk or replayed, key=lambda fid: (by_id[fid].bytes, -fid))
        chosen = f"flow {flow}, the largest {'bulk' if bulk else 'replayed'} flow"
    else:
        why = "; ".join(line.removeprefix("not replayed, ") for line in skipped_lines(sc.replay.skipped))
        return CapturePath(name, None, f"no flow was replayed ({why or 'the capture has no TCP flow'})")
    fr = replayed[flow]
    s = by_id[flow]
    return CapturePath(name, flow, f"{chosen}: {s.sender} -> {s.receiver}", dict(fr.path or {}),
                       list(fr.decision_rows or []), complete)


def path_figures(found: CapturePath, given: dict[str, float | None]) -> dict[str, Figure]:
    """Each figure the models read: a what-if option's value where given (the capture's own figure noted), else
    the capture's with its evidence, else missing with the reason (the evidence's, or why the flow has no path)."""
    evidence = found.path.get("evidence") or {}
    out = {}
    for key, _, option, unit, scale in FIGURES:
        shown = found.path.get(key)
        why = str(evidence.get(key) or "")
        buffer = str(evidence.get("buffer_bytes") or "")
        if key == "buffer_over_bdp" and buffer:  # the ratio's evidence says only how it divides: say the buffer's
            why = f"no buffer: {buffer.removeprefix('null: ')}" if shown is None else f"buffer = {buffer}; {why}"
        if given[key] is not None:
            seen = "no figure" if shown is None else f"{shown / scale:.4g}{' ' + unit if unit else ''}"
            out[key] = Figure(given[key], option, f"what-if (the capture shows {seen})")
        elif shown is not None:
            out[key] = Figure(float(shown), "capture", why)
        elif found.path:
            out[key] = Figure(None, "missing", f"{why.removeprefix('null: ') or 'not inferred'}; {option} gives one")
        else:  # no path at all: the first line says why
            out[key] = Figure(None, "missing", f"{option} gives one")
    return out


def models_on(figures: dict[str, Figure], decision_rows: list[Any] | None = None) -> dict[str, Any]:
    """The models on these figures: Möller et al. 2007 at the buffer/BDP, the buffer study with all three (``None``
    where a figure they need is missing) and, with a flow's ``decision_rows``, the buffer study's rule for each
    replayed decision at its losses. Without a capture the keys are those ``model --json`` always had."""
    from ackreplay.path.analytic import PathModel, busy_link_verdicts, newreno_westwood_shares, replayed_verdicts

    c, rtt, over = (figures[k].value for k, *_ in FIGURES)
    doc: dict[str, Any] = {"buffer_over_bdp": over,
                           "share_model": None if over is None else newreno_westwood_shares(over),
                           "share_model_floor_half": None if over is None
                           else newreno_westwood_shares(over, floor_half=True),
                           "busy_link": None if c is None or rtt is None or over is None
                           else busy_link_verdicts(PathModel.of(c, rtt, over))}
    if decision_rows is not None:
        doc["replayed"] = replayed_verdicts(decision_rows, over) if over is not None and decision_rows else {}
    return doc


def models_text(doc: dict[str, Any], figures: dict[str, Figure]) -> str:
    """Möller et al.'s (2007) shares and the busy-link verdicts as text, every printed term defined; for a model that
    cannot run, which figure it lacks."""
    over = doc["buffer_over_bdp"]
    lines = []
    s, f = doc["share_model"], doc["share_model_floor_half"]
    if s is None:
        lines.append("NewReno/Westwood+ sharing (Möller et al., NGI 2007): needs the buffer/BDP (missing; --buffer-bdp "
                     "gives one)")
    else:
        lines.append(f"NewReno/Westwood+ sharing (Möller et al., NGI 2007) at B = {over:.4g}×BDP: NewReno "
                     f"{s['newreno']:.3f}, Westwood+ {s['westwood_plus']:.3f} of C (utilisation "
                     f"{s['utilisation']:.3f}); "
                     "with the floor-half fix (Westwood+'s ssthresh never below half its window): NewReno "
                     f"{f['newreno']:.3f}, Westwood+ {f['westwood_plus']:.3f}")
    if doc["busy_link"] is None:
        lacking = [f"the {name} ({option} gives one)" for key, name, option, *_ in FIGURES
                   if figures[key].value is None]
        lines.append(f"busy-link rule and single-flow model: needs {', '.join(lacking)}")
        return "\n".join(lines)
    c, rtt = figures["capacity_bps"].value or 0.0, figures["base_rtt_s"].value or 0.0
    lines.append(f"busy-link rule and single-flow model, one flow on {c / 1e6:.4g} Mbit/s, {rtt * 1e3:.4g} ms, "
                 f"B = {over:.4g}×BDP (b: the window's decrease factor at a loss; the link stays busy iff "
                 "B ≥ b/(1−b)·BDP; utilisation: the flow's mean rate / C; docs/models.md):")
    for name, v in doc["busy_link"].items():
        lines.append(f"  {name:14s} b = {v['decrease']:.3f}  link {'busy' if v['busy_link'] else 'idles'}"
                     f"  utilisation {v['utilisation']:.3f}")
    return "\n".join(lines)


def capture_text(found: CapturePath, figures: dict[str, Figure], doc: dict[str, Any]) -> str:
    """``model CAPTURE``'s text: the flow, each figure with its source (or why it is missing), the models on them,
    the busy-link rule for the decisions replayed at the flow's losses, and the flows whose path is complete when
    this one's is not."""
    width = terminal_width()

    def wrap(text: str, indent: str = "    ") -> str:
        return textwrap.fill(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)

    confidence = found.path.get("confidence")
    lines = [wrap(f"{found.file}, {found.chosen}" + (f" (path confidence {confidence})" if confidence else ""))]
    for key, name, _, unit, scale in FIGURES:
        fig = figures[key]
        value = "—" if fig.value is None else f"{fig.value / scale:.4g}{' ' + unit if unit else ''}"
        source = {"capture": "from the capture", "missing": "missing"}.get(fig.source, fig.source)
        lines.append(wrap(f"  {name}: {value}, {source}" + (f": {fig.note}" if fig.note else "")))
    lines += [line if line.startswith("  ") else wrap(line) for line in models_text(doc, figures).splitlines()]
    replayed = doc.get("replayed") or {}
    if replayed:
        losses = max(v["losses"] for v in replayed.values())
        lines.append(wrap(f"busy-link rule at this flow's {losses} losses (b = median of 1 − ssthresh/w; "
                          "real_sender: what the captured sender did): " + ", ".join(
                              f"{n} b {v['decrease']:.2f} ({'busy' if v['busy_link'] else 'idles'})"
                              for n, v in replayed.items()), "  "))
    if any(f.value is None for f in figures.values()) and found.complete:
        lines.append(wrap("flows whose path has every figure: " + ", ".join(map(str, found.complete))
                          + f" (--flow {found.complete[0]})", "  "))
    return "\n".join(lines)

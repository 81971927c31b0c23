"""``ackreplay whatif``: what each congestion control would have done in control on the path a capture shows
(``ackreplay.whatif``; docs/whatif.md): a simulated bulk sender per algorithm on the flow's inferred path, the
captured flow beside them, the self-check first, each figure with its range over the path's plausible values."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Annotated, Any

import typer

from ackreplay.cli.errors import EXIT_USAGE, fail
from ackreplay.cli.inputs import DEFAULT_MEMORY_BUDGET_MB, MemoryBudget
from ackreplay.cli.render import terminal_width

#: Exit code of a what-if the flow's path cannot carry (a figure missing, low confidence, a shared bottleneck).
EXIT_NO_WHATIF = 6
#: The table's columns: (result key, header, unit, scale, digits).
COLUMNS = (("goodput_bps", "goodput", "Mbit/s", 1e-6, 3), ("utilisation", "utilisation", "", 1.0, 3),
           ("loss_rate", "loss rate", "%", 100.0, 3), ("queue_delay_mean_s", "queue mean", "ms", 1e3, 1),
           ("queue_delay_p95_s", "queue p95", "ms", 1e3, 1), ("share", "share", "", 1.0, 2))


def whatif(
    capture: Annotated[Path, typer.Argument(metavar="CAPTURE",
                                            help="A capture (pcap, pcapng, optionally gzipped; - reads standard "
                                                 "input).")],
    algorithms: Annotated[str, typer.Option("-e", "--algorithms", help="Comma-separated algorithms to put in "
                          "control: newreno, westwood_plus, cubic, bic, stcp, hstcp, htcp, bbr (default: all but bbr; "
                          "bbr_bw is bbr); also any other Westwood-family estimator (be, re, crb, abse, tibet, "
                          "tibet_tx, newbr) or plugin, which grows as NewReno and decides at each loss.")] = "",
    flow: Annotated[int | None, typer.Option("--flow", help="The flow whose path to use (as `ackreplay flows` lists "
                    "them; default: the largest bulk flow).")] = None,
    sender_cc: Annotated[str | None, typer.Option("--sender-cc", help="The control the captured sender ran, for the "
                         "self-check (default: the capture's metadata names it, else CUBIC, Linux's default).")] = None,
    duration: Annotated[float | None, typer.Option("--duration", help="Simulated seconds per run (default: the "
                        "captured flow's span; at most 120).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="The simulation's random seed (random loss).")] = 1,
    allow_vantage: Annotated[bool, typer.Option("--allow-vantage", help="Also use flows not captured at the sender "
                             "whose sender view cannot be rebuilt.")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of the table (with the time series).")] = False,
) -> None:
    """What each congestion control would have done in control on this flow's path: a packet-level simulation of
    one bulk sender per algorithm on the capacity, base RTT, buffer and random loss inferred from the capture
    (goodput, utilisation, loss rate, queueing delay, share), beside the flows the capture shows sharing the
    bottleneck (each under its own control from its captured start), each figure with its range over the path's
    plausible figures, beside the captured flow. The captured sender's own control is re-enacted first: where it
    does not reproduce the captured flow (goodput within 10 %, loss-event rate within 30 %) the results are
    withheld."""
    from ackreplay.whatif.algorithms import ALGORITHMS, check_algorithms
    from ackreplay.whatif.errors import WhatIfError
    from ackreplay.whatif.runs import MAX_DURATION_S

    try:
        chosen = check_algorithms([a for a in algorithms.split(",") if a.strip()] if algorithms else ALGORITHMS)
        if duration is not None and not (math.isfinite(duration) and 0 < duration <= MAX_DURATION_S):
            raise WhatIfError("bad_duration", f"--duration is in (0, {MAX_DURATION_S:g}] s, not {duration:g}")
    except WhatIfError as exc:
        fail(EXIT_USAGE, exc.code, exc.message)
    doc = run_whatif(capture, chosen, flow, sender_cc, duration, seed, allow_vantage, memory_budget)
    print(json.dumps(doc, indent=1, allow_nan=False) if as_json else whatif_text(doc))


def run_whatif(capture: Path, algorithms: list[str], flow: int | None, sender_cc: str | None,
               duration: float | None, seed: int, allow_vantage: bool, memory_budget: int) -> dict[str, Any]:
    """Replay the capture as ``score`` does (its path inference, shared bottlenecks included), take ``flow`` (or
    the largest bulk flow) and run the what-if on its path; a path that cannot carry one exits 6."""
    from ackreplay.cli.model_cmd import replayed_paths
    from ackreplay.whatif.captured import sender_control
    from ackreplay.whatif.errors import WhatIfError
    from ackreplay.whatif.flows import flight_by_flow, flow_inputs
    from ackreplay.whatif.runs import what_if

    sc, name, by_id, replayed = replayed_paths(capture, flow, ["newreno"], allow_vantage, memory_budget)
    if flow is None:
        bulk = [fid for fid in replayed if sc.bulk(by_id[fid].bytes)]
        if not replayed:
            fail(EXIT_NO_WHATIF, "no_flow", f"{name}: no flow was replayed, so no path was inferred")
        flow = max(bulk or replayed, key=lambda fid: (by_id[fid].bytes, -fid))
    if flow not in replayed:
        fail(EXIT_NO_WHATIF, "flow_not_replayed", f"{name}: flow {flow} was not replayed "
             f"({sc.replay.skipped.get(flow, 'no reason recorded')}), so no path was inferred")
    summary = by_id[flow]
    try:
        source = None if name == "-" else capture
        rng, captured, cross = flow_inputs(replayed[flow], summary, sc.replay.path_groups, by_id,
                                           lambda sender: sender_control(source, sender), capture=source,
                                           flights=flight_by_flow(sc.replay.flows))
        sender = sender_control(source, summary.sender, sender_cc)
        result = what_if(rng, captured, sender, algorithms, duration_s=duration, seed=seed, cross=cross)
    except WhatIfError as exc:
        code = EXIT_USAGE if exc.code == "bad_duration" else EXIT_NO_WHATIF
        fail(code, exc.code, f"{name}, flow {flow}: {exc.message}")
    return {"file": name, "flow_id": flow, "sender": summary.sender, "receiver": summary.receiver,
            **result.as_dict()}


def _cell(value: float | None, rng: list[float] | None, scale: float, digits: int) -> str:
    if value is None:
        return "—"
    text = f"{value * scale:.{digits}f}"
    if rng is not None and (rng[0] != value or rng[1] != value):
        text += f" [{rng[0] * scale:.{digits}f}–{rng[1] * scale:.{digits}f}]"
    return text


def whatif_text(doc: dict[str, Any]) -> str:
    """The what-if as text: the path, the self-check, then one row per algorithm (each figure with its range) and
    the captured flow's row."""
    from ackreplay.cli.score_table import block_table

    width = terminal_width()

    def wrap(text: str) -> str:
        return textwrap.fill(text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)

    p = doc["path"]["figures"]
    lines = [wrap(f"{doc['file']}, flow {doc['flow_id']}: {doc['sender']} -> {doc['receiver']}"),
             wrap(f"path ({doc['path']['confidence']} confidence): {p['capacity_bps'] / 1e6:.3f} Mbit/s, base RTT "
                  f"{p['base_rtt_s'] * 1e3:.1f} ms, buffer {p['buffer_bytes']:.0f} B, random loss "
                  f"{p['random_loss_rate']:.3g}; {doc['duration_s']:.1f} s simulated per run, seed {doc['seed']}"
                  + ("; the sender paced (every sender re-enacted paces)" if doc["path"].get("paced") else ""))]
    lines += [wrap(f"  {k}: {why}") for k, why in doc["path"]["assumed"].items()]
    if doc["cross_traffic"]:
        lines.append(wrap("cross traffic (the flows sharing the bottleneck, simulated beside it): " + ", ".join(
            f"{'a flow not in the capture' if c['flow_id'] is None else 'flow ' + str(c['flow_id'])} "
            f"{c['control']} from {c['offset_s']:+.2f} s" for c in doc["cross_traffic"])))
    sc = doc["self_check"]
    ratios = (f"goodput ratio {sc['goodput_ratio']:.3f}, loss-event rate ratio "
              f"{'—' if sc['loss_rate_ratio'] is None else format(sc['loss_rate_ratio'], '.3f')}"
              if sc["goodput_ratio"] is not None else "not run")
    lines.append(wrap(f"self-check ({sc['algorithm']}, {sc['algorithm_source']}): "
                      f"{'passed' if sc['passed'] else 'FAILED'}: {ratios}" + (f"; {sc['reason']}" if sc["reason"]
                                                                                else "")))
    drops, draws = doc["path"].get("random_drops"), sc.get("simulated", {}).get("draws")
    if drops:
        beside = (f"; the mean over {draws['seeds']} draws at the rate, beside it: goodput ratio "
                  f"{draws['goodput_ratio']:.3f}" if draws else "")
        lines.append(wrap(f"  random loss: the capture's {drops['replayed']} random drops replayed in every run (the "
                          f"{drops['hidden_segments']} segments whose fate it does not show, and those past its "
                          f"{drops['segments']}, drawn at the rate){beside}"))
    if doc["withheld"]:
        lines.append(wrap(f"what-if withheld [{doc['withheld_code']}]: {doc['withheld']}"))
        return "\n".join(lines)
    cap = doc["captured"]
    names = [*doc["results"], "captured"]
    cells = [[_cell(r.get(k), r["ranges"].get(k), s, d) for k, _, _, s, d in COLUMNS] for r in doc["results"].values()]
    cells.append([_cell(cap.get(k), None, s, d) for k, _, _, s, d in COLUMNS])
    lines.append(block_table("algorithm", names, [(h, u) for _, h, u, _, _ in COLUMNS], cells, width))
    lines.append(wrap("[low–high]: the figure over the path's plausible values (capacity ±10 %, base RTT ±3 %, buffer "
                      "±25 %, random loss ±30 %: the path's calibration bounds); share: of the bytes every flow on "
                      "the bottleneck delivered (1 alone); captured: the flow as the capture shows it"))
    return "\n".join(lines)

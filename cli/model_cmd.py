"""``ackreplay model``: what the seeds' models predict on a path (ESTIMATORS.md §9, ``path.analytic``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def model(
    buffer_bdp: Annotated[float, typer.Option("--buffer-bdp",
                                              help="Bottleneck buffer as a multiple of the BDP.")] = 1.0,
    curve: Annotated[str | None, typer.Option(
        "--curve", help="A range LO:HI[:POINTS] of buffer/BDP: print seed 002's shares over it.")] = None,
    capacity_mbit: Annotated[float, typer.Option("--capacity", help="Capacity, Mbit/s (seed 004's model).")] = 200.0,
    rtt_ms: Annotated[float, typer.Option("--rtt", help="Base RTT, ms (seed 004's model).")] = 100.0,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of text.")] = False,
) -> None:
    """Seed 002's NewReno/Westwood+ shares (with and without the floor-half fix) and seed 004's busy-link
    verdict and single-flow utilisation per algorithm, at a buffer/BDP."""
    from ackreplay.path.analytic import PathModel, seed002_curve, seed002_shares, seed004

    if curve:
        parts = [float(x) for x in curve.split(":")]
        if len(parts) not in (2, 3) or not 0 < parts[0] < parts[1]:
            raise typer.BadParameter("--curve LO:HI[:POINTS] with 0 < LO < HI")
        points = int(parts[2]) if len(parts) == 3 else 12
        rows = [{"plain": p, "floor_half": f} for p, f in zip(seed002_curve(parts[0], parts[1], points),
                                                           seed002_curve(parts[0], parts[1], points, True),
                                                           strict=True)]
        if as_json:
            print(json.dumps(rows, indent=1))
            return
        print("buffer/BDP  NewReno  Westwood+  W+/NR   | floor-half fix: NewReno  Westwood+")
        for r in rows:
            p, f = r["plain"], r["floor_half"]
            print(f"{p['buffer_over_bdp']:10.3f}  {p['newreno']:7.3f}  {p['westwood_plus']:9.3f}  {p['ratio']:6.3f}"
                  f"  | {f['newreno']:22.3f}  {f['westwood_plus']:9.3f}")
        return
    doc: dict[str, Any] = {"buffer_over_bdp": buffer_bdp, "seed002": seed002_shares(buffer_bdp),
           "seed002_floor_half": seed002_shares(buffer_bdp, floor_half=True),
           "seed004": seed004(PathModel.of(capacity_mbit * 1e6, rtt_ms / 1e3, buffer_bdp))}
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    s, f = doc["seed002"], doc["seed002_floor_half"]
    print(f"seed 002 at B = {buffer_bdp:g}×BDP: NewReno {s['newreno']:.3f}, Westwood+ {s['westwood_plus']:.3f} of C "
          f"(utilisation {s['utilisation']:.3f}); with the floor-half fix: NewReno {f['newreno']:.3f}, "
          f"Westwood+ {f['westwood_plus']:.3f}")
    print(f"seed 004, one flow on {capacity_mbit:g} Mbit/s, {rtt_ms:g} ms, B = {buffer_bdp:g}×BDP:")
    for name, v in doc["seed004"].items():
        print(f"  {name:14s} b = {v['decrease']:.3f}  link {'busy' if v['busy_link'] else 'idles'}"
              f"  utilisation {v['utilisation']:.3f}")

"""The congestion graph as a PNG or SVG file (matplotlib, no browser): the same panels and colours as the
dashboard's ``congestion.js`` — four, and a fifth (the queue the RTT implies, with the inferred buffer) when
the path's capacity is known; three (time–sequence, flight, RTT) for a flow that was not replayed — drawn from
:meth:`graphs.congestion.CongestionSource.window`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The dashboard's palette (``congestion.js``), so an estimator has one colour everywhere.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f"]
FORMATS = ("png", "svg", "pdf")


def _xy(d: dict[str, list[Any]], scale: float = 1.0) -> tuple[list[float], list[float]]:
    return d["t"], [float("nan") if v is None else v * scale for v in d["y"]]


def render(data: dict[str, Any], path: Path, *, title: str = "", log: bool = False, shown: set[str] | None = None,
           width_in: float = 12.0, dpi: int = 150) -> Path:
    """Draw ``data`` (one window of the graph) to ``path``; the format follows the suffix (png, svg, pdf)."""
    # a Figure of its own, not pyplot's: pyplot's import (its backend set-up, the colormap registry's docs, the
    # state machine) is a third of the graph's start-up, and a file needs no window
    from matplotlib.figure import Figure

    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"cannot write {path.name!r}: the graph is written as {', '.join(FORMATS)}")
    names = [n for n in data["rates"] if n not in ("achieved", "truth")]
    lines = Lines({n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)},
                  [n for n in names if shown is None or n in shown],
                  {n for n in names if any(v is not None for v in data["rates"][n]["y"])})  # has an estimate here
    queue = data.get("queue")
    # (panel, its height ratio): a flow that was not replayed has no rate panel — what the capture shows alone
    panels: list[tuple[Callable[[Any], None], float]] = [
        (lambda ax: _sequence(ax, data["sequence"]), 1.4), (lambda ax: _flight(ax, data, lines), 1.0)]
    if data.get("replayed", True):
        panels.append((lambda ax: _rates(ax, data, lines, log), 1.0))
    panels.append((lambda ax: _rtt(ax, data["rtt"]), 0.8))
    if queue:
        panels.append((lambda ax: _queue(ax, queue), 0.7))
    ratios = [r for _, r in panels]
    # the four panels 0.85 of the width high, 1.0 with the queue's; fewer panels, proportionally less
    height = width_in * (0.85 + 0.15 * bool(queue)) * sum(ratios) / (4.2 + 0.7 * bool(queue))
    fig = Figure(figsize=(width_in, height), layout="constrained")
    axes = fig.subplots(len(ratios), 1, sharex=True, gridspec_kw={"height_ratios": ratios})
    for (draw, _), ax in zip(panels, axes, strict=True):
        draw(ax)
    last = axes[-1]
    last.set_xlabel("time since the flow's first packet (s)")
    last.set_xlim(*data["window"])
    for ep in data["episodes"]:
        for ax in axes:
            ax.axvspan(ep["start"], max(ep["end"], ep["start"]), color="#d62728" if ep["kind"] == "timeout"
                       else "#ff7f0e", alpha=0.15, lw=0)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=7, ncol=6, framealpha=0.8)
    if title:
        fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=dpi)
    return path


@dataclass(frozen=True)
class Lines:
    """The estimators' lines: each one's colour, those drawn (``shown``), and those with an estimate in the
    window (the others, decision-only controls, are named by their markers)."""

    color: dict[str, str]
    visible: list[str]
    drawn: set[str]


def _sequence(seq: Any, s: dict[str, Any]) -> None:
    seq.plot(*_xy(s["sent"]), ".", ms=1.5, color="#222", label="data sent")
    seq.plot(*_xy(s["retransmitted"]), "x", ms=5, color="#d62728", label="retransmitted")
    seq.step(*_xy(s["ack"]), where="post", color="#2ca02c", lw=1, label="ACK")
    if s["sack"]["t"]:
        seq.vlines(s["sack"]["t"], s["sack"]["lo"], s["sack"]["hi"], color="#9467bd", lw=2, label="SACK blocks")
    seq.step(*_xy(s["rwnd"]), where="post", color="#bcbd22", lw=0.8, label="receive window")
    seq.set_ylabel("sequence (bytes)")


#: The shaded bands of what limited the sender (``scoring.limits``), as in ``congestion.js``: the network's
#: time (``cwnd``) unshaded, so that what is not the network stands out.
LIMIT_COLORS = {"rwnd": "#bcbd22", "app": "#17becf", "sndbuf": "#9467bd", "unknown": "#bbbbbb"}


def _flight(flight: Any, data: dict[str, Any], lines: Lines) -> None:
    f = data["flight"]
    named: set[str] = set()
    for a, b, label in data.get("limits") or []:
        if label in LIMIT_COLORS:
            flight.axvspan(a, b, color=LIMIT_COLORS[label], alpha=0.18, lw=0,
                           label=None if label in named else f"limited by {label}")
            named.add(label)
    flight.plot(*_xy(f["flight"]), color="#222", lw=0.8, label="bytes in flight")
    flight.plot(*_xy(f["ideal"]), "_", ms=14, mew=2, color="black", label="ideal (rate × RTTmin)")
    for n in lines.visible:
        e = f["estimators"].get(n)
        if e:  # a decision-only control (§8: no estimate to draw) is named here, by its markers
            flight.plot(e["t"], [float("nan") if v is None else v for v in e["ssthresh"]], "o", ms=4,
                        color=lines.color[n], label=None if n in lines.drawn else f"{n} ssthresh")
            flight.plot(e["cwnd_t"], [float("nan") if v is None else v for v in e["cwnd"]], "D", ms=4,
                        mfc="none", color=lines.color[n])
    top = data.get("flight_top")
    if top:
        flight.set_ylim(0, top)
        for n in lines.visible:
            _edge_marks(flight, (data.get("flight_clipped") or {}).get(n), top, lines.color[n], n, 1.0, "B")
    flight.set_ylabel("in flight (bytes)")


def _edge_marks(ax: Any, clipped: dict[str, list[Any]] | None, top: float, color: str, name: str, scale: float,
                unit: str) -> None:
    """An estimator's values above the panel's top: ▲ at the edge, the largest written beside it."""
    if not clipped:
        return
    ax.plot(clipped["t"], [top * scale] * len(clipped["t"]), "^", ms=6, color=color, clip_on=False)
    i = max(range(len(clipped["y"])), key=lambda k: clipped["y"][k])
    ax.annotate(f"{name} {clipped['y'][i] * scale:.3g} {unit}", (clipped["t"][i], top * scale), xytext=(4, -10),
                textcoords="offset points", fontsize=7, color=color, annotation_clip=False)


def _rates(rates: Any, data: dict[str, Any], lines: Lines, log: bool) -> None:
    r = data["rates"]
    rates.plot(*_xy(r["achieved"], 1e-6), color="black", lw=2.5, label="achieved")
    if "truth" in r:
        rates.plot(*_xy(r["truth"], 1e-6), "--", color="grey", lw=2, label="truth")
    if data.get("capacity_bps"):
        rates.axhline(data["capacity_bps"] / 1e6, ls=":", color="grey", lw=1.5, label="capacity (packet pairs)")
    top = data.get("y_top")
    for n in (n for n in lines.visible if n in lines.drawn):
        rates.plot(*_xy(r[n], 1e-6), color=lines.color[n], lw=1, label=n)
        if top and not log:
            _edge_marks(rates, data["clipped"].get(n), top, lines.color[n], n, 1e-6, "Mbit/s")
    if log:
        rates.set_yscale("log")
    elif top:
        rates.set_ylim(0, top / 1e6)
    rates.set_ylabel("Mbit/s" + (" (log)" if log else ""))


def _rtt(rtt: Any, rt: dict[str, Any]) -> None:
    rtt.plot(*_xy(rt["samples"]), ".", ms=1.5, color="#1f77b4", label="RTT samples")
    rtt.plot(*_xy(rt["srtt"]), color="#ff7f0e", lw=1, label="srtt")
    rtt.plot(*_xy(rt["rttmin"]), "--", color="#2ca02c", lw=1, label="RTTmin")
    rtt.set_ylabel("RTT (ms)")


def _queue(ax: Any, queue: dict[str, Any]) -> None:
    ax.plot(*_xy(queue["queue"]), ".", ms=1.5, color="#8c564b", label="queue (RTT − RTTmin)·C")
    if queue.get("buffer_bytes"):
        ax.axhline(queue["buffer_bytes"], ls=":", color="#8c564b", lw=1.5, label="inferred buffer")
    ax.set_ylabel("queue (bytes)")

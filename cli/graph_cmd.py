"""``ackreplay graph FILE``: the congestion graph of a flow as a PNG, SVG or PDF file (no browser needed), or its
time–sequence graph in xplot's format as tcptrace writes it (``--format xpl``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ackreplay.cli import collection
from ackreplay.cli.errors import EXIT_NOT_FOUND, EXIT_USAGE, fail, guarded, warn
from ackreplay.cli.inputs import DEFAULT_MEMORY_BUDGET_MB, ESTIMATORS_HELP, FilterOption, MemoryBudget, label
from ackreplay.cli.kernel_choice import choose_kernels
from ackreplay.cli.plugin_options import PluginOption, load_plugin_files
from ackreplay.cli.warmup import announce_cold


def graph(
    file: Annotated[Path, typer.Argument(metavar="CAPTURE",
                                         help="Capture file (pcap, pcapng, optionally gzipped); - reads standard "
                                              "input.")],
    flow: Annotated[list[int] | None, typer.Option("--flow", help="The flow to draw (repeat for several; default: "
                    "the replayed flow with the most bytes, else the flow with the most bytes). A flow that was not "
                    "replayed is drawn from the capture alone, without the estimators.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The file to write: .png, .svg, .pdf or "
                      ".xpl (default: <capture>-flow<ID>.<format>). With several flows, -flow<ID> is added to each "
                      "name.")] = None,
    fmt: Annotated[str | None, typer.Option("--format", metavar="FORMAT", help="png, svg, pdf, or xpl: the "
                   "time–sequence graph in xplot's format as tcptrace -S writes it (data segments, retransmissions "
                   "marked R, the ACK line, the receive window, SACK blocks; from the capture alone, nothing "
                   "replayed). Default: the output's suffix, else png.")] = None,
    t0: Annotated[float | None, typer.Option("--t0", help="Window start (s since the flow's first packet).")] = None,
    t1: Annotated[float | None, typer.Option("--t1", help="Window end (s).")] = None,
    log: Annotated[bool, typer.Option("--log", help="Log scale on the rate panel (nothing clipped).")] = False,
    estimators: Annotated[str | None, typer.Option("--estimators", "-e",
                          help=ESTIMATORS_HELP + " NewReno is not drawn unless named.")] = None,
    width: Annotated[float, typer.Option("--width", min=4.0, max=40.0, help="Width in inches (150 dpi).")] = 12.0,
    allow_vantage: Annotated[bool, typer.Option("--allow-vantage", help="Also replay flows whose sender view "
                             "cannot be rebuilt.")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    filter_expr: FilterOption = None,
    plugin: PluginOption = None,
) -> None:
    """Draw a flow's congestion graph (time–sequence, flight with each estimator's cwnd/ssthresh at every loss,
    estimates against the achieved rate, RTT) to a PNG, SVG or PDF file. Any flow with data is drawn, as
    tcptrace and Wireshark draw it: one that was not replayed without the estimators and the rate panel."""
    choose_kernels([file])
    from ackreplay.cli.score_cmd import flow_filter, score_input
    from ackreplay.core.capture_scoring import build_estimators
    from ackreplay.estimators import EstimatorError
    from ackreplay.graphs.congestion import source_for
    from ackreplay.graphs.static import FORMATS, render

    name = label(file)
    kinds = (*FORMATS, "xpl")
    if output is not None and output.suffix.lower().lstrip(".") not in kinds:
        fail(EXIT_USAGE, "bad_format", f"cannot write {output.name!r}: the graph is written as "
             f"{', '.join('.' + f for f in kinds)}")
    if fmt is not None and fmt.lower() not in kinds:
        fail(EXIT_USAGE, "bad_format", f"--format {fmt!r}: the graph is written as {', '.join(kinds)}")
    fmt = fmt.lower() if fmt is not None else output.suffix.lower().lstrip(".") if output is not None else "png"
    if output is not None and output.suffix.lower().lstrip(".") != fmt:
        fail(EXIT_USAGE, "bad_format", f"--format {fmt} but the output is {output.name!r}")
    if fmt == "xpl":
        write_xpl(file, name, flow, output, memory_budget, filter_expr)
        return
    chosen = [n.strip() for n in estimators.split(",") if n.strip()] if estimators else None
    load_plugin_files(plugin)
    try:
        ests = build_estimators(chosen, {})
    except EstimatorError as exc:
        fail(EXIT_USAGE, exc.code, exc.message)
    announce_cold()
    sc = score_input(file, ests, allow_vantage=allow_vantage, memory_budget=memory_budget << 20,
                     select=flow_filter(flow, None, None, filter_expr))
    replayed = {fr.flow_id: fr for fr in sc.replay.flows}
    ids = _chosen(sc.ingest, flow, replayed, name)
    shown = {e.name for e in ests} if chosen else {e.name for e in ests if e.name != "newreno"}
    for k, (fid, target) in enumerate(zip(ids, _targets(name, ids, output, fmt), strict=True)):
        if k == 1:  # a figure is held together by reference cycles: several are collected (``cli.collection``)
            collection.resume()
        summary = sc.ingest.flows.by_id()[fid]
        fr = replayed.get(fid)
        data = source_for(sc.ingest, fr, fid).window(t0, t1, px=int(width * 150))
        title = f"{Path(name).name} flow {fid}: {summary.sender} → {summary.receiver}"
        if fr is None:  # what the capture shows is drawn all the same; the estimators need the replay
            why = sc.replay.skipped.get(fid, "not replayed")
            warn(f"flow {fid} was not replayed ({why}): drawn from the capture alone (time–sequence, flight, "
                 "RTT), without the estimators")
            title += " (not replayed)"

        def write(data: dict = data, target: Path = target, title: str = title) -> None:
            render(data, target, title=title, log=log, shown=shown, width_in=width)

        guarded(write)
        print(f"wrote {target}")


def _targets(name: str, ids: list[int], output: Path | None, fmt: str) -> list[Path]:
    """The file each flow's graph goes to: ``output`` (with -flow<ID> added for several flows), else
    <capture>-flow<ID>.<fmt> in the current directory."""
    stem = Path(Path(name).name.split(".")[0])
    if output is None:
        return [Path(f"{stem}-flow{fid}.{fmt}") for fid in ids]
    if len(ids) > 1:
        return [output.with_name(f"{output.stem}-flow{fid}{output.suffix}") for fid in ids]
    return [output]


def write_xpl(file: Path, name: str, flow: list[int] | None, output: Path | None, memory_budget: int,
              filter_expr: str | None) -> None:
    """Each chosen flow's time–sequence graph in xplot's format (``graphs.xpl``), from the capture alone."""
    from ackreplay.cli.ingest_cmds import load
    from ackreplay.cli.score_cmd import flow_filter
    from ackreplay.graphs.xpl import tsg_lines

    keep = flow_filter(None, None, None, filter_expr)
    announce_cold()
    cap = load(file, memory_budget)
    if keep is not None:
        cap.flows = cap.flows.select(keep)
    ids = _chosen(cap, flow, {}, name)
    for fid, target in zip(ids, _targets(name, ids, output, "xpl"), strict=True):
        fd = cap.flow(fid)
        title = f"{fd.summary.sender}_==>_{fd.summary.receiver} (time sequence graph)"

        def write(fd: Any = fd, target: Path = target, title: str = title) -> None:
            with target.open("w", encoding="ascii") as out:
                for line in tsg_lines(title, fd.segments, fd.acks):
                    out.write(line + "\n")

        guarded(write)
        print(f"wrote {target}")


def _chosen(ingest: Any, flow: list[int] | None, replayed: dict[int, Any], name: str) -> list[int]:
    """The flows to draw: each ``--flow`` (exit 4 naming those the capture does not have), else the replayed
    flow with the most bytes, else — nothing replayed — the flow with the most bytes, one that keeps ingest's
    invariants first (an invalid flow's bytes are not what it carried); exit 4 when the capture has no flow."""
    import polars as pl

    known = ingest.flows.by_id()
    if flow:
        missing = [f for f in flow if f not in known]
        if missing:
            fail(EXIT_NOT_FOUND, "flow_not_found", f"{name}: {'; '.join(f'flow {f}: no such flow' for f in missing)}"
                 f" (`ackreplay flows {name}` lists them)")
        return list(flow)
    frame = ingest.flows.frame
    if not frame.height:
        fail(EXIT_NOT_FOUND, "no_flow", f"{name}: no TCP connection carried data: there is no flow to draw")
    if replayed:
        frame = frame.filter(pl.col("flow_id").is_in(list(replayed)))
    by_bytes = frame.sort([pl.col("invalid") != "", pl.col("bytes")], descending=[False, True], maintain_order=True)
    return [int(by_bytes["flow_id"][0])]

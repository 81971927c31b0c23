"""``ackreplay score``: ingest, replay and score captures with no server; print and optionally write."""

from __future__ import annotations

import json
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ackreplay.cli import collection
from ackreplay.cli.boards import combined_summary
from ackreplay.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_USAGE, fail, guarded, warn
from ackreplay.cli.inputs import (
    DEFAULT_MEMORY_BUDGET_MB,
    ESTIMATORS_HELP,
    FilterOption,
    MemoryBudget,
    label,
    regular_file,
)
from ackreplay.cli.kernel_choice import choose_kernels
from ackreplay.cli.plugin_options import PluginOption, load_plugin_files, plugin_failures
from ackreplay.cli.progress import Progress
from ackreplay.cli.render import DEFAULT_WIDTH, terminal_width
from ackreplay.cli.score_table import legend as column_legend
from ackreplay.cli.score_table import score_table
from ackreplay.cli.warmup import announce_cold

if TYPE_CHECKING:
    from ackreplay.core.capture_scoring import ScoredCapture


def score(
    files: Annotated[list[Path], typer.Argument(metavar="CAPTURE...",
                                                help="Capture files (pcap, pcapng, optionally gzipped); - reads "
                                                      "standard input (tcpdump -w - | ackreplay score -).")],
    estimators: Annotated[str | None, typer.Option("--estimators", "-e",
                          help=ESTIMATORS_HELP)] = None,
    param: Annotated[list[str] | None, typer.Option("--param", "-p",
                     help="ESTIMATOR.PARAM=VALUE, repeatable (e.g. abse.N=12).")] = None,
    truth: Annotated[str | None, typer.Option("--truth", help="Ground truth, e.g. bottleneck=5Mbit,shared_by=all "
                     "or fair_share=2.5Mbit (default: a sidecar next to the capture, if any).")] = None,
    no_sidecar: Annotated[bool, typer.Option("--no-sidecar", help="Ignore ground-truth sidecar files.")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write series, decisions (Parquet), scores "
                   "(CSV, JSON) and an offline HTML report here.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table | json | csv")] = "table",
    allow_vantage: Annotated[bool, typer.Option("--allow-vantage", help="Also replay flows not captured at the "
                             "sender (results are flagged with their vantage).")] = False,
    all_flows: Annotated[bool, typer.Option("--all-flows", help="Table: also show flows under 64 kB (control "
                         "connections); JSON and CSV always hold every flow.")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    flow: Annotated[list[int] | None, typer.Option("--flow", help="Replay only this flow id (as `ackreplay flows` "
                    "lists them), repeatable.")] = None,
    host: Annotated[list[str] | None, typer.Option("--host", help="Replay only flows with this address at "
                    "either end, repeatable.")] = None,
    port: Annotated[list[int] | None, typer.Option("--port", help="Replay only flows with this port at either "
                    "end, repeatable.")] = None,
    rank_not_reproducible: Annotated[bool, typer.Option("--rank-not-reproducible", help="Combined summary: also "
                                     "rank estimators on flows they are not reproducible from (BE, CRB off the "
                                     "sender; labelled in every output either way).")] = False,
    include_incomparable: Annotated[bool, typer.Option("--include-incomparable", help="Combined summary: also "
                                    "rank on flows the estimators cannot be compared on (listed and explained "
                                    "in every output either way).")] = False,
    legend: Annotated[bool, typer.Option("--legend/--no-legend", help="Table: say what each column is, under "
                      "the tables.")] = True,
    filter_expr: FilterOption = None,
    plugin: PluginOption = None,
) -> None:
    """Replay every TCP flow through the estimators and compare them (no server needed).

    With several captures, the table ends with a combined summary over all their bulk flows."""
    choose_kernels(files)
    # imported here, not at the top, so that other commands (`flows`, `serve`…) start without them
    from ackreplay.core.capture_scoring import build_estimators, document, jsonable, parse_params
    from ackreplay.estimators import EstimatorError
    from ackreplay.scoring.truth import Truth

    if fmt not in ("table", "json", "csv"):
        fail(EXIT_USAGE, "bad_format", f"--format must be table, json or csv, got {fmt!r}")
    load_plugin_files(plugin)
    try:
        chosen = [n.strip() for n in estimators.split(",") if n.strip()] if estimators else None
        ests = build_estimators(chosen, parse_params(param or []))
        given = Truth.parse(truth) if truth else None
    except EstimatorError as exc:
        fail(EXIT_USAGE, exc.code, exc.message)
    select = flow_filter(flow, host, port, filter_expr)
    announce_cold(unused=() if out is not None else ("graphs",))  # (the report's M4 downsampling is graphs')
    scored = score_all(files, ests, flow or [], truth=given, use_sidecar=not no_sidecar, allow_vantage=allow_vantage,
                       memory_budget=memory_budget << 20, select=select,
                       keep_series=out is not None)  # series only for --out: memory flow by flow
    # the JSON document only where it is output (on a capture of thousands of flows, building it and making
    # every value JSON-safe is ~1 s); the CSV makes its own values safe
    doc = jsonable(document(scored, ests)) if fmt == "json" or out is not None else {}
    if fmt == "json":
        print(json.dumps(doc, indent=2))
    elif fmt == "csv":
        from ackreplay.cli.score_csv import scores_csv_of

        print(scores_csv_of(scored), end="")
    else:
        print_tables(scored, all_flows=all_flows, rank_not_reproducible=rank_not_reproducible, legend=legend,
                     include_incomparable=include_incomparable)
    if out is not None:
        guarded(lambda: write_outputs(out, scored, doc, ests))
        print(f"wrote series, decisions, scores and report.html to {out}", file=sys.stderr)


def score_all(files: list[Path], ests: list[Any], flows: list[int], **options: Any) -> list[ScoredCapture]:
    """Score every input under one progress bar (``options`` go to ``score_file``); a flow id of ``flows`` that an
    input lacks ends the process with exit 4. The inputs' warnings and the plugins' failures are printed once the
    bar is gone."""
    scored: list[ScoredCapture] = []
    warnings: list[str] = []
    with Progress(len(files)) as bar:
        for k, path in enumerate(files):
            if k == 1:  # a batch: the garbage collector back on from its second input (``cli.collection``)
                collection.resume()
            name = label(path)
            sc = score_input(path, ests, bar=bar.file(Path(name).name), **options)
            known = sc.ingest.flows.by_id()
            missing = [f for f in sorted(set(flows)) if f not in known]
            if missing:
                fail(EXIT_NOT_FOUND, "flow_not_found", f"{name}: no flow {', '.join(map(str, missing))} "
                     f"(it has {len(sc.ingest.flows)}: `ackreplay flows {name}` lists them)")
            warnings += [f"{name}: {w}" for w in sc.ingest.stats.warnings]
            scored.append(sc)
    warnings += plugin_failures(scored)
    for w in warnings:  # after the bar is gone
        warn(w)
    return scored


def print_tables(scored: list[ScoredCapture], *, all_flows: bool, rank_not_reproducible: bool,
                 legend: bool, include_incomparable: bool = False) -> None:
    """``score``'s table format: each capture's flows and tables, the combined summary over several captures,
    and the legend (when a score table was shown), to the terminal's width."""
    from ackreplay.scoring.ranking import NOT_REPRODUCIBLE

    width = terminal_width()
    for sc in scored:
        print(capture_text(sc, all_flows, width))
    if len(scored) > 1:
        print(combined_summary(scored, width, rank_not_reproducible, include_incomparable))
    if legend:
        shown = [scores for sc in scored for scores in shown_scores(sc, all_flows)]
        if shown:
            print(legend_text(width, truth=any(sc.truth is not None for sc in scored),
                              not_reproducible=any(NOT_REPRODUCIBLE in s for scores in shown
                                                   for s in scores.values())))


def shown_scores(sc: ScoredCapture, all_flows: bool) -> list[dict[str, dict[str, Any]]]:
    """The scores of each flow ``capture_text`` shows a score table for: a replayed flow (bulk, or any with
    ``all_flows``) that has an estimator's scores."""
    by_id = sc.ingest.flows.by_id()
    return [fr.scores for fr in sc.replay.flows
            if (all_flows or sc.bulk(by_id[fr.flow_id].bytes)) and any(n != "fairness" for n in fr.scores)]


def score_input(path: Path, ests: list[Any], *, bar: Progress | None = None, use_sidecar: bool = True,
                **options: Any) -> ScoredCapture:
    """Score one input (a file, or ``-``/a pipe) for ``score`` and ``report``: bad input ends the process
    with exit 3 and a message naming the problem, never a traceback; ``options`` go to ``score_file``."""
    import numpy as np

    from ackreplay.core.capture_scoring import score_file
    from ackreplay.estimators import EstimatorError
    from ackreplay.ingest import IngestError

    name = label(path)
    try:
        try:
            # an estimator's arithmetic on empty or degenerate input (no RTT sample yet…) yields NaN by design
            # (docs/estimators.md: NaN before the first sample); numpy's warnings about it are not for the user
            with regular_file(path) as readable, warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                sc = score_file(readable, ests, use_sidecar=use_sidecar and readable == path, progress=bar,
                                **options)
        finally:
            if bar is not None:
                bar.done()
    except IngestError as exc:
        fail(EXIT_BAD_INPUT, exc.code, f"{name}: {exc}")
    except EstimatorError as exc:
        fail(EXIT_BAD_INPUT, exc.code, f"{name}: {exc.message}")
    except OSError as exc:
        fail(EXIT_BAD_INPUT, "unreadable_input", f"{name}: {exc.strerror or exc}")
    sc.path = Path(name)
    return sc


def flow_filter(flows: list[int] | None, hosts: list[str] | None, ports: list[int] | None,
                expr: str | None = None) -> Callable[[Any], bool] | None:
    """The flows ``--flow``/``--host``/``--port``/``--filter`` select (each option: any of its values; all
    options given). A filter expression that cannot be used ends the process with exit 2 and its message."""
    if expr is not None:
        from ackreplay.ingest.flowfilter import FilterError, compile_filter

        try:
            matches = compile_filter(expr)
        except FilterError as exc:
            fail(EXIT_USAGE, exc.code, exc.message)
        rest = flow_filter(flows, hosts, ports)
        return matches if rest is None else (lambda s: matches(s) and rest(s))
    if not (flows or hosts or ports):
        return None

    def ends(s: Any) -> list[tuple[str, int]]:
        return [(e.rsplit(":", 1)[0].strip("[]"), int(e.rsplit(":", 1)[1])) for e in (s.sender, s.receiver)]

    def keep(s: Any) -> bool:
        return ((not flows or s.flow_id in flows)
                and (not hosts or any(h in hosts for h, _ in ends(s)))
                and (not ports or any(p in ports for _, p in ends(s))))

    return keep


def _wrap(text: str, width: int, indent: str = "   ") -> str:
    return textwrap.fill(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def legend_text(width: int, *, truth: bool = True, not_reproducible: bool = True) -> str:
    """The legend under the tables, without the rows of columns and marks no table shows (``vs truth``, ``(n/r)``)."""
    return "columns:\n" + column_legend(width, truth=truth, not_reproducible=not_reproducible)


def capture_text(sc: ScoredCapture, all_flows: bool = False, width: int | None = DEFAULT_WIDTH) -> str:
    """One capture's part of ``score``'s table format: each shown flow with its score table, path and why lines,
    then the flows not shown and not replayed as counts (one line per reason), shared bottlenecks and fairness."""
    from ackreplay.cli.wording import explain, limits_line, path_line
    from ackreplay.core.capture_scoring import capture_document

    d = capture_document(sc)
    wide = width or 10_000
    lines = [_wrap(f"== {sc.path}" + (f"  (truth: {sc.truth_source})" if sc.truth_source else ""), wide)]
    with_truth = sc.truth is not None
    for f in d["flows"]:
        if not f["replayed"] or (not sc.bulk(f["bytes"]) and not all_flows):
            continue
        lines.append(_wrap(f"-- flow {f['flow_id']}: {f['sender']} -> {f['receiver']}, {f['bytes']:,} bytes acked, "
                           f"goodput {f['goodput_bps'] / 1e6:.3f} Mbit/s (bytes / connection duration; while "
                           f"delivering {f['delivery_rate_bps'] / 1e6:.3f}), rttmin "
                           f"{1e3 * (f['rttmin_s'] or 0):.1f} ms, {f['loss_events']} loss events, vantage "
                           f"{vantage_label(f)}", wide))
        if any(n != "fairness" for n in f["scores"]):
            lines.append(score_table(f["scores"], with_truth, width, best=f.get("comparable") is not False))
        if f.get("comparable") is False:
            lines.append(_wrap(f"  not comparable (no best marked, left out of the rankings): "
                               f"{f['comparable_reason']}", wide, "    "))
        if f.get("path"):
            lines.append(_wrap(f"  path: {path_line(f['path'])}", wide, "        "))
        if f.get("limits"):
            lines.append(_wrap(f"  limited by: {limits_line(f['limits'])}", wide, "               "))
        if f.get("diagnostics"):
            lines += [_wrap(f"  why: {line}", wide, "       ") for line in explain(f["diagnostics"], f["scores"])]
    lines += [_wrap(line, wide) for line in unshown_lines(sc, d, all_flows)]
    return "\n".join(lines) + "\n"


def unshown_lines(sc: ScoredCapture, d: dict[str, Any], all_flows: bool) -> list[str]:
    """What ``capture_text`` says under the flows' tables: the short flows replayed but not shown and the flows not
    replayed, as counts with their first ids (every id with ``all_flows``), one line per reason; the shared
    bottlenecks; Jain's fairness (its estimates part only when an estimator has one)."""
    from ackreplay.cli.flow_lists import ID_BUDGET, id_list, skipped_lines
    from ackreplay.cli.wording import group_line
    from ackreplay.replay.engine import NOT_SELECTED

    budget = None if all_flows else ID_BUDGET
    lines = []
    small = [f["flow_id"] for f in d["flows"] if f["replayed"] and not sc.bulk(f["bytes"])]
    if small and not all_flows:
        many = len(small) > 1
        lines.append(f"{len(small):,} flow{'s' * many} under {sc.min_flow_bytes:,} bytes acked replayed, not shown "
                     f"(--all-flows shows {'them' if many else 'it'}): {id_list(small, budget)}")
    lines += skipped_lines({f["flow_id"]: f["skipped_reason"] for f in d["flows"]
                            if not f["replayed"] and f["skipped_reason"] != NOT_SELECTED}, budget,
                           "; --all-flows lists them")
    lines += [f"shared bottleneck, flows {', '.join(map(str, g['flows']))}: {group_line(g)}"
              for g in d.get("path_groups") or []]
    fair = d["scores"].get("fairness", {})
    if fair.get("goodput") is not None:
        estimates = [f"{k} {v:.3f}" for k, v in fair.items() if k != "goodput" and v is not None]
        lines.append(f"Jain's fairness over bulk flows: goodput {fair['goodput']:.3f}"
                     + (f"; estimates {', '.join(estimates)}" if estimates else ""))
    return lines


def vantage_label(f: dict[str, Any]) -> str:
    """``receiver (reconstructed, medium confidence)`` for a flow rebuilt as its sender saw it (§7); a tap with its
    position (``ingest.vantage.vantage_text``)."""
    from ackreplay.cli.wording import vantage_text

    where = vantage_text(str(f["vantage"]), f.get("vantage_position"))
    if not f.get("reconstruction"):
        return where
    return f"{where} (reconstructed, {f.get('confidence') or 'low'} confidence: {f.get('confidence_note', '')})"


def write_outputs(out: Path, scored: list[ScoredCapture], doc: dict[str, Any], ests: list[Any]) -> None:
    from ackreplay.cli.report import render
    from ackreplay.replay.results import decision_table, limit_table, series_table

    out.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    for sc in scored:
        stem = sc.path.name
        while stem in used:
            stem += "_"
        used.add(stem)
        d = out / stem
        d.mkdir(exist_ok=True)
        if sc.replay.flows:  # every flow's series and decisions, one table each (column flow_id)
            series_table(sc.replay.flows).write_parquet(d / "series.parquet")
            decision_table(sc.replay.flows).write_parquet(d / "decisions.parquet")
            limit_table(sc.replay.flows).write_parquet(d / "limits.parquet")
    (out / "scores.json").write_text(json.dumps(doc, indent=2))
    from ackreplay.cli.score_csv import scores_csv_of

    (out / "scores.csv").write_text(scores_csv_of(scored))
    (out / "report.html").write_text(render(scored))
    write_sweeps(out, scored, ests)


def write_sweeps(out: Path, scored: list[ScoredCapture], ests: list[Any]) -> list[Path]:
    """A sensitivity plot per swept estimator and parameter, over the bulk flows of every capture."""
    from ackreplay.estimators.sweep import swept_parameters
    from ackreplay.graphs.sensitivity import write_sensitivity
    from ackreplay.replay.capture import bulk_flow_ids

    swept = swept_parameters(ests)
    if not swept:
        return []
    flows = []
    for sc in scored:  # the bulk flows' scores, the bulk set made once per capture
        bulk = set(bulk_flow_ids(sc.ingest.flows, sc.truth))
        flows += [fr.scores for fr in sc.replay.flows if fr.flow_id in bulk]
    written = []
    for kind, params in swept.items():
        group = [e for e in ests if e.kind == kind]
        for param in params:
            path = write_sensitivity(out, kind, param, [(e.name, e.params[param]) for e in group], flows)
            if path is not None:
                written.append(path)
    return written

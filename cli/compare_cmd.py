"""``ackreplay compare A B``: two captures side by side (e.g. before and after a change of path or stack)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ackreplay.cli.errors import EXIT_USAGE, fail, warn
from ackreplay.cli.inputs import DEFAULT_MEMORY_BUDGET_MB, ESTIMATORS_HELP, FilterOption, MemoryBudget, label
from ackreplay.cli.kernel_choice import choose_kernels
from ackreplay.cli.plugin_options import PluginOption, load_plugin_files
from ackreplay.cli.progress import Progress
from ackreplay.cli.warmup import announce_cold


def compare(
    a: Annotated[Path, typer.Argument(metavar="A", help="Capture A (pcap, pcapng, optionally gzipped).")],
    b: Annotated[Path, typer.Argument(metavar="B", help="Capture B.")],
    estimators: Annotated[str | None, typer.Option("--estimators", "-e",
                          help=ESTIMATORS_HELP)] = None,
    truth: Annotated[str | None, typer.Option("--truth", help="Ground truth for both (default: each capture's "
                     "sidecar, if any).")] = None,
    allow_vantage: Annotated[bool, typer.Option("--allow-vantage", help="Also replay flows whose sender view "
                             "cannot be rebuilt.")] = False,
    rank_not_reproducible: Annotated[bool, typer.Option("--rank-not-reproducible", help="Also rank estimators "
                                     "on flows they are not reproducible from (BE, CRB off the sender).")] = False,
    include_incomparable: Annotated[bool, typer.Option("--include-incomparable", help="Also rank on flows the "
                                    "estimators cannot be compared on (too little network-limited time or too "
                                    "few loss events; application- or receiver-limited).")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    filter_expr: FilterOption = None,
    plugin: PluginOption = None,
) -> None:
    """Compare two captures side by side: each estimator's median composite error, |err| and bias over each
    capture's bulk flows, the change from A to B, and its rank in each."""
    choose_kernels([a, b])
    from ackreplay.cli.boards import compare_text
    from ackreplay.cli.render import terminal_width
    from ackreplay.cli.score_cmd import flow_filter, score_input
    from ackreplay.core.capture_scoring import build_estimators
    from ackreplay.estimators import EstimatorError
    from ackreplay.scoring.truth import Truth

    load_plugin_files(plugin)
    try:
        ests = build_estimators([n.strip() for n in estimators.split(",") if n.strip()] if estimators else None, {})
        given = Truth.parse(truth) if truth else None
    except EstimatorError as exc:
        fail(EXIT_USAGE, exc.code, exc.message)
    select = flow_filter(None, None, None, filter_expr)
    announce_cold(unused=("graphs",))
    scored = []
    with Progress(2) as bar:
        for path in (a, b):
            sc = score_input(path, ests, bar=bar.file(Path(label(path)).name), truth=given,
                             allow_vantage=allow_vantage, memory_budget=memory_budget << 20, select=select,
                             keep_series=False)  # scores only: memory grows with the largest flow
            scored.append(sc)
    for sc in scored:
        for w in sc.ingest.stats.warnings:
            warn(f"{sc.path}: {w}")
    print(compare_text(scored[0], scored[1], terminal_width(), rank_not_reproducible, include_incomparable))

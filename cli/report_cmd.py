"""``ackreplay report FILE``: the offline HTML report of one capture alone (plots, score tables, why-lines)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ackreplay.cli.errors import EXIT_USAGE, fail, guarded
from ackreplay.cli.inputs import DEFAULT_MEMORY_BUDGET_MB, ESTIMATORS_HELP, FilterOption, MemoryBudget, label
from ackreplay.cli.kernel_choice import choose_kernels
from ackreplay.cli.plugin_options import PluginOption, load_plugin_files
from ackreplay.cli.warmup import announce_cold


def report(
    file: Annotated[Path, typer.Argument(metavar="CAPTURE",
                                         help="Capture file (pcap, pcapng, optionally gzipped); - reads standard "
                                              "input.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The HTML file to write (default: "
                      "<capture name>.html in the current directory).")] = None,
    estimators: Annotated[str | None, typer.Option("--estimators", "-e",
                          help=ESTIMATORS_HELP)] = None,
    allow_vantage: Annotated[bool, typer.Option("--allow-vantage", help="Also replay flows whose sender view "
                             "cannot be rebuilt.")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    filter_expr: FilterOption = None,
    plugin: PluginOption = None,
) -> None:
    """Write the self-contained HTML report of one capture (opens offline)."""
    choose_kernels([file])
    from ackreplay.cli.report import render
    from ackreplay.cli.score_cmd import flow_filter, score_input
    from ackreplay.core.capture_scoring import build_estimators
    from ackreplay.estimators import EstimatorError

    name = label(file)
    load_plugin_files(plugin)
    try:
        ests = build_estimators([n.strip() for n in estimators.split(",") if n.strip()] if estimators else None, {})
    except EstimatorError as exc:
        fail(EXIT_USAGE, exc.code, exc.message)
    select = flow_filter(None, None, None, filter_expr)
    announce_cold()
    sc = score_input(file, ests, allow_vantage=allow_vantage, memory_budget=memory_budget << 20, select=select)
    target = output or Path(Path(name).name.split(".")[0] + ".html")
    text = render([sc])

    def write() -> None:
        target.write_text(text, encoding="utf-8")

    guarded(write)
    print(f"wrote {target}")

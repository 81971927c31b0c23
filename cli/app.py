"""The ``ackreplay`` command line's commands (``cli.main`` runs them)."""

from __future__ import annotations

from typing import Annotated

import typer

from ackreplay.cli.compare_cmd import compare
from ackreplay.cli.graph_cmd import graph
from ackreplay.cli.ingest_cmds import acks, flows
from ackreplay.cli.model_cmd import model
from ackreplay.cli.plugin_options import list_estimators
from ackreplay.cli.report_cmd import report
from ackreplay.cli.score_cmd import score
from ackreplay.cli.service_cmds import migrate, quota_app, serve, token_app, worker
from ackreplay.cli.warmup import warmup
from ackreplay.cli.whatif_cmd import whatif

app = typer.Typer(
    name="ackreplay",
    help="How would each TCP bandwidth estimator have behaved on this real traffic?",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("ackreplay")
        except PackageNotFoundError:
            v = "0+unknown"
        print(f"ackreplay {v}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """How would each TCP bandwidth estimator have behaved on this real traffic?"""
app.command()(score)
app.command()(flows)
app.command()(acks)
app.command()(serve)
app.command()(worker)
app.command()(migrate)
app.command()(warmup)
app.command()(report)
app.command()(graph)
app.command()(compare)
app.command(name="estimators")(list_estimators)
app.command()(model)
app.command()(whatif)
app.add_typer(token_app, name="token")
app.add_typer(quota_app, name="quota")

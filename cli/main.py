"""``ackreplay``: replay real TCP ACK streams through Westwood-family bandwidth estimators."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Annotated

import typer

from ackreplay.cli import collection, kernel_choice
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


def main() -> None:
    """The ``ackreplay`` console script: run the command, then leave without tearing the interpreter down.

    Tearing down numba's and Polars' modules at exit costs ~0.15 s, a fifth of a short command's time.
    After the command returns (or exits with a code) the exit handlers run and the output is flushed as
    in a normal exit; the process then ends with ``os._exit``. Only when no other thread is alive — replay's
    idle helper threads are stopped first — a command that left threads running (the service) exits the
    normal way.
    """
    kernel_choice.enable()
    collection.pause()  # a short process: no garbage collector passes over the imported modules (``cli.collection``)
    try:
        app()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    parallel = sys.modules.get("ackreplay.replay.parallel")
    if parallel is not None:  # replay's helper threads, idle once the command returned
        parallel.shutdown_helpers()
    if threading.active_count() > 1:
        sys.exit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head): nothing more to say
            code = code or 1
    os._exit(code or 0)


if __name__ == "__main__":
    main()

"""``ackreplay``: replay real TCP ACK streams through Westwood-family bandwidth estimators."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from importlib import import_module
from typing import Annotated

import typer

from ackreplay.cli import collection, kernel_choice

#: Every command: name → (module, attribute): a function (a command) or a ``typer.Typer`` (a group of them), in the
#: order ``--help`` lists them. A process builds only the command it runs (:func:`build`); building all of them —
#: importing their modules and reading every signature's annotations — costs ~0.1 s, a third of a light command's
#: whole time. ``--help``, an unknown name and shell completion get them all.
COMMANDS: dict[str, tuple[str, str]] = {
    "score": ("ackreplay.cli.score_cmd", "score"),
    "flows": ("ackreplay.cli.ingest_cmds", "flows"),
    "acks": ("ackreplay.cli.ingest_cmds", "acks"),
    "serve": ("ackreplay.cli.service_cmds", "serve"),
    "worker": ("ackreplay.cli.service_cmds", "worker"),
    "migrate": ("ackreplay.cli.service_cmds", "migrate"),
    "warmup": ("ackreplay.cli.warmup", "warmup"),
    "report": ("ackreplay.cli.report_cmd", "report"),
    "graph": ("ackreplay.cli.graph_cmd", "graph"),
    "compare": ("ackreplay.cli.compare_cmd", "compare"),
    "estimators": ("ackreplay.cli.plugin_options", "list_estimators"),
    "model": ("ackreplay.cli.model_cmd", "model"),
    "whatif": ("ackreplay.cli.whatif_cmd", "whatif"),
    "token": ("ackreplay.cli.service_cmds", "token_app"),
    "quota": ("ackreplay.cli.service_cmds", "quota_app"),
}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("ackreplay")
        except PackageNotFoundError:
            v = "0+unknown"
        print(f"ackreplay {v}")
        raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """How would each TCP bandwidth estimator have behaved on this real traffic?"""


def build(only: str | None = None) -> typer.Typer:
    """The command line with every command, or with ``only`` that one (the root's options stay; it remains a group,
    so ``ackreplay NAME …`` parses as with all commands)."""
    app = typer.Typer(
        name="ackreplay",
        help="How would each TCP bandwidth estimator have behaved on this real traffic?",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
        pretty_exceptions_enable=False,
        # Help and usage errors formatted by click, plainly: typer's rich formatting imports rich's Markdown and
        # traceback modules (0.1–0.15 s measured, half of --help's whole time); the commands' own output stays rich
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name, (module, attribute) in COMMANDS.items():
        if only is not None and name != only:
            continue
        target = getattr(import_module(module), attribute)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name=name)(target)
    return app


def invoked(argv: list[str]) -> str | None:
    """The command ``argv`` (without the program's name) runs, when it names one and no shell completion is asked
    for; None otherwise (then every command is built). The root's options take no value: the first word that is
    not an option is the command."""
    if any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ):
        return None
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def __getattr__(name: str) -> typer.Typer:
    """``app``: the command line with every command (built at first use; what tests and tools import)."""
    if name == "app":
        app = build()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        build(invoked(sys.argv[1:]))()
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

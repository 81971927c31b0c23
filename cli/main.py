"""``ackreplay``: replay real TCP ACK streams through Westwood-family bandwidth estimators."""

from __future__ import annotations

import atexit
import inspect
import os
import sys
import threading
from importlib import import_module
from typing import Annotated

import typer
from typer import _click as click
from typer.core import TyperCommand, TyperGroup

from ackreplay.cli import collection, kernel_choice

#: Every command: name → (module, attribute): a function (a command) or a ``typer.Typer`` (a group of them), in the
#: order ``--help`` lists them. A process builds only the command it runs (:func:`build`); building all of them —
#: importing their modules and reading every signature's annotations — costs ~0.1 s, a third of a light command's
#: whole time. ``ackreplay`` and ``ackreplay --help`` list them without building any (:class:`_Index`); an unknown
#: name and shell completion get them all.
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


#: The root's options that answer and exit before any command runs.
ROOT_EXITS = ("--help", "--version", "--show-completion", "--install-completion")
#: :func:`build`'s ``only`` for a command line that names no command (``ackreplay``, ``ackreplay --help``,
#: ``--version``): the commands are listed, none is built.
INDEX = ""


class _Index(TyperGroup):
    """The root group when no command runs: ``--help`` lists every command of :data:`COMMANDS` with its help (a
    function's docstring, a group's ``help``), shortened as typer lists it, without building any (typer reads every
    parameter's annotation to build a command: ~0.06 s for all of them). A hidden group is not listed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name]
        target = getattr(import_module(module), attribute)
        if not isinstance(target, typer.Typer):
            return TyperCommand(name=cmd_name, help=inspect.getdoc(target))
        if target.info.hidden is True:
            return None
        text = target.info.help
        return TyperCommand(name=cmd_name, help=inspect.cleandoc(text) if isinstance(text, str) else None)


def build(only: str | None = None) -> typer.Typer:
    """The command line with every command, with ``only`` that one (the root's options stay; it remains a group,
    so ``ackreplay NAME …`` parses as with all commands), or, ``only`` = :data:`INDEX`, with their list alone."""
    app = typer.Typer(
        name="ackreplay",
        help="How would each TCP bandwidth estimator have behaved on this real traffic?",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
        pretty_exceptions_enable=False,
        # Help and usage errors formatted by click, plainly: typer's rich formatting imports rich's Markdown and
        # traceback modules (0.1–0.15 s measured, half of --help's whole time); the commands' own output stays rich
        rich_markup_mode=None,
        cls=_Index if only == INDEX else TyperGroup,
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
    """What to build for ``argv`` (without the program's name): the command it names; :data:`INDEX` when it names
    none, or when a root option that answers and exits comes first (``--help score`` prints the root's help, with
    every command); None — every command — for a word that names no command (so that the error suggests the
    nearest) or when shell completion is asked for. The root's options take no value: the first word that is not an
    option is the command."""
    if any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ):
        return None
    for word in argv:
        if word in ROOT_EXITS:
            return INDEX
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return INDEX


def __getattr__(name: str) -> typer.Typer:
    """``app``: the command line with every command (built at first use; what tests and tools import)."""
    if name == "app":
        app = build()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, ``app`` among them (tools that look for a typer app, as ``typer MODULE``, list them)."""
    return sorted({*globals(), "app"})


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

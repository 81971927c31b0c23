"""``--plugin FILE.py`` for the commands that replay, and ``ackreplay estimators``: the catalogue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ackreplay.cli.errors import EXIT_USAGE, fail

#: ``--plugin``: a Python file that defines estimators (subclasses of ackreplay.Estimator), repeatable.
PluginOption = Annotated[list[Path] | None, typer.Option(
    "--plugin", metavar="FILE.py", help="Load the estimators this Python file defines (subclasses of "
    "ackreplay.Estimator; docs/plugins.md), repeatable. Installed plugins are always loaded.")]


def load_plugin_files(files: list[Path] | None) -> list[str]:
    """Register the estimators of each file; a file that cannot be used ends the process with exit 2."""
    from ackreplay.estimators import EstimatorError
    from ackreplay.estimators.plugins import load_file

    loaded: list[str] = []
    for f in files or []:
        try:
            loaded += load_file(f)
        except EstimatorError as exc:
            fail(EXIT_USAGE, exc.code, exc.message)
    return loaded


def plugin_failures(scored: list[Any]) -> list[str]:
    """One line per flow on which a plugin failed (``estimators.plugins.checked_series``)."""
    return [f"{sc.path}: {why}" for sc in scored for why in sc.replay.failures()]


def list_estimators(
    as_json: Annotated[bool, typer.Option("--json", help="The catalogue as JSON (what GET /api/v1/estimators "
                       "serves).")] = False,
    plugin: PluginOption = None,
) -> None:
    """List every estimator: name, title, citation and documentation section, parameters with defaults and units,
    where it came from."""
    from ackreplay.cli import estimator_catalogue as catalogue

    failed: dict[str, str] = {}
    if plugin or catalogue.installed_plugins():
        load_plugin_files(plugin)
        from ackreplay.estimators.plugins import FAILED

        cat, failed = catalogue.registry_catalogue(), FAILED
    else:  # only the built-in estimators: their recorded catalogue, without importing them
        cat = catalogue.recorded_catalogue()
    if as_json:
        print(json.dumps(cat, indent=2))
        return
    import shutil

    from ackreplay.cli.catalogue_text import catalogue_text

    print(catalogue_text(cat, shutil.get_terminal_size().columns), end="")
    for name, why in failed.items():
        print(f"plugin {name} not loaded: {why}")

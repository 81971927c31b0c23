"""The catalogue ``ackreplay estimators`` prints, without importing the estimators when only the built-in ones exist.

Importing the estimators means importing numba and defining every compiled kernel (0.3–0.6 s); the built-in
estimators' catalogue is data, recorded in ``cli/data/estimators.json``. It is read from there unless a plugin
is in play (a ``--plugin`` file, or an installed distribution declaring entry points in the group
``ackreplay.estimators``): then the registry builds the catalogue. ``tests/test_cli_startup.py`` checks that the
file holds what the registry gives for the built-in estimators; after changing an estimator's name, title,
citation, docstring or parameters, write it again with ``python -m ackreplay.cli.estimator_catalogue``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The built-in estimators' catalogue, as ``estimators.catalogue()`` gives it without plugins.
BUILTIN = Path(__file__).resolve().parent / "data" / "estimators.json"
#: The entry-point group of installed estimator plugins (``estimators.plugins.GROUP``).
PLUGIN_GROUP = "ackreplay.estimators"


def installed_plugins() -> bool:
    """Whether any installed distribution declares estimator plugins."""
    from importlib.metadata import entry_points

    return bool(entry_points(group=PLUGIN_GROUP))


def registry_catalogue(builtin_only: bool = False) -> list[dict[str, Any]]:
    """The catalogue as the registry builds it (every estimator, plugins included, or only the built-in ones),
    in the form ``estimators --json`` prints it."""
    import ackreplay.estimators as E

    cat = [e for e in E.catalogue() if not builtin_only or e["origin"].get("kind") == "builtin"]
    loaded: list[dict[str, Any]] = json.loads(json.dumps(cat, default=str))
    return loaded


def recorded_catalogue() -> list[dict[str, Any]]:
    """The built-in estimators' catalogue recorded in :data:`BUILTIN`."""
    recorded: list[dict[str, Any]] = json.loads(BUILTIN.read_text(encoding="utf-8"))
    return recorded


def write_builtin() -> None:
    """Record the built-in estimators' catalogue in :data:`BUILTIN` (from the registry)."""
    BUILTIN.write_text(json.dumps(registry_catalogue(builtin_only=True), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_builtin()
    print(f"wrote {BUILTIN}")

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
import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

#: The built-in estimators' catalogue, as ``estimators.catalogue()`` gives it without plugins.
BUILTIN = Path(__file__).resolve().parent / "data" / "estimators.json"
#: The entry-point group of installed estimator plugins (``estimators.plugins.GROUP``).
PLUGIN_GROUP = "ackreplay.estimators"


def installed_plugins() -> bool:
    """Whether any installed distribution declares estimator plugins. When no ``entry_points.txt`` on ``sys.path``
    mentions the group (:func:`declared_on_path`), none does, and ``importlib.metadata`` (0.03 s to import and scan,
    a tenth of ``estimators``' whole time) is not asked."""
    if not declared_on_path():
        return False
    from importlib.metadata import entry_points

    return bool(entry_points(group=PLUGIN_GROUP))


def declared_on_path(path: list[str] | None = None) -> bool:
    """Whether a distribution's metadata folder on ``path`` (``sys.path``) has an ``entry_points.txt`` with the section
    ``[ackreplay.estimators]``. It looks where ``importlib.metadata`` looks (Python 3.11's ``FastPath.search``): the
    folders of each path entry whose names end in ``.dist-info`` or ``.egg-info``, whatever the case, and an unpacked
    egg's ``EGG-INFO``. It errs only towards yes: an archive on the path (a zipped egg or wheel), a finder on
    ``sys.meta_path`` that finds distributions of its own, and a mention anywhere in a file count as a possible
    declaration; ``importlib.metadata`` then decides."""
    if path is None and any(hasattr(finder, "find_distributions") and finder is not PathFinder
                            for finder in sys.meta_path):
        return True
    section = f"[{PLUGIN_GROUP}]"
    for entry in sys.path if path is None else path:
        egg = os.path.basename(entry).lower().endswith(".egg")
        try:
            with os.scandir(entry or ".") as found:
                folders = [d.path for d in found if d.name.lower().endswith((".dist-info", ".egg-info"))
                           or (egg and d.name.lower() == "egg-info")]
        except (FileNotFoundError, PermissionError):
            continue  # (python311.zip and the like are listed whether they exist or not)
        except OSError:  # not a folder: an archive
            return True
        for folder in folders:
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                    if section in f.read():
                        return True
            except OSError:
                continue
    return False


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

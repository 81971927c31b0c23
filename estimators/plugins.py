"""Estimators from outside the package: installed distributions and single files.

* **Installed.** A distribution declares entry points in the group ``ackreplay.estimators``; the entry's name
  is the estimator's registry name and its value ``module:Class``::

      [project.entry-points."ackreplay.estimators"]
      median_be = "my_estimators:MedianBE"

  They are loaded the first time the registry is read (:func:`load_installed`), in the CLI and in the
  service alike.
* **A file.** ``ackreplay score --plugin my_estimator.py`` imports the file and registers every
  :class:`~estimators.base.Estimator` subclass it defines (:func:`load_file`). The service has no such
  option: it runs only code installed on the server (docs/service.md).

Every plugin class gets an ``origin`` (where it came from: the distribution's name and version, or the file)
and the SHA-256 of its module's source, which the catalogue shows and every result records, so that a run
can be traced to the code that produced it. Replay checks a plugin's output (:func:`checked_series`): an
exception, a series of the wrong length, or negative or infinite values fail that estimator on that flow
with an error naming both, and the other estimators' results stand.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import warnings
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ackreplay.estimators.base import Estimator
from ackreplay.estimators.params import EstimatorError

GROUP = "ackreplay.estimators"
#: Plugins that could not be loaded: name (entry point or file) → why. The catalogue command shows them.
FAILED: dict[str, str] = {}
_installed_loaded = False


class PluginFailure(RuntimeError):
    """A plugin estimator raised, or returned what an estimate cannot be, on one flow."""


def _source_sha256(module: ModuleType | None) -> str | None:
    if module is None:
        return None
    try:
        return hashlib.sha256(inspect.getsource(module).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def _check_class(cls: Any, where: str) -> type[Estimator]:
    if not (isinstance(cls, type) and issubclass(cls, Estimator)):
        raise EstimatorError("invalid_plugin", f"{where} is not a subclass of ackreplay.Estimator")
    missing = [a for a in ("name", "title", "citation") if not isinstance(getattr(cls, a, None), str)]
    if missing:
        raise EstimatorError("invalid_plugin", f"{where} does not define {', '.join(missing)} (strings)")
    if cls.series is Estimator.series and cls.has_series:
        raise EstimatorError("invalid_plugin", f"{where} does not define series(self, inputs)")
    return cls


def _adopt(cls: type[Estimator], origin: dict[str, Any]) -> None:
    from ackreplay.estimators.registry import register

    cls.origin = origin
    cls.code_sha256 = _source_sha256(sys.modules.get(cls.__module__))
    register(cls)


def load_installed() -> None:
    """Register every estimator of the ``ackreplay.estimators`` entry points (once per process). A plugin that
    fails to load is left out with a warning (and its reason in :data:`FAILED`): it cannot break ackreplay."""
    global _installed_loaded
    if _installed_loaded:
        return
    _installed_loaded = True
    from ackreplay.estimators.registry import is_registered

    for ep in entry_points(group=GROUP):
        dist = ep.dist
        origin = {"kind": "distribution", "distribution": dist.name if dist else None,
                  "version": dist.version if dist else None, "entry_point": ep.value}
        try:
            cls = _check_class(ep.load(), f"entry point {ep.name} = {ep.value}")
            if cls.name != ep.name:
                raise EstimatorError("invalid_plugin", f"entry point {ep.name} = {ep.value} names a class whose "
                                     f"name is {cls.name!r}: the entry's name must be the estimator's")
            if is_registered(cls.name):
                raise EstimatorError("invalid_plugin", f"entry point {ep.name} = {ep.value}: an estimator named "
                                     f"{cls.name!r} exists already")
            _adopt(cls, origin)
        except Exception as exc:  # any error of foreign code: reported, never fatal
            FAILED[ep.name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"ackreplay: estimator plugin {ep.name!r} not loaded: {exc}", RuntimeWarning,
                          stacklevel=2)


def load_file(path: str | Path) -> list[str]:
    """Import a Python file and register the estimators it defines; return their names.

    Raises :class:`EstimatorError` (code ``invalid_plugin``) naming the file when it cannot be imported,
    defines no estimator, or defines one whose name is taken."""
    from ackreplay.estimators.registry import get, is_registered

    path = Path(path).resolve()
    if not path.is_file():
        raise EstimatorError("invalid_plugin", f"plugin file {path} does not exist")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"ackreplay_plugin_{path.stem}_{digest}"
    if module_name in sys.modules:  # the same file twice (e.g. a second --plugin): already registered
        return [c.name for c in _defined_in(sys.modules[module_name])]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise EstimatorError("invalid_plugin", f"plugin file {path} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise EstimatorError("invalid_plugin", f"plugin file {path} failed to import: "
                             f"{type(exc).__name__}: {exc}") from exc
    classes = _defined_in(module)
    if not classes:
        del sys.modules[module_name]
        raise EstimatorError("invalid_plugin", f"plugin file {path} defines no subclass of ackreplay.Estimator")
    names = []
    for cls in classes:
        _check_class(cls, f"{cls.__name__} in {path}")
        if is_registered(cls.name):
            if get(cls.name) is cls:
                continue
            raise EstimatorError("invalid_plugin", f"{cls.__name__} in {path}: an estimator named {cls.name!r} "
                                 "exists already")
        _adopt(cls, {"kind": "file", "path": str(path)})
        names.append(cls.name)
    return names


def _defined_in(module: ModuleType) -> list[type[Estimator]]:
    return [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Estimator)
            and c is not Estimator and c.__module__ == module.__name__ and isinstance(getattr(c, "name", None), str)]


def checked_series(e: Estimator, inputs: Any, flow_id: int) -> np.ndarray:
    """A plugin's series, checked: one float per event, each NaN (no estimate yet) or finite and ≥ 0."""
    who = f"estimator {e.name!r} ({_where(e)}) on flow {flow_id}"
    try:
        raw = e.series(inputs)
    except Exception as exc:
        raise PluginFailure(f"{who} raised {type(exc).__name__}: {exc}") from exc
    try:
        est = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PluginFailure(f"{who} returned {type(raw).__name__}, not an array of numbers") from exc
    n = len(inputs.t)
    if est.shape != (n,):
        raise PluginFailure(f"{who} returned shape {est.shape}, not one value per event ({n},)")
    bad = np.isinf(est) | (est < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PluginFailure(f"{who} returned {float(est[i])!r} at event {i} (t = {float(inputs.t[i]):.6f} s): "
                            "an estimate is NaN before the first sample, else finite and not negative "
                            f"({int(bad.sum())} such values)")
    return est


def _where(e: Estimator) -> str:
    origin = e.origin
    if origin.get("kind") == "file":
        return str(origin.get("path"))
    return f"{origin.get('distribution')} {origin.get('version')}"


def is_plugin(e: Estimator | type[Estimator]) -> bool:
    return e.origin.get("kind") in ("distribution", "file")

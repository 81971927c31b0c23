"""The estimator registry, keyed by stable names stored with every result.

Registering a name twice fails (as the kernel's ``tcp_register_congestion_control`` does). The package's
own estimators register when their modules are imported; installed plugins (entry points of the group
``ackreplay.estimators``) the first time the registry is read, and plugin files when the CLI loads them
(``estimators.plugins``).
"""

from __future__ import annotations

from typing import Any

from ackreplay.estimators.base import Estimator
from ackreplay.estimators.params import EstimatorError

_REGISTRY: dict[str, type[Estimator]] = {}


def register(cls: type[Estimator]) -> type[Estimator]:
    if cls.name in _REGISTRY:
        raise ValueError(f"estimator {cls.name!r} is already registered")
    _REGISTRY[cls.name] = cls
    return cls


def is_registered(name: str) -> bool:
    return name in _REGISTRY


def names() -> list[str]:
    _installed()
    return list(_REGISTRY)


def get(name: str) -> type[Estimator]:
    _installed()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise EstimatorError("unknown_estimator",
                             f"unknown estimator {name!r} (known: {', '.join(_REGISTRY)})") from None


def create(name: str, **params: Any) -> Estimator:
    return get(name)(**params)


def catalogue() -> list[dict[str, Any]]:
    """Names, descriptions, parameter schemas and defaults of every estimator, built in or plugged in, with
    where each came from (the API publishes it; ``ackreplay estimators`` prints it)."""
    _installed()
    return [cls.schema() for cls in _REGISTRY.values()]


def _installed() -> None:
    """The installed plugins join the registry the first time it is read (``estimators.plugins``)."""
    from ackreplay.estimators.plugins import load_installed

    load_installed()

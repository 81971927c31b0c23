"""The estimator registry, keyed by stable names stored with every result.

Registering a name twice fails (as the kernel's ``tcp_register_congestion_control`` does).
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


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> type[Estimator]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise EstimatorError("unknown_estimator",
                             f"unknown estimator {name!r} (known: {', '.join(_REGISTRY)})") from None


def create(name: str, **params: Any) -> Estimator:
    return get(name)(**params)


def catalogue() -> list[dict[str, Any]]:
    """Names, descriptions, parameter schemas and defaults of every estimator (the API publishes it)."""
    return [cls.schema() for cls in _REGISTRY.values()]

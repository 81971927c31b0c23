"""Estimator parameters: a machine-readable schema, validation on construction, round-trip to dicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ackreplay.estimators.aliases import alternative_name


class EstimatorError(ValueError):
    """An unknown estimator, an unknown parameter or a value out of range. ``code`` is stable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Param:
    """One parameter: name, type (``float``, ``int``, ``bool``, ``str``), default, range, unit, meaning.

    ``minimum``/``maximum`` bound numbers (``exclusive_minimum`` makes the lower bound strict);
    ``choices`` lists the allowed strings; ``nullable`` allows ``None`` (meaning "off"/"derived").
    ``alternatives`` names other documented values (e.g. ``(("buffer_study", 0.8),)`` beside a deployed
    default): a number parameter accepts such a name (or its renamed old name, :mod:`.aliases`) in place of its
    value (``--param cubic.beta=buffer_study``).
    """

    name: str
    type: type
    default: Any
    description: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    nullable: bool = False
    source: str = ""
    alternatives: tuple[tuple[str, Any], ...] = ()

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.__name__,
            "default": self.default,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "exclusive_minimum": self.exclusive_minimum,
            "choices": list(self.choices) or None,
            "nullable": self.nullable,
            "unit": self.unit,
            "description": self.description,
            "source": self.source,
            "alternatives": dict(self.alternatives) or None,
        }

    def validate(self, owner: str, value: Any) -> Any:
        """Return the value coerced to the parameter's type, or raise :class:`EstimatorError`."""
        if value is None:
            if self.nullable:
                return None
            raise EstimatorError("invalid_parameter", f"{owner}.{self.name} may not be null")
        if self.type is bool:
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            if not isinstance(value, bool):
                raise EstimatorError("invalid_parameter", f"{owner}.{self.name} must be true or false, got {value!r}")
            return value
        if self.type in (int, float):
            named = dict(self.alternatives)
            if isinstance(value, str) and alternative_name(value) in named:
                value = named[alternative_name(value)]
            num = _as_number(self.type, value)
            if num is None:
                raise EstimatorError("invalid_parameter",
                                     f"{owner}.{self.name} must be a {self.type.__name__}, got {value!r}")
            if num != num or num in (float("inf"), float("-inf")):
                raise EstimatorError("invalid_parameter", f"{owner}.{self.name} must be finite, got {value!r}")
            low_bad = self.minimum is not None and (
                num <= self.minimum if self.exclusive_minimum else num < self.minimum)
            if low_bad or (self.maximum is not None and num > self.maximum):
                raise EstimatorError("parameter_out_of_range",
                                     f"{owner}.{self.name} = {value!r} is outside {self.range_text()}")
            return num
        if self.type is str:
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise EstimatorError("invalid_parameter",
                                     f"{owner}.{self.name} must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        raise TypeError(self.type)

    def range_text(self) -> str:
        lo = "(" if self.exclusive_minimum else "["
        a = "-inf" if self.minimum is None else f"{self.minimum:g}"
        b = "inf" if self.maximum is None else f"{self.maximum:g}"
        return f"{lo}{a}, {b}]"


def _as_number(kind: type, value: Any) -> int | float | None:
    """``value`` as an int or float parameter, or None when it is none: not a number, a bool, a fraction for
    an int, or an integer too large for a float (``float(10**400)`` raises OverflowError, which would
    otherwise escape as a 500 from the API and a traceback from the CLI)."""
    if isinstance(value, bool):
        return None
    try:
        num = kind(value)
        if kind is int and float(value) != int(float(value)):
            return None
        float(num)
    except (TypeError, ValueError, OverflowError):
        return None
    return num

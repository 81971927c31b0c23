"""Compare two result documents (parsed JSON) by value, the way numbers computed on different machines
must be compared (issue #21).

Structure (object keys, list lengths, the type of every leaf), strings, integers, booleans and nulls must be
equal; floats must agree within a stated bound::

    |a − b| ≤ max(REL_TOL · max(|a|, |b|), ABS_TOL)

``REL_TOL`` (1e-9) is far above what another CPU or math library changes — the largest relative
difference measured between two environments on every float of every shared capture's document was
recorded in docs/testing.md — and far below any real change of a result: changing one constant of one
estimator moves its numbers by 1e-4 or more. ``ABS_TOL`` (1e-12) is a floor for values that are
differences of O(1) terms and land near 0 (a signed mean relative error of −3e-17 on one machine can be
+2e-17 on another); every float here is either a rate in bit/s (≥ 1), a time in seconds or a ratio of
order 1, so an absolute 1e-12 hides no real change either. An integer stored in one document as a float
with an integral value (``2.0``) is not the integer ``2``: JSON keeps the difference and so do we.

A failure names where it is: the capture, then the path through the document, with each flow written
with its id and each estimator with its name (``flows[id=3].estimators[be].scores.mean_bps``), and the
recorded and the new value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

REL_TOL = 1e-9
ABS_TOL = 1e-12

# list items that carry one of these keys are named by it in a difference's path, so that a report says
# which flow and which estimator rather than an index
_NAMING_KEYS = ("flow_id", "id", "estimator", "name", "capture")


@dataclass(frozen=True)
class Difference:
    """One place where two documents disagree."""

    where: str
    recorded: Any
    new: Any
    why: str

    def __str__(self) -> str:
        return f"{self.where}: recorded {_show(self.recorded)}, now {_show(self.new)} ({self.why})"


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def floats_agree(a: float, b: float, rel: float = REL_TOL, abs_: float = ABS_TOL) -> bool:
    """Whether two floats agree within the bound (NaN only agrees with NaN, an infinity with itself)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)


def relative_difference(a: float, b: float) -> float:
    """|a − b| / max(|a|, |b|), 0 for equal values (used to measure how far two environments drift)."""
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else math.inf


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for key in _NAMING_KEYS:
            value = item.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return f"[{key}={value}]"
    return f"[{index}]"


# JSON's types, bool before int (a bool is an int in Python)
_KINDS: tuple[tuple[type, str], ...] = ((type(None), "null"), (bool, "bool"), (int, "int"), (float, "float"),
                                        (str, "str"), (list, "list"), (dict, "object"))


def _kind(v: Any) -> str:
    return next((name for cls, name in _KINDS if isinstance(v, cls)), type(v).__name__)


def differences(recorded: Any, new: Any, where: str = "", rel: float = REL_TOL,
                abs_: float = ABS_TOL) -> Iterator[Difference]:
    """Every difference between two parsed JSON documents, in document order."""
    kr, kn = _kind(recorded), _kind(new)
    if kr != kn:
        yield Difference(where, recorded, new, f"{kr} became {kn}")
        return
    if kr == "object":
        for key in recorded.keys() - new.keys():
            yield Difference(f"{where}.{key}", recorded[key], None, "key missing")
        for key in new.keys() - recorded.keys():
            yield Difference(f"{where}.{key}", None, new[key], "key added")
        for key in recorded:
            if key in new:
                yield from differences(recorded[key], new[key], f"{where}.{key}", rel, abs_)
    elif kr == "list":
        if len(recorded) != len(new):
            yield Difference(where, f"{len(recorded)} items", f"{len(new)} items", "length changed")
            return
        for i, (a, b) in enumerate(zip(recorded, new, strict=True)):
            yield from differences(a, b, where + _label(a, i), rel, abs_)
    elif kr == "float":
        if not floats_agree(recorded, new, rel, abs_):
            yield Difference(where, recorded, new, f"relative difference {relative_difference(recorded, new):.3g}")
    elif recorded != new:
        yield Difference(where, recorded, new, "not equal")


def float_pairs(a: Any, b: Any) -> Iterator[tuple[float, float]]:
    """Every pair of floats at the same place in two documents of the same structure."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() & b.keys():
            yield from float_pairs(a[key], b[key])
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            yield from float_pairs(x, y)
    elif isinstance(a, float) and isinstance(b, float):
        yield a, b


def report(name: str, diffs: list[Difference], limit: int = 20) -> str:
    """A readable failure message: the first ``limit`` differences of one document."""
    lines = [f"{name}: {len(diffs)} difference(s)"]
    lines += [f"  {d}" for d in diffs[:limit]]
    if len(diffs) > limit:
        lines.append(f"  … and {len(diffs) - limit} more")
    return "\n".join(lines)

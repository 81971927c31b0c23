"""Parameter sweeps: one estimator replayed with several values of its parameters.

A parameter's value may name several: ``"0.1,0.25,0.5"`` (a list), ``"0.1:2:0.1"`` (start:stop:step, stop
included when the steps reach it within a millionth of a step), or a JSON list (the API). Each combination
of the swept values becomes one *variant*: the estimator with those parameters under the name
``re[tau=0.5]`` (``estimator[p=v,q=w]``), replayed over the same ingested stream as every other estimator —
N variants cost N replays of that estimator, no re-ingest. :func:`variant_spec` and :func:`from_spec`
round-trip the variants through the service's run records.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from ackreplay.estimators.base import Estimator
from ackreplay.estimators.params import EstimatorError
from ackreplay.estimators.registry import create

#: At most this many variants in one run (all swept estimators together): a sweep is a replay each.
MAX_VARIANTS = 64


def sweep_values(owner: str, raw: Any) -> list[Any] | None:
    """The values a parameter's raw value names when it names several, else None (a single value)."""
    if isinstance(raw, list | tuple):
        values = list(raw)
    elif isinstance(raw, str) and "," in raw:
        values = [v.strip() for v in raw.split(",")]
        if any(v == "" for v in values):
            raise EstimatorError("invalid_parameter", f"{owner}: empty value in the list {raw!r}")
    elif isinstance(raw, str) and raw.count(":") == 2:
        values = _range(owner, raw)
    else:
        return None
    if not values:
        raise EstimatorError("invalid_parameter", f"{owner}: an empty sweep")
    if len(values) > MAX_VARIANTS:
        raise EstimatorError("too_many_variants", f"{owner}: {len(values)} values, at most {MAX_VARIANTS}")
    return values


def _range(owner: str, raw: str) -> list[float]:
    try:
        start, stop, step = (float(x) for x in raw.split(":"))
    except ValueError:
        raise EstimatorError("invalid_parameter", f"{owner}: expected START:STOP:STEP numbers, got {raw!r}") from None
    if not all(math.isfinite(x) for x in (start, stop, step)) or step <= 0 or stop < start:
        raise EstimatorError("invalid_parameter", f"{owner}: {raw!r} is not a range (finite numbers, STEP > 0, "
                             "STOP ≥ START)")
    # Counted as a float before any integer is made of it: finite bounds and step may still name more
    # values than a float holds (0:1e308:1e-308 is infinitely many), and the list is built only once the
    # count is known to be small.
    steps = (stop - start) / step
    if not math.isfinite(steps) or steps > MAX_VARIANTS:
        raise EstimatorError("too_many_variants", f"{owner}: {raw!r} names more than {MAX_VARIANTS} values (at "
                             f"most {MAX_VARIANTS})")
    count = math.floor(steps + 1e-6) + 1
    if count > MAX_VARIANTS:
        raise EstimatorError("too_many_variants", f"{owner}: {raw!r} names {count} values, at most {MAX_VARIANTS}")
    return [round(start + i * step, 12) for i in range(count)]


def _show(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    return repr(v) if isinstance(v, float) else str(v)


def variants(name: str, params: dict[str, Any]) -> list[Estimator]:
    """``name`` with ``params`` (validated), one instance per combination of the swept parameters' values."""
    swept = {k: vals for k, v in params.items() if (vals := sweep_values(f"{name}.{k}", v)) is not None}
    if not swept:
        return [create(name, **params)]
    total = math.prod(len(v) for v in swept.values())
    if total > MAX_VARIANTS:
        raise EstimatorError("too_many_variants", f"{name}: {total} combinations of swept values, at most "
                             f"{MAX_VARIANTS}")
    out: list[Estimator] = []
    for combo in itertools.product(*swept.values()):
        chosen = dict(zip(swept, combo, strict=True))
        e = create(name, **{**params, **chosen})
        label = ",".join(f"{k}={_show(e.params[k])}" for k in swept)
        out.append(e.renamed(f"{name}[{label}]"))
    labels = [e.name for e in out]
    if len(set(labels)) < len(labels):
        raise EstimatorError("invalid_parameter", f"{name}: the sweep names one value twice ({', '.join(labels)})")
    return out


def variant_spec(estimators: Sequence[Estimator]) -> list[dict[str, Any]]:
    """What a run records of its estimators: the name shown, the parameters, and for a variant the registry
    name (``{"name": "re[tau=0.5]", "estimator": "re", …}``)."""
    return [{"name": e.name, "parameters": dict(e.params)} | ({"estimator": e.kind} if e.name != e.kind else {})
            for e in estimators]


def from_spec(spec: Sequence[dict[str, Any]]) -> list[Estimator]:
    """The estimators a :func:`variant_spec` recorded (entries without ``estimator`` are plain names)."""
    out = []
    for item in spec:
        kind = item.get("estimator") or item["name"]
        e = create(kind, **(item.get("parameters") or {}))
        out.append(e if item["name"] == kind else e.renamed(item["name"]))
    return out


def swept_parameters(estimators: Sequence[Estimator]) -> dict[str, list[str]]:
    """Registry name → the parameters its variants differ in (for the sensitivity plot), swept ones only."""
    by_kind: dict[str, list[Estimator]] = {}
    for e in estimators:
        by_kind.setdefault(e.kind, []).append(e)
    out = {}
    for kind, group in by_kind.items():
        if len(group) > 1 or group[0].name != kind:
            out[kind] = [k for k in group[0].params if len({repr(e.params[k]) for e in group}) > 1]
    return out

"""Bounds on the JSON a client sends (a run's estimator parameters, a capture's truth): how deeply nested and
how large, and only finite numbers and no NUL, checked by a walk that does not recurse. A value nested
thousands of levels deep would otherwise exhaust the interpreter's stack in the first code that walks it
(the JSON decoder, a validator, the database driver) and answer 500 instead of naming the mistake."""

from __future__ import annotations

import json
import math
from typing import Any

from ackreplay.core.errors import ServiceError

#: No field the API takes needs more: parameters are a value or a list of values, truth three levels deep.
MAX_DEPTH = 16
#: Values (numbers, strings, lists, objects) in one field: a truth's per-flow rates and random drops fit.
MAX_NODES = 200_000


class JsonOutOfBounds(ValueError):
    """A JSON value nested too deeply, too large, with a number that is not finite or a NUL character."""


def check(value: Any, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """``value`` itself when it is within the bounds; else :class:`JsonOutOfBounds` saying why."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    nodes = 0
    while todo:
        item, depth = todo.pop()
        nodes += 1
        if nodes > max_nodes:
            raise JsonOutOfBounds(f"more than {max_nodes} values")
        if isinstance(item, float) and not math.isfinite(item):
            raise JsonOutOfBounds("numbers must be finite")
        if isinstance(item, str) and "\x00" in item:
            raise JsonOutOfBounds("must not contain a NUL character")
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise JsonOutOfBounds(f"nested more than {max_depth} levels deep")
            if isinstance(item, dict):
                todo += [(k, depth + 1) for k in item]
            todo += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return value


def loads(text: str, *, what: str, code: str) -> Any:
    """Parse a JSON text a client sent in a form field and hold it to the bounds (422 ``code`` otherwise)."""
    try:
        return check(json.loads(text))
    except RecursionError:
        raise ServiceError(f"{what} is nested more than {MAX_DEPTH} levels deep", code=code, status=422) from None
    except json.JSONDecodeError as exc:
        raise ServiceError(f"{what} is not valid JSON: {exc}", code=code, status=422) from exc
    except JsonOutOfBounds as exc:
        raise ServiceError(f"{what}: {exc}", code=code, status=422) from exc

"""Flow diagnostics stored by earlier versions name the path models by keys since renamed; they are read under
their current names, so a run replayed before the rename shows the same document as one replayed after it
(docs/estimators.md, "Renamed names")."""

from __future__ import annotations

from typing import Any

#: Old ``path_models`` key → its name.
OLD_MODEL_KEYS = {"seed004": "busy_link", "seed002": "share_model", "seed002_floor_half": "share_model_floor_half",
                  "seed002_curve": "share_model_curve"}
#: Old ``path_group`` key → its name.
OLD_GROUP_KEYS = {"seed002": "share_model"}


def renamed(mapping: dict[str, Any] | None, old: dict[str, str]) -> dict[str, Any] | None:
    """``mapping`` with every old key under its name (the same object when it holds none)."""
    if not mapping or not any(k in old for k in mapping):
        return mapping
    return {old.get(k, k): v for k, v in mapping.items()}


def current_names(data: dict[str, Any]) -> dict[str, Any]:
    """A stored diagnostics document with its path models and group under their current keys."""
    models, group = data.get("path_models"), data.get("path_group")
    if renamed(models, OLD_MODEL_KEYS) is models and renamed(group, OLD_GROUP_KEYS) is group:
        return data
    return {**data, "path_models": renamed(models, OLD_MODEL_KEYS), "path_group": renamed(group, OLD_GROUP_KEYS)}

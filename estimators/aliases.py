"""Input names that were renamed, still accepted so existing scripts keep working (docs/estimators.md,
"Renamed names"). They are read only: nothing the project prints or returns uses them."""

from __future__ import annotations

#: Old group word → its name (``-e``, the API's ``estimators``).
GROUP_ALIASES: dict[str, str] = {"seed004": "highspeed"}
#: Old name of a parameter's documented alternative value → its name (``-p cubic.beta=…``, the API's ``params``).
ALTERNATIVE_ALIASES: dict[str, str] = {"seed004": "buffer_study"}


def group_word(name: str) -> str:
    """The current name of a group word (``name`` itself unless it is a renamed one)."""
    return GROUP_ALIASES.get(name, name)


def alternative_name(value: str) -> str:
    """The current name of an alternative value (``value`` itself unless it is a renamed one)."""
    return ALTERNATIVE_ALIASES.get(value, value)

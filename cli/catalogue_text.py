"""The estimator catalogue as ``ackreplay estimators`` prints it: one block per estimator, wrapped to the terminal.

Plain text, not a rich table: measuring and folding a four-column table of the 15 estimators' long citations took
rich ~0.08 s, and importing its console 0.03 s more, of a command that must start within 0.2 s (``bench/startup.py``).
Each block reads

    abse — ABSE (adaptive bandwidth share estimation)  [ackreplay]
        R. Wang, M. Valla, … eqs. (1)–(6)
        parameters (default): beta=0.6, N=10.0
        docs/estimators.md#abse

the name, its title and where it came from (``ackreplay``: built in; a plugin's distribution and version, or its
file), the full citation, the parameters with their defaults and units, and the documentation section.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

#: How far a block's lines after the first are indented.
INDENT = "    "


def origin_label(entry: Mapping[str, Any]) -> str:
    """Where an estimator came from: ``ackreplay`` (built in), a distribution's name and version, or a file."""
    origin = entry.get("origin") or {}
    kind = origin.get("kind")
    if kind == "distribution":
        return f"{origin.get('distribution')} {origin.get('version')}"
    if kind == "file":
        return str(origin.get("path"))
    return "ackreplay"


def parameter_label(p: Mapping[str, Any]) -> str:
    """``NAME=DEFAULT UNIT`` (the default as Python writes it; the unit only where it has one)."""
    unit = f" {p['unit']}" if p.get("unit") else ""
    return f"{p['name']}={p['default']!r}{unit}"


def catalogue_text(cat: Iterable[Mapping[str, Any]], width: int) -> str:
    """The catalogue's blocks (module docstring), each line at most ``width`` characters where its words allow
    (a word longer than the line is not cut), a blank line between blocks."""
    width = max(width, 40)
    body = textwrap.TextWrapper(width=width, initial_indent=INDENT, subsequent_indent=INDENT,
                                break_long_words=False, break_on_hyphens=False)
    head = textwrap.TextWrapper(width=width, subsequent_indent=INDENT, break_long_words=False,
                                break_on_hyphens=False)
    blocks = []
    for e in cat:
        params = ", ".join(parameter_label(p) for p in e.get("parameters") or []) or "none"
        lines = head.wrap(f"{e['name']} — {e['title']}  [{origin_label(e)}]")
        lines += body.wrap(str(e.get("citation") or ""))
        lines += body.wrap(f"parameters (default): {params}")
        if e.get("doc"):
            lines += body.wrap(str(e["doc"]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"

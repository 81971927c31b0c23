"""Many flows said in a few lines: flow ids as ranges cut to a budget, and the reasons flows were not replayed
grouped, one line per reason with its count.

A capture of thousands of short connections would otherwise fill screens with ids (``0, 1, 2, …``) and repeat
one reason per flow; the counts and the first ids say the same in a line, and ``--all-flows`` lists them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

#: Characters of flow ids a summary line shows before it says how many more there are (about one line).
ID_BUDGET = 48

# a number in a reason ("only 6 RTT samples rebuilt (fewer than 8)"): reasons that differ only in their
# numbers are one reason, the numbers shown as the range they span
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SLOT = "\x00"


def id_runs(ids: Iterable[int]) -> list[str]:
    """Sorted ids as runs: three or more consecutive ids as ``a–b``, the others one by one."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(ids)):
        if run and i != run[-1] + 1:
            out += _run_text(run)
            run = []
        run.append(i)
    return out + (_run_text(run) if run else [])


def _run_text(run: list[int]) -> list[str]:
    return [f"{run[0]}–{run[-1]}"] if len(run) >= 3 else [str(i) for i in run]


def id_list(ids: Sequence[int], budget: int | None = ID_BUDGET, hint: str = "") -> str:
    """``ids`` as runs (:func:`id_runs`), the first ``budget`` characters' worth and then ``… and N more`` (N
    flows) followed by ``hint``; every one with ``budget`` None."""
    runs = id_runs(ids)
    shown: list[str] = []
    used = 0
    for r in runs:
        if budget is not None and shown and used + len(r) + 2 > budget:
            break
        shown.append(r)
        used += len(r) + 2
    text = ", ".join(shown)
    if len(shown) < len(runs):
        text += f", … and {sum(_run_size(r) for r in runs[len(shown):]):,} more{hint}"
    return text


def _run_size(run: str) -> int:
    lo, _, hi = run.partition("–")
    return int(hi) - int(lo) + 1 if hi else 1


def _span(values: Sequence[str]) -> str:
    """The numbers one place of a grouped reason held: the one number, or ``lo–hi``."""
    lo, hi = min(values, key=float), max(values, key=float)
    return lo if float(lo) == float(hi) else f"{lo}–{hi}"


def reason_groups(reasons: Mapping[int, str]) -> list[tuple[str, list[int]]]:
    """Flows per reason (``{flow id: reason}``), reasons that differ only in their numbers merged with each
    number shown as the range it spans (``only 0–7 RTT samples``); the largest group first."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for fid, reason in reasons.items():
        groups.setdefault(_NUMBER.sub(_SLOT, reason.replace(_SLOT, "")), []).append((fid, reason))
    out = []
    for key, members in groups.items():
        numbers = [_NUMBER.findall(reason) for _, reason in members]
        pieces = key.split(_SLOT)
        spans = [_span(column) for column in zip(*numbers, strict=True)] + [""]
        text = "".join(piece + span for piece, span in zip(pieces, spans, strict=True))
        out.append((text, sorted(fid for fid, _ in members)))
    return sorted(out, key=lambda g: (-len(g[1]), g[1][0]))


def flows_phrase(ids: Sequence[int], budget: int | None = ID_BUDGET, hint: str = "") -> str:
    """``flow 7`` or ``12 flows (0–3, 6–12, 15)``, the ids cut to ``budget`` characters (:func:`id_list`, which
    adds ``hint`` where it cuts)."""
    if len(ids) == 1:
        return f"flow {ids[0]}"
    return f"{len(ids):,} flows ({id_list(ids, budget, hint)})"


def skipped_lines(reasons: Mapping[int, str], budget: int | None = ID_BUDGET, hint: str = "") -> list[str]:
    """One line per reason flows were not replayed: how many flows, which (cut to ``budget``, then ``hint``),
    and why."""
    return [f"not replayed, {flows_phrase(ids, budget, hint)}: {text}" for text, ids in reason_groups(reasons)]

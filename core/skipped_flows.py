"""The flows a capture of a run did not replay, and why, kept as a summary: the first ``SKIPPED_SHOWN`` by flow id,
how many in all and how many per kind of reason (``run_captures.skipped``, ``skipped_total``, ``skipped_counts``)
— a capture of a million flows that skips them all holds a few kB, not an entry per flow. The full list is
decided again a page at a time when it is asked for (``replay.engine.plan_reasons`` decides each flow from its
own summary: the same answer every time). A run planned before the summary was kept holds every skipped flow
in ``skipped`` (``skipped_total`` null), and is read as it is."""

from __future__ import annotations

import heapq
from collections import Counter
from typing import Any, NamedTuple

import polars as pl
from sqlalchemy.orm import Session

from ackreplay.core.orm import RunCapture
from ackreplay.core.storage import Store
from ackreplay.core.stored_capture import capture_summaries
from ackreplay.replay.engine import PLAN_FIELDS, plan_reasons

#: Skipped flows a capture's summary names (the first by flow id).
SKIPPED_SHOWN = 100


class SkippedSummary(NamedTuple):
    """The first :data:`SKIPPED_SHOWN` skipped flows (flow id as text → reason), how many, how many per kind."""

    shown: dict[str, str]
    total: int
    counts: dict[str, int]


def reason_kind(reason: str) -> str:
    """What kind of reason a flow was skipped for: the reason up to its first colon, which is where a
    flow's own evidence starts ("vantage receiver: 12 RTT samples …" is a "vantage receiver")."""
    return reason.split(":", 1)[0]


def summarise(decided: pl.DataFrame) -> SkippedSummary:
    """The summary of a plan's decision (``plan_reasons``: ``flow_id``, ``reason`` null for a replayed flow)."""
    out = decided.filter(pl.col("reason").is_not_null()).sort("flow_id")
    kinds = out.group_by(pl.col("reason").str.split_exact(":", 1).struct.field("field_0").alias("kind"),
                         maintain_order=True).len()
    head = out.head(SKIPPED_SHOWN)
    return SkippedSummary(dict(zip([str(f) for f in head["flow_id"].to_list()], head["reason"].to_list(), strict=True)),
                          out.height, dict(zip(kinds["kind"].to_list(), kinds["len"].to_list(), strict=True)))


def holds_every_one(rc: RunCapture) -> bool:
    """Whether a capture's run holds every skipped flow (planned before the summary was kept)."""
    return rc.skipped_total is None or len(rc.skipped or {}) > SKIPPED_SHOWN


def stored_summary(rc: RunCapture) -> SkippedSummary:
    """A capture's skipped flows as its run holds them (either form)."""
    skipped: dict[str, str] = rc.skipped or {}
    if not holds_every_one(rc) and rc.skipped_total is not None:
        return SkippedSummary(skipped, rc.skipped_total, dict(rc.skipped_counts or {}))
    shown = heapq.nsmallest(SKIPPED_SHOWN, skipped, key=int)
    return SkippedSummary({k: skipped[k] for k in shown}, len(skipped),
                          dict(Counter(reason_kind(r) for r in skipped.values())))


def skipped_page(session: Session, store: Store, rc: RunCapture, *, offset: int, limit: int) -> list[dict[str, Any]]:
    """Skipped flows ``offset`` … ``offset + limit`` by flow id (``flow_id``, ``reason``)."""
    skipped: dict[str, str] = rc.skipped or {}
    if holds_every_one(rc) or stored_summary(rc).total <= len(skipped):  # (the summary shows all of them)
        return [{"flow_id": int(k), "reason": skipped[k]} for k in sorted(skipped, key=int)[offset: offset + limit]]
    decided = plan_reasons(capture_summaries(session, store, rc.capture_id, PLAN_FIELDS))
    page = decided.filter(pl.col("reason").is_not_null()).sort("flow_id").slice(offset, limit)
    return page.to_dicts()

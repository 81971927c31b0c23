"""A replayed capture's flow as the what-if's inputs: its path's figures and ranges, its own figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ackreplay.path.links import LinkInfo
from ackreplay.replay.results import FlowReplay
from ackreplay.whatif.captured import CapturedFlow
from ackreplay.whatif.figures import PathRange, off_level_loss, path_range


def flow_inputs(fr: FlowReplay, summary: Any, path_groups: Sequence[Mapping[str, Any]] = ()
                ) -> tuple[PathRange, CapturedFlow]:
    """The path (``fr.path``, judged with the flows sharing its bottleneck: ``path_groups``, as
    ``CaptureReplay.path_groups``) and the captured flow (``summary``: its ingest ``FlowSummary``). Raises
    :class:`~ackreplay.whatif.errors.WhatIfError` where the path cannot carry a what-if."""
    link = LinkInfo.of(summary)
    path = fr.path or {}
    shared = next((list(g.get("flows") or []) for g in path_groups if fr.flow_id in (g.get("flows") or [])), [])
    rng = path_range(path, mss=link.mss, overhead_bytes=link.overhead,
                     shared_with=[f for f in shared if f != fr.flow_id], random_loss_high=random_loss_high(fr))
    return rng, CapturedFlow.of(summary)


def random_loss_high(fr: FlowReplay) -> float | None:
    """The most the flow's random-loss rate can be (:func:`off_level_loss` of its own loss episodes), or None
    without its path's evidence, a buffer or a capacity. The service stores it beside the path."""
    parts, path = fr.path_parts, fr.path or {}
    if parts is None:
        return None
    return off_level_loss(parts.loss_queue_s, parts.loss_retx, path.get("buffer_bytes"), path.get("capacity_bps"),
                          int(parts.data_segments))

"""A replayed capture's flow as the what-if's inputs: its path's figures and ranges, its own figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ackreplay.path.drops import random_drops
from ackreplay.path.links import LinkInfo
from ackreplay.replay.results import FlowReplay
from ackreplay.scoring.pacing import paced
from ackreplay.whatif.captured import DEFAULT_SENDER, CapturedFlow, SenderControl, ns3_competitor
from ackreplay.whatif.cross import CrossFlow, cross_flows, metadata_cross
from ackreplay.whatif.figures import (
    PathRange,
    buffer_seen,
    connection_options,
    flight_room,
    off_level_loss,
    path_range,
    shared_flight,
)


def flow_inputs(fr: FlowReplay, summary: Any, path_groups: Sequence[Mapping[str, Any]], summaries: Mapping[int, Any],
                control_of: Callable[[str], SenderControl] | None = None, capture: Path | None = None,
                flights: Mapping[int, float | None] | None = None) -> tuple[PathRange, CapturedFlow, list[CrossFlow]]:
    """The path (``fr.path``, judged with the flows sharing its bottleneck: ``path_groups``, as
    ``CaptureReplay.path_groups``), the captured flow (``summary``: its ingest ``FlowSummary``) and the cross
    traffic: the group's other flows (``summaries``: every flow's summary by id) under the control
    ``control_of(sender)`` names (CUBIC, Linux's default, without it); without any, the flow the metadata of
    ``capture`` names though the capture left it out (a two-flow ns-3 run's, :func:`metadata_cross`). ``flights``:
    every flow's largest flight (``flight_by_flow``), so that the room a bounded-below buffer is searched in is the
    group's (:func:`room_of`). Raises :class:`~ackreplay.whatif.errors.WhatIfError` where the path cannot carry a
    what-if."""
    link = LinkInfo.of(summary)
    pacing = paced(fr.limits.paced_share if fr.limits is not None else None)
    shared = next((list(g.get("flows") or []) for g in path_groups if fr.flow_id in (g.get("flows") or [])), [])
    others = [summaries[f] for f in shared if f != fr.flow_id]
    cross = cross_flows(summary, others, control_of or (lambda _: SenderControl(DEFAULT_SENDER, "assumed")), pacing)
    shares = dict(fr.limits.shares) if fr.limits is not None else None
    captured = CapturedFlow.of(summary, others, shares, fr.limits.idle_share if fr.limits is not None else None)
    captured = captured.on_the_wire(wire_loss_rate(fr.path_parts))
    uncaptured = False
    if not cross and (cross := metadata_cross(capture)):
        uncaptured = True  # (a flow the capture left out: its flight is not known)
        found = ns3_competitor(capture)  # the captured flow's share, from the run's bytes of both
        if found is not None and found.captured_share is not None:
            captured = replace(captured, share=found.captured_share)
    room, room_flows = (None, 1) if uncaptured else room_of(fr, shared, flights)
    rng = path_range(fr.path or {}, mss=link.mss, overhead_bytes=link.overhead, random_loss_high=random_loss_high(fr),
                     buffer_low=buffer_seen(fr.path_parts, fr.path), **connection_options(summary),
                     rwnd_bytes=fr.limits.loss_rwnd_bytes if fr.limits is not None else None, paced=pacing,
                     drops=random_drops(fr.path_parts), buffer_room=room, room_flows=room_flows)
    return rng, captured, cross


def wire_loss_rate(parts: Any) -> float | None:
    """The flow's segments retransmitted per data segment sent, both counted on the wire (``PathParts``: a TSO/GSO
    super-segment a host capture saw before the NIC cut it as the ⌈payload / MSS⌉ segments it carries; docs/path.md
    "Random-loss rate"), as the simulation counts its flows' loss rates. The summary's row counts where no
    super-segment was seen; None without one flow's path evidence or a data segment."""
    if parts is None or len(parts.flows) != 1 or int(parts.data_segments) <= 0:
        return None
    return len(parts.retransmissions) / int(parts.data_segments)


def flight_by_flow(flows: Sequence[FlowReplay]) -> dict[int, float | None]:
    """Each replayed flow's largest flight as its capture point saw it (payload bytes; None without its path's
    evidence, NaN where not seen), by flow id: what :func:`room_of` adds over a group."""
    return {fr.flow_id: None if fr.path_parts is None else float(fr.path_parts.flight_bytes) for fr in flows}


def room_of(fr: FlowReplay, group: Sequence[int], flights: Mapping[int, float | None] | None
            ) -> tuple[float | None, int]:
    """What the flow's largest flight could queue at its bottleneck beyond the BDP (``flight_room``) and over how
    many flows: alone, its own; sharing the bottleneck with ``group`` (every member's id, itself included), the
    members' flights added (``shared_flight``: each one's queue fills the same buffer) — None without ``flights``
    or where one member's flight was not seen."""
    if len(group) < 2:
        return flight_room(fr.path_parts, fr.path), 1
    if flights is None:
        return None, len(group)
    return flight_room(fr.path_parts, fr.path, shared_flight(flights, group)), len(group)


def random_loss_high(fr: FlowReplay) -> float | None:
    """The most the flow's random-loss rate can be (:func:`off_level_loss` of its own loss episodes, against the
    buffer or, where it is bounded below only, :func:`buffer_seen`), or None without its path's evidence, a buffer
    or a capacity. The service stores it beside the path."""
    parts, path = fr.path_parts, fr.path or {}
    if parts is None:
        return None
    buffer = path.get("buffer_bytes") or buffer_seen(parts, path)
    return off_level_loss(parts.loss_queue_s, parts.loss_retx, buffer, path.get("capacity_bps"),
                          int(parts.data_segments), parts.loss_exposed)

"""The path's figures (docs/path.md §9) as the simulation's bottleneck, each with its plausible range.

A figure the simulation needs and the path does not give, or a path graded ``low``, is refused with the
figure named (:class:`WhatIfError`). The ranges are the calibration bounds of the path's confidence
(docs/path-calibration.md: a ``high`` or ``medium`` figure lies within them in at least 95 % / 80 % of the
captures with a known path): capacity ±10 %, base RTT ±3 %, buffer ±25 %, random-loss rate ±30 %.
A random-loss rate the inference left null because too few losses fell off the buffer's overflow level is
taken as 0, with the rate of those few losses as its upper end (:func:`off_level_loss`). A buffer the inference
left null because no loss followed a full queue is bounded below only — by the deepest queue the flow built
(:func:`buffer_seen`): it is taken at that bound, and its range runs to that bound plus
:data:`BUFFER_HEADROOM_BDP` × the BDP (*decided here*, docs/whatif.md); where the captured sender re-enacted over
the capture's drops overflows that bound, at the least buffer it does not overflow instead
(:meth:`PathRange.with_consistent_buffer`, found by ``whatif.runs.consistent_range``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ackreplay.path.bounds import queue_room
from ackreplay.path.drops import RandomDrops
from ackreplay.path.figures import MIN_QUEUE_PACKETS, OVERFLOW_SPREAD, overflows
from ackreplay.sim.model import Link
from ackreplay.whatif.errors import WhatIfError

#: Each figure's relative half-width at confidence ``high``/``medium`` (docs/path-calibration.md's bounds).
SPREAD = {"capacity_bps": 0.10, "base_rtt_s": 0.03, "buffer_bytes": 0.25, "random_loss_rate": 0.30}
#: A buffer bounded below only (no loss followed a full queue) ranges from that bound to the bound plus this many
#: BDPs (capacity × base RTT): a buffer that much deeper than any queue the flow built. Decided here, not measured:
#: a flow that never filled the buffer says nothing of how deep it is, and a what-if's control that queues more
#: than the captured one could meet it anywhere above; one BDP is the rule-of-thumb buffer (Villamizar & Song,
#: "High performance TCP in ANSNET", ACM SIGCOMM CCR, 1994).
BUFFER_HEADROOM_BDP = 1.0
#: The figures the simulation's link needs, in the order they are named when missing.
NEEDED = ("capacity_bps", "base_rtt_s", "buffer_bytes", "random_loss_rate")


@dataclass(frozen=True)
class PathFigures:
    """One set of the path's figures: capacity (wire bit/s), base RTT (s), buffer (wire bytes), random-loss
    rate (per data segment), the header bytes a full segment adds on the wire, and the MSS; with them the TCP
    options the flow's connection ran with (SACK, timestamps) and the receive window its receiver offered when
    its first loss came (``FlowLimits.loss_rwnd_bytes``; None: not known, no limit), which every sender
    re-enacted on it keeps: the same hosts under another control. ``paced``: the captured sender paced its
    segments (``scoring.pacing.paced``: Linux's internal pacing, its socket marked for it), so every Linux sender
    re-enacted on the path — the same host's stack — paces too (docs/whatif.md "Pacing")."""

    capacity_bps: float
    base_rtt_s: float
    buffer_bytes: float
    random_loss_rate: float
    overhead_bytes: int
    mss: int
    sack: bool = True
    timestamps: bool = True
    rwnd_bytes: float | None = None
    paced: bool = False
    #: The random drops the capture realised (``path.drops``), replayed wherever the capture shows a segment's fate
    #: (the rate draws elsewhere): None where the path's rate was not inferred from them, or they are not known.
    drops: RandomDrops | None = None

    def link(self) -> Link:
        return Link(rate_bps=self.capacity_bps, buffer_bytes=max(round(self.buffer_bytes), 0),
                    loss=min(self.random_loss_rate, 0.5), overhead_bytes=self.overhead_bytes)

    def loss_fates(self) -> np.ndarray | None:
        """The drops as the simulation replays them (``FlowSpec.loss_fates``), None without any or without random
        loss."""
        return self.drops.fates() if self.drops is not None and self.random_loss_rate > 0 else None

    def rwnd_segments(self, most: int) -> int | None:
        """The receive window in whole segments (at least 1, at most ``most``: the simulation's), None without
        one."""
        if self.rwnd_bytes is None or not math.isfinite(self.rwnd_bytes):
            return None
        return min(max(int(self.rwnd_bytes // self.mss), 1), most)

    @property
    def payload_bps(self) -> float:
        """The most goodput the link carries: its rate less the headers."""
        return self.capacity_bps * self.mss / (self.mss + self.overhead_bytes)

    def as_dict(self) -> dict[str, float]:
        return {"capacity_bps": self.capacity_bps, "base_rtt_s": self.base_rtt_s, "buffer_bytes": self.buffer_bytes,
                "random_loss_rate": self.random_loss_rate}


@dataclass(frozen=True)
class BufferBound:
    """A buffer the inference left null because no loss followed a full queue, bounded below only (:func:`buffer_seen`):
    ``seen_bytes``, the deepest queue the flow built, the least it can be; ``why``, the inference's reason for no
    buffer; ``room_bytes``, the most the flow's largest captured flight — with ``room_flows`` flows sharing the
    bottleneck, the sum of theirs — could queue beyond the BDP (:func:`flight_room`; None where a flight was not
    seen: the receiver side); ``least_bytes``, where set, the least
    buffer the captured sender re-enacted on the path does not overflow (``whatif.runs.consistent_range``, found in
    ``runs`` runs, capped at ``room_bytes`` where ``room_checked``)."""

    seen_bytes: float
    why: str
    room_bytes: float | None = None
    least_bytes: float | None = None
    runs: int = 0
    room_checked: bool = False
    room_flows: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {"seen_bytes": self.seen_bytes, "least_bytes": self.least_bytes, "runs": self.runs,
                "room_bytes": self.room_bytes, "room_flows": self.room_flows, "room_checked": self.room_checked}

    def assumed(self, high: float) -> str:
        """The words of ``path.assumed.buffer_bytes``: where the buffer was taken and its range's upper end."""
        seen = (f"at least {self.seen_bytes:.0f} B, the deepest queue the flow built (no loss followed a full queue: "
                f"{self.why})")
        if self.least_bytes is None:
            return f"{seen}: taken at that, its range up to {high:.0f} B (one BDP more)"
        whose = ("the flow's largest flight" if self.room_flows <= 1 else
                 f"the largest flights of the {self.room_flows} flows sharing the bottleneck")
        room = (f", at most {self.room_bytes:.0f} B, what {whose} could queue beyond the BDP"
                if self.room_checked and self.room_bytes is not None else "")
        return (f"{seen}; the captured sender re-enacted on it overflows a buffer that small, where the capture shows "
                f"no overflow: taken at {self.least_bytes:.0f} B, the least buffer the re-enactment does not overflow "
                f"({self.runs} runs{room}), its range up to {high:.0f} B (one BDP more)")


@dataclass(frozen=True)
class PathRange:
    """The central figures, and each figure's low and high ends (one ``(low, high)`` per name of :data:`NEEDED`;
    equal ends where the figure has no width). ``assumed``: figures taken as a value the path did not give,
    with why."""

    central: PathFigures
    ends: dict[str, tuple[float, float]]
    confidence: str
    assumed: dict[str, str]
    #: The buffer's lower bound where the inference left it null (``assumed["buffer_bytes"]`` words it).
    buffer_bound: BufferBound | None = None

    def variants(self) -> list[tuple[str, PathFigures]]:
        """The figures to run besides the central ones: each figure at its low and at its high end, the others
        central (``"<figure>:low"``/``"<figure>:high"``), figures without width left out."""
        out = []
        for name in NEEDED:
            lo, hi = self.ends[name]
            for tag, value in (("low", lo), ("high", hi)):
                changed: dict[str, Any] = {name: value}
                if value != getattr(self.central, name):
                    out.append((f"{name}:{tag}", replace(self.central, **changed)))
        return out

    @property
    def buffer_bounded(self) -> bool:
        """The buffer is bounded below only (:func:`buffer_seen`): taken at its bound, or at the least buffer
        consistent with the capture (:meth:`with_consistent_buffer`)."""
        return self.buffer_bound is not None

    def with_consistent_buffer(self, least: float, runs: int, room_checked: bool = False) -> PathRange:
        """The same range with a buffer bounded below only taken at ``least`` — the least buffer over which the
        captured sender's re-enactment overflows no more than the capture did (``whatif.runs.consistent_range``,
        found in ``runs`` runs) —, its range from there to :data:`BUFFER_HEADROOM_BDP` BDPs more. A buffer the
        capture proves deeper than its bound is a bound still: the capture shows nothing above it. ``room_checked``:
        the search was held under the bound's ``room_bytes`` (what the captured flight could queue beyond the BDP),
        so a ``least`` above it is an error, as one outside the range the search was given."""
        bound, high = self.ends["buffer_bytes"]
        if self.buffer_bound is None or not bound <= least <= high:  # (the search stays within the range it was given)
            raise ValueError(f"a consistent buffer of {least:.0f} B outside the bounded buffer's range "
                             f"[{bound:.0f}, {high:.0f}] B")
        room = self.buffer_bound.room_bytes if room_checked else None
        if room_checked and (room is None or least > room):
            raise ValueError(f"a consistent buffer of {least:.0f} B, more than the captured flight could queue "
                             f"({room if room is None else f'{room:.0f} B'})")
        central = replace(self.central, buffer_bytes=float(least))
        headroom = BUFFER_HEADROOM_BDP * central.capacity_bps * central.base_rtt_s / 8.0
        bb = replace(self.buffer_bound, least_bytes=float(least), runs=runs, room_checked=room_checked)
        return replace(self, central=central, ends={**self.ends, "buffer_bytes": (float(least), least + headroom)},
                       assumed={**self.assumed, "buffer_bytes": bb.assumed(least + headroom)}, buffer_bound=bb)

    def as_dict(self) -> dict[str, Any]:
        return {"figures": self.central.as_dict(), "ranges": {k: list(v) for k, v in self.ends.items()},
                "confidence": self.confidence, "overhead_bytes": self.central.overhead_bytes,
                "mss": self.central.mss, "rwnd_bytes": self.central.rwnd_bytes, "paced": self.central.paced,
                "assumed": dict(self.assumed), "random_drops": replayed_drops(self.central),
                "buffer_bound": None if self.buffer_bound is None else self.buffer_bound.as_dict()}


def replayed_drops(fig: PathFigures) -> dict[str, int] | None:
    """What the runs on ``fig`` replay of the capture's random drops: the drops, the segments whose fate the capture
    does not show (drawn at the rate) and the segments it sent (drawn at the rate beyond); None where nothing is
    replayed (every run draws at the rate)."""
    fates = fig.loss_fates()
    if fates is None:
        return None
    return {"replayed": int(fates[fates > 0].sum()), "hidden_segments": int((fates < 0).sum()),
            "segments": len(fates)}


def connection_options(summary: Any) -> dict[str, bool]:
    """Whether the flow's connection ran with SACK and with timestamps, from its ingest summary (or its dict):
    ``path_range``'s ``sack`` and ``timestamps``. Ingest sets each when the option was negotiated or seen."""
    get = summary.get if isinstance(summary, Mapping) else (lambda k: getattr(summary, k, None))
    return {"sack": bool(get("sack") if get("sack") is not None else True),
            "timestamps": bool(get("timestamps") if get("timestamps") is not None else True)}


def path_range(path: Mapping[str, Any] | None, *, mss: int, overhead_bytes: int,
               random_loss_high: float | None = None, sack: bool = True, timestamps: bool = True,
               buffer_low: float | None = None, rwnd_bytes: float | None = None, paced: bool = False,
               drops: RandomDrops | None = None, buffer_room: float | None = None, room_flows: int = 1) -> PathRange:
    """The figures of ``path`` (the §9 object) and their ranges, or :class:`WhatIfError`: ``path_incomplete``
    (a figure missing: named, with the inference's reason), ``path_low_confidence``. ``random_loss_high``: the
    upper end of a random-loss rate the inference left null (:func:`off_level_loss`); ``sack``, ``timestamps``: the
    connection's options (:func:`connection_options`); ``buffer_low``: the least a buffer the inference left null
    can be (:func:`buffer_seen`), taken as the buffer with a range up to :data:`BUFFER_HEADROOM_BDP` BDPs more;
    ``rwnd_bytes``: the receive window the flow's first recovery ran into (``FlowLimits.loss_rwnd_bytes``);
    ``paced``: its sender paced (``scoring.pacing.paced``); ``drops``: the random drops its capture realised
    (``path.drops.random_drops``), kept where the path gives the rate (not where it is taken as 0); ``buffer_room``:
    the most the flow's largest flight — or the flights of the ``room_flows`` flows sharing its bottleneck, added —
    could queue beyond the BDP (:func:`flight_room`), which bounds the least buffer consistent with the capture
    (``whatif.runs.consistent_range``)."""
    if not path:
        raise WhatIfError("path_incomplete", "the flow has no path (it was not replayed, or nothing of its path "
                                             "was seen): every figure is missing")
    evidence = path.get("evidence") or {}
    assumed = {}
    values: dict[str, Any] = {k: path.get(k) for k in NEEDED}
    buffer_high = _bounded_buffer(values, buffer_low)
    bound = None
    if buffer_high is not None and buffer_low is not None:
        room = float(buffer_room) if buffer_room is not None and math.isfinite(buffer_room) else None
        bound = BufferBound(float(buffer_low), str(evidence.get("buffer_bytes", "")).removeprefix("null: "), room,
                            room_flows=max(int(room_flows), 1))
        assumed["buffer_bytes"] = bound.assumed(buffer_high)
    if values["random_loss_rate"] is None and random_loss_high is not None and values["buffer_bytes"] is not None:
        values["random_loss_rate"] = 0.0
        assumed["random_loss_rate"] = (f"taken as 0, at most {random_loss_high:.3g} (the losses off the buffer's "
                                       f"overflow level): {evidence.get('random_loss_rate', '')}")
    missing = [k for k in NEEDED if values[k] is None or not math.isfinite(float(values[k]))]
    if missing:
        why = "; ".join(f"{k}: {str(evidence.get(k) or 'not inferred').removeprefix('null: ')}" for k in missing)
        raise WhatIfError("path_incomplete", f"the path lacks {', '.join(missing)} ({why})")
    confidence = str(path.get("confidence") or "low")
    if confidence not in ("high", "medium"):
        raise WhatIfError("path_low_confidence", f"the path's confidence is {confidence}: its figures promise "
                          "nothing (docs/path-calibration.md), so no what-if is run on them")
    central = PathFigures(float(values["capacity_bps"]), float(values["base_rtt_s"]), float(values["buffer_bytes"]),
                          float(values["random_loss_rate"]), int(overhead_bytes), int(mss), sack, timestamps,
                          None if rwnd_bytes is None else float(rwnd_bytes), paced,
                          None if "random_loss_rate" in assumed else drops)
    ends = {k: (getattr(central, k) * (1 - s), getattr(central, k) * (1 + s)) for k, s in SPREAD.items()}
    if "random_loss_rate" in assumed:
        ends["random_loss_rate"] = (0.0, float(random_loss_high or 0.0))
    if buffer_high is not None:
        ends["buffer_bytes"] = (central.buffer_bytes, buffer_high)
    return PathRange(central, ends, confidence, assumed, bound)


def _bounded_buffer(values: dict[str, Any], buffer_low: float | None) -> float | None:
    """A null buffer bounded below by ``buffer_low`` set to that bound in ``values``; returns the range's upper end
    (the bound plus :data:`BUFFER_HEADROOM_BDP` BDPs), or None where the buffer is known or cannot be bounded."""
    cap, base = values["capacity_bps"], values["base_rtt_s"]
    if values["buffer_bytes"] is not None or buffer_low is None or not buffer_low > 0 or not cap or not base:
        return None
    values["buffer_bytes"] = float(buffer_low)
    return float(buffer_low) + BUFFER_HEADROOM_BDP * float(cap) * float(base) / 8.0


def buffer_seen(parts: Any, path: Mapping[str, Any] | None) -> float | None:
    """The least the buffer can be (wire bytes) when the inference left it null because no loss followed a full
    queue (none at all, or none at the overflow level, :func:`ackreplay.path.figures.overflows`): the deepest queue
    the flow built (``PathParts.deep_queue_s``, the queueing delay the inference calls the deepest) × capacity —
    a drop-tail buffer held it without dropping. None where the buffer is known, the capacity is not, the flow built
    no queue, or a loss did follow a full queue (the inference refused that buffer for another reason).

    The deepest queue is the RTT samples' 98th percentile less their least (``path.figures.DEEP_QUANTILE``), not
    their largest: one sample also carries the receiver's delayed-ACK wait and the hosts' noise, so the largest —
    and even the 99.9th percentile (``top_queue_s``) — reads a queue the buffer never held: 1.3–4 × the testbed's
    buffer on five captures with a known one (``testbed/cubic_1f_10M_rtt40_buf025bdp``: 4.0). The percentile stays
    below the truth on every capture with a known buffer that this bounds (10: 0.05–0.96 of it), and within
    1.05 × it on every other where the capacity is known (docs/whatif.md "Refusals"). It is loose where the flow
    seldom queued (hold-out ``h04``: 0.30), which the re-enactment tightens (``whatif.runs.consistent_range``)."""
    path = path or {}
    cap = path.get("capacity_bps")
    if parts is None or path.get("buffer_bytes") is not None or not cap:
        return None
    deep = float(parts.deep_queue_s)
    if not (math.isfinite(deep) and deep > 0):
        return None
    q = np.asarray(parts.loss_queue_s, np.float64)
    queued = deep >= MIN_QUEUE_PACKETS * 8.0 * float(parts.wire_mss) / float(cap)
    if queued and len(q) and overflows(q.copy(), deep, float(parts.top_queue_s), np.zeros(len(q), np.bool_),
                                       np.empty(len(q))):
        return None
    return deep * float(cap) / 8.0


def flight_room(parts: Any, path: Mapping[str, Any] | None, flight_bytes: float | None = None) -> float | None:
    """The most the flow's largest flight, as the capture point saw it, could queue at the bottleneck beyond the BDP
    (wire bytes, ``path.bounds.queue_room``: flight × wire/payload − capacity × base RTT): the deepest a drop-tail
    queue that flow alone filled can be (``path.bounds.physical_bounds`` refuses an inferred buffer above it).
    ``flight_bytes``: another flight in the flow's place — the flights of the flows sharing its bottleneck, added
    (:func:`shared_flight`: their queues add up there, as the pooled evidence adds them). None where no flight was
    seen (the receiver side), or without the path's capacity and base RTT."""
    path = path or {}
    cap, base = path.get("capacity_bps"), path.get("base_rtt_s")
    if parts is None or not cap or not base:
        return None
    flight = float(parts.flight_bytes) if flight_bytes is None else float(flight_bytes)
    room = float(queue_room(flight, float(parts.wire_mss), float(parts.mss), float(cap), float(base))[1])
    return room if math.isfinite(room) else None


def shared_flight(flights: Mapping[int, float | None], flows: Sequence[int]) -> float:
    """The flights of the flows sharing a bottleneck (``flows``, by id in ``flights``: each one's largest, payload
    bytes), added: the most they could hold there at once (each flow's largest need not come at the same time, so
    it bounds their joint flight from above). NaN where one of them was not seen (a receiver-side capture), which
    leaves no room to bound with (:func:`flight_room`)."""
    total = 0.0
    for f in flows:
        v = flights.get(int(f))
        if v is None or not math.isfinite(float(v)):
            return math.nan
        total += float(v)
    return total


def off_level_loss(loss_queue_s: Sequence[float], loss_retx: Sequence[int], buffer_bytes: float | None,
                   capacity_bps: float | None, data_segments: int, loss_exposed: Sequence[int] | None = None
                   ) -> float | None:
    """The segments retransmitted in loss episodes not at the buffer's overflow level (their queueing delay
    off ±``OVERFLOW_SPREAD`` of buffer/capacity), per data segment whose fate shows — all of them less those the
    episodes at the level decide (``loss_exposed``, ``PathParts.loss_exposed``; none without it), as the
    inference counts the rate (docs/path.md "Random-loss rate"): the most the random-loss rate can be when the
    inference found too few of them to give one. None without a buffer, a capacity or a data segment, or where the
    overflows' windows leave no segment whose fate shows."""
    if not buffer_bytes or not capacity_bps or data_segments <= 0:
        return None
    level = buffer_bytes * 8.0 / capacity_bps
    at = [math.isfinite(q) and abs(q - level) <= OVERFLOW_SPREAD * level for q in loss_queue_s]
    off = sum(r for r, a in zip(loss_retx, at, strict=True) if not a)
    hidden = sum(x for x, a in zip(loss_exposed, at, strict=True) if a) if loss_exposed is not None else 0
    shown = data_segments - hidden
    if shown <= 0 or shown < off:  # the overflows' windows cover the flow: its segments bound nothing
        return None
    return off / shown

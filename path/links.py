"""What the path inference needs to know of each flow's link besides its tables: the vantage, the MSS, the
header bytes each segment carries on the wire, the delivery rate and the span — one flow's
(:class:`LinkInfo`) or many flows' as columns (:class:`Links`).

Sizes on the wire count a 14-byte Ethernet header besides the TCP/IP headers: that is what a Linux qdisc
(and so the testbed's ``tbf rate``) counts, so the capacity read from wire sizes is the link's rate, not the
payload's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Bytes of one Ethernet header: the link layer a Linux qdisc counts in its rate.
ETHERNET_HEADER = 14


def wire_overhead(ipv6: bool, timestamps: bool) -> int:
    """Header bytes a full-size segment carries on an Ethernet link: Ethernet + IP + TCP (+ timestamps)."""
    return ETHERNET_HEADER + (40 if ipv6 else 20) + 20 + (12 if timestamps else 0)


@dataclass(frozen=True)
class LinkInfo:
    """What the path inference needs from the flow's summary besides its tables."""

    vantage: str
    mss: int
    overhead: int  # header bytes per segment on the wire (:func:`wire_overhead`)
    delivery_rate_bps: float  # payload bits/s while the flow delivered (ingest's ``delivery_rate_bps``)
    data_segments: int
    confidence: str | None = None  # a reconstructed flow's own confidence (§7), which caps the path's
    span: tuple[float, float] = (0.0, 0.0)  # the flow's first and last packet, epoch s
    #: The smallest round trip the flow's summary timed (its RTT samples and, at the client, the handshake's
    #: SYN→SYN-ACK): an upper bound on the base RTT.
    rttmin_s: float | None = None
    #: SYN→SYN-ACK at the capture point (taken when the sender is the client): the capture point→receiver→
    #: capture point part of the round trip, which every full round trip crosses.
    handshake_rtt_s: float | None = None

    @staticmethod
    def of(summary: Any) -> LinkInfo:
        """From an ingest ``FlowSummary`` or its dict (of many: :meth:`Links.of`)."""
        get = summary.get if isinstance(summary, Mapping) else (lambda k: getattr(summary, k, None))
        return LinkInfo(str(get("vantage") or "sender"), int(get("mss") or 0),
                        _overhead(get("sender"), get("timestamps")), float(get("delivery_rate_bps") or 0.0),
                        int(get("data_segments") or 0), get("confidence"),
                        (float(get("start_t") or 0.0), float(get("end_t") or 0.0)), _time(get("rttmin_s")),
                        _time(get("handshake_rtt_s")))


def _overhead(sender: str | None, timestamps: Any) -> int:
    """The wire overhead of a flow from this sender endpoint ("10.0.0.1:80" is IPv4 with its port)."""
    sender = str(sender or "")
    return wire_overhead(sender.startswith("[") or sender.count(":") > 1, bool(timestamps))


@dataclass(frozen=True)
class Links:
    """The :class:`LinkInfo` of many flows as columns: what :func:`flow_parts_batch` reads."""

    vantage: list[str]
    mss: np.ndarray  # int64
    overhead: np.ndarray  # int64
    delivery_rate_bps: np.ndarray  # float64
    data_segments: np.ndarray  # int64
    confidence: list[str | None]
    span_start: np.ndarray  # float64, epoch s
    span_end: np.ndarray
    rttmin_s: np.ndarray  # float64, NaN = none
    handshake_rtt_s: np.ndarray  # float64, NaN = none

    def __len__(self) -> int:
        return len(self.vantage)

    @staticmethod
    def of(summaries: Sequence[Any]) -> Links:
        """From ingest ``FlowSummary``s or their dicts, a field at a time (:meth:`LinkInfo.of`'s rules)."""
        maps = [isinstance(s, Mapping) for s in summaries]

        def col(name: str) -> list[Any]:
            if not any(maps):
                return [getattr(s, name, None) for s in summaries]
            return [s.get(name) if m else getattr(s, name, None) for s, m in zip(summaries, maps, strict=True)]

        overhead = [_overhead(s, ts) for s, ts in zip(col("sender"), col("timestamps"), strict=True)]
        return Links([str(v or "sender") for v in col("vantage")], _ints(col("mss")), np.array(overhead, np.int64),
                     _floats(col("delivery_rate_bps")), _ints(col("data_segments")), col("confidence"),
                     _floats(col("start_t")), _floats(col("end_t")), _nans(col("rttmin_s")),
                     _nans(col("handshake_rtt_s")))

    @staticmethod
    def from_infos(links: Sequence[LinkInfo]) -> Links:
        return Links([li.vantage for li in links], _ints([li.mss for li in links]),
                     _ints([li.overhead for li in links]), _floats([li.delivery_rate_bps for li in links]),
                     _ints([li.data_segments for li in links]), [li.confidence for li in links],
                     _floats([li.span[0] for li in links]), _floats([li.span[1] for li in links]),
                     _nans([li.rttmin_s for li in links]), _nans([li.handshake_rtt_s for li in links]))

    def info(self, i: int) -> LinkInfo:
        return LinkInfo(self.vantage[i], int(self.mss[i]), int(self.overhead[i]), float(self.delivery_rate_bps[i]),
                        int(self.data_segments[i]), self.confidence[i],
                        (float(self.span_start[i]), float(self.span_end[i])), _time(self.rttmin_s[i]),
                        _time(self.handshake_rtt_s[i]))


def _ints(values: Sequence[Any]) -> np.ndarray:
    return np.array([int(v or 0) for v in values], np.int64)


def _floats(values: Sequence[Any]) -> np.ndarray:
    return np.array([float(v or 0.0) for v in values], np.float64)


def _time(value: Any) -> float | None:
    """A time, or None for none (a null or NaN, or no positive time: a summary's 0 is no measurement)."""
    return float(value) if value is not None and float(value) > 0.0 else None


def _nans(values: Sequence[Any]) -> np.ndarray:
    """Times as a column, NaN for none."""
    return np.array([math.nan if (t := _time(v)) is None else t for v in values], np.float64)

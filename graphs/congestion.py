"""The congestion graph of one flow: four panels on one time axis, as plain (JSON-able) data.

Modelled on tcptrace's time–sequence graph (Stevens) and qvis's congestion graph (Marx et al., "Debugging
QUIC and HTTP/3 with qlog and qvis", ANRW 2020), with ackreplay's replay laid over the flow:

* ``sequence`` — data sent (the end of each new segment), retransmissions, the cumulative ACK line, the
  ACKs' SACK blocks (their first block: RFC 2018's most recent data) and the receive window's right edge;
* ``flight`` — bytes in flight (the real sender's cwnd proxy) with, per estimator, the cwnd and ssthresh it
  would have set at each loss event, and the ideal (achieved rate, or the truth, × RTTmin), with a y-range that
  follows the flight and the ideal (``flight_top``): a decision above it is listed in ``flight_clipped``, so
  that a runaway estimator is marked at the edge with its value instead of squashing the panel;
* ``limits`` — what limited the sender (``scoring.limits``: ``[start, end, label]``, consecutive round trips
  of one label merged), for the flight panel's shaded bands;
* ``rates`` — every estimate against the achieved rate, the truth and the capacity seen in packet
  dispersion, with a y-range that follows the achieved rate (``y_top``): points above it are listed in
  ``clipped`` so that a viewer marks them at the edge;
* ``rtt`` — every RTT sample, srtt and RTTmin;
* ``queue`` — the bottleneck queue the RTT samples imply, ``(RTT − RTTmin)·C`` in bytes with C the path's
  capacity (§9), and the path's inferred buffer (None without a capacity);
* ``episodes`` — loss episodes by kind, for shading; episodes closer than one pixel column are merged.

The points of the data sent, the retransmissions and the ACK line carry each one's packet (``frame``: its frame
number in the capture file, as Wireshark numbers it; null for tables stored before ingest kept them), and every
episode its first and last packet and its retransmissions', to go back to the packet (the hover says "frame N").

A flow that was not replayed is drawn too, as tcptrace and Wireshark draw any connection: its time–sequence,
flight and RTT panels and its loss episodes are what the capture shows; only the replay's parts — the rates, the
estimators' cwnd and ssthresh, the ideal, the queue (the path's capacity comes from replay) — are empty
(``replayed`` false).

Every series is thinned per pixel column by :func:`graphs.downsample.m4_indices` (minima and maxima kept,
full resolution once the window holds ≤ 4 points per column), so a 10 M-ACK flow costs the same to draw as a
short one and zooming in (a narrower ``[t0, t1]``) brings back every point.

Build a :class:`CongestionSource` once per flow (numpy columns); :meth:`CongestionSource.window` is then a
few milliseconds per call, which is what the service caches between zooms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ackreplay.graphs.downsample import column_hull, m4_indices
from ackreplay.graphs.frame_numbers import episode_frames

#: The graph's pixel width when the caller does not say (the dashboard sends its own; the report and the
#: static images use more).
DEFAULT_PX = 1200
MAX_PX = 4000
#: The rate panel's top: this many times the achieved rate's 99th percentile (or the truth or the capacity,
#: whichever is larger); estimates above it are clipped and marked.
Y_TOP_FACTOR = 2.0


def _col(frame: pl.DataFrame, name: str, dtype: type = np.float64, fill: float = math.nan) -> np.ndarray:
    if name not in frame.columns:
        return np.full(frame.height, fill, dtype)
    return frame[name].fill_null(fill).to_numpy().astype(dtype, copy=False)


def _round(a: np.ndarray, digits: int) -> list[float | None]:
    """A JSON list (NaN → null); rounding keeps the payload small without moving anything by a pixel."""
    return [None if v != v else v for v in np.round(a.astype(np.float64), digits).tolist()]


@dataclass
class CongestionSource:
    """One flow's columns for the graph (times in s since the flow's first packet, sequence in bytes)."""

    flow_id: int
    mss: int
    ack_t: np.ndarray
    ack: np.ndarray
    sack_lo: np.ndarray  # -1: no SACK block
    sack_hi: np.ndarray
    rwnd_edge: np.ndarray  # ack + rwnd, NaN when the window's scale is unknown
    flight: np.ndarray
    rtt: np.ndarray
    srtt: np.ndarray
    rttmin: np.ndarray
    seg_t: np.ndarray
    seg_end: np.ndarray
    seg_retx: np.ndarray  # bool
    seg_frame: np.ndarray  # the segments' frame numbers (-1: unknown)
    ack_frame: np.ndarray  # the ACKs' frame numbers (-1: unknown)
    ep_frames: list[dict[str, Any]]  # per episode: first_frame, last_frame, retransmission_frames
    ep_start: np.ndarray
    ep_end: np.ndarray
    ep_timeout: np.ndarray  # bool
    rate_t: np.ndarray
    rates: dict[str, np.ndarray]  # "achieved", "truth" (optional), then every estimator (bits/s)
    decisions: pl.DataFrame
    capacity_bps: float | None = None
    t_span: tuple[float, float] = field(default=(0.0, 0.0))
    buffer_bytes: float | None = None  # the path's inferred buffer (§9), drawn on the queue panel
    replayed: bool = True  # False: the capture's panels alone (no rates, no estimators' marks)
    limits: list[tuple[float, float, str]] = field(default_factory=list)  # what limited the sender, merged runs

    @classmethod
    def build(cls, flow_id: int, mss: int, acks: pl.DataFrame, segments: pl.DataFrame, episodes: pl.DataFrame,
              series: pl.DataFrame | None, decisions: pl.DataFrame | None, capacity_bps: float | None = None,
              buffer_bytes: float | None = None, limits: Any = None) -> CongestionSource:
        """From a flow's ingest tables (``acks``, ``segments``, ``episodes``), its replayed ``series`` (``t_rel``,
        ``achieved_bps``, ``truth_bps``, ``<estimator>_bps``) and ``decisions`` (``replay.engine``), with the
        path's capacity and buffer (§9) and what limited the sender (``[start, end, label]`` runs) when known;
        ``series`` None for a flow that was not replayed (the capture's panels alone)."""
        replayed = series is not None
        if series is None:
            series = pl.DataFrame({"t_rel": []}, schema={"t_rel": pl.Float64})
        if decisions is None:
            decisions = pl.DataFrame()
        ack = _col(acks, "ack", np.int64, 0)
        rwnd = _col(acks, "rwnd", np.float64)
        seg_kind = segments["kind"].cast(pl.String).to_numpy() if "kind" in segments.columns else np.array([])
        keep = (seg_kind == "new") | (seg_kind == "retransmission")
        seg = segments.filter(pl.Series(keep)) if segments.height else segments
        series = series.sort("t_rel")
        rates = {"achieved": _col(series, "achieved_bps")} if replayed else {}
        if "truth_bps" in series.columns:
            rates["truth"] = _col(series, "truth_bps")
        for c in series.columns:
            if c.endswith("_bps") and c not in ("achieved_bps", "truth_bps"):
                rates[c[:-4]] = _col(series, c)
        start = _col(episodes, "start_t_rel")
        offset = _col(episodes, "start_t") - start
        end = _col(episodes, "end_t") - offset
        ep_frames = episode_frames(seg, episodes)
        ack_t = _col(acks, "t_rel")
        seg_t = _col(seg, "t_rel")
        ts = [a for a in (ack_t, seg_t) if len(a)]
        span = (float(min(a[0] for a in ts)), float(max(a[-1] for a in ts))) if ts else (0.0, 0.0)
        return cls(
            flow_id=flow_id, mss=mss, ack_t=ack_t, ack=ack, sack_lo=_col(acks, "sack_lo", np.int64, -1),
            sack_hi=_col(acks, "sack_hi", np.int64, -1), rwnd_edge=ack + rwnd, flight=_col(acks, "flight"),
            rtt=_col(acks, "rtt"), srtt=_col(acks, "srtt"), rttmin=_col(acks, "rttmin"),
            seg_t=seg_t, seg_end=_col(seg, "seq", np.float64, 0) + _col(seg, "len", np.float64, 0),
            seg_retx=_col(seg, "retransmission", np.bool_, False), seg_frame=_col(seg, "frame", np.int64, -1),
            ack_frame=_col(acks, "frame", np.int64, -1), ep_frames=ep_frames, ep_start=start,
            ep_end=np.where(np.isnan(end), start, end),
            ep_timeout=(episodes["kind"].cast(pl.String) == "timeout").to_numpy() if episodes.height
            else np.zeros(0, np.bool_),
            rate_t=_col(series, "t_rel"), rates=rates, decisions=decisions,
            capacity_bps=capacity_bps if capacity_bps is not None and math.isfinite(capacity_bps) else None,
            t_span=span, buffer_bytes=buffer_bytes, replayed=replayed,
            limits=[(float(a), float(b), str(c)) for a, b, c in limits or []],
        )

    @property
    def nbytes(self) -> int:
        """Memory held by the columns (what a cache of sources counts)."""
        arrays = [v for v in vars(self).values() if isinstance(v, np.ndarray)] + list(self.rates.values())
        return sum(a.nbytes for a in arrays) + int(self.decisions.estimated_size())

    # ---- one window of the graph

    def window(self, t0: float | None = None, t1: float | None = None, px: int = DEFAULT_PX) -> dict[str, Any]:
        """The graph over [t0, t1] (default: the whole flow) drawn ``px`` columns wide, as JSON-able data."""
        lo, hi = self.t_span
        t0 = lo if t0 is None or not math.isfinite(t0) else max(float(t0), lo - 1.0)
        t1 = hi if t1 is None or not math.isfinite(t1) else min(float(t1), hi + 1.0)
        if t1 <= t0:
            t1 = t0 + 1e-6
        px = int(min(max(px, 50), MAX_PX))
        points = 0
        full = True

        def line(x: np.ndarray, y: np.ndarray, digits: int = 6, frames: np.ndarray | None = None
                 ) -> dict[str, list[Any]]:
            nonlocal points, full
            idx = m4_indices(x, y.astype(np.float64, copy=False), t0, t1, px)
            drawable = np.count_nonzero(~np.isnan(y[(x >= t0) & (x <= t1)])) if len(x) else 0
            full = full and bool(len(idx) >= drawable)
            points += len(idx)
            drawn: dict[str, list[Any]] = {"t": _round(x[idx], 6), "y": _round(y[idx], digits)}
            if frames is not None:  # each point's packet
                drawn["frame"] = [f if f > 0 else None for f in frames[idx].tolist()]
            return drawn

        new = ~self.seg_retx
        sequence = {
            "sent": line(self.seg_t[new], self.seg_end[new], 0, self.seg_frame[new]),
            "retransmitted": line(self.seg_t[self.seg_retx], self.seg_end[self.seg_retx], 0,
                                  self.seg_frame[self.seg_retx]),
            "ack": line(self.ack_t, self.ack.astype(np.float64), 0, self.ack_frame),
            "rwnd": line(self.ack_t, self.rwnd_edge, 0),
        }
        sx, sl, sh = column_hull(self.ack_t, self.sack_lo, self.sack_hi, t0, t1, px)
        points += len(sx)
        sequence["sack"] = {"t": _round(sx, 6), "lo": sl.tolist(), "hi": sh.tolist()}

        flight = {"flight": line(self.ack_t, self.flight, 0), **self._decisions(t0, t1)}
        flight_top, flight_clipped = self._flight_range(flight, t0, t1)
        rates, clipped, y_top = self._rates(line, t0, t1)
        rtt = {k: line(self.ack_t, v * 1e3, 4) for k, v in (("samples", self.rtt), ("srtt", self.srtt),
                                                            ("rttmin", self.rttmin))}
        queue = None
        known = self.rtt[~np.isnan(self.rtt)]
        if self.capacity_bps and len(known):  # the queue the RTT samples imply: (RTT − RTTmin)·C, bytes
            queue = {"queue": line(self.ack_t, (self.rtt - known.min()) * self.capacity_bps / 8.0, 0),
                     "buffer_bytes": self.buffer_bytes}
        return {
            "flow_id": self.flow_id, "mss": self.mss, "replayed": self.replayed, "t_span": list(self.t_span),
            "window": [t0, t1], "px": px,
            "full_resolution": full, "points": points,
            "sequence": sequence, "flight": flight, "flight_top": flight_top, "flight_clipped": flight_clipped,
            "limits": [[max(a, t0), min(b, t1), c] for a, b, c in self.limits if b >= t0 and a <= t1],
            "rates": rates, "clipped": clipped, "y_top": y_top,
            "capacity_bps": self.capacity_bps, "rtt": rtt, "queue": queue, "episodes": self._episodes(t0, t1, px),
        }

    def _rates(self, line: Any, t0: float, t1: float) -> tuple[dict[str, Any], dict[str, Any], float | None]:
        if not self.rates:  # not replayed: no rate to draw
            return {}, {}, None
        t = self.rate_t
        inside = (t >= t0) & (t <= t1)
        achieved = self.rates["achieved"][inside]
        achieved = achieved[np.isfinite(achieved)]
        refs = [float(np.percentile(achieved, 99))] if len(achieved) else []
        if "truth" in self.rates:
            tr = self.rates["truth"][inside]
            tr = tr[np.isfinite(tr)]
            if len(tr):
                refs.append(float(tr.max()))
        if self.capacity_bps:
            refs.append(self.capacity_bps)
        y_top = Y_TOP_FACTOR * max(refs) if refs and max(refs) > 0 else None
        out: dict[str, Any] = {}
        clipped: dict[str, Any] = {}
        for name, y in self.rates.items():
            drawn = line(t, y, 0)
            out[name] = drawn
            if y_top is not None:
                over = [(tt, v) for tt, v in zip(drawn["t"], drawn["y"], strict=True) if v is not None and v > y_top]
                if over:
                    clipped[name] = {"t": [o[0] for o in over], "y": [o[1] for o in over]}
        return out, clipped, y_top

    def _flight_range(self, flight: dict[str, Any], t0: float, t1: float) -> tuple[float | None, dict[str, Any]]:
        """The flight panel's top — :data:`Y_TOP_FACTOR` × the larger of the flight's 99th percentile and the
        largest ideal in the window — and, per estimator, the decisions above it (``t``, ``y``: its ssthresh or
        cwnd, bytes)."""
        inside = (self.ack_t >= t0) & (self.ack_t <= t1)
        own = self.flight[inside]
        own = own[np.isfinite(own)]
        refs = [float(np.percentile(own, 99))] if len(own) else []
        refs += [v for v in flight["ideal"]["y"] if v is not None]
        top = Y_TOP_FACTOR * max(refs) if refs and max(refs) > 0 else None
        clipped: dict[str, Any] = {}
        if top is None:
            return None, clipped
        for name, e in flight["estimators"].items():
            over = sorted((t, v) for ts, ys in ((e["t"], e["ssthresh"]), (e["cwnd_t"], e["cwnd"]))
                          for t, v in zip(ts, ys, strict=True) if v is not None and t is not None and v > top)
            if over:
                clipped[name] = {"t": [o[0] for o in over], "y": [o[1] for o in over]}
        return top, clipped

    def _decisions(self, t0: float, t1: float) -> dict[str, Any]:
        d = self.decisions
        if d.height == 0:
            return {"ideal": {"t": [], "y": []}, "estimators": {}}
        d = d.filter((pl.col("t_rel") >= t0) & (pl.col("t_rel") <= t1))
        ideal_col = "ideal_truth_bytes" if "ideal_truth_bytes" in d.columns and \
            d["ideal_truth_bytes"].drop_nulls().len() else "ideal_bytes"
        eps = d.unique("episode", keep="first", maintain_order=True)
        per: dict[str, Any] = {}
        for name in d["estimator"].unique(maintain_order=True).to_list():
            rows = d.filter(pl.col("estimator") == name)
            ss = rows["ssthresh_segments"].cast(pl.Float64).to_numpy() * self.mss
            cw = rows["cwnd_segments"].cast(pl.Float64).to_numpy() * self.mss
            applied = rows["cwnd_applied_t_rel"].cast(pl.Float64).fill_null(float("nan")).to_numpy() \
                if "cwnd_applied_t_rel" in rows.columns else np.full(rows.height, np.nan)
            t = rows["t_rel"].to_numpy()
            per[name] = {"t": _round(t, 6), "ssthresh": _round(ss, 0),
                         "cwnd_t": _round(np.where(np.isnan(applied), t, applied), 6), "cwnd": _round(cw, 0)}
        return {"ideal": {"t": _round(eps["t_rel"].to_numpy(), 6),
                          "y": _round(eps[ideal_col].cast(pl.Float64).to_numpy(), 0)},
                "estimators": per}

    def _episodes(self, t0: float, t1: float, px: int) -> list[dict[str, Any]]:
        """Loss episodes overlapping the window, with their packets; those closer than a pixel column merge (timeout
        wins; the first's first frame, the last's last frame, every retransmission's frame)."""
        width = (t1 - t0) / px
        keep = (self.ep_end >= t0) & (self.ep_start <= t1)
        out: list[dict[str, Any]] = []
        for s, e, to, fr in zip(self.ep_start[keep].tolist(), self.ep_end[keep].tolist(),
                                self.ep_timeout[keep].tolist(), [self.ep_frames[k] for k in np.flatnonzero(keep)],
                                strict=True):
            if out and s - out[-1]["end"] < width:
                out[-1]["end"] = max(out[-1]["end"], e)
                out[-1]["count"] += 1
                out[-1]["last_frame"] = fr["last_frame"]
                out[-1]["retransmission_frames"] += fr["retransmission_frames"]
                if to:
                    out[-1]["kind"] = "timeout"
                continue
            out.append({"start": round(s, 6), "end": round(e, 6), "kind": "timeout" if to else "fast_retransmit",
                        "count": 1, **fr, "retransmission_frames": list(fr["retransmission_frames"])})
        return out


def source_for(ingest: Any, replay: Any, flow_id: int) -> CongestionSource:
    """The graph's source for one flow of an ingested (``ingest.CaptureIngest``) and replayed
    (``replay.engine.FlowReplay``; None when the flow was not replayed) capture, as the CLI holds them in
    memory."""
    fd = ingest.flow(flow_id)
    if replay is None:
        return CongestionSource.build(flow_id, fd.summary.mss, fd.acks, fd.segments, fd.episodes, None, None)
    return CongestionSource.build(flow_id, fd.summary.mss, fd.acks, fd.segments, fd.episodes, replay.series,
                                  replay.decisions, (replay.diagnostics or {}).get("dispersion_capacity_bps"),
                                  (replay.path or {}).get("buffer_bytes"),
                                  replay.limits.runs() if replay.limits is not None else None)

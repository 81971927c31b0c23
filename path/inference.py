"""The §9 ``path`` object (docs/path.md §9) from a path's evidence: its figures (:func:`row_figures`, many
rows at once) and one sentence of evidence for each — its method and numbers, or why it is null (the command
line's one-line summary of it is ``cli.wording.path_line``).

:func:`infer_batch` judges many rows of a :class:`PathBatch` at once, each on its own evidence or on the
pooled evidence of the flows sharing its bottleneck (:meth:`PathBatch.merge`); :func:`infer` is the same code
on one row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ackreplay.path.bounds import capture_link_rates, physical_bounds, say_bounds, unsure_random
from ackreplay.path.dispersion import ADR_SHARE, MIN_MODE_PAIRS, MODE_REL
from ackreplay.path.evidence import GRADES, PathBatch, PathParts
from ackreplay.path.figures import BERNOULLI_TAIL, FULL_QUEUE_SHARE, row_figures

PATH_KEYS = ("capacity_bps", "capacity_hop", "capture_link_bps", "base_rtt_s", "buffer_bytes", "buffer_over_bdp",
             "random_loss_rate", "confidence", "evidence")
_HOW = ("data segments seen after the bottleneck", "ACK spacing of data queued back to back at the bottleneck",
        "the pooled data and ACK pairs")
#: The evidence columns judged on a group's pooling where the row has one (the rest are the row's own).
_JUDGED = ("pairs", "adr_bps", "wire_mss", "mss", "rtt_samples", "rtt_min_s", "source", "rtt_bound_s", "handshake_s",
           "top_queue_s", "flight_bytes")


def infer(parts: PathParts, shared: PathParts | None = None) -> dict[str, Any]:
    """The §9 ``path`` object from (one flow's or a group's) evidence: exactly :data:`PATH_KEYS`; ``evidence``
    maps each figure to one sentence (its method and numbers, or why it is null). ``shared``: the pooled
    evidence of the flows that share this flow's bottleneck (:meth:`PathBatch.merge`), whose capacity and base
    RTT are the path's — one flow's pairs on a shared link are spread by the others' packets (each of n
    flows interleaving evenly reads C/n), which its own average rate does not rule out. (:func:`infer_batch`
    of one.)"""
    if shared is None:
        return infer_batch(parts.batch, rows=[parts.row])[0]
    return infer_batch(parts.batch, shared.batch, [shared.row], rows=[parts.row])[0]


def infer_batch(parts: PathBatch, shared: PathBatch | None = None, group: Sequence[int] | np.ndarray | None = None,
                rows: Sequence[int] | np.ndarray | None = None) -> list[dict[str, Any]]:
    """:func:`infer` of many rows at once: their figures as arrays (:func:`row_figures`), then each row's dict.
    ``rows``: which rows of ``parts`` (all by default); ``group``: for each, its row of ``shared`` (the pooled
    evidence of the flows sharing its bottleneck: :meth:`PathBatch.merge`), or −1 for none."""
    own = np.arange(len(parts), dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    # every row in order (a batch, or a batch of one flow): its columns as they are
    whole = rows is None or (len(own) == len(parts) and bool(np.all(own == np.arange(len(parts)))))

    def mine(col: np.ndarray) -> np.ndarray:
        return col if whole else col[own]

    grouped, gi, j = _judged(parts, shared, group, own, whole)
    l_lo, l_hi = parts.loss_offsets[own], parts.loss_offsets[own + 1]
    link_rate, figures = _row_figures(parts, own, mine, j)
    (capacity, ser, base, deep, queued, full, delay, buffer, over, lost, seen, odd, rnd, grade, _) = figures
    bounds = physical_bounds(capacity, base, buffer, over, grade, j)
    random_why = unsure_random(rnd, l_hi - l_lo, full, grouped | (_flow_count(parts, own) > 1), odd)
    how = _how(parts, own)
    if len(gi):
        assert shared is not None
        texts = dict(zip(np.unique(gi).tolist(), _how(shared, np.unique(gi)), strict=True))
        for k, r in zip(np.flatnonzero(grouped).tolist(), gi.tolist(), strict=True):
            how[k] = texts[r]
    out = []
    for (cap, inm, abv, npairs, adr, wire, mss, rmin, nrtt, ser_s, base_s, deep_s, queued_s, n, nfull, delay_s, buf,
         over_s, lost_n, seen_n, odd_n, rnd_r, grade_c, segs, judged_on_group, how_s) in zip(
            capacity.tolist(), j["in_mode"].tolist(), j["above"].tolist(), j["pairs"].tolist(),
            j["adr_bps"].tolist(), j["wire_mss"].tolist(), j["mss"].tolist(), j["rtt_min_s"].tolist(),
            j["rtt_samples"].tolist(), ser.tolist(), base.tolist(), deep.tolist(), queued.tolist(),
            (l_hi - l_lo).tolist(), full.tolist(), delay.tolist(), buffer.tolist(), over.tolist(), lost.tolist(),
            seen.tolist(), odd.tolist(), rnd.tolist(), grade.tolist(), mine(parts.data_segments).tolist(),
            grouped.tolist(), how, strict=True):
        cap, ev_cap = _capacity(cap, inm, abv, npairs, adr, wire, mss, how_s)
        base_s, ev_base = _base_rtt(base_s, rmin, nrtt, ser_s, cap, judged_on_group)
        buf, ev_buf = _buffer(buf, cap, n, nfull, deep_s, queued_s, delay_s)
        over_s, ev_over = _over_bdp(over_s, buf, base_s, cap)
        rnd_r, ev_rnd = _random_loss(rnd_r, segs, n, nfull, (lost_n, seen_n, odd_n), cap)
        out.append({"capacity_bps": cap, "capacity_hop": "bottleneck" if cap is not None else None,
                    "capture_link_bps": None, "base_rtt_s": base_s, "buffer_bytes": buf, "buffer_over_bdp": over_s,
                    "random_loss_rate": rnd_r, "confidence": GRADES[grade_c],
                    "evidence": {"capacity_bps": ev_cap, "base_rtt_s": ev_base, "buffer_bytes": ev_buf,
                                 "buffer_over_bdp": ev_over, "random_loss_rate": ev_rnd}})
    say_bounds(out, link_rate, bounds, j, random_why)
    return out


def _row_figures(parts: PathBatch, own: np.ndarray, mine: Callable[[np.ndarray], np.ndarray], j: dict[str, np.ndarray]
                 ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The capture link's rates of the rows ``own`` and their :func:`row_figures`, on the judged columns ``j``
    (:func:`_judged`) and their own (``mine``: a column's values of those rows)."""
    link_rate = capture_link_rates(j["at_bin"], j["in_mode"], j["source"], j["adr_bps"])
    return link_rate, row_figures(
        np.where(np.isnan(link_rate), j["at_bin"], -1), j["in_mode"], j["above"], j["wire_mss"], j["rtt_min_s"],
        j["rtt_samples"],
        mine(parts.rtt_min_s), mine(parts.wire_mss), mine(parts.deep_queue_s), mine(parts.top_queue_s),
        mine(parts.data_segments), mine(parts.confidence), parts.loss_offsets[own], parts.loss_offsets[own + 1],
        parts.loss_queue_s, parts.loss_retx, parts.loss_exposed)


def loss_kinds(parts: PathParts) -> np.ndarray:
    """Each of the evidence's loss episodes as the random-loss rate of :func:`infer` on it alone judges it
    (``path.figures``' ``RANDOM_EPISODE``, ``OVERFLOW_EPISODE``, ``ASIDE_EPISODE``; int8, in the episodes' order)."""
    own = np.array([parts.row], np.int64)
    _, _, j = _judged(parts.batch, None, None, own, False)
    kinds = _row_figures(parts.batch, own, lambda col: col[own], j)[1][-1]
    return kinds[parts.batch.loss_offsets[parts.row]:parts.batch.loss_offsets[parts.row + 1]]


def _judged(parts: PathBatch, shared: PathBatch | None, group: Sequence[int] | np.ndarray | None, own: np.ndarray,
            whole: bool) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Which of the rows ``own`` are judged on their group's pooled evidence (``grouped``: the group holds more
    than this flow), their rows of ``shared`` (``gi``), and the judged columns — the mode (``at_bin``,
    ``in_mode``, ``above``) and :data:`_JUDGED` — the group's where grouped, else the row's own (the column
    itself when ``whole``)."""
    # judged on the group's evidence: rows whose group holds more than this flow
    g = np.full(len(own), -1, np.int64) if group is None or shared is None else np.asarray(group, np.int64)
    grouped = g >= 0
    if shared is not None and grouped.any():
        grouped &= _flow_count(shared, np.maximum(g, 0)) > 1
    gi = g[grouped]

    def judged(own_col: np.ndarray, shared_col: Any) -> np.ndarray:
        if not len(gi):
            return own_col if whole else own_col[own]
        out = own_col[own]
        out[grouped] = shared_col[gi]
        return out

    modes = parts.modes()
    s_modes = shared.modes() if len(gi) and shared is not None else (None, None, None)
    cols = {name: judged(m, s) for name, m, s in zip(("at_bin", "in_mode", "above"), modes, s_modes, strict=True)}
    cols.update((name, judged(getattr(parts, name), getattr(shared, name, None))) for name in _JUDGED)
    return grouped, gi, cols


def _capacity(cap: float, inm: int, abv: int, npairs: int, adr: float, wire: int, mss: int, how: str
              ) -> tuple[float | None, str]:
    """The capacity (None for NaN) and its evidence."""
    if cap != cap:
        return None, (f"null: too few packet pairs to find a dispersion mode ({inm} in the densest "
                      f"±{MODE_REL:.0%} window of {npairs} pairs from {how}; at least "
                      f"{MIN_MODE_PAIRS} needed): the flow seldom kept the bottleneck's queue busy")
    return cap, (f"packet-pair dispersion mode (pathrate) from {how}: {inm} of {abv} pairs "
                 f"above {ADR_SHARE:g}× the average dispersion rate {adr / 1e6:.3f} Mbit/s "
                 f"lie within ±{MODE_REL:.0%} of {cap / 1e6:.3f} Mbit/s ({npairs} pairs in all; "
                 f"wire size {wire} B per {mss} B segment, a payload ceiling of "
                 f"{cap * mss / wire / 1e6:.3f} Mbit/s)")


def _base_rtt(base: float, rmin: float, nrtt: int, ser: float, cap: float | None, judged_on_group: bool
              ) -> tuple[float | None, str]:
    """The base RTT (None without an RTT sample) and its evidence."""
    if rmin != rmin:
        return None, "null: no RTT sample in the capture"
    return base, (f"smallest of {nrtt} RTT samples{' of the group' if judged_on_group else ''}"
                  f" {rmin * 1e3:.3f} ms"
                  + (f", less half a full-size segment's transmission at capacity ({ser * 1e3:.3f} ms)"
                     if cap else " (capacity unknown: its own transmission time not removed)"))


def _buffer(buf: float, cap: float | None, n: int, nfull: int, deep: float, queued: bool, delay: float
            ) -> tuple[float | None, str]:
    """The buffer (None for NaN, or without the capacity) and its evidence: ``n`` losses, ``nfull`` of them
    after a full queue."""
    if cap is None:
        return None, "null: the capacity is unknown, so no queueing delay converts to bytes"
    if n == 0:
        text = ("null: no loss in the capture, so the buffer never overflowed; the deepest queue "
                f"seen was {_queue_text(deep, cap)}")
    elif not nfull:
        text = (f"null: none of the {n} losses followed a full queue (the deepest queue seen, "
                f"{_queue_text(deep, cap)}, is "
                + ("below the buffer-overflow level)" if not queued else "never reached at a loss)"))
    else:
        text = (f"queueing delay before the {nfull} of {n} losses that followed a full "
                f"queue (at least {FULL_QUEUE_SHARE:.0%} of the deepest, "
                f"{deep * 1e3:.1f} ms): median {delay * 1e3:.1f} ms × capacity")
    return (None if buf != buf else buf), text


def _over_bdp(over: float, buf: float | None, base: float | None, cap: float | None) -> tuple[float | None, str]:
    """Buffer/BDP (None without a buffer or a base RTT) and its evidence."""
    if buf is not None and base:
        assert cap is not None  # (a buffer figure needs the capacity)
        return over, f"{buf:.0f} B over BDP = capacity × base RTT = {cap * base / 8.0:.0f} B"
    return None, "null: " + ("no buffer figure" if buf is None else "no base RTT")


def _random_loss(rnd: float, segs: int, n: int, nfull: int, counts: tuple[int, int, int], cap: float | None
                 ) -> tuple[float | None, str]:
    """The random-loss rate (None without a data segment whose fate shows) and its evidence. ``counts``: the
    segments retransmitted off the overflows, the data segments (of ``segs``) whose fate the overflows' episodes do
    not decide, and the episodes set aside as no random loss (``path.figures.BERNOULLI_TAIL``)."""
    lost, seen, odd = counts
    if segs <= 0:
        return None, "null: no data segment sent"
    if n == 0:
        return rnd, f"no loss episode among {segs} data segments"
    if seen <= 0:
        return None, (f"null: the {nfull} buffer overflows' episodes decide the fate of all {segs} data segments "
                      "sent, so no drop can be told random")
    hidden = (f" (the {segs - seen} sent in the windows of the {nfull + odd} episodes left out, whose random drops "
              "cannot be told from their other drops)" if seen < segs else "")
    aside = (f" but the {odd} set aside as no random loss (more drops in one window than a Bernoulli loss at this "
             f"rate puts there once in {1 / BERNOULLI_TAIL:.0f}: an overflow at another level, or a burst)"
             if odd else "")
    return rnd, (f"{lost} segments retransmitted in the {n - nfull} of {n} loss episodes not "
                 f"preceded by a full queue{aside}, per {seen} of the {segs} data segments sent{hidden}"
                 + ("" if cap else " (without the capacity no queue can be told full: every "
                    "loss is counted, an upper bound)"))


def _how(batch: PathBatch, rows: np.ndarray) -> list[str]:
    """Where each row's pairs came from, in words (naming the flows of a group)."""
    out = [_HOW[s] for s in batch.source[rows].tolist()]
    many = _flow_count(batch, rows) > 1
    for k in np.flatnonzero(many).tolist():
        r = int(rows[k])
        flows = batch.flow_ids[batch.flow_offsets[r]:batch.flow_offsets[r + 1]].tolist()
        named = ", ".join(map(str, flows[:8])) + (", …" if len(flows) > 8 else "")
        out[k] += f" of the {len(flows)} flows sharing the bottleneck ({named})"
    return out


def _flow_count(batch: PathBatch, rows: np.ndarray) -> np.ndarray:
    """How many flows each of these rows holds."""
    return batch.flow_offsets[rows + 1] - batch.flow_offsets[rows]


def _queue_text(deep: float, capacity: float) -> str:
    if not math.isfinite(deep):
        return "unknown (no RTT sample)"
    return f"{deep * 1e3:.1f} ms ≈ {deep * capacity / 8.0:.0f} B"

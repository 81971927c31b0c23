"""What limited the sender, round trip by round trip (issue #34; docs/estimators.md "What limited the sender").

Each round trip of a flow (an interval one smoothed RTT long) gets one label:

* ``cwnd`` — the network: the congestion window, or a congestion control's pacing rate (BBR), held the flight;
* ``rwnd`` — the flight reached the receiver's advertised window;
* ``app`` — the sender had nothing to send: idle, or sending less than its window allowed;
* ``sndbuf`` — the application was blocked on a full send buffer (told apart from ``app`` by how the flight
  refills, below);
* ``unknown`` — nothing to decide on (no ACK in the interval while data was out, or no RTT at all).

Per flow: each label's share of the flow's time (first to last ACK; the shares sum to 1 within 1e-12), the
series of intervals (start, end, label) on the flow's time axis (``FlowInputs.t``), the share of its time
with nothing outstanding (``FlowLimits.idle_share``) and the receive window its first recovery ran into
(``FlowLimits.loss_rwnd_bytes``), and whether it paced its segments (``FlowLimits.paced_share``).

After two passive methods. T-RAT (Y. Zhang, L. Breslau, V. Paxson and S. Shenker, "On the Characteristics and
Origins of Internet Flow Rates", ACM SIGCOMM 2002) cuts a flow into flights of one round trip and names what
limited it: congestion (losses, the window adapting to them), transport (the window still growing), the
receiver's window (the flight at the advertised window), the sender's window (a flight held constant below it,
without losses), the application (the sender idle or sending less than it could), the bandwidth (the path
full). The TCP root cause analysis of M. Siekkinen, G. Urvoy-Keller, E. W. Biersack and D. Collange ("A root
cause analysis toolkit for TCP", Computer Networks 52(9), 2008; after "Root cause analysis for long-lived TCP
connections", ACM CoNEXT 2005) first takes out the periods where the application limits (the sender has nothing
to send: segments below the MSS, idle times), then scores the bulk periods: outstanding bytes at the
advertised window (receiver), retransmissions (congestion), throughput against the path's capacity.

The rules, per interval, in order (thresholds: :class:`LimitParams`):

1. ``app`` when the sender had nothing to send for half of it or more: idle (from an ACK that left no flight
   to the next data sent or the next ACK that finds data out), or running dry before an idle time (nothing
   outstanding and nothing sent for 1/16 of a round trip or more: a sender that sends again at once, as one
   waiting for every ACK before its next block, had data) — from the last segment sent before it, and from an
   ACK whose data in hand (its flight and all that was sent after it before that idle time) was below the window
   the sender had shown (the largest peak flight of the interval and the eight before) to the next ACK: it could
   have sent more and had no more (the kernel's own accounting calls it so too);
2. ``unknown`` when no ACK arrived in it — unless data was sent in it: a flight sent before any ACK of it came
   back is limited by what its ACKs find, the next interval's label;
3. ``rwnd`` when the data outstanding before an ACK (in flight + SACKed) came within one MSS of the window the
   previous ACK advertised (Linux stops at ``snd_una + snd_wnd``; T-RAT and Siekkinen et al. test the same);
4. ``cwnd`` when it holds a loss (two duplicate ACKs or more: T-RAT's congestion — RFC 5681's, or RFC 6675's:
   an ACK that SACKs new data without moving the cumulative ACK, whatever its window; a Linux receiver changes
   its advertised window on out-of-order data, so RFC 5681's count, which wants it unchanged, can see none in a
   whole recovery); a congestion *epoch* opens, its level half the peak flight of the round trip before the
   loss (the deepest standard cut, Reno's β);
5. ``cwnd`` while the epoch lasts: after a loss the congestion control sets the flight and then grows it
   (T-RAT's transport limit), so the epoch ends when the peak flight falls below its level (the highest peak
   since, less ``max(2 MSS, 25 %)``), when the first round trip after the loss kept over 0.85 of the flight
   before it (no cut: the window was not what held the flight), or when, eight round trips in or more, the
   mean peak of the last four is not 1 MSS above the four before (no growth);
6. ``app`` or ``sndbuf`` (as in rule 10) when the sender did not refill the window the ACKs opened: it sent less
   than half the bytes acknowledged (a sender held by its window sends at every ACK) — unless the window held data
   the sender had for half the interval or more: no ACK came back from its start to its first ACK, nothing was
   sent before that ACK and data went out at it (within ``quiet`` × the robust RTT). A block larger than the
   window after an idle time is sent as one window, waits a round trip, and its rest goes out at the first ACK:
   that wait is the window's (the kernel's: data in hand, the flight at the window), though the rest is small;
7. ``cwnd`` on a standing queue (Siekkinen et al.'s path at capacity): every RTT sample of the interval and of a
   neighbour at least ``max(4 ms, 0.15 RTTmin)`` above RTTmin — the bottleneck full for two round trips, one
   alone being a burst; an epoch opens at its peak flight;
8. ``cwnd`` when the window opened: the peak flight at least 1.15 × the largest of the (up to) three intervals
   before (not before the last loss or queue) + 1 MSS (slow start); or grew in congestion avoidance (T-RAT's
   transport limit, :func:`rising`): the mean peak of the last four intervals 1 MSS above the four before, each
   of the four half an MSS above the one before (Reno's segment a round trip) or, slower, creeping — no peak of
   the eight below the one before (nor 1.5 times above it: a slow start), each four ending above where they
   began, the flight not swinging by 0.4 of its peak (CUBIC's 0.53 segment a round, in whole segments: Linux
   grows the window only when the flight filled it, and a flight the send buffer holds is bounded by the buffer's
   fixed size); or, after an idle time in this interval or the one before, the flight grew within it by half its
   peak (sent − acknowledged) or reached an initial window (RFC 6928's 10 segments) and 0.9 of the largest peak
   of the eight intervals before (an application's block as large as the window the sender had) — but rules 8 and
   9 do not apply where a block sent after an idle time starts in the interval or the one before (or in one
   before the interval its last segment is seen in) and fitted the window (:func:`fitted_blocks`: it went out
   within 0.85 robust RTT, as seen in the capture, with no pause of 0.1 RTT: a window smaller than the block
   stops the sender until the first ACK, and Linux paces a window over srtt / 1.2, so a block that takes less was
   not held by it; the peak flights of blocks of one size say nothing about the window);
9. ``cwnd`` when the rate over the interval and its neighbours is at least 0.9 of the capacity the flow showed
   (the median rate of its standing-queue intervals, three needed): a paced sender (BBR) keeping no queue;
10. else ``sndbuf`` when no segment was below the MSS (Siekkinen et al.'s sign of an application with nothing
    more to send; one such segment is let pass in an interval after a ``sndbuf`` one when neither neighbour has
    any: a woken writer's data not a whole number of segments), none of the interval and its neighbours was
    idle (T-RAT's sender window: a flight held below the receiver's window, without losses) and the flight
    refilled as a blocked writer's: the ACKs clocked at least half of the refills of the three intervals (a
    refill: a train of two segments or more, a quarter of the interval's peak flight or more, after a pause of
    0.05 robust RTT; clocked: its first segment within 2 ms of the ACK before it, :func:`clocked_refills`) —
    at the receiver, or where no refill was seen, also a flight that swung by 40 % of its peak or more in the
    interval or a neighbour (``(peak before an ACK − lowest after one) / peak``); else ``app``.

``sndbuf`` from the wire: a Linux writer blocked on a full send buffer is woken only once a third of it is free
(``sk_stream_write_space``) — by the ACK that freed it — and writes at once, so its data leaves at that ACK
(40–80 µs after it in the testbed's sender-side captures; at the receiver, one RTTmin after the ACK it sent,
within a millisecond or two), in trains of a third of the buffer, and the flight drains with the ACKs in
between (a swing of 0.38 to 0.9 of its peak on the testbed's runs). An application with nothing queued writes
when it has data, at times its own clock sets (iperf3's 1 ms pacing timer: its blocks start 2–290 ms after
the last ACK), and its flight swings by 0.2–0.3 when it writes at a steady rate below the window. At the
sender the timing decides wherever a refill is seen; at the receiver it is blurred by the path's jitter and
either sign counts. A periodic application writing trains of a quarter of its flight or more at the instant
of its ACKs (an application itself clocked by them) looks the same and is called ``sndbuf``. So does a window
whose ACKs come back in bunches (its trains leave at them too): what tells it from a writer is that it grows —
rule 8's creep takes it first — where a buffer holds the flight to a fixed size.

Decided here, where the papers are silent: the interval is one robust RTT — the median of the last eight RTT
samples, a sample over 1.8× that median set aside unless such samples last eight medians (after an idle time a
receiver-side reconstruction times the first flights from the ACK before the idle: idle time + RTT) — at least
5 ms; the samples set aside are not queue samples either, and an event whose smoothed RTT is over twice the
median (after timeouts) carries no flight. A receiver- or tap-side capture sees data that share of a round trip
after it was sent, so each segment's time moves back by ``vantage_position`` × its round trip (the RTT sample of
the ACK that answers it, else the robust RTT) — except at the sender end (``vantage_position`` up to the
ingest's ``END_SHARE``): no path lies between such a capture and the sender's stack, the share the handshake
leaves to it (3–7 in 10 000 on the testbed) is the host's own turnaround, and its times are the send times (a
move of that share × RTTmin, 35–45 µs, would place a woken writer's data before the ACK that woke it, 40–80 µs
earlier: rule 10); a flow rebuilt there (``vantage_position`` over the ingest's
``END_SHARE``: not at the sender) has its flight after each ACK rebuilt from those send times (the highest
sequence sent by then, less the ACK and the SACKed bytes) in place of the ingest's (the data arriving within
one srtt, an srtt swollen by the samples taken across idle times). At the receiver (``vantage_position`` ≥ 0.9:
after the bottleneck) a segment's round trip, and the RTT sample of the ACK that answers it, are at most RTTmin
+ the time since the back-to-back train it arrived in began (a segment arriving over twice the bottleneck's
spacing after the one before found the queue empty, were the flow alone there), but cut by no more than the
silence before that train: a sample taken across an idle time cannot place data, or stretch a round trip, into
the idle time, and a flow sharing the bottleneck (its gaps other flows' data) keeps the queue it waited in.
The epoch, the two-interval queue and the growth tests are not the papers' (T-RAT classifies whole flows,
Siekkinen et al. periods of many round trips); BBR's pacing counts as the network (its pacing rate is its model
of the path). The labels cover the flow's first to last ACK.
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ackreplay.ingest.vantage import END_SHARE
from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import searchsorted_merge
from ackreplay.scoring.pacing import paced_share

if TYPE_CHECKING:
    from ackreplay.estimators.flow_batch import FlowBatch
    from ackreplay.estimators.inputs import FlowInputs

#: The labels, in code order (``FlowLimits.code`` indexes this).
LABELS = ("cwnd", "rwnd", "app", "sndbuf", "unknown")
CWND, RWND, APP, SNDBUF, UNKNOWN = range(5)


@dataclass(frozen=True)
class LimitParams:
    """The thresholds of the rules (module docstring); the defaults are the ones checked against the kernel."""

    idle_share: float = 0.5  # rule 1: share of the interval with nothing outstanding
    rwnd_slack_mss: float = 1.0  # rule 3: outstanding within this many MSS of the advertised window
    loss_dups: float = 2.0  # rule 4: duplicate ACKs that mark a loss
    epoch_beta: float = 0.5  # rule 4: the epoch's level, a share of the peak flight before the loss
    epoch_no_cut: float = 0.85  # rule 5: the first round trip after it above this share of it: no cut
    epoch_tol_mss: float = 2.0  # rule 5: slack below the epoch's level, MSS ...
    epoch_tol_rel: float = 0.25  # ... or this share of it, whichever is larger
    epoch_stall: float = 4.0  # rule 5: the epoch ends when the mean peak of its last this many intervals ...
    epoch_growth_mss: float = 1.0  # ... is not this many MSS above the mean of the as many before
    refill: float = 0.5  # rule 6: sent below this share of the bytes acknowledged
    queue_abs_s: float = 0.004  # rule 7: standing queue above RTTmin, s ...
    queue_rel: float = 0.15  # ... or this share of RTTmin, whichever is larger
    growth_rel: float = 1.15  # rule 8: peak flight growth, relative ...
    growth_mss: float = 1.0  # ... plus this many MSS; or, after an idle time, the flight grew within it by
    growth_within: float = 0.5  # this share of its peak (sent − acknowledged: a window reopened by a restart),
    restart_share: float = 0.9  # or reached this share of the largest peak of the 8 intervals before
    restart_mss: float = 10.0  # (and at least an initial window, RFC 6928's 10 segments)
    fit_span: float = 0.85  # rules 8-9: a block after an idle time out within this many robust RTTs ...
    fit_pause: float = 0.1  # ... with no pause of this many robust RTTs or more fitted the window
    rate_frac: float = 0.9  # rule 9: share of the flow's capacity
    swing: float = 0.4  # rule 10: flight swing of a send-buffer limited sender (no refill seen)
    refill_gap: float = 0.05  # rule 10: a refill starts after a pause of this many robust RTTs ...
    clock_s: float = 0.002  # ... and is the ACKs' when it left within this many s of an ACK
    refill_share: float = 0.25  # ... of this share of the interval's peak flight or more ...
    clocked: float = 0.5  # rule 10: this share of the refills the ACKs' (the interval and its neighbours)
    min_interval_s: float = 0.005  # the shortest interval (LAN flows)
    rtt_outlier: float = 1.8  # an RTT sample over this many robust RTTs is set aside ...
    rtt_persist: float = 8.0  # ... unless such samples last this many robust RTTs
    srtt_flight: float = 2.0  # an event whose srtt is over this many robust RTTs carries no flight
    quiet: float = 0.0625  # rule 1: an idle time a burst runs dry before lasts this many robust RTTs or more
    receiver_end: float = 0.9  # a capture at this share of the round trip or more is after the bottleneck

    def array(self) -> np.ndarray:
        return np.array(astuple(self), np.float64)


# indices into LimitParams.array(), by field name (numba reads them as constants)
_AT = {name: i for i, name in enumerate(LimitParams.__dataclass_fields__)}
_IDLE, _RWND_SLACK, _LOSS_DUPS = _AT["idle_share"], _AT["rwnd_slack_mss"], _AT["loss_dups"]
_BETA, _NO_CUT = _AT["epoch_beta"], _AT["epoch_no_cut"]
_EPOCH_TOL, _EPOCH_REL = _AT["epoch_tol_mss"], _AT["epoch_tol_rel"]
_EPOCH_STALL, _EPOCH_GROWTH, _REFILL = _AT["epoch_stall"], _AT["epoch_growth_mss"], _AT["refill"]
_Q_ABS, _Q_REL, _GROWTH_REL, _GROWTH_MSS = _AT["queue_abs_s"], _AT["queue_rel"], _AT["growth_rel"], _AT["growth_mss"]
_GROWTH_WITHIN, _RESTART, _RESTART_MSS = _AT["growth_within"], _AT["restart_share"], _AT["restart_mss"]
_RATE_FRAC, _SWING, _MIN_LEN = _AT["rate_frac"], _AT["swing"], _AT["min_interval_s"]
_OUTLIER, _PERSIST, _RECEIVER_END = _AT["rtt_outlier"], _AT["rtt_persist"], _AT["receiver_end"]
_SRTT_FLIGHT, _QUIET = _AT["srtt_flight"], _AT["quiet"]
_FIT_SPAN, _FIT_PAUSE = _AT["fit_span"], _AT["fit_pause"]
_REFILL_GAP, _CLOCK_S, _CLOCKED = _AT["refill_gap"], _AT["clock_s"], _AT["clocked"]
_REFILL_SHARE = _AT["refill_share"]
#: Feature columns per interval (the kernels' ``feat``).
(_F_EVENTS, _F_ACKED, _F_PEAK, _F_LOW, _F_ROOM, _F_RTT, _F_DUPS, _F_SENT, _F_SMALL, _F_IDLE, _F_DRY,
 _F_HELD, _F_FIT, _F_STARTS, _F_CLOCKED) = range(15)
_N_FEATURES = 15
#: The most a congestion window grows in a round trip of congestion avoidance: CUBIC's ``cnt`` is at least 2
#: (``bictcp_update``: "cwnd grows at 1.5x per RTT" at most), Reno's by a segment; a larger step is a slow start.
CA_GROWTH_MAX = 1.5
#: RTT samples the robust RTT is the median of.
_RTT_WINDOW = 8


@dataclass(frozen=True)
class FlowLimits:
    """What limited one flow: per interval (``start``/``end`` on the flow's time axis, s since its first
    packet; ``code`` indexes :data:`LABELS`) and each label's share of the flow's time (summing to 1)."""

    start: np.ndarray  # float64 s
    end: np.ndarray  # float64 s
    code: np.ndarray  # int8
    shares: dict[str, float] = field(default_factory=dict)
    #: The share of the flow's time (its intervals' span) with nothing outstanding: from an ACK that left no
    #: flight to the next data sent (rule 1's idle). A sender with a backlog always has data out — across a loss
    #: recovery and a timeout too —, so this is time its application gave it nothing to send.
    idle_share: float = 0.0
    #: The receive window (bytes) the receiver advertised on the ACK before the flow's first duplicate ACK: the
    #: window its first loss recovery runs into — a Linux receiver grows its window with the data it hands its
    #: application in order (``tcp_rcv_space_adjust``), none while the cumulative ACK waits at a hole, so the
    #: sender can send no further than that ACK + this window until the hole is filled. None: no duplicate ACK,
    #: or the window not known.
    loss_rwnd_bytes: float | None = None
    #: The share of the first slow start's new segments sent more than half a millisecond after the last ACK
    #: (``scoring.pacing.paced_share``): whether the sender paced. None: the capture cannot tell (not taken at the
    #: sender, or too few segments).
    paced_share: float | None = None

    def labels(self) -> list[str]:
        """The label of every interval."""
        return [LABELS[c] for c in self.code]

    def label_at(self, t: np.ndarray) -> np.ndarray:
        """The label codes at times ``t`` (s, the flow's axis); outside the intervals, ``UNKNOWN``."""
        t = np.asarray(t, np.float64)
        out = np.full(len(t), UNKNOWN, np.int8)
        if not len(self.code):
            return out
        i = searchsorted_merge(self.start, t, "right") - 1  # (a flow's times ascend: one merge pass)
        inside = (i >= 0) & (t <= self.end[np.clip(i, 0, None)])
        out[inside] = self.code[i[inside]]
        return out

    def runs(self) -> list[tuple[float, float, str]]:
        """Consecutive intervals of one label merged: (start, end, label) — the shaded bands of a graph."""
        if not len(self.code):
            return []
        cut = np.flatnonzero(np.diff(self.code)) + 1
        firsts = np.concatenate(([0], cut))
        lasts = np.concatenate((cut - 1, [len(self.code) - 1]))
        return [(float(self.start[a]), float(self.end[b]), LABELS[self.code[a]])
                for a, b in zip(firsts, lasts, strict=True)]


def shares_of(start: np.ndarray, end: np.ndarray, code: np.ndarray) -> dict[str, float]:
    """Each label's share of the total length of the intervals (every label present; ``unknown`` = 1 when the
    intervals have no length). The shares sum to 1 within 1e-12 (``sum()`` in label order): the rounding left
    by the divisions is given to the largest share."""
    length = end - start
    total = float(length.sum())
    if not total > 0:
        return {name: float(i == UNKNOWN) for i, name in enumerate(LABELS)}
    sums = np.bincount(code.astype(np.int64), weights=length, minlength=len(LABELS))
    shares = [float(x) for x in sums / float(sums.sum())]
    top = int(np.argmax(shares))
    shares[top] += 1.0 - math.fsum(shares)
    shares[top] += 1.0 - sum(shares)  # (sum() adds in order: what it still leaves over)
    return dict(zip(LABELS, shares, strict=True))


# ---- compiled kernels (one flow each)


@njit(cache=True, nogil=True)
def _median(buf: np.ndarray, n: int, s: np.ndarray) -> float:
    """The median of ``buf[:n]`` (no NaN), sorted into ``s`` by insertion: called at every accepted sample, it
    allocates nothing (``np.sort`` of the window allocated a new array each time, half the kernel's time)."""
    for j in range(n):
        v = buf[j]
        k = j
        while k > 0 and s[k - 1] > v:
            s[k] = s[k - 1]
            k -= 1
        s[k] = v
    h = n // 2
    return float(s[h]) if n % 2 else 0.5 * (s[h - 1] + s[h])


@njit(cache=True, nogil=True)
def robust_rtt_into(t: np.ndarray, rtt: np.ndarray, seed: float, outlier: float, persist: float, out: np.ndarray,
                    kept: np.ndarray) -> None:
    """Per event, the median of the last ``_RTT_WINDOW`` accepted RTT samples (``seed`` before the first), and
    the samples kept (``kept``: the sample, NaN when none or set aside). A sample over ``outlier`` × the median
    is set aside — after an idle period a receiver-side reconstruction times the first flights from the ACK
    before the idle — unless such samples go on for more than ``persist`` medians (a real change of the path),
    when the latest of them become the window."""
    w = _RTT_WINDOW
    buf = np.empty(w)
    rej = np.empty(w)
    srt = np.empty(w)
    nbuf = 0
    pos = 0
    nrej = 0
    t_rej = 0.0
    med = seed
    for i in range(len(t)):
        r = rtt[i]
        kept[i] = np.nan
        if r > 0.0:
            if nbuf > 0 and r > outlier * med:
                if nrej == 0:
                    t_rej = t[i]
                rej[nrej % w] = r
                nrej += 1
                if t[i] - t_rej > persist * med:
                    keep = min(nrej, w)
                    for j in range(keep):
                        buf[j] = rej[(nrej - keep + j) % w]
                    nbuf = keep
                    pos = keep % w
                    nrej = 0
                    med = _median(buf, nbuf, srt)
            else:
                nrej = 0
                kept[i] = r
                buf[pos] = r
                pos = (pos + 1) % w
                nbuf = min(nbuf + 1, w)
                med = _median(buf, nbuf, srt)
        out[i] = med


@njit(cache=True, nogil=True)
def _walk_grid(t: np.ndarray, rref: np.ndarray, min_len: float, out: np.ndarray, fill: bool) -> int:
    n = len(t)
    b = t[0]
    end = t[n - 1]
    i = 0
    k = 0
    if fill:
        out[0] = b
    while b < end:
        while i + 1 < n and t[i + 1] <= b:
            i += 1
        step = rref[i]
        if not step > min_len:  # (NaN too)
            step = min_len
        b = end if b + step > end - 1e-9 else b + step  # (no sliver at the end)
        k += 1
        if fill:
            out[k] = b
    return k


@njit(cache=True, nogil=True)
def grid_bounds(t: np.ndarray, rref: np.ndarray, min_len: float) -> np.ndarray:
    """Interval bounds from the first to the last event, each interval the robust RTT at its start (at least
    ``min_len``; the last one cut at the last event)."""
    if len(t) == 0:
        return np.empty(0)
    k = _walk_grid(t, rref, min_len, np.empty(0), False)
    out = np.empty(k + 1)
    _walk_grid(t, rref, min_len, out, True)
    return out


@njit(cache=True, nogil=True)
def _event_range(b: np.ndarray, t: np.ndarray, k: int, lo: int) -> int:
    """The end of interval ``k``'s events, which start at ``lo`` (the last interval keeps the last event)."""
    hi = lo
    last = k == len(b) - 2
    while hi < len(t) and (t[hi] < b[k + 1] or last):
        hi += 1
    return hi


@njit(cache=True, nogil=True)
def ack_features_into(b: np.ndarray, t: np.ndarray, before: np.ndarray, flight: np.ndarray, acked: np.ndarray,
                      outst: np.ndarray, rwnd_prev: np.ndarray, dup: np.ndarray, rtt: np.ndarray,
                      feat: np.ndarray) -> None:
    """Per interval, from its ACK events (``feat`` rows, columns ``_F_*``): events, bytes acknowledged, peak flight
    before an ACK, lowest flight after one, the least room left in the advertised window, the smallest RTT
    sample, duplicate ACKs. Flights that are NaN (not known) are skipped."""
    lo = 0
    for k in range(len(b) - 1):
        hi = _event_range(b, t, k, lo)
        n_ack = 0.0
        fpeak = np.nan
        fmin = np.nan
        room = np.inf
        qmin = np.inf
        dups = 0.0
        for i in range(lo, hi):
            n_ack += acked[i]
            f = flight[i]
            if f == f:
                if not fpeak >= before[i]:
                    fpeak = before[i]
                if not fmin <= f:
                    fmin = f
            w = rwnd_prev[i]
            if w >= 0.0 and outst[i] == outst[i]:
                room = min(room, w - outst[i])
            if rtt[i] > 0.0:
                qmin = min(qmin, rtt[i])
            if dup[i]:
                dups += 1.0
        feat[k, _F_EVENTS] = hi - lo
        feat[k, _F_ACKED] = n_ack
        feat[k, _F_PEAK] = fpeak
        feat[k, _F_LOW] = fmin
        feat[k, _F_ROOM] = room
        feat[k, _F_RTT] = qmin if qmin < np.inf else np.nan
        feat[k, _F_DUPS] = dups
        lo = hi


@njit(cache=True, nogil=True)
def seg_features_into(b: np.ndarray, seg_t: np.ndarray, seg_len: np.ndarray, mss: int, feat: np.ndarray) -> None:
    """Per interval, from the data segments (times as sent, sorted): bytes sent, segments below the MSS."""
    s = 0
    ns = len(seg_t)
    while s < ns and seg_t[s] < b[0]:
        s += 1
    for k in range(len(b) - 1):
        sent = 0.0
        small = 0.0
        last = k == len(b) - 2
        while s < ns and (seg_t[s] < b[k + 1] or (last and seg_t[s] <= b[k + 1])):
            sent += seg_len[s]
            if 1 < seg_len[s] < mss:
                small += 1.0
            s += 1
        feat[k, _F_SENT] = sent
        feat[k, _F_SMALL] = small


@njit(cache=True, nogil=True)
def idle_into(b: np.ndarray, t: np.ndarray, flight: np.ndarray, seg_t: np.ndarray, feat: np.ndarray) -> None:
    """Per interval, the seconds with nothing outstanding: from an ACK that left no flight to the next data
    segment sent or the next ACK that finds data out, whichever comes first."""
    n = len(t)
    nxt = np.full(n, np.inf)  # the time of the next event with data out
    after = np.inf
    for j in range(n - 1, -1, -1):
        nxt[j] = after
        if flight[j] > 0.0:
            after = t[j]
    s = 0
    k = 0
    nk = len(b) - 1
    cur_end = -np.inf
    for j in range(n):
        if flight[j] != 0.0:
            continue
        while s < len(seg_t) and seg_t[s] <= t[j]:
            s += 1
        z = min(seg_t[s] if s < len(seg_t) else np.inf, nxt[j], b[nk])
        a = max(t[j], cur_end)
        if not z > a:
            continue
        cur_end = z
        while k < nk and b[k + 1] <= a:
            k += 1
        kk = k
        while kk < nk and b[kk] < z:
            feat[kk, _F_IDLE] += min(z, b[kk + 1]) - max(a, b[kk])
            kk += 1



@njit(cache=True, nogil=True)
def spans_into(b: np.ndarray, a: np.ndarray, z: np.ndarray, col: int, feat: np.ndarray) -> None:
    """Add the spans ``[a[i], z[i])`` (sorted by ``a``, not overlapping) to column ``col`` of the intervals they
    cover, split at the interval bounds."""
    k = 0
    nk = len(b) - 1
    for i in range(len(a)):
        if not z[i] > a[i]:
            continue
        while k < nk and b[k + 1] <= a[i]:
            k += 1
        kk = k
        while kk < nk and b[kk] < z[i]:
            feat[kk, col] += min(z[i], b[kk + 1]) - max(a[i], b[kk])
            kk += 1


def dry_spans(b: np.ndarray, t: np.ndarray, flight: np.ndarray, seg_t: np.ndarray, seg_len: np.ndarray,
              peak: np.ndarray, rref: np.ndarray, quiet: float) -> tuple[np.ndarray, np.ndarray]:
    """The times a burst ran dry before an idle time (rule 1), sorted and not overlapping: from the last data
    segment sent before the flight fell to nothing to then (the sender sent nothing more while the ACKs opened
    its window: a block sent whole, within its window, is the application's from when it left), and from an ACK
    whose data in hand — its flight and all the sender sent after it before the flight next fell to nothing —
    was below the window the sender had shown (the largest peak flight of its interval and the eight before) to
    the next ACK. The sender could have sent more and had nothing to send: the application's time, as the kernel
    counts it (the data written did not fill the window), and T-RAT's and Siekkinen et al.'s (a sender idle or
    sending less than it could). An idle time is one the sender keeps for ``quiet`` × the robust RTT or more
    after the flight fell to nothing (a sender that sends again at once, as one waiting for every ACK before its
    next block, had data). A flow that never drains (a bulk or send-buffer limited sender) has none."""
    n = len(t)
    zeros = np.flatnonzero(flight == 0.0)
    nxt_seg = np.searchsorted(seg_t, t[zeros], side="right")
    then = np.where(nxt_seg < len(seg_t), seg_t[np.minimum(nxt_seg, max(len(seg_t) - 1, 0))], np.inf)
    zeros = zeros[then - t[zeros] >= quiet * np.nan_to_num(rref[zeros])] if len(seg_t) else zeros
    nxt = np.searchsorted(zeros, np.arange(n), side="right")
    has = nxt < len(zeros)
    j = zeros[np.minimum(nxt, max(len(zeros) - 1, 0))] if len(zeros) else np.zeros(n, np.int64)
    sent = np.concatenate(([0.0], np.cumsum(seg_len)))
    after = sent[searchsorted_merge(seg_t, t[j], "right")] - sent[searchsorted_merge(seg_t, t, "right")]
    window = np.nan_to_num(peak)
    for lag in range(1, 9):
        window[lag:] = np.maximum(window[lag:], np.nan_to_num(peak[:-lag]))
    at = np.clip(searchsorted_merge(b, t, "right") - 1, 0, len(window) - 1)
    dry = has & (flight > 0.0) & (flight + after < window[at])
    dry[-1] = False
    idx = np.flatnonzero(dry)
    # the drains: from the last segment sent before each idle start (an ACK leaving no flight after one that did)
    ends = zeros[(zeros > 0) & (flight[np.maximum(zeros - 1, 0)] > 0.0)] if len(zeros) else zeros
    last = np.searchsorted(seg_t, t[ends], side="right") - 1
    ends, last = ends[last >= 0], last[last >= 0]
    return _union(np.concatenate((t[idx], seg_t[last])), np.concatenate((t[idx + 1], t[ends])))


def held_time(b: np.ndarray, t: np.ndarray, seg_t: np.ndarray, rref: np.ndarray, quiet: float) -> np.ndarray:
    """Per interval, the seconds the window held data the sender had (rule 6): from the interval's start to its
    first ACK when nothing was sent before that ACK and data went out at it (within ``quiet`` × the robust RTT:
    data seen on its way is placed by its round trip, within that); else 0. A sender that sends at the first ACK
    after waiting for half a round trip had that data in hand while it waited: its flight was the window's."""
    nk = len(b) - 1
    lo = np.searchsorted(t, b[:-1], side="left")
    hi = np.searchsorted(t, b[1:], side="left")
    hi[-1] = len(t)
    s_lo = np.searchsorted(seg_t, b[:-1], side="left")
    s_ok = s_lo < len(seg_t)
    s1 = np.where(s_ok, seg_t[np.minimum(s_lo, max(len(seg_t) - 1, 0))], np.inf) if len(seg_t) else np.full(nk, np.inf)
    first = np.minimum(lo, len(t) - 1)
    t1 = t[first]
    held = (hi > lo) & (s1 < b[1:]) & (np.abs(s1 - t1) <= quiet * np.nan_to_num(rref[first]))
    return np.where(held, t1 - b[:-1], 0.0)


def fitted_blocks(b: np.ndarray, f: _Flow, quiet: float, span: float, pause: float) -> np.ndarray:
    """Per interval, 1 where a block of data sent after an idle time (the flight at nothing for ``quiet`` × the
    robust RTT or more before its first segment) starts in it or in the interval before and every such block
    fitted the window (rules 8-9 do not apply): the block — its segments up to the next time the flight falls to
    nothing — went out within ``span`` × the robust RTT with no pause of ``pause`` × the robust RTT or more.
    A window smaller than the block stops the sender once it is full until the first ACK comes back (a pause),
    or, paced (Linux paces a window over srtt / 1.2 in congestion avoidance), spreads it over more than that; a
    block that fits goes out whole at the pacing rate and the sender then has nothing to send: the application's
    time (the kernel's: the data in hand did not fill the window), though the block's peak flight is as large as
    the blocks' before it. Spans and pauses are taken in the capture's own times: at the sender the send times;
    on the way (at the receiver) the arrivals, which a bottleneck only spreads (a block that arrives within the
    span was sent within it) — the send times rebuilt there are off by the queue the block built, which also
    fills a sender's pause, so a window that held the block shows there as a block spread over a round trip
    or more. A block's flight lasts from its start to its ACKs: the intervals it marks are the one it starts in,
    the one after (at the sender its ACKs come back a round trip after it) and on to the one its last segment is
    seen in (at the receiver its ACKs leave with its arrivals, a round trip after the rebuilt start or more)."""
    out = np.zeros(len(b) - 1)
    t, seg_t = f.t, f.seg_t
    zero_t = t[f.flight == 0.0]
    if not len(zero_t) or len(seg_t) < 2:
        return out
    first = np.searchsorted(seg_t, zero_t, side="right")
    first = first[first < len(seg_t)]
    at = np.clip(np.searchsorted(t, seg_t[first], side="left") - 1, 0, len(t) - 1)  # the ACK before it
    first = np.unique(first[seg_t[first] - t[at] >= quiet * np.nan_to_num(f.rref[at])])
    if not len(first):
        return out
    nxt = np.searchsorted(zero_t, seg_t[first], side="right")  # the block ends where the flight next falls to 0
    end_t = np.where(nxt < len(zero_t), zero_t[np.minimum(nxt, len(zero_t) - 1)], np.inf)
    last = np.maximum(np.searchsorted(seg_t, end_t, side="right") - 1, first)
    idx = np.arange(len(seg_t))
    block = np.searchsorted(first, idx, side="right") - 1  # (the segments before the first block: -1)
    member = (block >= 0) & (idx <= last[np.maximum(block, 0)])
    lo = first[0]
    starts = first - lo
    seen = np.where(member, f.seg_seen, f.seg_seen[first[np.maximum(block, 0)]])  # (others: neutral)
    seen = seen[np.lexsort((seen, block))][lo:]  # each block's times in order (the seen order can differ)
    span_of = np.maximum.reduceat(seen, starts) - np.minimum.reduceat(seen, starts)
    gap = np.where(block[lo + 1:] == block[lo:-1], np.diff(seen), 0.0)
    widest = np.maximum.reduceat(np.append(gap, 0.0), starts)
    r = np.nan_to_num(f.rref[np.clip(np.searchsorted(t, seg_t[first]), 0, len(t) - 1)])
    fits = (span_of < span * r) & (widest < pause * r)
    k = np.searchsorted(b, seg_t[first], side="right") - 1
    # the interval it starts in and the one after, and on to the one its last segment was seen in
    to_k = np.maximum(k + 1, np.searchsorted(b, np.maximum.reduceat(seen, starts), side="right") - 1)
    fit_k = _covered(k[fits], to_k[fits], len(out))
    held_k = _covered(k[~fits], to_k[~fits], len(out))
    out[fit_k & ~held_k] = 1.0
    return out


def _covered(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """Per index of ``range(n)``, whether a span ``[lo, hi]`` (inclusive, clipped to it) covers it."""
    diff = np.zeros(n + 1)
    np.add.at(diff, np.clip(lo, 0, n), 1.0)
    np.add.at(diff, np.clip(hi + 1, 0, n), -1.0)
    return np.cumsum(diff)[:n] > 0


def clocked_refills(b: np.ndarray, f: _Flow, peak: np.ndarray, gap: float, within: float, share: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per interval, the refills — trains of data segments after a pause of ``gap`` × the robust RTT or more,
    of ``share`` of the interval's peak flight or more (a woken writer writes a third of its buffer) and two
    segments at least — and those of them the ACKs clocked (the train's first segment within ``within`` s of
    the ACK before it), rule 10. A writer blocked on a full send buffer is woken by the ACK that frees a third of
    it and its data leaves at once: at that ACK (tens of microseconds after it at the sender); an application
    with nothing queued writes when it has data, at times the ACKs do not set. Taken in the capture's own times:
    seen on its way (``position`` of the round trip), data the sender sent at an ACK is seen ``position`` ×
    RTTmin after that ACK (no queue: a send-buffer limited sender keeps its flight below the path's)."""
    nk = len(b) - 1
    starts = np.zeros(nk)
    clocked = np.zeros(nk)
    seen, size = f.seg_seen, f.seg_len
    if not np.all(seen[1:] >= seen[:-1]):  # (in time order as captured, as at the sender: no sort needed)
        order = np.argsort(seen, kind="stable")
        seen, size = seen[order], size[order]
    if len(seen) < 2 or not len(f.t):
        return starts, clocked
    r = np.nan_to_num(f.rref[np.clip(searchsorted_merge(f.t, seen, "left"), 0, len(f.t) - 1)])
    head = np.flatnonzero(np.concatenate(([True], np.diff(seen) >= gap * r[1:])))
    nseg = np.diff(np.append(head, len(seen)))
    nbytes = np.add.reduceat(size, head)
    first = seen[head] - f.position * np.nan_to_num(f.rttmin)
    k = searchsorted_merge(b, first, "right") - 1
    ok = (k >= 0) & (k < nk) & (head > 0) & (nseg >= 2)
    ok &= nbytes >= share * np.nan_to_num(peak[np.clip(k, 0, nk - 1)])
    ack = searchsorted_merge(f.t, first, "right") - 1
    on_ack = (ack >= 0) & (first - f.t[np.maximum(ack, 0)] <= within)
    starts += np.bincount(k[ok], minlength=nk)[:nk]
    clocked += np.bincount(k[ok & on_ack], minlength=nk)[:nk]
    return starts, clocked


def _union(a: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spans ``[a, z)`` merged where they overlap, sorted."""
    if not len(a):
        return a, z
    order = np.argsort(a, kind="stable")
    a, z = a[order], np.maximum.accumulate(z[order])
    new = np.concatenate(([True], a[1:] > z[:-1]))
    first = np.flatnonzero(new)
    last = np.concatenate((first[1:] - 1, [len(a) - 1]))
    return a[first], z[last]


@njit(cache=True, nogil=True)
def _grew(peak: np.ndarray, k: int, since: int, rel: float, plus: float) -> bool:
    """Rule 8: the peak flight at least ``rel`` × the largest of the (up to) three intervals before (not before
    ``since``) + ``plus``."""
    lo = max(since, k - 3)
    if k <= lo:
        return False
    before = peak[lo]
    for j in range(lo + 1, k):
        before = max(before, peak[j])
    return peak[k] >= before * rel + plus


@njit(cache=True, nogil=True)
def _stalled(peak: np.ndarray, k: int, since: int, m: int, growth: float) -> bool:
    """Rule 5: ``2m`` intervals or more into the epoch, the mean peak of the last ``m`` is not ``growth`` above the
    mean of the ``m`` before (a congestion window without a loss grows: Reno by 1 MSS a round trip)."""
    if k - since + 1 < 2 * m:
        return False
    recent = 0.0
    before = 0.0
    for j in range(m):
        recent += peak[k - j]
        before += peak[k - m - j]
    return recent < before + growth * m


@njit(cache=True, nogil=True)
def label_into(events: np.ndarray, idle: np.ndarray, at_rwnd: np.ndarray, loss: np.ndarray, queue: np.ndarray,
               no_refill: np.ndarray, peak: np.ndarray, opened: np.ndarray, fit: np.ndarray, rate3: np.ndarray,
               cref: float, refill_like: np.ndarray, idle3: np.ndarray, small: np.ndarray, p: np.ndarray,
               code: np.ndarray) -> None:
    """The rules of the module docstring, interval by interval (``peak`` in MSS, 0 where unknown; ``idle`` a
    share of the interval; ``idle3``/``swing3`` the largest of the interval and its neighbours)."""
    epoch = False
    level = 0.0
    cut_from = np.inf  # the peak flight before the epoch's loss
    since = 0
    for k in range(len(code)):
        # one segment below the MSS, alone among its neighbours, in a stretch held by the send buffer: a wake-up's
        # write that was not a whole number of segments, not an application with nothing more to send
        lone_short = (small[k] <= 1 and 0 < k < len(code) - 1 and code[k - 1] == SNDBUF and small[k - 1] == 0
                      and small[k + 1] == 0)
        buffer_like = (small[k] == 0 or lone_short) and refill_like[k] and idle3[k] == 0.0
        if idle[k] >= p[_IDLE]:
            code[k] = APP
            epoch = False
        elif events[k] == 0:
            code[k] = UNKNOWN
        elif at_rwnd[k]:
            code[k] = RWND
            epoch = False
        elif loss[k]:
            if k == 0 or not loss[k - 1]:
                cut_from = peak[k - 1] if k > 0 else 0.0
                level = p[_BETA] * cut_from
            code[k] = CWND
            epoch = True
            since = k + 1
        elif (epoch and peak[k] >= level - max(p[_EPOCH_TOL], p[_EPOCH_REL] * level)
              and not (k == since and peak[k] > p[_NO_CUT] * cut_from)
              and not _stalled(peak, k, since, int(p[_EPOCH_STALL]), p[_EPOCH_GROWTH])):
            code[k] = CWND
            level = max(level, peak[k])
        elif no_refill[k]:
            code[k] = SNDBUF if buffer_like else APP
            epoch = False
        elif queue[k]:
            level = max(level if epoch else 0.0, peak[k])
            cut_from = np.inf
            code[k] = CWND
            epoch = True
            since = k + 1
        elif not fit[k] and (opened[k] or _grew(peak, k, since, p[_GROWTH_REL], p[_GROWTH_MSS])
                             or rate3[k] >= p[_RATE_FRAC] * cref):
            code[k] = CWND  # (a NaN cref compares false)
            epoch = False
        else:
            code[k] = SNDBUF if buffer_like else APP
            epoch = False


# ---- one flow, a batch


DEFAULT_PARAMS = LimitParams()


def _per_event(col: np.ndarray | None, row_event: np.ndarray, n: int, fill: float) -> np.ndarray:
    """A per-ACK-row column as per-event values (each event's last row); NaN and negative values are unknown
    (``fill``). A column already one value per event (as many as the events, the rows merged) is taken as is."""
    if col is None:
        return np.full(n, fill)
    if len(col) != len(row_event) and len(col) != n:
        raise ValueError(f"a per-row column has {len(col)} values for {len(row_event)} ACK rows")
    if len(col) == n:  # one value an event already (the rows merged, or one row an event): the column as it is
        out = np.array(col, np.float64)
    else:  # each event's last row, taken before the values are made floats (a copy of those rows only)
        last = np.flatnonzero(np.diff(row_event)) if len(row_event) else np.empty(0, np.int64)
        out = np.asarray(col[np.append(last, len(row_event) - 1)], np.float64) if len(row_event) else np.empty(0)
    out[~(out >= 0.0)] = fill
    return out


def _first_finite(*cols: np.ndarray) -> float:
    for col in cols:
        ok = np.flatnonzero(col > 0.0)
        if len(ok):
            return float(col[ok[0]])
    return math.nan


def _neighbours_max(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[1:] = np.maximum(out[1:], x[:-1])
    out[:-1] = np.maximum(out[:-1], x[1:])
    return out


def _sum3(x: np.ndarray) -> np.ndarray:
    """Per interval, the sum over it and its two neighbours (those there are). ``np.convolve(..., "same")`` is
    not used: with fewer than 3 intervals it returns 3 values, not one per interval."""
    padded = np.concatenate(([0.0], np.asarray(x, dtype=float), [0.0]))
    return padded[:-2] + padded[1:-1] + padded[2:]


def _neighbours_mean(x: np.ndarray) -> np.ndarray:
    return _sum3(x) / _sum3(np.ones(len(x)))


def _empty(t: np.ndarray) -> FlowLimits:
    """A flow with nothing to label: one ``unknown`` interval over its ACKs (none without two)."""
    if len(t) < 2:
        e = np.empty(0)
        return FlowLimits(e, e.copy(), np.empty(0, np.int8), shares_of(e, e, np.empty(0, np.int8)))
    start, end, code = np.array([t[0]]), np.array([t[-1]]), np.array([UNKNOWN], np.int8)
    return FlowLimits(start, end, code, shares_of(start, end, code))


@dataclass
class _Flow:
    """One flow's per-event columns as the kernels read them."""

    t: np.ndarray
    flight: np.ndarray  # float64 bytes after each ACK, NaN where not known
    before: np.ndarray  # float64 bytes in flight just before each ACK (NaN where not known)
    acked: np.ndarray  # float64 bytes
    outstanding: np.ndarray  # float64 bytes unacknowledged before the ACK (flight before it + SACKed; NaN unknown)
    rwnd_prev: np.ndarray  # float64 bytes: the window the previous ACK advertised (−1 unknown)
    rref: np.ndarray  # float64 s: the robust RTT
    rtt: np.ndarray  # float64 s: the RTT samples it kept (NaN: none, or set aside)
    seg_t: np.ndarray  # float64 s: data segments as sent (sorted)
    seg_len: np.ndarray  # float64 bytes
    seg_seen: np.ndarray  # float64 s: the same segments' times as captured (``seg_t``'s order)
    dup: np.ndarray  # bool: a duplicate ACK (RFC 5681's, or RFC 6675's: new SACKed data, the ACK not moved)
    rttmin: float  # s, the flow's smallest RTT (NaN: none)
    position: float  # where the capture was taken: 0 at the sender, 1 at the receiver


class QueueBound(NamedTuple):
    """Per data segment seen after the bottleneck: the longest round trip it can have had if the queue it
    arrived behind held none of the flow's data (``longest``), and the silence before the train it arrived in
    (``silence``: how much an idle time of the sender can have stretched a round trip ending in the train)."""

    longest: np.ndarray
    silence: np.ndarray
    bounded: bool = True  # False: no bound at all (every ``longest`` and ``silence`` infinite)

    @classmethod
    def unbounded(cls, n: int) -> QueueBound:
        """No bound on ``n`` segments (data not seen after the bottleneck): infinite everywhere, as read-only
        views of one value (nothing allocated a segment)."""
        inf = np.broadcast_to(np.inf, n)
        return cls(inf, inf, False)

    def hold(self, r: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Round trips ``r`` ending in segments ``at`` held to what they allow: at most ``longest``, but cut by no
        more than the ``silence`` (an idle time lies inside it; a round trip longer than the bound by more than
        that waited in a queue the flow's own gaps do not show: other flows' data sharing the bottleneck)."""
        return np.minimum(r, np.maximum(self.longest[at], r - self.silence[at]))


def queue_bound(seg_t: np.ndarray, seg_len: np.ndarray, rttmin: float) -> QueueBound:
    """Per data segment seen after the bottleneck, the longest round trip it can have had: RTTmin + the time
    since the train of segments it arrived in began. A bottleneck with data queued sends the next segment one
    transmission time after the last (per byte: the flow's median spacing of its segments per byte, a full
    bottleneck's), so a segment of a flow alone there arriving more than twice that after the one before found
    the queue empty: it waited in no queue, and each one after it, back to back, in one no longer than the train
    so far. With other flows' data in between (a shared bottleneck) it may have queued all along: what the gap
    shows is only that a round trip ending in the train can have been stretched by an idle time of at most the
    gap (:meth:`QueueBound.hold`)."""
    n = len(seg_t)
    if n < 2 or not rttmin > 0.0:
        return QueueBound(np.full(n, np.inf), np.full(n, np.inf))
    gap = np.diff(seg_t)
    per_byte = gap / np.maximum(seg_len[1:], 1.0)
    busy = per_byte[gap > 0.0]
    tau = float(np.median(busy)) if len(busy) else 0.0
    starts = np.concatenate(([True], gap > 2.0 * tau * np.maximum(seg_len[1:], 1.0)))
    head = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    silence = np.concatenate(([np.inf], gap))[head]  # (the first train: no gap seen before it)
    return QueueBound(rttmin + (seg_t - seg_t[head]), silence)


def bounded_samples(t: np.ndarray, rtt: np.ndarray, seg_t: np.ndarray, bound: QueueBound) -> np.ndarray:
    """The RTT samples with each held to what the data it answers allows: the ACK at ``t`` answers the last
    segment that arrived by then, whose round trip was at most its bound (:func:`queue_bound`), to which the
    receiver's own delay before the ACK adds. A receiver-side sample taken across an idle time (idle time + RTT)
    comes down to the round trip its data can have had."""
    if not len(seg_t):
        return rtt
    at = searchsorted_merge(seg_t, t, "right") - 1
    wait = np.where(at >= 0, t - seg_t[np.maximum(at, 0)], 0.0)  # the receiver's delay before the ACK
    # without a bound, held by nothing but the arithmetic (the same values as holding to infinite bounds: a held
    # sample that is not finite is never below its own, so either way the sample is kept)
    held = bound.hold(rtt - wait, np.maximum(at, 0)) + wait if bound.bounded else (rtt - wait) + wait
    return np.where((at >= 0) & (rtt > held), held, rtt)


def sent_times(t: np.ndarray, rtt: np.ndarray, rref: np.ndarray, seg_t: np.ndarray, bound: QueueBound,
               position: float) -> np.ndarray:
    """When data seen on its way (a receiver- or tap-side capture, ``position`` of the round trip from the
    sender) was sent: ``position`` × its round trip earlier — the RTT sample of the first ACK at or after it
    (the ACK that answers it: its sample is the time since the sender sent the data it newly acknowledges),
    else the robust RTT there, held by ``bound`` (:func:`queue_bound`, at the receiver). Only samples the
    robust RTT kept (``rtt``) count, and the bound holds the rest: a receiver-side sample taken across an idle
    time (the first flight after it echoes the ACK before it: idle time + RTT) would place the data in the
    idle time."""
    n = len(t)
    at = np.clip(searchsorted_merge(t, seg_t, "left"), 0, max(n - 1, 0))
    r = bound.hold(np.where(rtt[at] > 0.0, rtt[at], rref[at]), np.arange(len(seg_t)))
    return seg_t - position * np.nan_to_num(r)


def rebuilt_flight(t: np.ndarray, seg_sent: np.ndarray, seg_end: np.ndarray, ack: np.ndarray, sack: np.ndarray
                   ) -> np.ndarray:
    """A rebuilt (receiver- or tap-side) flow's flight after each ACK: the highest sequence sent by then
    (``seg_sent``/``seg_end``, sorted by time: :func:`sent_times`) less the ACK and the bytes it SACKs — in place
    of the ingest's (the data arriving within one srtt, an srtt swollen by the samples taken across idle
    times). NaN before the first segment."""
    top = np.maximum.accumulate(seg_end.astype(np.float64)) if len(seg_end) else np.empty(0)
    at = searchsorted_merge(seg_sent, t, "right") - 1
    flight = np.where(at >= 0, top[np.maximum(at, 0)] - ack - sack, np.nan) if len(top) else np.full(len(t), np.nan)
    return np.where(np.isnan(flight), np.nan, np.maximum(flight, 0.0))


def _flow_columns(inputs: FlowInputs, rwnd: np.ndarray | None, sacked: np.ndarray | None, position: float,
                  p: np.ndarray) -> _Flow:
    t = inputs.t
    n = len(t)
    if position <= END_SHARE:  # at the sender end no path lies between the capture and the stack (what the
        position = 0.0  # handshake leaves to it is the host's turnaround): the capture's times are the send times
    seg_t = np.asarray(inputs.seg_t, np.float64)
    seg_len = np.asarray(inputs.seg_len, np.float64)
    mins = [float(np.nanmin(c)) for c in (inputs.rttmin, inputs.rtt_any) if np.isfinite(c).any()]
    rttmin = min(mins) if mins else math.nan
    bound = (queue_bound(seg_t, seg_len, rttmin) if position >= p[_RECEIVER_END] and len(seg_t)
             else QueueBound.unbounded(len(seg_t)))
    rref = np.empty(n)
    rtt = np.empty(n)
    robust_rtt_into(t, bounded_samples(t, inputs.rtt_any, seg_t, bound), _first_finite(inputs.srtt, inputs.rttmin),
                    p[_OUTLIER], p[_PERSIST], rref, rtt)
    acked = inputs.acked.astype(np.float64)
    sack = _per_event(sacked, inputs.row_event, n, 0.0)
    flight = inputs.flight.astype(np.float64)
    flight[inputs.srtt > p[_SRTT_FLIGHT] * rref] = np.nan  # an ACK after an srtt blown up (timeouts)
    seg_seen = seg_t
    if position and len(seg_t):  # data seen on its way: moved back to when it was sent
        seg_t = sent_times(t, rtt, rref, seg_t, bound, position)
        order = np.argsort(seg_t, kind="stable")
        seg_t, seg_len, seg_seen = seg_t[order], seg_len[order], seg_seen[order]
        if position > END_SHARE and len(seg_t) >= _RTT_WINDOW:  # a rebuilt flow (not at the sender) with data:
            # its flight rebuilt from the send times
            flight = rebuilt_flight(t, seg_t, inputs.seg_seq[order] + seg_len, inputs.ack, sack)
    # in flight before an ACK: after it + what it took out, less what it acknowledged that was SACKed already
    # (not in flight: a recovery's last ACK acknowledges the whole SACKed range)
    before = flight + np.maximum(acked - np.maximum(np.concatenate(([0.0], sack[:-1])) - sack, 0.0), 0.0)
    rw = _per_event(rwnd, inputs.row_event, n, -1.0)
    rwnd_prev = np.concatenate((rw[:1], rw[:-1]))
    outstanding = before + np.concatenate(([0.0], sack[:-1]))
    dup = np.asarray(inputs.dup, bool) | ((acked <= 0.0) & (sack > np.concatenate(([0.0], sack[:-1]))))
    return _Flow(t, flight, before, acked, outstanding, rwnd_prev, rref, rtt, seg_t, seg_len, seg_seen, dup,
                 rttmin, position)


def _features(f: _Flow, inputs: FlowInputs, b: np.ndarray, p: np.ndarray) -> np.ndarray:
    feat = np.zeros((len(b) - 1, _N_FEATURES))
    ack_features_into(b, f.t, f.before, f.flight, f.acked, f.outstanding, f.rwnd_prev, f.dup, f.rtt, feat)
    seg_features_into(b, f.seg_t, f.seg_len, inputs.mss, feat)
    idle_into(b, f.t, f.flight, f.seg_t, feat)
    spans_into(b, *dry_spans(b, f.t, f.flight, f.seg_t, f.seg_len, feat[:, _F_PEAK], f.rref, p[_QUIET]), _F_DRY,
               feat)
    feat[:, _F_HELD] = held_time(b, f.t, f.seg_t, f.rref, p[_QUIET])
    feat[:, _F_FIT] = fitted_blocks(b, f, p[_QUIET], p[_FIT_SPAN], p[_FIT_PAUSE])
    feat[:, _F_STARTS], feat[:, _F_CLOCKED] = clocked_refills(b, f, feat[:, _F_PEAK], p[_REFILL_GAP], p[_CLOCK_S],
                                                              p[_REFILL_SHARE])
    return feat


def _restarted(feat: np.ndarray, idle: np.ndarray, mss: int, p: np.ndarray) -> np.ndarray:
    """Rule 8, after an idle time (in the interval or the one before): the flight grew within the interval by
    half its peak (sent − acknowledged), or reached an initial window and 0.9 of the largest peak of the eight
    intervals before (the window the sender had: an application block as large as it)."""
    peak = np.nan_to_num(feat[:, _F_PEAK])
    after_idle = np.maximum(idle, np.concatenate(([0.0], idle[:-1]))) > 0
    grew = feat[:, _F_SENT] - feat[:, _F_ACKED] >= np.maximum(p[_GROWTH_WITHIN] * peak, 2 * mss)
    window = np.zeros(len(peak))
    for j in range(1, 9):  # the largest peak of the 8 intervals before
        window[j:] = np.maximum(window[j:], peak[:-j])
    at_window = (peak >= p[_RESTART_MSS] * mss) & (peak >= p[_RESTART] * window)
    return after_idle & (grew | at_window)


def rising(peak: np.ndarray, swing3: np.ndarray, m: int, growth: float, swing: float) -> np.ndarray:
    """Rule 8, T-RAT's transport limit, per interval: a congestion window growing in congestion avoidance over
    the last ``2m`` intervals (``peak`` in MSS, 0 where unknown) — the mean peak of the last ``m`` at least
    ``growth`` above the mean of the ``m`` before, and the growth steady: either each of the last ``m`` above the
    one before by half of it (Reno's segment a round trip), or, slower, a creep — no peak of the ``2m`` below the
    one before nor above :data:`CA_GROWTH_MAX` times it (an unknown peak, 0, is below the one before: it breaks the
    creep, as it breaks the steady growth), each half ending above where it began, and a flight that did not
    swing (``swing3``, the interval's and its neighbours' largest swing, below ``swing``).

    Linux grows the window in congestion avoidance only when the flight filled it (``tcp_is_cwnd_limited`` at
    the head of ``tcp_reno_cong_avoid`` and ``cubictcp_cong_avoid``), by whole segments, and nothing but a loss
    shrinks it: CUBIC's window grows by at least its Reno-friendly 3(1 − β)/(1 + β) ≈ 0.53 segment a round
    trip (β = 0.7; RFC 9438's W_est), more on its cubic curve — a segment every round or two, so its peaks
    repeat for a round and never fall. A window-limited sender refills at every ACK, so its flight drains by
    one ACK's bytes at most (0.1–0.2 of it). A flight the send buffer holds is bounded by the buffer's fixed
    size (``SO_SNDBUF``, or autotuning's ``tcp_wmem`` ceiling: ``tcp_sndbuf_expand`` grows the buffer with
    the window only, and the window does not grow unless filled), drains between the writer's wake-ups (a
    swing of 0.38–0.9) and its peaks scatter below that bound; an application's flight keeps to its rate."""
    n = len(peak)
    out = np.zeros(n, bool)
    if n < 2 * m:
        return out
    win = np.lib.stride_tricks.sliding_window_view(peak, 2 * m)  # row r: intervals r .. r + 2m - 1
    step = np.diff(win, axis=1)
    grown = win[:, m:].sum(axis=1) >= win[:, :m].sum(axis=1) + growth * m
    steady = (step[:, m - 1:] >= 0.5 * growth).all(axis=1)
    creep = ((step >= 0.0).all(axis=1) & (win[:, 1:] <= CA_GROWTH_MAX * win[:, :-1]).all(axis=1)
             & (win[:, -1] > win[:, m - 1]) & (win[:, m - 1] > win[:, 0]) & (swing3[2 * m - 1:] < swing))
    out[2 * m - 1:] = grown & (steady | creep)
    return out


def _refill_like(feat: np.ndarray, swing3: np.ndarray, position: float, p: np.ndarray) -> np.ndarray:
    """Rule 10, per interval: the flight refilled as a send-buffer limited sender's — most of the refills of the
    interval and its neighbours clocked by the ACKs (:func:`clocked_refills`); where none was seen, a flight
    swinging by ``swing`` of its peak or more."""
    starts = _sum3(feat[:, _F_STARTS])
    clocked = _sum3(feat[:, _F_CLOCKED])
    by_clock = (starts > 0) & (clocked >= p[_CLOCKED] * starts)
    if position <= END_SHARE:  # at the sender: the send times as the ACKs set them
        return np.where(starts > 0, by_clock, swing3 >= p[_SWING])
    return by_clock | (swing3 >= p[_SWING])


def _decide(feat: np.ndarray, b: np.ndarray, mss: int, rttmin: float, position: float, p: np.ndarray
            ) -> np.ndarray:
    """The per-interval tests of the module docstring, then :func:`label_into`."""
    length = np.diff(b)
    pos = length > 0
    safe = np.where(pos, length, 1.0)
    idle = np.where(pos, feat[:, _F_IDLE] / safe, 0.0)
    q = np.nan_to_num(feat[:, _F_RTT] - rttmin, nan=-1.0)
    q_thr = max(p[_Q_ABS], p[_Q_REL] * rttmin) if rttmin == rttmin else np.inf
    around = np.maximum(np.concatenate(([-1.0], q[:-1])), np.concatenate((q[1:], [-1.0])))
    queue = (q >= q_thr) & (around >= q_thr)
    rate = np.where(pos, feat[:, _F_ACKED] * 8.0 / safe, 0.0)
    cref = float(np.median(rate[queue])) if queue.sum() >= 3 else math.nan
    peak = feat[:, _F_PEAK]
    swing = np.nan_to_num(np.where(peak > 0, (peak - feat[:, _F_LOW]) / np.where(peak > 0, peak, 1.0), 0.0))
    acked = feat[:, _F_ACKED]
    code = np.empty(len(length), np.int8)
    no_time = idle + np.where(pos, feat[:, _F_DRY] / safe, 0.0)  # idle, or dry before an idle time
    held = np.where(pos, feat[:, _F_HELD] / safe, 0.0)  # the window held data in hand
    peak_mss = np.nan_to_num(peak / mss)
    swing3 = _neighbours_max(swing)
    opened = _restarted(feat, idle, mss, p) | rising(peak_mss, swing3, int(p[_EPOCH_STALL]), p[_EPOCH_GROWTH],
                                                     p[_SWING])
    label_into(feat[:, _F_EVENTS], no_time, feat[:, _F_ROOM] < p[_RWND_SLACK] * mss, feat[:, _F_DUPS] >= p[_LOSS_DUPS],
               queue, (acked >= 2 * mss) & (feat[:, _F_SENT] < p[_REFILL] * acked) & (held < p[_IDLE]),
               peak_mss, opened, feat[:, _F_FIT] > 0,
               _neighbours_mean(rate), cref, _refill_like(feat, swing3, position, p),
               _neighbours_max(idle), feat[:, _F_SMALL], p, code)
    # a flight sent before any ACK of it came back: limited by what its ACKs find (the next interval's label)
    for k in np.flatnonzero((code[:-1] == UNKNOWN) & (feat[:-1, _F_SENT] > 0))[::-1]:
        code[k] = code[k + 1]
    return code


def flow_limits(inputs: FlowInputs, rwnd: np.ndarray | None = None, sacked: np.ndarray | None = None,
                vantage_position: float | None = 0.0, params: LimitParams = DEFAULT_PARAMS) -> FlowLimits:
    """What limited one flow's sender, round trip by round trip (module docstring).

    ``rwnd`` and ``sacked``: the ingest ACK table's columns of the flow (bytes per ACK row, as many as
    ``inputs.row_event``; null/NaN/negative = unknown); without ``rwnd`` no interval is ``rwnd``, without
    ``sacked`` the outstanding data is the flight plus the bytes acknowledged. ``vantage_position``: where the
    capture was taken (``FlowSummary.vantage_position``: 0 at the sender, 1 at the receiver; None = 0).
    ``params``: the rules' thresholds (the defaults are the ones checked against the kernel).
    """
    t = inputs.t
    if len(t) < 2 or not t[-1] > t[0]:
        return _empty(t)
    p = params.array()
    f = _flow_columns(inputs, rwnd, sacked, float(vantage_position or 0.0), p)
    if not np.isfinite(f.rref).any():  # no RTT: no round trips to cut the flow into
        return _empty(t)
    b = grid_bounds(t, f.rref, p[_MIN_LEN])
    feat = _features(f, inputs, b, p)
    code = _decide(feat, b, inputs.mss, f.rttmin, f.position, p)
    start, end = b[:-1].copy(), b[1:].copy()
    idle = min(float(feat[:, _F_IDLE].sum()) / float(b[-1] - b[0]), 1.0) if b[-1] > b[0] else 0.0
    dups = np.flatnonzero(inputs.dup)
    window = float(f.rwnd_prev[dups[0]]) if len(dups) and f.rwnd_prev[dups[0]] > 0 else None
    return FlowLimits(start, end, code, shares_of(start, end, code), idle, window,
                      paced_share(t, inputs.seg_t, inputs.seg_seq, inputs.seg_len, vantage_position))


def batch_limits(batch: FlowBatch, rwnd: np.ndarray | None = None, sacked: np.ndarray | None = None,
                 vantage_position: np.ndarray | None = None, params: LimitParams = DEFAULT_PARAMS
                 ) -> list[FlowLimits]:
    """:func:`flow_limits` of every flow of a batch, in batch order. ``rwnd``/``sacked``: per ACK row of the
    whole batch (the rows the batch was built from, ``batch.row_offsets``); ``vantage_position``: one per flow
    (NaN or None = 0)."""
    out = []
    for i in range(len(batch)):
        lo, hi = int(batch.row_offsets[i]), int(batch.row_offsets[i + 1])
        pos = 0.0 if vantage_position is None else float(np.nan_to_num(vantage_position[i]))
        out.append(flow_limits(batch.flow(i), None if rwnd is None else rwnd[lo:hi],
                               None if sacked is None else sacked[lo:hi], pos, params))
    return out

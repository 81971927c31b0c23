"""The compiled event loop: take the stream with the earliest head (streams.py), handle its event, until the
run's end."""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.borrow import borrowed_state
from ackreplay.sim.dupacks import pipe
from ackreplay.sim.layout import (
    CWND,
    DELACK_ECHO,
    DELACK_LAST,
    DELACK_N,
    END,
    EXT_NOW,
    N_STREAMS,
    NEXT_SAMPLE,
    PAUSE_RECOVERY,
    PEND_ACKED,
    PEND_DELIV,
    S_ACK,
    S_DATA,
    S_DELACK,
    S_PACE,
    S_RTO,
    S_START,
    SAMPLE_DT,
    SAMPLES,
    STARTED,
    T_KIND,
    T_OVERFLOW,
    T_PAUSED,
    WIRE,
)
from ackreplay.sim.network import queue_packets, receive, send_ack
from ackreplay.sim.sender import finish_ack, on_ack, on_rto, send_loop, start_flow, time_out
from ackreplay.sim.state import SimState
from ackreplay.sim.streams import heap_update


@njit(cache=True, nogil=True, inline="always")
def _sample(s: SimState, f: int, now: float) -> None:
    """The flow's series: a point every SAMPLE_DT of simulated time, the state as the first ACK after it leaves it
    (a stretch with no ACK repeats the state it left)."""
    fi = s.fi
    while now >= s.fs[f, NEXT_SAMPLE] and fi[f, SAMPLES] < s.ts.shape[1]:
        k = fi[f, SAMPLES]
        s.ts[f, k, 0] = s.fs[f, NEXT_SAMPLE]
        s.ts[f, k, 1] = s.fs[f, CWND]
        s.ts[f, k, 2] = pipe(s, f)
        s.ts[f, k, 3] = queue_packets(s, now) * s.g[WIRE]
        fi[f, SAMPLES] = k + 1
        s.fs[f, NEXT_SAMPLE] += s.g[SAMPLE_DT]


@njit(cache=True, nogil=True, inline="always")
def _data_event(s: SimState, f: int, now: float) -> None:
    r = s.ring
    size = s.dqs.shape[1]
    i = r[f, 0]
    seg, sent = s.dqs[f, i], s.dqf[f, i, 1]
    r[f, 0] = (i + 1) & (size - 1)
    r[f, 1] -= 1
    heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_DATA, s.dqf[f, r[f, 0], 0] if r[f, 1] > 0 else np.inf)
    receive(s, f, now, seg, sent)


@njit(cache=True, nogil=True, inline="always")
def _ack_event(s: SimState, f: int, now: float) -> None:
    r = s.ring
    size = s.aqi.shape[1]
    i = r[f, 2]
    cum, sack, echo, last = s.aqi[f, i, 0], s.aqi[f, i, 1], s.aqf[f, i, 1], s.aqf[f, i, 2]
    r[f, 2] = (i + 1) & (size - 1)
    r[f, 3] -= 1
    heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_ACK, s.aqf[f, r[f, 2], 0] if r[f, 3] > 0 else np.inf)
    on_ack(s, f, now, cum, sack, echo, last)
    if s.tally[T_PAUSED] == 0:  # (else ``resume`` samples once the ACK is finished)
        _sample(s, f, now)


@njit(cache=True, nogil=True)
def run_loop(state: SimState) -> int:
    """Run to the end time, or until an external flow's decision is due (``tally[T_PAUSED]``: ``resume`` once
    it is written); returns the number of events handled (also added to ``tally[0]``). The loop works on
    borrowed views of the state's arrays (sim/borrow.py: no reference counting per access)."""
    s = borrowed_state(state)
    end = s.g[END]
    events = 0
    while True:
        sid = s.heap[0]
        now = s.key[sid]
        if now > end or s.tally[T_OVERFLOW] != 0 or s.tally[T_PAUSED] != 0:
            break
        events += 1
        f = sid // N_STREAMS
        kind = sid - f * N_STREAMS
        if kind == S_DATA:
            _data_event(s, f, now)
        elif kind == S_ACK:
            _ack_event(s, f, now)
        elif kind == S_DELACK:
            if s.fi[f, DELACK_N] > 0:
                send_ack(s, f, now, -1, s.fs[f, DELACK_ECHO], s.fs[f, DELACK_LAST])
            else:
                heap_update(s.heap, s.pos, s.key, sid, np.inf)
        elif kind == S_RTO:
            on_rto(s, f, now)
        elif kind == S_PACE:  # a paced sender's next segment is due (sim/pacing.py)
            heap_update(s.heap, s.pos, s.key, sid, np.inf)
            send_loop(s, f, now)
        elif kind == S_START:
            heap_update(s.heap, s.pos, s.key, sid, np.inf)
            s.fi[f, STARTED] = 1
            s.fs[f, NEXT_SAMPLE] = now
            start_flow(s, f, now)
    s.tally[0] += events
    return events


@njit(cache=True, nogil=True)
def resume(state: SimState) -> None:
    """Finish the event the loop paused at, the external decision's ssthresh in ``fs[f, EXT_SS]``."""
    s = borrowed_state(state)
    f = s.tally[T_PAUSED] - 1
    kind = s.tally[T_KIND]
    s.tally[T_PAUSED] = 0
    s.tally[T_KIND] = 0
    now = s.fs[f, EXT_NOW]
    if kind == PAUSE_RECOVERY:
        finish_ack(s, f, now, True, s.fi[f, PEND_DELIV], s.fi[f, PEND_ACKED])
        _sample(s, f, now)
    else:
        time_out(s, f, now)


@njit(cache=True, nogil=True)
def seed_random(seed: int) -> None:
    """Seed numba's generator (the random losses) for a deterministic run."""
    np.random.seed(seed)

"""``westwood_plus`` agrees with an integer-faithful reading of Linux ``tcp_westwood.c``.

The recorded stream is a real flow's ACK rows on Linux's clock: times floored to jiffies (HZ = 1024,
see ``linux_westwood``), RTT samples rounded up to jiffies (``usecs_to_jiffies``). Both read the same
stream; what remains is
Linux's integer arithmetic — bytes per jiffy truncated at every division and at every ``>> 3`` of the
7/8 filters (a bias of a few bytes per jiffy), and ssthresh floored to whole segments. Tolerances:
bandwidth within 2 % + 16 bytes/jiffy; ssthresh within that, carried through
``bw·rtt_min/mss``, + 1 segment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.estimators.base import TIMEOUT, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.ingest import ingest_capture
from tests.conftest import SHARED
from tests.estimators.linux_westwood import HZ, LinuxWestwood, usecs_to_jiffies

CASES = ["s01_cubic_1f_10M_rtt40_buf1bdp.pcap", "s07_bbr_3f_20M_rtt20_buf2bdp.pcap",
         "s08_cubic_1f_2M_rtt200_buf1bdp.pcap", "s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap"]


@pytest.mark.parametrize("name", CASES)
def test_matches_linux_integer_reading(name):
    cap = ingest_capture(SHARED / "generated" / name)
    flow = max(cap.flows, key=lambda s: s.bytes)
    data = cap.flow(flow.flow_id)
    t_abs = data.acks["t"].to_numpy()
    base = math.floor(t_abs[0] * HZ)
    jiffy = np.floor(t_abs * HZ).astype(np.int64) - base
    d = data.acks["d"].to_numpy()
    rtt = data.acks["rtt"].fill_null(np.nan).to_numpy()
    rtt_j = np.array([usecs_to_jiffies(r * 1e6) / HZ if r == r else np.nan for r in rtt])
    # the same stream as events for ackreplay (ACKs in one jiffy are one event, §1.1)
    starts = np.flatnonzero(np.concatenate(([True], jiffy[1:] != jiffy[:-1])))
    ev_t = jiffy[starts] / HZ
    ev_d = np.add.reduceat(np.where(np.arange(len(d)) == 0, 0, d), starts)
    # the window test runs on the jiffy's first ACK (later ones see delta = 0), with the latest sample so far
    seen = np.where(~np.isnan(rtt_j), np.arange(len(d)), -1)
    latest = np.maximum.accumulate(seen)[starts]
    last_rtt = np.where(latest >= 0, rtt_j[np.maximum(latest, 0)], np.nan)
    inp = FlowInputs.from_arrays(ev_t, ev_d, mss=flow.mss, rtt=last_rtt)
    ww = E.create("westwood_plus", min_window=(HZ // 20) / HZ)  # TCP_WESTWOOD_RTT_MIN in jiffies
    series = ww.series(inp)
    row_event = np.searchsorted(starts, np.arange(len(d)), side="right") - 1

    linux = LinuxWestwood(0)
    episodes = {int(r["decision_ack_row"]): r for r in data.episodes.iter_rows(named=True)}
    compared = 0
    last_timeout = None
    for i in range(len(d)):
        linux.ack(jiffy[i] / HZ, int(d[i]) if i else 0, None if rtt[i] != rtt[i] else rtt[i])
        ep = episodes.get(i)
        if ep is None:
            continue
        k = row_event[i]
        if i + 1 < len(d) and row_event[i + 1] == k:
            continue  # decision inside a jiffy: Linux has not seen the rest of the event yet
        ours_bw = series[k]
        assert ours_bw == ours_bw, "westwood_plus has an estimate wherever Linux has one"
        assert abs(ours_bw - linux.bytes_per_second()) <= 0.02 * linux.bytes_per_second() + 16 * HZ
        ctx = LossContext(str(ep["kind"]), int(k), float(ev_t[k]), None, 0, math.nan, flow.mss, 0, last_timeout)
        ours_ss = ww.decide(inp, series, ctx).ssthresh_segments
        assert ours_ss is not None
        # the bandwidth tolerance carried through ssthresh = bw·rtt_min/mss, plus the floor to a segment
        slack = 0.02 * ours_ss + 16 * linux.rtt_min / flow.mss + 1
        assert abs(ours_ss - linux.ssthresh(flow.mss)) <= slack
        compared += 1
        if ep["kind"] == TIMEOUT:  # CA_EVENT_LOSS: Linux resets rtt_min to the next sample
            linux.reset_rtt_min = True
            last_timeout = float(ev_t[k])
    assert compared >= 5

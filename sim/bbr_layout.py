"""The columns of BBR's compiled state (``SimState.bbr``, a row per flow, float64) and of each segment's
delivery-rate snapshot taken when it was sent (``SimState.tx``, float64[F, S, N_TX]): module-level integers, so
that numba compiles them in as constants. BBR after Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR:
Congestion-Based Congestion Control", ACM Queue 14(5), 2016, as Linux's net/ipv4/tcp_bbr.c runs it (``struct
bbr``), the sampler as Linux's net/ipv4/tcp_rate.c (``struct rate_sample`` and the ``tcp_sock`` fields it keeps)."""

from __future__ import annotations

# the model (struct bbr): mode, gain cycle, full-pipe detection, rounds, recovery, min_rtt and PROBE_RTT, gains
MODE, CYCLE_IDX, CYCLE_STAMP, FULL_BW, FULL_BW_CNT, FULL_BW_REACHED = 0, 1, 2, 3, 4, 5
RTT_CNT, NEXT_RTT_DELIVERED, ROUND_START, CONSERVATION, PREV_STATE, PRIOR_CWND = 6, 7, 8, 9, 10, 11
MIN_RTT, MIN_RTT_STAMP, PROBE_RTT_DONE, PROBE_RTT_ROUND_DONE, PACING_GAIN, CWND_GAIN = 12, 13, 14, 15, 16, 17
#: the pacing rate, segments/s (Linux's sk_pacing_rate over the MSS)
PACING_RATE = 18
#: the windowed max filter of bandwidth (lib/win_minmax.c: three (round, value) samples, best first)
BW_FILTER = 19  # BW_FILTER .. BW_FILTER + 5: t0, v0, t1, v1, t2, v2
# ACK aggregation (extra_acked, two windows)
ACK_EPOCH_STAMP, ACK_EPOCH_ACKED, EXTRA_ACKED0, EXTRA_ACKED1, EXTRA_WIN_RTTS, EXTRA_WIN_IDX = 25, 26, 27, 28, 29, 30
# long-term bandwidth (token-bucket policer detection)
LT_SAMPLING, LT_RTT_CNT, LT_STAMP, LT_DELIVERED, LT_LOST, LT_BW, LT_USE = 31, 32, 33, 34, 35, 36, 37
# the sender's delivery-rate state (tcp_sock): delivered, delivered_mstamp, first_tx_mstamp, app_limited, lost
DELIVERED, DELIVERED_STAMP, FIRST_TX, APP_LIMITED, LOST_TOTAL = 38, 39, 40, 41, 42
# this ACK's rate sample (struct rate_sample), reset at each ACK
RS_PRIOR_DELIVERED, RS_PRIOR_STAMP, RS_APP_LIMITED, RS_INTERVAL, RS_LAST_SEG = 43, 44, 45, 46, 47
RS_DELIVERED, RS_LOSSES, RS_RTT, RS_PRIOR_IN_FLIGHT, RS_ACKED = 48, 49, 50, 51, 52
N_BBR = 53

# a segment's snapshot when (re)sent (TCP_SKB_CB(skb)->tx): delivered, delivered_mstamp, first_tx_mstamp, its
# send time, app-limited (1)
TX_DELIVERED, TX_DELIVERED_STAMP, TX_FIRST, TX_SENT, TX_APP_LIMITED = 0, 1, 2, 3, 4
N_TX = 5

# BBR's modes (enum bbr_mode) and the stack's congestion states it reads (enum tcp_ca_state)
STARTUP, DRAIN, PROBE_BW, PROBE_RTT = 0, 1, 2, 3
CA_OPEN, CA_RECOVERY, CA_LOSS = 0, 3, 4
#: "no time" (a cleared stamp: Linux's 0, which no real stamp is)
NO_STAMP = -1.0

"""The columns of the simulation's compiled state: one row per flow in ``fi`` (int64) and ``fs`` (float64),
the link's and run's figures in ``g`` (float64), each control's parameters in ``ap`` (float64, a row per flow).
Module-level integers, so that numba compiles them in as constants."""

from __future__ import annotations

# fi: a flow's integer state (segments are counted in whole MSS, numbered from 0)
UNA, NXT, PIPE, RCV_NXT, DELACK_N, DELACK_GEN = 0, 1, 2, 3, 4, 5
IN_REC, IN_LOSS, RECOVER, H1, H2, H3 = 6, 7, 8, 9, 10, 11
LOST_PTR, RTX_PTR, HI_LOST, PRR_DELIV, PRR_OUT, RECOVER_FS = 12, 13, 14, 15, 16, 17
LOSS_EVENTS, TIMEOUTS, RETRANS, SENT, SAMPLES = 18, 19, 20, 21, 23
DUPS = 22  # without SACK: duplicate ACKs counted as segments that left the network (Linux's Reno sacked_out)
QD_N, STARTED, RTO_ARMED, DELIVERED = 24, 25, 26, 27
LOG_N, SEND_N, PEND_DELIV, PEND_ACKED = 28, 29, 30, 31  # an external decision's logs and paused ACK
OVERFLOWS = 32  # the flow's packets the drop-tail buffer dropped (full: no room for them)
N_FI = 33

# fs: a flow's real-valued state
CWND, SSTHRESH, SRTT, RTTVAR, RTO, RTO_AT = 0, 1, 2, 3, 4, 5
RTT_MIN, RTT_LATEST, QD_SUM, NEXT_SAMPLE, DELACK_ECHO, LAST_ACK_T = 6, 7, 8, 9, 10, 11
ALG = 12  # the control's own state: fs[f, ALG + k], k < N_ALG
N_ALG = 12
EXT_SS = ALG + N_ALG  # the ssthresh an external decision (ackreplay.sim.external) wrote
EXT_NOW = EXT_SS + 1  # when the loop paused for it
PACE_AT = EXT_NOW + 1  # a paced sender's next send, no earlier (Linux tcp_wstamp_ns: sim/pacing.py)
DELACK_LAST = PACE_AT + 1  # the send time of the last in-order segment a delayed ACK waits with (DELACK_ECHO: first)
N_FS = DELACK_LAST + 1

# g: the link and the run
RATE, END, BUF_PKTS, BUF_BYTES, WIRE, LOSS_P = 0, 1, 2, 3, 4, 5
DELACK_T, MIN_RTO, INIT_RTO, RWND, IW, SAMPLE_DT = 6, 7, 8, 9, 10, 11
DELACK_COUNT, MSS, QD_BIN, PER_ACK = 12, 13, 14, 15
N_G = 16

# per-flow figures (columns of ``flow`` float64[F, N_FLOW]): start, one-way delays, the TCP options the
# connection negotiated (1: on): SACK (RFC 2018) and timestamps (RFC 7323), its receive window (segments), and
# whether its sender paces (1: Linux's internal pacing, sim/pacing.py)
START, PROP_FWD, PROP_REV, SACK_OK, TS_OK, RWND_SEGS, PACING = 0, 1, 2, 3, 4, 5, 6
N_FLOW = 7

# event streams of a flow: stream id = flow·N_STREAMS + kind
S_DATA, S_ACK, S_DELACK, S_RTO, S_START, S_PACE = 0, 1, 2, 3, 4, 5
N_STREAMS = 6

# the controls
NEWRENO, WESTWOOD, CUBIC, STCP, HSTCP, BIC, HTCP = 0, 1, 2, 3, 4, 5, 6
#: A flow whose decision at a loss is taken in Python by a registered estimator (NewReno's growth meanwhile)
EXTERNAL = 7
#: BBR, which takes the whole congestion control (sim/bbr.py: its own state in ``SimState.bbr``)
BBR = 8
# segment states of the sender's scoreboard
IN_FLIGHT, SACKED, LOST, RETRANSMITTED = 0, 1, 2, 3
# queueing-delay histogram bins per flow (width g[QD_BIN] s; the last bin holds the rest)
QD_BINS = 20000

# tally: events, overflow (1: a ring, 2: an ACK or send log), the flow paused for a decision + 1, its kind
T_EVENTS, T_OVERFLOW, T_PAUSED, T_KIND = 0, 1, 2, 3
N_TALLY = 4
PAUSE_RECOVERY, PAUSE_TIMEOUT = 1, 2
# the ACK log of an external flow (alog[f, k, :]): arrival, bytes delivered (cumulative and SACKed), bytes newly
# acknowledged, RTT sample (NaN: none), SRTT, running RTTmin, bytes in flight after, cumulative ACK (bytes),
# the SACKed segment's first byte (−1: none), duplicate ACK (1)
LOG_T, LOG_D, LOG_ACKED, LOG_RTT, LOG_SRTT, LOG_RTTMIN, LOG_FLIGHT, LOG_ACK, LOG_SACK, LOG_DUP = range(10)
N_LOG = 10

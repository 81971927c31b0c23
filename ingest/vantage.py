"""Where was the capture taken, relative to a flow's data sender? With the evidence, in words.

1. Handshake timing (strongest). Next to a host, that host's own answer follows the packet it answers
   almost at once, while the other host's answer takes a round trip. With the client's SYN at t0, the
   SYN-ACK at t1 and the client's ACK at t2: a capture next to the client sees t1−t0 ≫ t2−t1, a capture
   next to the server sees t2−t1 ≫ t1−t0. "≫" here is a factor of 3.
   Neither part 3× the other, both at least ``MID_PATH_MIN_MS``: a tap on the path (``mid_path``, §7).
2. Without a usable handshake, ACK clocking: next to the sender, the time from a data segment to the
   ACK that covers it is a round trip, many times the gap between consecutive data segments (a
   window's worth of segments is in flight); next to the receiver, the ACK follows the data within
   one or two segment gaps. Ratio of medians ≥ 4 → sender, ≤ 2 → receiver, else unknown.
"""

from __future__ import annotations

import numpy as np

_NONE = -(1 << 62)
FACTOR = 3.0
MIN_SAMPLES = 8
#: Both handshake parts at least this long (ms) and neither 3× the other: a capture on the path (§7). Below
#: it (a LAN, both ends within a millisecond) the ACK-clocking test decides instead.
MID_PATH_MIN_MS = 1.0


def classify_vantage(
    *, sender_is_client: bool, syn_ns: int, synack_ns: int, hsack_ns: int,
    rtt_samples: np.ndarray, data_send_ns: np.ndarray,
) -> tuple[str, str]:
    """Return (``sender`` | ``receiver`` | ``mid_path`` | ``unknown``, evidence sentence)."""
    if _NONE not in (syn_ns, synack_ns, hsack_ns) and syn_ns <= synack_ns <= hsack_ns:
        a = (synack_ns - syn_ns) / 1e6
        b = (hsack_ns - synack_ns) / 1e6
        timing = f"handshake SYN→SYN-ACK {a:.3f} ms, SYN-ACK→ACK {b:.3f} ms"
        near_client = a > FACTOR * b
        near_server = b > FACTOR * a
        if near_client or near_server:
            near = "client" if near_client else "server"
            sender_side = near_client == sender_is_client
            role = "client" if sender_is_client else "server"
            verdict = "sender" if sender_side else "receiver"
            return verdict, f"{timing}: capture next to the {near}; the data sender is the {role}"
        if min(a, b) >= MID_PATH_MIN_MS:
            return "mid_path", (f"{timing}: neither end answers at once — a tap on the path, "
                                f"{b:.3f} ms from the client and back, {a:.3f} ms from the server and back")
    if len(rtt_samples) >= MIN_SAMPLES and len(data_send_ns) > MIN_SAMPLES:
        gaps = np.diff(data_send_ns)
        gaps = gaps[gaps > 0]
        if len(gaps):
            rtt_med = float(np.median(rtt_samples))
            gap_med = float(np.median(gaps)) / 1e9
            ratio = rtt_med / gap_med
            timing = (f"data→ACK median {rtt_med * 1e3:.3f} ms vs data segment gap median "
                      f"{gap_med * 1e3:.3f} ms (ratio {ratio:.1f})")
            if ratio >= FACTOR:
                return "sender", timing + ": ACKs come a round trip after the data"
            if ratio <= 2.0:
                return "receiver", timing + ": ACKs follow the data at once"
            return "unknown", timing + ": ambiguous"
    return "unknown", "no handshake timing and too few RTT samples to tell"

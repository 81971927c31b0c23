"""Where was the capture taken, relative to a flow's data sender? With the evidence, in words, and — from the
handshake — the tap's position: the fraction of the round trip that lies between the sender and the capture
point (0 at the sender, 1 at the receiver; ESTIMATORS.md §7, issue #27).

1. Handshake timing (strongest). With the client's SYN at t0, the SYN-ACK at t1 and the client's ACK at t2,
   SYN→SYN-ACK (t1−t0) is the capture point→server→capture point part of the round trip and SYN-ACK→ACK
   (t2−t1) the capture point→client→capture point part; next to a host, its own part is only its turnaround
   (µs). Of the two, the one towards the data sender over their sum is the position. The capture is at an end
   when that end's part is at most ``END_MS`` or ``END_SHARE`` of the round trip (and the other part more
   than ``FACTOR`` times it): within that, leaving the tap's share out of the rebuilt RTT costs at most
   ``END_SHARE`` of RTTmin. Otherwise, both parts at least ``MID_PATH_MIN_MS``: a tap on the path
   (``mid_path``) at that position, rebuilt with the handshake split there (``ingest.reconstruct``) —
   wherever it lies, also a few ms from either end (a 3× factor between the parts used to put a tap 1 ms
   from the sender of a 42 ms path at the sender, and one 2 ms before the receiver at the receiver). The
   data/ACK pairs' delays at the capture point (its data→ACK time: the capture point→receiver→capture point
   part, plus the receiver's ACK delay) are given beside it in the evidence — once the tap is rebuilt they
   refine its position (``ingest.pipeline``: their shortest over the rebuilt RTTmin) — and check it: when their
   shortest is under ``CONTRADICTED`` of the handshake's part towards the receiver, the handshake's timing is
   not the path's (a host that answered slowly), no position is taken from it, and a factor of ``FACTOR``
   between its parts tells the nearer end, as before.
2. Without a usable handshake (or parts too short to tell, a LAN), ACK clocking: next to the sender, the time
   from a data segment to the ACK that covers it is a round trip, many times the gap between consecutive
   data segments (a window's worth of segments is in flight); next to the receiver, the ACK follows the data
   within one or two segment gaps. Ratio of medians ≥ 3 → sender, ≤ 2 → receiver, else unknown. No position.
"""

from __future__ import annotations

import numpy as np

_NONE = -(1 << 62)
FACTOR = 3.0
MIN_SAMPLES = 8
#: A handshake part at most this long (ms), or at most this share of the round trip, is a host's own turnaround:
#: the capture is at that end.
END_MS = 0.2
END_SHARE = 0.01
#: Both handshake parts at least this long (ms) and neither end's: a capture on the path (§7). Below it (a LAN,
#: both ends within half a millisecond) the ACK-clocking test decides instead.
MID_PATH_MIN_MS = 0.5
#: The data/ACK pairs' shortest data→ACK time under this share of the handshake's capture point→receiver→capture
#: point part contradicts the handshake's split (it cannot be shorter than that part on the same path).
CONTRADICTED = 0.5


def classify_vantage(
    *, sender_is_client: bool, syn_ns: int, synack_ns: int, hsack_ns: int,
    rtt_samples: np.ndarray, data_send_ns: np.ndarray,
) -> tuple[str, str, float | None]:
    """Return (``sender`` | ``receiver`` | ``mid_path`` | ``unknown``, evidence sentence, position): the
    position is the share of the handshake's round trip between the sender and the capture point (None
    without a usable handshake)."""
    if _NONE not in (syn_ns, synack_ns, hsack_ns) and syn_ns <= synack_ns <= hsack_ns and hsack_ns > syn_ns:
        a = (synack_ns - syn_ns) / 1e6
        b = (hsack_ns - synack_ns) / 1e6
        timing = f"handshake SYN→SYN-ACK {a:.3f} ms, SYN-ACK→ACK {b:.3f} ms"
        to_sender, to_receiver = (b, a) if sender_is_client else (a, b)
        position = to_sender / (a + b)
        role = "client" if sender_is_client else "server"
        pairs = float(np.min(rtt_samples)) * 1e3 if len(rtt_samples) >= MIN_SAMPLES else None
        # the data/ACK pairs contradict the split when the data come back acknowledged in far less than the
        # handshake's capture point→receiver→capture point part: its timing is not the path's (a slow answer)
        # and only a factor between the parts can tell an end, as before issue #27
        trusted = pairs is None or pairs >= CONTRADICTED * to_receiver
        for at_end in (True, False):  # a host's own turnaround first; else, contradicted, the nearer end by 3×
            for part, other, verdict in ((to_sender, to_receiver, "sender"), (to_receiver, to_sender, "receiver")):
                if other > FACTOR * part and (part <= max(END_MS, END_SHARE * (a + b)) if at_end else not trusted):
                    near_client = (verdict == "sender") == sender_is_client
                    near = "client" if near_client else "server"
                    why = "" if at_end else (f" (the data/ACK pairs, at least {pairs:.3f} ms, contradict the "
                                             "handshake's split: no position between the ends is taken from it)")
                    return verdict, f"{timing}: capture next to the {near}; the data sender is the {role}{why}", (
                        position if at_end else (0.0 if verdict == "sender" else 1.0))
        if min(a, b) >= MID_PATH_MIN_MS and trusted:
            return "mid_path", (f"{timing}: neither end answers at once — a tap on the path, "
                                f"{b:.3f} ms from the client and back, {a:.3f} ms from the server and back; "
                                f"{100 * position:.1f} % of the round trip lies between the sender and the tap"
                                + _pairs_text(pairs, to_receiver)), position
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
                return "sender", timing + ": ACKs come a round trip after the data", None
            if ratio <= 2.0:
                return "receiver", timing + ": ACKs follow the data at once", None
            return "unknown", timing + ": ambiguous", None
    return "unknown", "no handshake timing and too few RTT samples to tell", None


def _pairs_text(low: float | None, to_receiver_ms: float) -> str:
    """The data/ACK pairs' side of a tap's evidence: their shortest data→ACK time at the capture point against
    the handshake's tap→receiver→tap part."""
    if low is None:
        return ""
    return (f"; data→ACK at the tap at least {low:.3f} ms (the tap→receiver→tap part and the receiver's ACK delay; "
            f"handshake: {to_receiver_ms:.3f} ms)")


def vantage_text(vantage: str, position: float | None) -> str:
    """The vantage as the outputs show it: a tap with where it lies, ``mid_path at 9 % of the RTT from the
    sender``; an end or an unknown vantage as it is."""
    if vantage == "mid_path" and position is not None:
        return f"mid_path at {100 * position:.0f} % of the RTT from the sender"
    return vantage

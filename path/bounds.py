"""What a real network allows the path's figures to be (docs/path.md §9), checked on every row the inference
judges: a figure the evidence contradicts is bounded, or refused (null, with the reason), never shown as it is.

**Which hop the capacity is.** ACK trains (sender side, mid-path tap) count a pair only when its later
segment queued, so the link that spaced them was busy: the bottleneck. Data pairs seen at the receiver were
spaced by the bottleneck and then by every link after it: a link that queued them again (the capture host's
own, often 100 Mbit/s or 1 Gbit/s beside a slower path) re-bunches them at its rate. Their mode is the
bottleneck's only when the flows' joint rate reached :data:`FILL_SHARE` of it; else it is the rate of the link
beside the capture point (``capacity_hop`` ``"capture_link"``, ``capture_link_bps``) and the path's
capacity is null, with every figure that needs it.

**Base RTT.** At most the smallest round trip the flows' summaries timed (their RTT samples, and at the
client the handshake's SYN→SYN-ACK, a round trip without a data segment's serialisation). The handshake at
the capture point times the part capture point→receiver→capture point, which every full round trip crosses:
a base RTT below :data:`HANDSHAKE_SHARE` × (that time less the deepest queue the flows' samples show) is not
this path's round trip (an ACK from the capture host's own stack, a proxy or an offload engine timed it) and
is refused. At the receiver the handshake's part is the host's own turnaround, so the bound is nil there; at
a tap it is the tap→receiver part.

**Buffer.** A drop-tail queue holds what the flows had in flight beyond the pipe: the buffer is at most the
flows' largest flight (wire bytes; a group's flights added) less the BDP (C × base RTT). A larger figure
came from a queueing delay the flows could not have built (another flow's queue, a capacity read too high)
and is refused. The receiver side sees no flight: there the bound cannot be checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ackreplay.path.dispersion import BIN_RATES, MIN_MODE_PAIRS

#: Data pairs show the bottleneck only when the flows' joint wire rate reached this share of their mode.
FILL_SHARE = 1.0 / 3.0
#: A random-loss rate beside buffer overflows needs at least this many loss episodes off the overflow level.
MIN_RANDOM_EPISODES = 3
#: A base RTT is refused below this share of the handshake's part of the round trip (less the deepest queue):
#: the server's SYN turnaround and a queue the flows never saw can lengthen the handshake, not double it.
HANDSHAKE_SHARE = 0.5


def capture_link_rates(at_bin: np.ndarray, in_mode: np.ndarray, source: np.ndarray, adr: np.ndarray) -> np.ndarray:
    """Each row's capture-link rate (bits/s) where its dispersion mode is the link beside the capture point's
    (data pairs, the flows' joint rate under :data:`FILL_SHARE` of it), else NaN (the bottleneck's, or none)."""
    has = (at_bin >= 0) & (in_mode >= MIN_MODE_PAIRS)
    rate = np.where(has, BIN_RATES[np.maximum(at_bin, 0)], np.nan)
    link = has & (source == 0) & (adr < FILL_SHARE * rate)
    return np.where(link, rate, np.nan)


def queue_room(flight_bytes: Any, wire_mss: Any, mss: Any, capacity: Any, base: Any) -> tuple[Any, Any]:
    """The flows' largest flight in wire bytes (payload × wire/payload of a full segment) and the room it leaves for
    a queue: that flight less the BDP (capacity × base RTT / 8), the deepest a drop-tail queue those flows filled can
    be. Arrays (a row each) or numbers alike; NaN where the flight was not seen."""
    flight = flight_bytes * wire_mss / np.maximum(mss, 1)
    return flight, flight - capacity * base / 8.0


def physical_bounds(capacity: np.ndarray, base: np.ndarray, buffer: np.ndarray, over: np.ndarray, grade: np.ndarray,
                    j: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bound the rows' figures in place (``j``: the judged evidence columns): the base RTT to the smallest
    round trip timed, refused below the handshake's floor (its grade then low); the buffer refused beyond
    what flight could queue; buffer/BDP on the bounded figures. Returns, per row, the bound that applied (NaN
    where none did): ``capped`` (the base RTT's ceiling), ``floor`` (the refused base RTT's floor), ``room``
    (the refused buffer's room; ``refused``: that buffer)."""
    with np.errstate(invalid="ignore"):
        ceiling = j["rtt_bound_s"]
        capped = np.isfinite(ceiling) & np.isfinite(base) & (base > ceiling)
        base[capped] = ceiling[capped]
        top = np.where(np.isfinite(j["top_queue_s"]), j["top_queue_s"], 0.0)
        floor = HANDSHAKE_SHARE * (j["handshake_s"] - top)
        low = np.isfinite(floor) & np.isfinite(base) & (base < floor)
        base[low] = np.nan
        grade[low] = 0
        flight, room = queue_room(j["flight_bytes"], j["wire_mss"], j["mss"], capacity, base)
        over_room = np.isfinite(buffer) & np.isfinite(room) & (buffer > room)
        refused = np.where(over_room, buffer, np.nan)
        buffer[over_room] = np.nan
        fine = np.isfinite(buffer) & np.isfinite(base) & (base > 0.0)
        over[:] = np.nan
        over[fine] = buffer[fine] / (capacity[fine] * base[fine] / 8.0)
        assert not np.any(base > ceiling), "a base RTT above a round trip the flows timed"
        assert not np.any(buffer > room), "a buffer larger than the flows' flight could fill"
    return {"capped": np.where(capped, ceiling, np.nan), "floor": np.where(low, floor, np.nan),
            "room": np.where(over_room, room, np.nan), "flight": flight, "refused": refused}


def unsure_random(rnd: np.ndarray, n: np.ndarray, nfull: np.ndarray, shared: np.ndarray,
                  odd: np.ndarray | None = None) -> np.ndarray:
    """Refuse (NaN, in place) the random-loss rates the losses cannot support, and say why per row: 0 = shown;
    1 = the buffer overflowed and fewer than :data:`MIN_RANDOM_EPISODES` losses fell off its level (one
    overflow at another level, a burst, looks the same) — those the rate set aside (``odd``, ``random_rate``'s
    episodes a Bernoulli loss cannot explain) not counted, as they count for no rate; 2 = the flows share the
    bottleneck (losses are told apart per flow: an overflow while the others held part of the queue is at another
    level). ``n``: each row's loss episodes, ``nfull`` those at the overflow level."""
    why = np.zeros(len(rnd), np.int8)
    off = n - nfull - (odd if odd is not None else 0)
    why[(nfull > 0) & (n - nfull > 0) & (off < MIN_RANDOM_EPISODES)] = 1
    why[shared & (n > nfull)] = 2
    rnd[why > 0] = np.nan
    return why


def say_bounds(out: Sequence[dict[str, Any]], link_rate: np.ndarray, bounds: Mapping[str, np.ndarray],
               j: Mapping[str, np.ndarray], random_why: np.ndarray) -> None:
    """Word the bounds that applied into each row's ``path`` dict (its figures are already bounded)."""
    for k in np.flatnonzero(random_why).tolist():
        p = out[k]
        p["random_loss_rate"] = None
        p["evidence"]["random_loss_rate"] = "null: " + (
            f"fewer than {MIN_RANDOM_EPISODES} loss episodes fell off the buffer's overflow level, too few to tell "
            "random losses from overflows at another level" if random_why[k] == 1 else
            "the flows share the bottleneck, and a loss told apart per flow cannot be told from an overflow while "
            "the others held part of the queue") + f" ({p['evidence']['random_loss_rate']})"
    for k in np.flatnonzero(np.isfinite(link_rate)).tolist():
        p, rate = out[k], float(link_rate[k])
        p["capacity_hop"], p["capture_link_bps"] = "capture_link", rate
        p["evidence"]["capacity_bps"] = (
            f"null: the data pairs' dispersion mode, {rate / 1e6:.3f} Mbit/s, is the link's beside the capture "
            f"point, not the bottleneck's: the flows never reached {FILL_SHARE:.0%} of it (their joint rate "
            f"{float(j['adr_bps'][k]) / 1e6:.3f} Mbit/s), so a link after the bottleneck re-bunched their segments")
    for k in np.flatnonzero(np.isfinite(bounds["capped"])).tolist():
        ceiling = float(bounds["capped"][k])
        out[k]["evidence"]["base_rtt_s"] += (f"; bounded by the smallest round trip the flows timed "
                                             f"({ceiling * 1e3:.3f} ms, the handshake's included)")
    for k in np.flatnonzero(np.isfinite(bounds["floor"])).tolist():
        p = out[k]
        p["base_rtt_s"], p["buffer_over_bdp"] = None, None
        p["evidence"]["base_rtt_s"] = (
            f"null: the smallest RTT sample, {float(j['rtt_min_s'][k]) * 1e3:.3f} ms, is below "
            f"{HANDSHAKE_SHARE:g}× the handshake's capture point→receiver→capture point time less the deepest "
            f"queue ({float(bounds['floor'][k]) * 1e3:.3f} ms), a part of every round trip: the samples did not "
            f"time this path's round trip")
        p["evidence"]["buffer_over_bdp"] = "null: no base RTT"
    for k in np.flatnonzero(np.isfinite(bounds["room"])).tolist():
        p = out[k]
        p["buffer_bytes"], p["buffer_over_bdp"] = None, None
        p["evidence"]["buffer_bytes"] = (
            f"null: the {p['evidence']['buffer_bytes']} gives {float(bounds['refused'][k]):.0f} B, more than the "
            f"flows' largest flight ({float(bounds['flight'][k]):.0f} B on the wire) less the BDP could have queued "
            f"({float(bounds['room'][k]):.0f} B)")
        p["evidence"]["buffer_over_bdp"] = "null: no buffer figure"

"""What the command line says of a flow in words: its path, what limited its sender, a shared bottleneck's
line, the why lines under a score table, and where a tap lies. The JSON documents carry the figures; these
sentences are the terminal's and the HTML report's reading of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ackreplay.scoring.ranking import NOT_REPRODUCIBLE


def path_line(path: Mapping[str, Any]) -> str:
    """The CLI's concise ``path:`` line."""
    def num(v: Any, fmt: str) -> str:
        return "—" if v is None else format(v, fmt)
    cap = path.get("capacity_bps")
    rtt = path.get("base_rtt_s")
    loss = path.get("random_loss_rate")
    link = path.get("capture_link_bps")
    # a capacity measured beside the capture point is no path's: said as what it is
    beside = "" if link is None else f" (the capture link's {link / 1e6:.2f})"
    return (f"capacity {num(None if cap is None else cap / 1e6, '.2f')}{beside} Mbit/s, base RTT "
            f"{num(None if rtt is None else rtt * 1e3, '.1f')} ms, buffer {num(path.get('buffer_bytes'), '.0f')} B "
            f"({num(path.get('buffer_over_bdp'), '.2f')}×BDP), random loss "
            f"{num(None if loss is None else 100 * loss, '.2f')} %, confidence {path.get('confidence')}")


#: What each limit label means, in the CLI's words (``scoring.limits.LABELS``).
LIMIT_WORDS = {"cwnd": "the network (cwnd)", "rwnd": "the receive window", "app": "the application",
               "sndbuf": "the send buffer", "unknown": "unknown"}


def limits_line(shares: Mapping[str, float]) -> str:
    """What limited a flow's sender: each label's share of its time, the largest first (under 0.5 % left out: a
    share that rounds to 0 % says nothing)."""
    kept = sorted(((v, k) for k, v in shares.items() if v is not None and v >= 0.005), reverse=True)
    return ", ".join(f"{LIMIT_WORDS.get(k, k)} {100 * v:.0f} %" for v, k in kept) or "—"


def group_line(group: Mapping[str, Any]) -> str:
    """The CLI's line for a group of flows sharing a bottleneck: its path, how each sender backed off, and
    Möller et al. 2007 beside the measured shares where a NewReno-like and a Westwood+-like sender share it."""
    kinds = ", ".join(f"{m['flow_id']} {m['kind']}" + (f" (b {m['decrease']:.2f})" if m.get("decrease") is not None
                                                       else "") for m in group.get("members") or [])
    text = f"path: {path_line(group['path'])}; senders: {kinds}"
    s = group.get("share_model")
    if s:
        text += ("; NewReno/Westwood+ model (Möller et al., NGI 2007) at this buffer/BDP: NewReno "
                 f"{s['model']['newreno']:.2f}, Westwood+ "
                 f"{s['model']['westwood_plus']:.2f} of C (measured {s['measured']['newreno']:.2f}, "
                 f"{s['measured']['westwood_plus']:.2f})")
    return text


def seen_at(vantage: str | None) -> str:
    """Where a flow's ACK timing was seen, for the why lines: nothing at the sender (the timing the estimators
    read); off it, that this is the capture point's share and not the sender's, which the return path after the
    capture point changes unseen."""
    if vantage is None or vantage == "sender":
        return ""
    where = {"receiver": "the receiver", "mid_path": "the tap"}.get(vantage, "the capture point")
    return (f" as the ACKs passed {where} (not the sender's share: the return path after {where} bunches ACKs "
            "unseen here)")


def explain(diag: Mapping[str, Any], scores: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Footnotes for a flow's score table: why BE (and estimates above the path's capacity) read high."""
    lines: list[str] = []
    cap = diag.get("dispersion_capacity_bps")
    share = diag.get("ack_compression_share")
    if share is not None:
        top = diag.get("largest_samples") or []
        big = ", ".join(f"{s['bps'] / 1e6:.0f} Mbit/s over {s['interval_us']:.0f} µs ({s['cause'].replace('_', ' ')})"
                        for s in top)
        lines.append(f"ACK intervals under 100 µs{seen_at(diag.get('ack_timing_seen_at'))}: {100 * share:.1f} %; "
                     f"BE's largest samples: {big or 'none'}")
    if cap is not None:
        above = [n for n, s in scores.items() if (s.get("mean_bps") or 0) > 1.5 * cap]
        tail = f"; mean above 1.5× it: {', '.join(above)}" if above else ""
        lines.append(f"capacity from the packet-pair dispersion mode ({diag.get('dispersion_from')}): "
                     f"{cap / 1e6:.3f} Mbit/s{tail}")
    lines += [f"{name}: {why}" for name, why in (diag.get(NOT_REPRODUCIBLE) or {}).items()]
    for name, c in (diag.get("loss_classes") or {}).items():
        text = f"{name} classified {c['congestion']} losses as congestion, {c['random']} as random"
        if c.get("correct_share") is not None:
            text += f" ({100 * c['correct_share']:.0f} % right of {c['labelled']} labelled)"
        lines.append(text)
    return lines


def vantage_text(vantage: str, position: float | None) -> str:
    """The vantage as the outputs show it: a tap with where it lies, ``mid_path at 9 % of the RTT from the
    sender``; an end or an unknown vantage as it is."""
    if vantage == "mid_path" and position is not None:
        return f"mid_path at {100 * position:.0f} % of the RTT from the sender"
    return vantage

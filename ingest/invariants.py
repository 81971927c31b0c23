"""The invariants every flow's figures keep: nothing claimed beyond what the capture's packets account for.

A flow's figures rest on its sequence numbers. When a connection's packets carry numbers from another sequence
space — two connections on one 4-tuple taken for one, an acknowledgement from an older connection (RFC 5961's
challenge ACK) — a single number can make gigabytes of "data" out of a few hundred bytes, its goodput hundreds of
Mbit/s and every segment a retransmission. Ingest keeps, per flow, what its highest sequence sent rests on
(``tcpflow``: the payload of the data segments seen, the holes proven, the largest sequence jump) and checks:

1. **bytes** — the bytes sent are at most the payload of the data segments seen plus the holes the ACKs (and
   later segments) prove: bytes the capture missed, each hole no more than the receiver's window let the sender
   send while it opened (its largest window, once per RTTmin). The bytes sent count a gap a segment skipped only
   once an ACK covers it (``tcpflow``), so what breaks this is an acknowledgement beyond the window;
2. **goodput** — the goodput is at most what the data segments allow over the flow's duration: their payload,
   the proven holes and, for a flow captured without its start, the bytes acknowledged below its first segment
   (at most one window of them: data outstanding when the capture began);
3. **loss** — a retransmission resends bytes the capture saw sent or a proven hole, never bytes that only a
   sequence jump claims were sent: the loss rate comes from loss episodes, not from a jump.

A flow that breaks one keeps its figures, with the reasons in ``FlowSummary.invalid``, and is not replayed
(``replay.engine.plan``): its ACK stream is not the sender's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from ackreplay.ingest import tcpflow as tf


class FlowFigures(NamedTuple):
    """What the invariants compare, an array each (one element per flow): the summary's figures and what the
    analysis found the highest sequence sent rests on (``tcpflow.FI_SEEN`` …)."""

    bytes_sent: np.ndarray
    bytes_acked: np.ndarray  # the summary's ``bytes``
    duration_s: np.ndarray
    goodput_bps: np.ndarray
    seen: np.ndarray  # payload bytes of the data segments seen
    proven: np.ndarray  # bytes of the holes proven
    jump: np.ndarray  # the largest sequence jump (0: none)
    jump_retx: np.ndarray  # retransmissions starting in a sequence jump
    early: np.ndarray  # bytes acknowledged below the first data segment seen (no SYN)
    wmax: np.ndarray  # the receiver's largest window, in bytes

    @classmethod
    def of(cls, F_i: np.ndarray, acked: np.ndarray, duration_s: np.ndarray, goodput_bps: np.ndarray
           ) -> FlowFigures:
        """The figures of the flows of an analysis's ``F_i`` rows, with their summaries' bytes, duration and
        goodput."""
        return cls(F_i[:, tf.FI_BYTES_SENT], acked, duration_s, goodput_bps, F_i[:, tf.FI_SEEN],
                   F_i[:, tf.FI_PROVEN], F_i[:, tf.FI_JUMP], F_i[:, tf.FI_JUMP_RETX], F_i[:, tf.FI_EARLY],
                   F_i[:, tf.FI_WMAX])


def violations(fig: FlowFigures) -> pl.Series:
    """For each flow, the invariants it breaks, in words ("" when it keeps them all)."""
    accounted = fig.seen + fig.proven
    allowed = accounted + np.minimum(fig.early, fig.wmax)
    bad_bytes = fig.bytes_sent > accounted
    bad_goodput = fig.bytes_acked > allowed
    bad_loss = fig.jump_retx > 0
    broken = np.flatnonzero(bad_bytes | bad_goodput | bad_loss)
    out = pl.repeat("", len(fig.seen), dtype=pl.String, eager=True)
    if not len(broken):
        return out
    texts = []
    for i in broken.tolist():
        why = []
        if bad_bytes[i]:
            why.append(f"bytes: {int(fig.bytes_sent[i])} sent, but the data segments carry {int(fig.seen[i])} bytes "
                       f"of new data and the ACKs prove {int(fig.proven[i])} the capture missed (a sequence jump of "
                       f"{int(fig.jump[i])} bytes)")
        if bad_goodput[i]:
            dur = float(fig.duration_s[i])
            limit = 8.0 * float(allowed[i]) / dur if dur > 0 else 0.0
            why.append(f"goodput: {fig.goodput_bps[i] / 1e6:.6g} Mbit/s, but the {int(allowed[i])} bytes its "
                       f"segments and ACKs account for allow {limit / 1e6:.6g} Mbit/s over its {dur:.6g} s")
        if bad_loss[i]:
            why.append(f"loss: {int(fig.jump_retx[i])} retransmission(s) resend bytes that only a sequence jump "
                       "claims were sent")
        texts.append("; ".join(why))
    return out.scatter(broken, texts)

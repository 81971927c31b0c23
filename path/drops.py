"""The random drops one capture realised, segment by segment (docs/path.md "Random-loss rate"): the draw of the
random loss its flow met, which a simulation can replay (``FlowSpec.loss_fates`` of ``ackreplay.sim.model``) so
that it meets the same drops — the re-enactment of the captured sender the capture's, and several controls on
the same path each other's (common random numbers).

*Decided here:* a drop is placed by its **segment**, the flow's k-th MSS of data from its first byte (the
simulation numbers its segments so), not by the index of the transmission among the flow's packets. A random
dropper strikes the n-th packet to reach it, but a re-enactment's sender sends another sequence of packets than
the captured one — more or fewer retransmissions at each overflow, and whether one falls early decides every later
index —, so the n-th transmission of the two is soon not the same data. The segment is the same data in both:
the drop strikes the same place of the transfer, after the same bytes delivered, which is what a lossy flow's
window and goodput follow. A segment retransmitted twice in the capture's random episodes lost two transmissions,
and is dropped at its first two in the replay.

The drops are the retransmissions of the loss episodes the random-loss rate counts (``path.figures``:
``RANDOM_EPISODE``), each at the segment it resent (a TSO/GSO super-segment at each of the segments it carries:
``path.flow_evidence._drops``). The windows of the other episodes — buffer overflows, and
episodes set aside as no random loss — are segments whose fate the capture does not show (a random drop there is
repaired among the overflow's own drops: ``loss_exposed``), so they are not replayed, nor is anything past the
segments the capture sent: there a replay draws at the rate. Every other segment the capture sent was delivered
the first time, as far as the random loss goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ackreplay.path.evidence import PathParts
from ackreplay.path.figures import RANDOM_EPISODE
from ackreplay.path.inference import loss_kinds

#: The most transmissions of one segment a replay drops (the simulation's per-segment count is one signed byte).
MOST_DROPS = 127


@dataclass(frozen=True)
class RandomDrops:
    """A capture's realised random drops: ``drops``, the segment of each drop (ascending; a segment once per
    transmission of it lost), ``hidden``, the segment ranges (from, past) whose fate the capture does not show,
    and ``segments``, how many segments the capture's flow sent."""

    drops: tuple[int, ...]
    hidden: tuple[tuple[int, int], ...]
    segments: int

    def fates(self) -> np.ndarray:
        """One count a segment (int8, ``segments`` long): the transmissions of it dropped at random, −1 where its
        fate does not show (left to a draw at the rate). A drop in a hidden range (a retransmission lost again
        in a later episode) is replayed all the same."""
        out = np.zeros(self.segments, np.int16)
        for lo, hi in self.hidden:
            out[max(lo, 0):min(hi, self.segments)] = -1
        segs = np.asarray(self.drops, np.int64)
        segs = segs[(segs >= 0) & (segs < self.segments)]
        if len(segs):
            seg, count = np.unique(segs, return_counts=True)
            out[seg] = np.minimum(count, MOST_DROPS)
        return out.astype(np.int8)

    def as_dict(self) -> dict[str, Any]:
        return {"drops": list(self.drops), "hidden": [list(h) for h in self.hidden], "segments": self.segments}

    @staticmethod
    def from_dict(doc: Mapping[str, Any] | None) -> RandomDrops | None:
        """The drops :meth:`as_dict` wrote (None for none, or a document without them)."""
        if not doc or "drops" not in doc or "segments" not in doc:
            return None
        return RandomDrops(tuple(int(s) for s in doc["drops"]),
                           tuple((int(lo), int(hi)) for lo, hi in doc.get("hidden") or []), int(doc["segments"]))


def random_drops(parts: PathParts | None) -> RandomDrops | None:
    """The random drops the capture of one flow realised (module docstring), from its path evidence. None where
    the evidence is not one flow's (a group's pooled episodes have no one sequence) or the flow sent no data."""
    if parts is None or len(parts.flows) != 1 or parts.sent_segments <= 0:
        return None
    windows = parts.loss_windows
    if not windows:  # no loss episode: nothing dropped, every fate shown (and no judging to redo for the kinds)
        return RandomDrops((), (), int(parts.sent_segments))
    kinds = loss_kinds(parts).tolist()
    drops = sorted(seg for seg, ep in parts.retransmissions if 0 <= ep < len(kinds) and kinds[ep] == RANDOM_EPISODE)
    hidden = tuple((lo, hi) for (lo, hi), kind in zip(windows, kinds, strict=True)
                   if kind != RANDOM_EPISODE and hi > lo)
    return RandomDrops(tuple(drops), hidden, int(parts.sent_segments))

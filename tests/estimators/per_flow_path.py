"""The path inference's one-flow and one-group forms, which only the tests call: the package judges many flows
at once (``ackreplay.path``), and these state what it does for one — a dense histogram and its mode, one
group's pooling, the groups as lists — so that the tests can hold the batched code to them."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from ackreplay.path.dispersion import BIN_RATES, HIST_BINS, bin_index, mode_of
from ackreplay.path.evidence import PathBatch, PathParts
from ackreplay.path.groups import bottleneck_group_rows, endpoint_hosts


def rate_histogram(rates: np.ndarray) -> np.ndarray:
    """The dense dispersion histogram of pair rates (bits/s): ``HIST_BINS`` log bins."""
    idx = bin_index(rates)
    idx = idx[(idx >= 0) & (idx < HIST_BINS)]
    return np.bincount(idx, minlength=HIST_BINS).astype(np.int64)


def histogram_mode(hist: np.ndarray, floor_bps: float) -> tuple[float | None, int, int]:
    """The capacity mode of a dense dispersion histogram (``HIST_BINS`` counts): ``mode_of`` on its occupied
    bins, the estimate as a rate — (the estimate, samples in the densest window, samples at or above the
    floor)."""
    bins = np.flatnonzero(hist).astype(np.int64)
    at, count, above = mode_of(bins, np.asarray(hist, np.int64)[bins], float(floor_bps))
    return (float(BIN_RATES[at]) if at >= 0 else None), int(count), int(above)


def merge_parts(parts: Sequence[PathParts]) -> PathParts:
    """Pool the evidence of flows that share one bottleneck (``PathBatch.merge`` of one group; one flow's own
    evidence as it is)."""
    if len(parts) == 1:
        return parts[0]
    return PathBatch.stack(parts).merge([0, len(parts)])[0]


def endpoint_host(endpoint: str) -> str:
    """``10.0.0.1:5201`` / ``[2001:db8::1]:80`` → the host part."""
    return str(endpoint_hosts([endpoint])[0])


def bottleneck_groups(flows: Sequence[tuple[int, str, str, float, float]]) -> list[list[int]]:
    """``bottleneck_group_rows`` as lists: ``(flow_id, sender, receiver, start, end)`` → groups of flow ids
    (each flow in one; groups of one for flows alone), ordered by their first flow's id."""
    if not flows:
        return []
    ids, senders, receivers, starts, ends = zip(*flows, strict=True)
    rows, offsets = bottleneck_group_rows(ids, senders, receivers, starts, ends)
    members = [ids[r] for r in rows.tolist()]
    return [members[a:b] for a, b in pairwise(offsets.tolist())]

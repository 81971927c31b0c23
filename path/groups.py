"""Which flows share a bottleneck (docs/path.md §9): flows between the same two hosts whose lifetimes overlap
(:func:`bottleneck_group_rows`); the command line words such a group in ``cli.wording.group_line``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from ackreplay.jitcache.kernel_mode import njit


def endpoint_hosts(endpoints: Sequence[str]) -> pl.Series:
    """``10.0.0.1:5201`` / ``[2001:db8::1]:80`` → the host part, of each."""
    s = pl.Series(endpoints, dtype=pl.String)
    port = (s.str.count_matches(":", literal=True) == 1) | s.str.starts_with("[")
    return pl.select(pl.when(port).then(s.str.replace(r":[^:]*$", "")).otherwise(s).str.strip_chars("[]")
                     ).to_series()


@njit(cache=True, nogil=True)
def _chain(pair: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The group number of each flow, the flows sorted by host pair then start: a flow that starts after every
    earlier flow of its pair's group ended opens a new group."""
    out = np.empty(len(pair), np.int64)
    g = -1
    reach = 0.0
    for i in range(len(pair)):
        if i == 0 or pair[i] != pair[i - 1] or start[i] > reach:
            g += 1
            reach = end[i]
        else:
            reach = max(reach, end[i])
        out[i] = g
    return out


def bottleneck_group_rows(flow_ids: Sequence[int] | np.ndarray, senders: Sequence[str], receivers: Sequence[str],
                          starts: Sequence[float] | np.ndarray, ends: Sequence[float] | np.ndarray,
                          min_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The flows that share a bottleneck, given as ``flow_ids`` with their endpoints and lifetimes: the flows'
    positions in the input, group after group (each group's flows by start), and the groups' offsets
    (groups + 1), the groups ordered by their first flow's id; groups of fewer than ``min_size`` flows left
    out (with 1, every flow is in one group, alone or not). The rule (the capture shows no topology): flows
    between the same two hosts, in the same direction, whose lifetimes overlap, cross the same path at the
    same time and so share its bottleneck; overlaps chain (a flow overlapping two others joins them)."""
    n = len(flow_ids)
    if n == 0:
        return np.empty(0, np.int64), np.zeros(1, np.int64)
    pair = pl.DataFrame({"s": endpoint_hosts(senders), "r": endpoint_hosts(receivers)}).select(
        pl.struct("s", "r").rank("dense")).to_series().to_numpy()
    st, en = np.asarray(starts, np.float64), np.asarray(ends, np.float64)
    order = np.lexsort((st, pair))  # (stable: flows starting together keep their order)
    group = _chain(pair[order], st[order], en[order])
    first = np.flatnonzero(np.diff(group, prepend=-1))
    by_first = np.argsort(np.asarray(flow_ids, np.int64)[order[first]], kind="stable")  # groups by first flow id
    sizes = np.diff(np.append(first, n))[by_first]
    keep = sizes >= min_size
    rank = np.full(len(first), len(first))  # (groups left out sort last)
    rank[by_first[keep]] = np.arange(int(keep.sum()))
    pos = np.argsort(rank[group], kind="stable")[:int(sizes[keep].sum())]
    offsets = np.zeros(int(keep.sum()) + 1, np.int64)
    np.cumsum(sizes[keep], out=offsets[1:])
    return order[pos], offsets

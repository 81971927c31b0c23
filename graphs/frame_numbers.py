"""Back to the packet: the frame numbers behind a flow's figures and its loss episodes, from ingest's tables.

Every row of ingest's ``acks`` and ``segments`` tables carries ``frame``, the packet's frame number in its capture
file as Wireshark numbers it (``frame.number``: 1-based, every packet record of the file counted — TCP or not,
truncated or not; pcapng's packet blocks across all interfaces, in file order), and every loss episode its
``first_frame`` (the retransmission that opened it) and ``last_frame`` (the packet that ended it: the ACK that
reached its recovery point, or the retransmission that timed out in it; null while open at the capture's end).

An episode's retransmissions are the flow's retransmitted segments from its first one to the next episode's
first one: a retransmission outside an open episode opens one, so each belongs to the latest episode opened at or
before it (:func:`episode_frames`).
"""

from __future__ import annotations

from typing import Any

import polars as pl


def episode_frames(segments: pl.DataFrame, episodes: pl.DataFrame) -> list[dict[str, Any]]:
    """For each of one flow's ``episodes`` (rows in order, as ingest writes them), its ``first_frame``,
    ``last_frame`` and ``retransmission_frames`` (the frames of its retransmitted segments, from the flow's
    ``segments``); None and [] where the tables have no frame numbers (stored before ingest kept them)."""
    n = episodes.height
    if "first_frame" not in episodes.columns or "frame" not in segments.columns:
        return [{"first_frame": None, "last_frame": None, "retransmission_frames": []} for _ in range(n)]
    retx = segments.filter(pl.col("kind").cast(pl.String) == "retransmission")["frame"].to_list()
    at = {f: i for i, f in enumerate(retx)}
    first = episodes["first_frame"].to_list()
    last = episodes["last_frame"].to_list()
    starts = [at.get(f, -1) for f in first]
    ends = [len(retx)] * n  # each episode's retransmissions end where the next one's (found) begin
    nxt = len(retx)
    for k in range(n - 1, -1, -1):
        ends[k] = nxt
        if starts[k] >= 0:
            nxt = starts[k]
    return [{"first_frame": first[k], "last_frame": last[k],
             "retransmission_frames": retx[starts[k]:ends[k]] if starts[k] >= 0 else []} for k in range(n)]


#: The keys of a flow's ``frames`` object (:func:`flow_frames`).
FLOW_FRAME_KEYS = ("first_data", "last_ack", "rtt_min")


def flow_frames(acks: pl.DataFrame, segments: pl.DataFrame) -> dict[int, dict[str, int | None]]:
    """The packets behind each flow's figures, by flow id (flows of the tables; none without frame numbers):
    ``first_data`` — its first data segment, ``last_ack`` — its last ACK, ``rtt_min`` — the ACK that carries its
    smallest RTT sample, the one RTTmin and the path's base RTT rest on (null when the flow has no sample on an
    ACK: its RTTmin then came from the handshake, SYN→SYN-ACK)."""
    if "frame" not in acks.columns or "frame" not in segments.columns:
        return {}
    first = segments.group_by("flow_id").agg(pl.col("frame").first().alias("first_data"))
    # the smallest sample's ACK, the first of equal ones (a stable sort; nulls, no sample, last)
    last = acks.group_by("flow_id").agg(
        pl.col("frame").last().alias("last_ack"),
        pl.when(pl.col("rtt").is_not_null().any())
        .then(pl.col("frame").sort_by("rtt", nulls_last=True, maintain_order=True).first()).alias("rtt_min"))
    rows = first.join(last, on="flow_id", how="full", coalesce=True)
    return {r["flow_id"]: {k: r[k] for k in FLOW_FRAME_KEYS} for r in rows.iter_rows(named=True)}

"""The per-flow output tables: analysis matrices → numpy columns → Polars DataFrames.

Two steps, so that a capture analysed in several connection groups can spill the columns of each
group to disk (``ingest.spill``) and build the tables once at the end from memory-mapped files:

* ``*_columns`` turn the column-major analysis outputs (``ingest.tcpflow``) into named numpy columns
  of the final dtypes (missing values still NaN or negative);
* ``*_frame`` wrap them as DataFrames without copying the numeric columns, then mark the missing
  values as null (only those columns are copied).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.spill import ColumnSpill

SEGMENT_KINDS = pl.Enum(["new", "retransmission", "keepalive", "zero_window_probe", "reordered"])
EPISODE_KINDS = pl.Enum(["fast_retransmit", "timeout"])
#: ``rtt_source`` by ``tcpflow.RTT_*`` code less one (``RTT_NONE``: null)
RTT_SOURCES = pl.Enum(["handshake", "seq", "ts", "window"])

ACK_COLUMNS: dict[str, np.dtype] = {name: np.dtype(dt) for name, dt in (
    ("flow_id", np.int32), ("t_ns", np.int64), ("t", np.float64), ("t_rel", np.float64),
    ("acked", np.int64), ("dup", np.bool_), ("d", np.int64), ("rtt", np.float64), ("srtt", np.float64),
    ("rttmin", np.float64), ("flight", np.int64), ("tsval", np.int64), ("ack", np.int64),
    ("win", np.int32), ("sacked", np.int64), ("sack_lo", np.int64), ("sack_hi", np.int64), ("rwnd", np.int64),
    ("frame", np.int64),
    ("rtt_source", np.int8),
)}
SEGMENT_COLUMNS: dict[str, np.dtype] = {name: np.dtype(dt) for name, dt in (
    ("flow_id", np.int32), ("t_ns", np.int64), ("t", np.float64), ("t_rel", np.float64),
    ("seq", np.int64), ("len", np.int64), ("kind", np.int8), ("frame", np.int64), ("tsval", np.int64),
)}
EPISODE_COLUMNS: dict[str, np.dtype] = {name: np.dtype(dt) for name, dt in (
    ("flow_id", np.int32), ("start_t", np.float64), ("start_t_rel", np.float64), ("end_t", np.float64),
    ("kind", np.int8), ("dupacks_before", np.int64), ("silence_s", np.float64), ("recover_seq", np.int64),
    ("first_retx_seq", np.int64), ("retransmissions", np.int64), ("spurious", np.bool_),
    ("decision_ack_row", np.int64), ("first_frame", np.int64), ("last_frame", np.int64),
)}


def _flow(col: np.ndarray, flow_base: int) -> np.ndarray:
    return (col + flow_base if flow_base else col).astype(np.int32)


#: Where each plain column comes from: ("i", row) of the integer table or ("f", row) of the float one.
_ACK_SOURCE = {
    "t_ns": ("i", tf.AI_T), "t": ("f", tf.AF_T), "t_rel": ("f", tf.AF_TREL), "acked": ("i", tf.AI_ACKED),
    "d": ("i", tf.AI_D), "rtt": ("f", tf.AF_RTT), "srtt": ("f", tf.AF_SRTT), "rttmin": ("f", tf.AF_RTTMIN),
    "flight": ("i", tf.AI_FLIGHT), "tsval": ("i", tf.AI_TSVAL), "ack": ("i", tf.AI_ACK),
    "sacked": ("i", tf.AI_SACKED), "sack_lo": ("i", tf.AI_SACK_LO), "sack_hi": ("i", tf.AI_SACK_HI),
    "rwnd": ("i", tf.AI_RWND), "frame": ("i", tf.AI_FRAME),
}
_SEGMENT_SOURCE = {
    "t_ns": ("i", tf.SI_T), "t": ("f", tf.SF_T), "t_rel": ("f", tf.SF_TREL), "seq": ("i", tf.SI_SEQ),
    "len": ("i", tf.SI_LEN), "frame": ("i", tf.SI_FRAME), "tsval": ("i", tf.SI_TSVAL),
}


def _pick(source: dict[str, tuple[str, int]], ints: np.ndarray, floats: np.ndarray) -> dict[str, np.ndarray]:
    return {name: (ints if kind == "i" else floats)[row] for name, (kind, row) in source.items()}


def ack_columns(A_i: np.ndarray, A_f: np.ndarray, flow_base: int = 0) -> dict[str, np.ndarray]:
    """ACK rows (``A_i``/``A_f`` trimmed to the rows written); flow numbers shifted by ``flow_base``."""
    cols = _pick(_ACK_SOURCE, A_i, A_f)
    cols["flow_id"] = _flow(A_i[tf.AI_FLOW], flow_base)
    cols["dup"] = A_i[tf.AI_DUP] != 0
    cols["win"] = A_i[tf.AI_WIN].astype(np.int32)
    cols["rtt_source"] = A_i[tf.AI_RTT_SRC].astype(np.int8)
    return cols


def segment_columns(S_i: np.ndarray, S_f: np.ndarray, flow_base: int = 0) -> dict[str, np.ndarray]:
    """Data-segment rows; ``kind`` as its code (``tcpflow.SEG_*``)."""
    cols = _pick(_SEGMENT_SOURCE, S_i, S_f)
    cols["flow_id"] = _flow(S_i[tf.SI_FLOW], flow_base)
    cols["kind"] = S_i[tf.SI_KIND].astype(np.int8)
    return cols


def episode_columns(E_i: np.ndarray, first_pkt: np.ndarray, flow_base: int = 0) -> dict[str, np.ndarray]:
    """Loss-episode rows; ``first_pkt[flow]`` is each flow's first packet time (epoch s, global ids)."""
    flow = _flow(E_i[tf.EI_FLOW], flow_base)
    end = E_i[tf.EI_END]
    return {
        "flow_id": flow,
        "start_t": E_i[tf.EI_START] / 1e9,
        "start_t_rel": E_i[tf.EI_START] / 1e9 - first_pkt[flow] if len(flow) else np.empty(0, np.float64),
        "end_t": np.where(end >= 0, end / 1e9, np.nan),
        "kind": E_i[tf.EI_KIND].astype(np.int8),
        "dupacks_before": E_i[tf.EI_DUPACKS],
        "silence_s": E_i[tf.EI_SILENCE_NS] / 1e9,
        "recover_seq": E_i[tf.EI_RECOVER],
        "first_retx_seq": E_i[tf.EI_SEQ],
        "retransmissions": E_i[tf.EI_RETX],
        "spurious": E_i[tf.EI_SPURIOUS] != 0,
        "decision_ack_row": E_i[tf.EI_ACKROW],
        "first_frame": E_i[tf.EI_FIRST_FRAME],
        "last_frame": E_i[tf.EI_LAST_FRAME],
    }


def _enum(codes: np.ndarray, dtype: pl.Enum) -> pl.Series:
    """Category codes → an Enum column (a vectorised gather from the categories)."""
    return pl.Series(dtype.categories, dtype=dtype).gather(pl.Series(codes, dtype=pl.UInt32))


def acks_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    """The ACK-stream table (``docs/ingest.md``); RTT columns without a sample, absent TSvals, SACK blocks and
    unknown receive windows null."""
    source = cols["rtt_source"]
    data: dict[str, np.ndarray | pl.Series] = {name: cols[name] for name in ACK_COLUMNS}
    data["rtt_source"] = _enum(np.maximum(source, 1) - 1, RTT_SOURCES)
    data["rtt_source_code"] = source
    return pl.DataFrame(data).with_columns(
        pl.when(pl.col("rtt_source_code") > 0).then(pl.col("rtt_source")).alias("rtt_source"),
        pl.col("rtt", "srtt", "rttmin").fill_nan(None),
        *(pl.when(pl.col(c) >= 0).then(pl.col(c)).alias(c) for c in ("tsval", "sack_lo", "sack_hi", "rwnd")),
    ).drop("rtt_source_code")


def segments_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    """The data-segment table, with ``retransmission`` and the segment ``kind``."""
    kind = cols["kind"]
    data: dict[str, np.ndarray | pl.Series] = {name: cols[name] for name in SEGMENT_COLUMNS if name != "kind"}
    data["retransmission"] = kind == tf.SEG_RETX
    data["kind"] = _enum(kind, SEGMENT_KINDS)
    return pl.DataFrame(data).with_columns(pl.when(pl.col("tsval") >= 0).then(pl.col("tsval")).alias("tsval"))


def episodes_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    """The loss-episode table; an episode still open at the end of the capture has a null ``end_t`` and
    ``last_frame``."""
    data: dict[str, np.ndarray | pl.Series] = {name: cols[name] for name in EPISODE_COLUMNS}
    data["kind"] = _enum(cols["kind"], EPISODE_KINDS)
    return pl.DataFrame(data).with_columns(
        pl.col("end_t").fill_nan(None),
        pl.when(pl.col("last_frame") >= 0).then(pl.col("last_frame")).alias("last_frame"))


class TableSink:
    """Output columns of the groups analysed so far: in memory (one group) or appended to spills."""

    def __init__(self, spill_dir: str | Path | None, spilled: bool) -> None:
        self.parts: dict[str, list[dict[str, np.ndarray]]] = {"acks": [], "segments": [], "episodes": []}
        self.spills: dict[str, ColumnSpill] | None = None
        #: The file-mapped columns handed out (spilled), by table (``CaptureIngest.release``).
        self.mapped: dict[str, dict[str, np.ndarray]] = {}
        if spilled:
            self.spills = {
                "acks": ColumnSpill(ACK_COLUMNS, spill_dir, "acks"),
                "segments": ColumnSpill(SEGMENT_COLUMNS, spill_dir, "segments"),
                "episodes": ColumnSpill(EPISODE_COLUMNS, spill_dir, "episodes"),
            }

    def add(self, name: str, cols: dict[str, np.ndarray]) -> None:
        if self.spills is not None:
            self.spills[name].append(cols)
        else:
            self.parts[name].append(cols)

    def columns(self, name: str) -> dict[str, np.ndarray]:
        if self.spills is not None:
            cols = self.spills[name].mapped()
            self.mapped[name] = cols
            return cols
        parts = self.parts[name]
        if len(parts) == 1:
            return parts[0]
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}

    def close(self) -> None:
        if self.spills is not None:
            for spill in self.spills.values():
                spill.close()

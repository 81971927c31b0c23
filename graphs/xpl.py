"""A flow's time–sequence graph in xplot's format, as tcptrace writes it (``tcptrace -S``: ``a2b_tsg.xpl``).

The dialect is tcptrace's, read from its output: a header (``timeval double``, ``title`` and its line, ``xlabel`` /
``time``, ``ylabel`` / ``sequence number``), then one command a line in time order, each drawing command preceded
by its colour when that changes, and ``go`` at the end:

* a data segment, white: ``darrow t seq`` and ``uarrow t seq_end`` joined by ``line t seq t seq_end``; a
  retransmission is drawn red with the text ``R`` at its top (``atext t seq_end`` then ``R``);
* the cumulative ACK, green: a step line — ``line`` from the previous ACK at its value, up to the new value — and
  ``dtick t ack`` at each ACK; a duplicate ACK is labelled with its count (``atext t ack`` then ``3``);
* the receive window's right edge (ACK + window), yellow, the same way with ``utick``;
* the ACK's first SACK block (RFC 2018's most recent data), purple: ``line t lo t hi`` with an ``htick`` at each
  end and the text ``S``.

Times are epoch seconds (``timeval double``, microseconds as tcptrace prints them); sequence numbers are ingest's,
relative to the flow's first byte (tcptrace writes the raw 32-bit numbers: its graph is this one shifted by the
ISN + 1). Keepalives and window probes are drawn as the data segments they are. tcptrace marks the top of a
segment with PSH set by a ``diamond`` and a ``dot`` instead of the ``uarrow``; ingest keeps no PSH flag, so every
top here is an ``uarrow``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

#: The xplot header lines after ``title`` (the title line itself between).
AXES = ("xlabel", "time", "ylabel", "sequence number")


def _t(ns: int) -> str:
    """An epoch time in nanoseconds as tcptrace prints it: seconds with six decimals."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000 // 1000:06d}"


class _Pen:
    """The current colour: a colour line is written only when it changes."""

    def __init__(self) -> None:
        self.colour = ""

    def use(self, colour: str) -> Iterator[str]:
        if colour != self.colour:
            self.colour = colour
            yield colour


def _segment(pen: _Pen, t: str, s: int, e: int, retx: bool) -> Iterator[str]:
    if retx:
        yield from pen.use("red")
        yield f"atext {t} {e}"
        yield "R"
    else:
        yield from pen.use("white")
    yield f"darrow {t} {s}"
    yield f"uarrow {t} {e}"
    yield f"line {t} {s} {t} {e}"


def _step(pen: _Pen, colour: str, tick: str, prev: tuple[str, int] | None, t: str, y: int) -> Iterator[str]:
    """A step of a line that holds its value until the next point (the ACK line, the window's edge)."""
    yield from pen.use(colour)
    if prev is not None:
        t0, y0 = prev
        yield f"line {t0} {y0} {t} {y0}"
        if y != y0:
            yield f"line {t} {y0} {t} {y}"
    yield f"{tick} {t} {y}"


def tsg_lines(title: str, segments: pl.DataFrame, acks: pl.DataFrame) -> Iterator[str]:
    """The lines of one flow's time–sequence graph (its ``segments`` and ``acks`` rows: ingest's tables), in
    tcptrace's xplot dialect (module docstring)."""
    yield "timeval double"
    yield "title"
    yield title
    yield from AXES
    pen = _Pen()
    s_t = segments["t_ns"].to_numpy()
    a_t = acks["t_ns"].to_numpy()
    # every event in time order; a segment before an ACK of the same instant
    kinds = np.concatenate([np.zeros(len(s_t), np.int8), np.ones(len(a_t), np.int8)])
    rows = np.concatenate([np.arange(len(s_t)), np.arange(len(a_t))])
    order = np.lexsort((kinds, np.concatenate([s_t, a_t])))
    seq, length = segments["seq"].to_list(), segments["len"].to_list()
    retx = segments["retransmission"].to_list()
    ack, dup = acks["ack"].to_list(), acks["dup"].to_list()
    rwnd = acks["rwnd"].to_list()
    sack_lo, sack_hi = acks["sack_lo"].to_list(), acks["sack_hi"].to_list()
    last_ack: tuple[str, int] | None = None
    last_win: tuple[str, int] | None = None
    dups = 0
    for kind, r in zip(kinds[order].tolist(), rows[order].tolist(), strict=True):
        if kind == 0:
            yield from _segment(pen, _t(int(s_t[r])), seq[r], seq[r] + length[r], retx[r])
            continue
        t = _t(int(a_t[r]))
        yield from _step(pen, "green", "dtick", last_ack, t, ack[r])
        last_ack = (t, ack[r])
        dups = dups + 1 if dup[r] else 0
        if dups:
            yield f"atext {t} {ack[r]}"
            yield str(dups)
        if rwnd[r] is not None:
            yield from _step(pen, "yellow", "utick", last_win, t, ack[r] + rwnd[r])
            last_win = (t, ack[r] + rwnd[r])
        if sack_lo[r] is not None and sack_hi[r] is not None:
            yield from pen.use("purple")
            yield f"line {t} {sack_lo[r]} {t} {sack_hi[r]}"
            yield f"htick {t} {sack_lo[r]}"
            yield f"htick {t} {sack_hi[r]}"
            yield f"atext {t} {sack_hi[r]}"
            yield "S"
    yield "go"

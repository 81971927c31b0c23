"""The estimator interface: parameters with a schema, a compiled series, the shared loss reaction.

Every estimator reads a :class:`~estimators.inputs.FlowInputs` and returns its estimate in bytes/s at
every event (NaN before its first sample — never 0), and at every loss event the ssthresh and cwnd it
would have set (docs/estimators.md §1.3, Wang et al. 2002 §2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy as np

from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import EstimatorError, Param

if TYPE_CHECKING:
    from ackreplay.estimators.flow_batch import FlowBatch

#: What a batched kernel reads its columns from: a batch of flows, or one flow (a batch of one). Both hold
#: the same per-event columns under the same names.
Columns: TypeAlias = "FlowInputs | FlowBatch"

FAST_RETRANSMIT = "fast_retransmit"
TIMEOUT = "timeout"


@dataclass(frozen=True)
class LossContext:
    """What an estimator may read when deciding at one loss event (its state at ``event``)."""

    kind: str  # fast_retransmit | timeout
    event: int  # index of the last ACK event at or before the decision, -1 when none
    start_t: float  # s since the flow's first packet (the first retransmission)
    end_t: float | None  # end of the recovery episode, None if the capture ends first
    flight: int  # bytes outstanding just before the event (the observed cwnd)
    rttmin: float  # s (NaN when unknown)
    mss: int
    episode: int  # index among the flow's episodes (= number of earlier loss events)
    last_timeout_t: float | None = None  # start of the latest earlier timeout episode


@dataclass(frozen=True)
class Decision:
    """What an estimator would have set: ssthresh (segments, real-valued) and cwnd (segments)."""

    estimate: float | None  # bytes/s used
    ssthresh_segments: float | None
    cwnd_segments: float | None
    note: str = ""
    cwnd_applied_t: float | None = None  # Westwood+: when cwnd = ssthresh takes effect


class Estimator:
    """Base class. Subclasses set ``name``, ``title``, ``citation``, ``PARAMS`` and ``series``."""

    name: ClassVar[str]
    title: ClassVar[str]
    citation: ClassVar[str]
    #: Where the repository's documentation describes it: ``docs/<page>.md#<anchor>`` (None for a plugin that
    #: does not say).
    doc: ClassVar[str | None] = None
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    has_series: ClassVar[bool] = True
    #: Relative time per event of ``series`` (replay starts the costliest first on parallel threads; measured
    #: on a 2 M-event bulk flow: BE ≈ 1, NewBR ≈ 10).
    cost: ClassVar[float] = 1.0
    #: Bytes per event that replay's job for this estimator holds at its peak — its series, its temporaries
    #: and the input columns it reads (measured on an 8 M-event bulk flow, ``python -m bench.scale``'s 16 M
    #: segments: BE, TIBET and Westwood+ ≈ 32, NewBR ≈ 80; replay runs jobs side by side only while their
    #: footprints fit in the memory budget, ``replay.parallel.fitting_workers``).
    footprint: ClassVar[float] = 32.0
    #: Where the class came from: ``{"kind": "builtin"}`` for the package's own; a plugin's records its
    #: distribution and version, or its file (``estimators.plugins``).
    origin: ClassVar[dict[str, Any]] = {"kind": "builtin"}
    #: SHA-256 of a plugin's module source (None for the package's own: its version names the code).
    code_sha256: ClassVar[str | None] = None
    #: The estimate depends on when the ACKs reached the sender — their spacing there, not only how many bytes
    #: each acknowledged — so a capture taken anywhere else cannot reproduce it: the return path between the
    #: capture point and the sender bunches ACKs (ACK compression) that the capture never sees (docs/estimators.md
    #: §7). Off the sender, such an estimator's scores carry ``not_reproducible`` (the reason) and the
    #: rankings leave them out unless asked.
    depends_on_sender_ack_timing: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        known = {p.name: p for p in self.PARAMS}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise EstimatorError("unknown_parameter",
                                 f"{self.name} has no parameter {unknown[0]!r} (parameters: "
                                 f"{', '.join(known) or 'none'})")
        self.params: dict[str, Any] = {
            name: p.validate(self.name, params.get(name, p.default)) for name, p in known.items()
        }

    @classmethod
    def schema(cls) -> dict[str, Any]:
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        return {"name": cls.name, "title": cls.title, "citation": cls.citation, "doc": cls.doc,
                "description": doc,
                "has_series": cls.has_series, "depends_on_sender_ack_timing": cls.depends_on_sender_ack_timing,
                "parameters": [p.schema() for p in cls.PARAMS], "origin": dict(cls.origin),
                "code_sha256": cls.code_sha256}

    @classmethod
    def not_reproducible(cls, vantage: str) -> str | None:
        """Why this estimator's result on a flow captured at ``vantage`` is not the one its sender would get,
        or None when it is (captured at the sender, or an estimator that does not read the ACKs' timing)."""
        if not cls.depends_on_sender_ack_timing or vantage == "sender":
            return None
        where = {"receiver": "the receiver", "mid_path": "a tap on the path"}.get(vantage, f"vantage {vantage}")
        return (f"not reproducible from this vantage: {cls.name} depends on when the ACKs reached the sender, and "
                f"this capture was taken at {where}, before the return path that bunches ACKs (ACK compression) "
                "on their way to the sender")

    def series(self, inputs: FlowInputs) -> np.ndarray:
        """Estimate (bytes/s) after every event; NaN before the first sample."""
        raise NotImplementedError

    def series_batch(self, batch: FlowBatch) -> np.ndarray:
        """:meth:`series` of every flow of ``batch``, concatenated in flow order. The package's
        estimators override it with one compiled call walking every flow (their per-flow kernel on each slice:
        the same numbers); this default, for plugins, calls :meth:`series` on each member."""
        from ackreplay.estimators.flow_batch import per_flow

        return per_flow(batch, self.series)

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        """The shared Westwood reaction (§1.3): ssthresh = max(E·RTTmin/mss, 2) segments."""
        e = value_at(estimate, ctx.event)
        if e is None or math.isnan(ctx.rttmin):
            return Decision(e, None, None)
        ss = max(e * ctx.rttmin / ctx.mss, 2.0)
        cwnd = min(ctx.flight / ctx.mss, ss) if ctx.kind == FAST_RETRANSMIT else 1.0
        return Decision(e, ss, cwnd)

    def decide_all(self, inputs: FlowInputs, estimate: np.ndarray, contexts: Sequence[LossContext]
                   ) -> list[Decision]:
        """The decision at every loss event of the flow, ``contexts`` in episode order. Stateless estimators
        decide each alone (:meth:`decide`); the loss-based controls of §8 carry their state (W_max, RTTmax,
        epoch throughput) from one event to the next in one pass."""
        return [self.decide(inputs, estimate, ctx) for ctx in contexts]

    @property
    def kind(self) -> str:
        """The registry name (``re`` for the variant ``re[tau=0.5]`` of a sweep)."""
        return type(self).name

    def renamed(self, label: str) -> Estimator:
        """This estimator shown and keyed under ``label`` in every result (a sweep's variant,
        ``estimators.sweep``); :attr:`kind` keeps the registry name."""
        self.__dict__["name"] = label
        return self

    def forget(self, inputs: FlowInputs) -> None:
        """Drop what this estimator derived from ``inputs`` for its decisions (replay calls it once the
        flow's decisions are made, so that a long flow's per-event state does not outlive the job)."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


class Batched(Estimator):
    """An estimator whose series is one compiled call over a batch of flows: :meth:`run` hands
    the columns and the flows' bounds to a kernel that walks every flow, calling the per-flow kernel on each
    slice. One flow is a batch of one (:func:`batch_of_one`): :meth:`series` and :meth:`series_batch` run the
    same compiled code, so each flow's numbers are the same, to the bit, either way."""

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray
            ) -> np.ndarray:
        """The series of every flow of ``cols`` (a batch's columns, or one flow's), concatenated: flow ``f``'s
        events are ``offsets[f]:offsets[f+1]``, its data segments ``seg_offsets[f]:seg_offsets[f+1]``."""
        raise NotImplementedError

    def series(self, inputs: FlowInputs) -> np.ndarray:
        return self.run(inputs, *batch_of_one(inputs))

    def series_batch(self, batch: FlowBatch) -> np.ndarray:
        return self.run(batch, batch.offsets, batch.seg_offsets, batch.mss)


def batch_of_one(inputs: FlowInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The event offsets, segment offsets and mss of one flow as a batch of one: read-only like
    ``FlowBatch``'s (to numba a read-only array is another type: one compiled signature serves both). Made
    once per flow and kept with it (``FlowInputs.derived``): every estimator of the flow reads them."""
    n, ns = len(inputs.t), len(inputs.seg_t)
    got: tuple[np.ndarray, np.ndarray, np.ndarray] | None = inputs.derived.get(_BATCH_OF_ONE)
    if got is None or got[0][1] != n or got[1][1] != ns or got[2][0] != inputs.mss:  # (columns replaced since)
        bounds = np.array([0, n, 0, ns, inputs.mss], np.int64)
        bounds.flags.writeable = False
        got = inputs.derived[_BATCH_OF_ONE] = (bounds[0:2], bounds[2:4], bounds[4:5])
    return got


_BATCH_OF_ONE = "batch_of_one"


def value_at(series: np.ndarray, i: int) -> float | None:
    if i < 0 or i >= len(series):
        return None
    v = float(series[i])
    return None if math.isnan(v) else v


TAU = Param("tau", float, 1.0, "time constant of the Tustin low-pass filter", unit="s", minimum=0.0,
            exclusive_minimum=True, maximum=3600.0, source="UCLA ns-2 TCPW tau_ (Wang et al. 2002 eq. (1))")
#: Every filter of the Tustin form takes it (docs/estimators.md §2): true pairs each sample with the previous one
#: (the original Westwood and the UCLA ns-2 agent; a sample over a µs-long interval is weighted by the next,
#: ms-long one: the documented over-estimation under ACK compression); false is Wang et al. 2002 eq. (1) as printed.
PAIRING = Param("pairing", bool, True, "Tustin filter pairs each sample with the previous one, (s_k + s_{k−1})/2 "
                "(the original Westwood); false: s_k alone (Wang et al. 2002 eq. (1) as printed)",
                source="docs/estimators.md §2; UCLA ns-2 TCPW filter_type_ 3; Wang et al. 2002 eq. (1)")

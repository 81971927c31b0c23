"""The what-if's runs: one bulk sender per algorithm on the path's central figures, the same at each figure's
low and high end (the ranges), and first the self-check — the captured sender's own control re-enacted on the
same path, against the captured flow. Where the self-check fails the what-if's results are withheld."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ackreplay.sim.model import (
    CONTROLS,
    NS3_DELACK_S,
    NS3_MIN_RTO_S,
    NS3_OVERHEAD,
    NS3_PARAMS,
    FlowResult,
    FlowSpec,
    SimConfig,
    simulate,
)
from ackreplay.whatif.captured import GOODPUT_TOLERANCE, CapturedFlow, SenderControl
from ackreplay.whatif.cross import CrossFlow
from ackreplay.whatif.errors import WhatIfError
from ackreplay.whatif.figures import PathFigures, PathRange, replayed_drops

#: The self-check's tolerances (issue #37): goodput within 10 % (``GOODPUT_TOLERANCE``, kept in
#: ``whatif.captured``, whose idle limit derives from it), loss-event rate within 30 % of the capture's.
LOSS_EVENT_TOLERANCE = 0.30
#: The longest a what-if simulates, s (a request cannot hold a worker longer than its runs at this length).
MAX_DURATION_S = 120.0
#: Why a self-check did not pass: the sender was not a bulk one (application, send buffer or receive window
#: limited it most of the time), it ran a control the simulation cannot run, the flow delivered nothing, the
#: re-enactment did not reproduce it.
CHECK_CODES = ("sender_not_bulk", "cannot_re_enact", "nothing_delivered", "not_reproduced")
#: The self-check's draws on a path with random loss, each with its own seed (``seed``, ``seed + 1``, …): a flow of
#: a few seconds owes much of its goodput to where the first drop falls in its first slow start — the Linux kernel
#: on one testbed scenario (10 Mbit/s, 40 ms, 4 BDP, 1 % loss) delivered 2.9, 4.5 and 6.3 Mbit/s over 5 s in
#: three runs. Where the capture's own drops are known (``PathFigures.drops``) the re-enactment meets them — the
#: same draw as the capture's — and that run decides; the mean over these draws, the expectation the captured draw
#: scatters around, stands beside it (``simulated.draws``). Where they are not known, the mean decides.
RANDOM_LOSS_SEEDS = 10
#: What decided a self-check's figures (``simulated.decided_by``): the run over the capture's replayed random
#: drops, the mean over :data:`RANDOM_LOSS_SEEDS` draws at the rate (no drops known), one run (no random loss).
DECIDERS = ("replayed_drops", "mean_of_draws", "one_run")
#: The bisection steps of the least buffer consistent with the capture (:func:`consistent_range`): its range of one
#: BDP found to 1/32 of a BDP (two runs at the range's ends first).
BUFFER_STEPS = 5
#: Points of each result's time series.
SERIES_POINTS = 400
#: CUBIC's HyStart for a paced Linux sender (``GROWTH_PARAMS``' ``hystart`` 2: its rounds from the first ACK, as
#: kernels with the 2025 fix "tcp_cubic: fix incorrect HyStart round start detection" run them — mainline 6.14 on,
#: and stable kernels that took it as a backport). Decided here: the capture does not name its kernel; the senders
#: it shows pacing are re-enacted as the current kernel runs (the testbed's 6.18, whose HyStart exits the rounds
#: from the first ACK reproduce on its captures), the others as before (rounds from a cwnd of 16, kernels without
#: the fix).
PACED_HYSTART = 2.0
#: The keys of each algorithm's result that get a range.
FIGURES = ("goodput_bps", "utilisation", "loss_rate", "queue_delay_mean_s", "queue_delay_p95_s", "share")


@dataclass(frozen=True)
class SelfCheck:
    """The captured sender's control re-enacted on the inferred path against the captured flow: the ratios
    simulated/captured and whether both are within tolerance; ``reason`` says why it failed or could not run,
    ``code`` the same for a program (:data:`CHECK_CODES`; None when it passed)."""

    algorithm: str
    algorithm_source: str
    goodput_ratio: float | None
    loss_rate_ratio: float | None
    passed: bool
    reason: str = ""
    simulated: dict[str, Any] = field(default_factory=dict)
    code: str | None = None

    def __post_init__(self) -> None:
        if self.code not in (None, *CHECK_CODES) or (self.code is None) != self.passed:
            raise ValueError(f"a self-check that {'passed' if self.passed else 'failed'} with code {self.code!r}")

    def as_dict(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "algorithm_source": self.algorithm_source,
                "goodput_ratio": self.goodput_ratio, "loss_rate_ratio": self.loss_rate_ratio, "passed": self.passed,
                "reason": self.reason, "code": self.code, "simulated": self.simulated,
                "tolerance": {"goodput": GOODPUT_TOLERANCE, "loss_event_rate": LOSS_EVENT_TOLERANCE}}


@dataclass(frozen=True)
class WhatIf:
    """A what-if: the path (figures, ranges), the captured flow, the self-check, and per algorithm its figures
    with their ranges and series — empty, with ``withheld`` saying why, when the self-check failed."""

    path: PathRange
    captured: CapturedFlow
    self_check: SelfCheck
    duration_s: float
    seed: int
    results: dict[str, dict[str, Any]]
    withheld: str | None
    cross: list[CrossFlow] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The document of ``ackreplay whatif --json`` and the API."""
        return {"duration_s": self.duration_s, "seed": self.seed, "path": self.path.as_dict(),
                "captured": self.captured.as_dict(self.path.central.payload_bps),
                "self_check": self.self_check.as_dict(), "withheld": self.withheld,
                "withheld_code": self.self_check.code if self.withheld else None,
                "cross_traffic": [c.as_dict() for c in self.cross], "results": self.results}


def sim_config(duration_s: float, mss: int, seed: int, ns3: bool) -> SimConfig:
    if ns3:
        return SimConfig(duration_s, mss=mss, seed=seed, min_rto_s=NS3_MIN_RTO_S, delack_timeout_s=NS3_DELACK_S,
                         samples=SERIES_POINTS, ns3_ack_counting=True)
    return SimConfig(duration_s, mss=mss, seed=seed, samples=SERIES_POINTS)


def sender_params(control: str, ns3: bool, paced: bool) -> dict[str, float]:
    """The growth parameters a re-enacted sender runs with: ns-3's stack's for an ns-3 sender (``NS3_PARAMS``),
    CUBIC's HyStart of Linux 6.14 on for a paced Linux one (:data:`PACED_HYSTART`), else the engine's defaults."""
    if ns3:
        return dict(NS3_PARAMS.get(control, {}))
    return {"hystart": PACED_HYSTART} if paced and control == "cubic" else {}


def run_one(fig: PathFigures, algorithm: str, duration_s: float, seed: int, ns3: bool = False,
            cross: Sequence[CrossFlow] = ()) -> tuple[FlowResult, float]:
    """One bulk sender under ``algorithm`` on the path ``fig`` for ``duration_s`` simulated seconds, beside the
    cross traffic (each from its offset to the end of the run; the run starts with the earliest): its result and
    its share of the bytes every flow on the bottleneck delivered in the run. The sender meets the random drops the
    capture realised where ``fig`` carries them (``PathFigures.drops``: the same draw whatever its algorithm), the
    link's Bernoulli loss elsewhere and on the cross traffic. Where the captured sender paced
    (``fig.paced``) the sender paces whatever its algorithm — the same host's stack under another control —, as
    do the cross flows from its host (``CrossFlow.paced``); an ns-3 sender never does."""
    shift = max([0.0, *(-c.offset_s for c in cross)])
    config = sim_config(shift + duration_s, fig.mss, seed, ns3)
    specs = [FlowSpec(algorithm, fig.base_rtt_s, shift, sender_params(algorithm, ns3, fig.paced), sack=fig.sack,
                      timestamps=fig.timestamps, rwnd_segments=fig.rwnd_segments(config.rwnd_segments),
                      pacing=fig.paced and not ns3, loss_fates=fig.loss_fates())]
    specs += [FlowSpec(c.control, fig.base_rtt_s, shift + c.offset_s, sender_params(c.control, ns3, c.paced),
                       sack=c.sack, timestamps=c.timestamps, pacing=c.paced and not ns3)
              for c in cross if shift + c.offset_s < shift + duration_s]
    link = replace(fig.link(), overhead_bytes=NS3_OVERHEAD) if ns3 else fig.link()
    flows = simulate(link, specs, config).flows
    total = sum(f.delivered_bytes for f in flows)
    return flows[0], flows[0].delivered_bytes / total if total > 0 else 1.0


def figures_of(r: FlowResult, fig: PathFigures, share: float = 1.0) -> dict[str, float | None]:
    """A simulated flow's figures: goodput, utilisation (of the link's payload rate), loss rate (retransmitted per
    segment sent), mean and 95th-percentile queueing delay, share (of the bytes every flow on the bottleneck
    delivered), loss events and timeouts."""
    def num(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return {"goodput_bps": r.goodput_bps, "utilisation": r.goodput_bps / fig.payload_bps,
            "loss_rate": r.retransmissions / r.segments_sent if r.segments_sent else 0.0,
            "queue_delay_mean_s": num(r.mean_queue_delay_s), "queue_delay_p95_s": num(r.p95_queue_delay_s),
            "share": share, "loss_events": r.loss_events, "timeouts": r.timeouts}


def check_seeds(fig: PathFigures) -> int:
    """How many draws the self-check averages on the path ``fig``: :data:`RANDOM_LOSS_SEEDS` where it has random
    loss, else 1 (without random loss a run does not depend on its seed)."""
    return RANDOM_LOSS_SEEDS if fig.random_loss_rate > 0 else 1


def check_runs(rng: PathRange) -> int:
    """How many runs the self-check takes on the path ``rng``: its draws, the run over the capture's replayed
    drops where it carries them, and the search of a buffer bounded below only (:func:`consistent_range`)."""
    fig = rng.central
    return check_seeds(fig) + (fig.loss_fates() is not None) + (2 + BUFFER_STEPS) * rng.buffer_bounded


def mean_figures(runs: Sequence[dict[str, float | None]]) -> dict[str, float | None]:
    """Each figure's mean over the runs (None where a run has none)."""
    out: dict[str, float | None] = {}
    for key in runs[0]:
        vals = [r[key] for r in runs]
        out[key] = None if any(v is None for v in vals) else sum(v for v in vals if v is not None) / len(vals)
    return out


def self_check(rng: PathRange, captured: CapturedFlow, sender: SenderControl, seed: int,
               cross: Sequence[CrossFlow] = (), run: RunCache | None = None) -> SelfCheck:
    """Re-enact the captured sender's control on the central figures over the captured flow's span and compare
    goodput and loss-event rate. Not run for a sender that was not a bulk one (``sender_not_bulk``) or ran a
    control the simulation cannot run (``cannot_re_enact``). ``run``: the runs already made
    (:func:`consistent_range`'s)."""
    not_run = _not_run(captured, sender)
    if not_run is not None:
        return not_run
    run = run if run is not None else RunCache()
    span = min(captured.span_s, MAX_DURATION_S)
    fig = rng.central
    draws = [run(replace(fig, drops=None), sender.algorithm, span, seed + k, sender.ns3, cross)
             for k in range(check_seeds(fig))]
    mean = _checked_figures(draws, fig, span, captured)
    if fig.loss_fates() is None:
        decided, by, runs = mean, DECIDERS[1] if len(draws) > 1 else DECIDERS[2], draws
    else:
        runs = [run(fig, sender.algorithm, span, seed, sender.ns3, cross)]
        decided, by = _checked_figures(runs, fig, span, captured), DECIDERS[0]
    goodput_ratio, loss_ratio = decided["goodput_ratio"], decided["loss_rate_ratio"]
    goodput, events = decided["goodput_bps"], decided["loss_events"]
    ok_goodput = abs(goodput_ratio - 1) <= GOODPUT_TOLERANCE + 1e-9  # (26/20 is 1.3 within rounding)
    ok_loss = abs(loss_ratio - 1) <= LOSS_EVENT_TOLERANCE + 1e-9
    reason = "; ".join(
        [f"goodput {goodput / 1e6:.3f} Mbit/s simulated against {captured.goodput_bps / 1e6:.3f} captured "
         f"(ratio {goodput_ratio:.3f}, beyond ±{GOODPUT_TOLERANCE:.0%})"] * (not ok_goodput)
        + [f"{events:g} loss events simulated in {span:.1f} s against {captured.loss_events} captured "
           f"(ratio {loss_ratio:.3f}, beyond ±{LOSS_EVENT_TOLERANCE:.0%})"] * (not ok_loss))
    simulated = {**mean_figures([figures_of(d, fig, d_share) for d, d_share in runs]),
                 "loss_event_rate": events / span, "span_s": span, "seeds": len(runs), "decided_by": by,
                 "drops": replayed_drops(fig),
                 "draws": {k: _finite(v) for k, v in mean.items()} if by == DECIDERS[0] else None}
    return SelfCheck(sender.algorithm, sender.source, goodput_ratio, _finite(loss_ratio), ok_goodput and ok_loss,
                     reason, simulated, None if ok_goodput and ok_loss else "not_reproduced")


def _not_run(captured: CapturedFlow, sender: SenderControl) -> SelfCheck | None:
    """The self-check that is not run, and why: the sender was not a bulk one (``sender_not_bulk``), ran a control
    the simulation cannot run (``cannot_re_enact``), or the flow delivered nothing; None where it is run."""
    if captured.not_bulk:
        return SelfCheck(sender.algorithm, sender.source, None, None, False, captured.not_bulk, code="sender_not_bulk")
    if sender.algorithm not in CONTROLS:
        return SelfCheck(sender.algorithm, sender.source, None, None, False,
                         f"the sender ran {sender.algorithm}, which the simulation cannot re-enact "
                         f"(it runs {', '.join(CONTROLS)})", code="cannot_re_enact")
    if captured.span_s <= 0 or captured.goodput_bps <= 0:
        return SelfCheck(sender.algorithm, sender.source, None, None, False, "the captured flow delivered nothing",
                         code="nothing_delivered")
    return None


def consistent_range(rng: PathRange, captured: CapturedFlow, sender: SenderControl, seed: int,
                     cross: Sequence[CrossFlow] = (), run: RunCache | None = None) -> PathRange:
    """``rng`` with a buffer bounded below only (``PathRange.buffer_bounded``) taken at the least buffer consistent
    with the capture: the least at which the captured sender, re-enacted over the capture's span — over its own
    random drops where ``rng`` carries them, else the draw of ``seed`` —, overflows the buffer no more than the
    capture did, which is never: the buffer is bounded below only because no loss followed a full queue. Found by
    bisection within the buffer's range (:data:`BUFFER_STEPS`), held at most at what the flow's largest captured
    flight — beside cross traffic, the flights of every flow sharing the bottleneck, added — could queue beyond the
    BDP (``BufferBound.room_bytes``, where every one was seen: a buffer deeper than those flights could fill is none
    the capture can tell): unchanged where the bound
    itself is not overflowed, where the search's upper end is (the re-enactment then parts from the capture by more
    than the buffer can explain, and its self-check says so), or where the self-check does not run
    (:func:`_not_run`). Decided here (docs/whatif.md, "Refusals"): a drop-tail buffer is at least every queue a flow
    held without a loss, and a re-enactment that overflows a buffer proves the flow's own flight, re-enacted, would
    have filled it — so a buffer it overflows contradicts the capture as surely as one below the deepest queue
    measured. ``run``: the runs already made (the self-check's run at the bound is this search's first)."""
    bound = rng.buffer_bound
    if bound is None or _not_run(captured, sender) is not None:
        return rng
    run = run if run is not None else RunCache()
    span = min(captured.span_s, MAX_DURATION_S)

    def overflows(buffer: float) -> bool:
        fig = replace(rng.central, buffer_bytes=buffer)
        return run(fig, sender.algorithm, span, seed, sender.ns3, cross)[0].overflow_drops > 0

    lo, hi = rng.ends["buffer_bytes"]
    room = bound.room_bytes
    if room is not None:
        hi = min(hi, room)
    if hi <= lo or not overflows(lo) or overflows(hi):
        return rng
    for _ in range(BUFFER_STEPS):  # lo overflows, hi does not
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if overflows(mid) else (lo, mid)
    return rng.with_consistent_buffer(hi, 2 + BUFFER_STEPS, room_checked=room is not None)


class RunCache:
    """:func:`run_one` remembering its runs: the same figures, algorithm, span, seed, stack and cross traffic give the
    same run (the engine is deterministic for a seed), so one what-if never simulates one twice — the least
    consistent buffer's search starts with the run the self-check decides by where the buffer stays at its bound."""

    def __init__(self) -> None:
        self._done: dict[tuple[Any, ...], tuple[FlowResult, float]] = {}

    def __call__(self, fig: PathFigures, algorithm: str, duration_s: float, seed: int, ns3: bool = False,
                 cross: Sequence[CrossFlow] = ()) -> tuple[FlowResult, float]:
        # the drops by identity (arrays do not hash; one what-if's figures share one RandomDrops), the rest by value
        key = (replace(fig, drops=None), id(fig.drops), algorithm, duration_s, seed, ns3, id(cross), len(cross))
        if key not in self._done:
            self._done[key] = run_one(fig, algorithm, duration_s, seed, ns3, cross)
        return self._done[key]


def _checked_figures(runs: Sequence[tuple[FlowResult, float]], fig: PathFigures, span: float,
                     captured: CapturedFlow) -> dict[str, float]:
    """The runs' mean goodput and loss events over the span, their rate, and both against the captured flow's
    (the loss-event ratio is infinite where the capture has no loss event and the runs have some)."""
    goodput = sum(r.goodput_bps for r, _ in runs) / len(runs)
    events = sum(r.loss_events for r, _ in runs) / len(runs)
    if captured.loss_events == 0:
        loss_ratio = 1.0 if events == 0 else math.inf
    else:
        loss_ratio = events / span / captured.loss_event_rate
    return {"goodput_bps": goodput, "loss_events": events, "loss_event_rate": events / span,
            "goodput_ratio": goodput / captured.goodput_bps, "loss_rate_ratio": loss_ratio, "seeds": len(runs)}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def result_with_ranges(rng: PathRange, algorithm: str, duration_s: float, seed: int, ns3: bool,
                       cross: Sequence[CrossFlow] = ()) -> dict[str, Any]:
    """One algorithm's figures on the central path, each with its range ``[low, high]`` over the runs at every
    figure's ends (:meth:`PathRange.variants`), and the central run's series."""
    central, share = run_one(rng.central, algorithm, duration_s, seed, ns3, cross)
    out: dict[str, Any] = figures_of(central, rng.central, share)
    runs = [out]
    for _, fig in rng.variants():
        r, r_share = run_one(fig, algorithm, duration_s, seed, ns3, cross)
        runs.append(figures_of(r, fig, r_share))
    ranges: dict[str, list[float] | None] = {}
    for key in FIGURES:
        vals = [r[key] for r in runs if r[key] is not None]
        ranges[key] = [min(vals), max(vals)] if vals else None
    s = central.series
    out["ranges"] = ranges
    out["series"] = {"t": s["t"].tolist(), "cwnd": s["cwnd"].tolist(), "flight": s["flight"].tolist(),
                     "queue_delay_s": (s["queue_bytes"] * 8.0 / rng.central.capacity_bps).tolist()}
    return out


def what_if(rng: PathRange, captured: CapturedFlow, sender: SenderControl, algorithms: Sequence[str], *,
            duration_s: float | None = None, seed: int = 1, cross: Sequence[CrossFlow] = ()) -> WhatIf:
    """The self-check, then (when it passed) each algorithm on the path for ``duration_s`` (the
    captured flow's span by default, at most :data:`MAX_DURATION_S`)."""
    if duration_s is not None and not 0 < duration_s <= MAX_DURATION_S:
        raise WhatIfError("bad_duration", f"the duration is in (0, {MAX_DURATION_S:g}] s, not {duration_s:g}")
    duration = float(duration_s or min(max(captured.span_s, 1.0), MAX_DURATION_S))
    run = RunCache()
    rng = consistent_range(rng, captured, sender, seed, cross, run)
    check = self_check(rng, captured, sender, seed, cross, run)
    if not check.passed:
        withheld = (f"the sender cannot be re-enacted: {check.reason}" if check.code == "sender_not_bulk"
                    else f"the self-check failed: {check.reason}")
        return WhatIf(rng, captured, check, duration, seed, {}, withheld, list(cross))
    results = {a: result_with_ranges(rng, a, duration, seed, sender.ns3, cross) for a in algorithms}
    return WhatIf(rng, captured, check, duration, seed, results, None, list(cross))

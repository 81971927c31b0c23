"""What the papers' models predict on a path (docs/path.md §9): the buffer study's busy-link rule and a single-flow
model per decision rule, and Möller et al.'s (2007) hybrid fluid model of one NewReno and one Westwood+ flow.

**The buffer study** (high-speed TCP variants vs buffer provisioning): a flow whose window falls by the factor b at a
loss keeps the link busy iff ``B ≥ b/(1−b)·BDP``. The single-flow model plays one flow's window on
(C, RTTmin, B) round trip by round trip — queue ``max(0, w − BDP)``, round trip ``RTTmin + queue/C``, rate
``min(w/RTTmin, C)`` — with the algorithm's growth rule between losses and its backoff when the queue
overflows (``w > BDP + B``), and reports the time-averaged utilisation in the steady state. Growth rules
(per round trip, in segments): NewReno and Westwood+ +1; STCP ×1.01 (Kelly 2003); HSTCP a(w) of RFC 3649;
H-TCP α(Δ) = 1 + 10(Δ−1) + ((Δ−1)/2)² after Δ > 1 s since the loss, scaled by 2(1−β) as Linux does;
BIC's binary search to the last maximum (half the distance, at most 16 segments per round trip) and its
max probing beyond (Linux ``tcp_bic.c``); CUBIC ``W(t) = C_c(t−K)³ + W_max``, C_c = 0.4, K = ∛(W_max·b/C_c)
(RFC 9438, with its Reno-friendly region). Backoffs (§8): NewReno ½; Westwood+ to the pipe ``C·RTTmin``
(its bandwidth estimate of a busy link times RTTmin); STCP ×0.875; HSTCP ×(1 − b(w)); H-TCP ×β, β =
RTTmin/RTTmax in [0.5, 0.8]; BIC ×819/1024 (×½ below 14 segments); CUBIC ×β. The deployed defaults are the
defaults; the buffer study's own constants (its ns-2 CUBIC's β = 0.8) are parameters.

**Möller et al. 2007** (Möller, Barakat, Avrachenkov, Altman): Props. 1–4 — the link is fully used iff (14) or (15);
the virtual time to the next congestion event s* by (16) with W₀ (full use) or (20) with W₀ and W₋₁ (not);
its absolute time t* by (17) or (21); the stationary windows after a synchronised loss (30), with the
Westwood+ factor β = CT/(CT+B) (or max(β, ½) with the paper's floor-half fix); the throughputs D_i/t* (7).
Lambert's W (Corless et al. 1996) is computed here by Halley's iteration (scipy is not a dependency).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------------------------------------- Lambert W


def lambert_w(x: float, branch: int = 0) -> float:
    """Lambert's W (the inverse of ``w ↦ w·eʷ``) on its real branches: ``branch`` 0 (W₀, x ≥ −1/e) or −1
    (W₋₁, −1/e ≤ x < 0). Halley's iteration from the series about the branch point (near −1/e) or the
    asymptotic form; converges to double precision in a few steps."""
    e_inv = -1.0 / math.e
    if x < e_inv - 1e-15 or (branch == -1 and x >= 0.0) or branch not in (0, -1):
        raise ValueError(f"W_{branch}({x}) is not real")
    if x <= e_inv:
        return -1.0
    if branch == 0 and x == 0.0:
        return 0.0
    p = math.sqrt(max(2.0 * (math.e * x + 1.0), 0.0))
    if branch == 0:
        w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p ** 3 if x < -0.25 else (math.log1p(x) if x < 3 else
                                                                             math.log(x) - math.log(math.log(x)))
    else:
        w = -1.0 - p - p * p / 3.0 - 11.0 / 72.0 * p ** 3 if x < -0.25 else math.log(-x) - math.log(-math.log(-x))
    for _ in range(100):
        ew = math.exp(w)
        f = w * ew - x
        if w == -1.0:
            break
        step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        w -= step
        if abs(step) <= 1e-15 * (1.0 + abs(w)):
            break
    return w


# ---------------------------------------------------------------------------------------------- the buffer study


@dataclass(frozen=True)
class Rule:
    """One congestion control's window rules, in segments per round trip. ``grow(w, state, rtt, since)``
    returns the window one round trip later (``since``: seconds since the last loss); ``backoff(w, state,
    path)`` the window right after a loss (``state`` is the rule's own, a dict it may write)."""

    name: str
    grow: Callable[[float, dict[str, float], float, float], float]
    backoff: Callable[[float, dict[str, float], PathModel], float]


@dataclass(frozen=True)
class PathModel:
    """A bottleneck for the models: capacity (segments/s), base RTT (s), buffer (segments)."""

    capacity: float
    rtt: float
    buffer: float

    @property
    def bdp(self) -> float:
        return self.capacity * self.rtt

    @staticmethod
    def of(capacity_bps: float, base_rtt_s: float, buffer_over_bdp: float, segment_bytes: float = 1500.0
           ) -> PathModel:
        c = capacity_bps / 8.0 / segment_bytes
        return PathModel(c, base_rtt_s, buffer_over_bdp * c * base_rtt_s)


def _reno_grow(w: float, s: dict[str, float], rtt: float, since: float) -> float:
    return w + 1.0


def _stcp_grow(w: float, s: dict[str, float], rtt: float, since: float) -> float:
    return w * 1.01


def hstcp_b(w: float) -> float:
    """RFC 3649's decrease b(w): ½ up to Low_Window 38, falling log-linearly to 0.1 at High_Window 83000."""
    if w <= 38:
        return 0.5
    return (0.1 - 0.5) * (math.log(w) - math.log(38)) / (math.log(83000) - math.log(38)) + 0.5


def _hstcp_grow(w: float, s: dict[str, float], rtt: float, since: float) -> float:
    if w <= 38:
        return w + 1.0
    b = hstcp_b(w)
    p = 0.078 / w ** 1.2  # RFC 3649's response function
    return w + w * w * p * 2.0 * b / (2.0 - b)


def _htcp_grow(w: float, s: dict[str, float], rtt: float, since: float) -> float:
    d = since - 1.0
    alpha = 1.0 if d <= 0 else 1.0 + 10.0 * d + (d / 2.0) ** 2
    return w + 2.0 * (1.0 - s.get("beta", 0.5)) * alpha


def _bic_grow(w: float, s: dict[str, float], rtt: float, since: float) -> float:
    wmax = s.get("wmax", 0.0)
    if w < wmax:  # binary search towards the last maximum, at most 16 segments, at least 1/10 per RTT
        return w + min(max((wmax - w) / 2.0, 0.1), 16.0)
    # max probing (Linux: slow start over B − 1 = 3 round trips of the distance, capped at 16)
    return w + min(max((w - wmax) / 3.0, 1.0), 16.0)


def _cubic_grow(w: float, s: dict[str, float], rtt: float, since: float) -> float:
    beta, c = s.get("beta", 0.7), 0.4
    wmax = s.get("wmax", w)
    k = (wmax * (1.0 - beta) / c) ** (1.0 / 3.0)
    t = since + rtt
    cubic = c * (t - k) ** 3 + wmax
    reno = wmax * beta + 3.0 * (1.0 - beta) / (1.0 + beta) * t / rtt  # RFC 9438's Reno-friendly estimate
    return max(cubic, reno, w)


def _halve(w: float, s: dict[str, float], p: PathModel) -> float:
    return w / 2.0


def _westwood_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
    return min(w, p.bdp)  # ssthresh = BWE·RTTmin: the pipe, when the link was busy


def _stcp_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
    return w * 0.875


def _hstcp_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
    return w * (1.0 - hstcp_b(w))


def _htcp_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
    rtt_max = p.rtt + p.buffer / p.capacity  # the round trip at a full queue
    s["beta"] = min(max(p.rtt / rtt_max, 0.5), 0.8)
    return w * s["beta"]


def _bic_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
    s["wmax"] = w
    return w / 2.0 if w <= 14 else w * 819.0 / 1024.0


def _cubic_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
    beta = s.get("beta", 0.7)
    s["wmax"] = w
    return w * beta


def rules(cubic_beta: float = 0.7) -> dict[str, Rule]:
    """Every decision rule the models know, by the names replay uses (§3, §8)."""
    def cubic_backoff(w: float, s: dict[str, float], p: PathModel) -> float:
        s["beta"] = cubic_beta
        return _cubic_backoff(w, s, p)

    return {r.name: r for r in (
        Rule("newreno", _reno_grow, _halve), Rule("westwood_plus", _reno_grow, _westwood_backoff),
        Rule("stcp", _stcp_grow, _stcp_backoff), Rule("hstcp", _hstcp_grow, _hstcp_backoff),
        Rule("htcp", _htcp_grow, _htcp_backoff), Rule("bic", _bic_grow, _bic_backoff),
        Rule("cubic", _cubic_grow, cubic_backoff))}


def _loss_cycle(rule: Rule, path: PathModel, w: float, state: dict[str, float]) -> tuple[float, float, float]:
    """One loss cycle of :func:`single_flow_utilisation` from window ``w`` right after a loss: the window played
    round trip by round trip until the queue would overflow. Returns the window after the next loss, the segments
    delivered and the seconds taken in the cycle."""
    bdp, capacity, ceiling = path.bdp, path.capacity, path.bdp + path.buffer
    since = sent = elapsed = 0.0
    for _ in range(1_000_000):
        rtt = path.rtt + max(0.0, w - bdp) / capacity
        sent += min(w, capacity * rtt)
        elapsed += rtt
        nxt = rule.grow(w, state, rtt, since)
        since += rtt
        if nxt > ceiling:
            return rule.backoff(ceiling, state, path), sent, elapsed
        w = nxt
    return w, sent, elapsed


def single_flow_utilisation(rule: Rule, path: PathModel, losses: int = 40) -> float:
    """The utilisation one flow of ``rule`` reaches on ``path`` in the steady state: the window played round
    trip by round trip, a loss whenever the queue would overflow, averaged over the last half of ``losses``
    loss cycles (time-weighted).

    The rules are deterministic and a cycle depends only on the window and the rule's state right after its loss:
    once a cycle starts where the one before started, every later cycle repeats it, and is counted without being
    played again (every rule here repeats from the first cycle on, since each loss comes at the same window; this
    made ``model`` 40 times faster, the same figure to rounding)."""
    state: dict[str, float] = {}
    w = rule.backoff(path.bdp + path.buffer, state, path)  # start at the first overflow
    measured = losses // 2
    sent = elapsed = 0.0
    begun: tuple[float, list[tuple[str, float]]] | None = None
    last = (0.0, 0.0)
    for cycle in range(losses):
        begins = (w, sorted(state.items()))
        if begins == begun:  # this cycle and every later one repeat the last
            repeats = losses - max(cycle, measured)
            sent += repeats * last[0]
            elapsed += repeats * last[1]
            break
        begun = begins
        w, cycle_sent, cycle_elapsed = _loss_cycle(rule, path, w, state)
        last = (cycle_sent, cycle_elapsed)
        if cycle >= measured:
            sent += last[0]
            elapsed += last[1]
    return sent / (path.capacity * elapsed) if elapsed else math.nan


def busy_link(decrease: float, buffer_over_bdp: float) -> bool:
    """The buffer study's rule: one flow whose window falls by ``decrease`` (b) keeps the link busy iff
    ``B ≥ b/(1−b)·BDP`` (a rule that does not decrease, b ≤ 0, always does)."""
    return decrease <= 0.0 or (decrease < 1.0 and buffer_over_bdp >= decrease / (1.0 - decrease) - 1e-12)


#: Each rule's decrease factor b at a loss on a path (its window at the overflow: BDP + B).
def decrease_factor(name: str, path: PathModel, cubic_beta: float = 0.7) -> float:
    w = path.bdp + path.buffer
    if name == "newreno":
        return 0.5
    if name == "westwood_plus":
        return 1.0 - min(w, path.bdp) / w
    state: dict[str, float] = {}
    return 1.0 - rules(cubic_beta)[name].backoff(w, state, path) / w


def busy_link_verdicts(path: PathModel, names: Sequence[str] | None = None, cubic_beta: float = 0.7
            ) -> dict[str, dict[str, Any]]:
    """Per rule: its decrease factor on this path, the buffer study's busy-link verdict and the single-flow model's
    utilisation."""
    known = rules(cubic_beta)
    out: dict[str, dict[str, Any]] = {}
    for name in names or list(known):
        if name not in known:
            continue
        b = decrease_factor(name, path, cubic_beta)
        out[name] = {"decrease": b, "busy_link": busy_link(b, path.buffer / path.bdp),
                     "utilisation": single_flow_utilisation(known[name], path)}
    return out


# ---------------------------------------------------------------------------------------------- Möller et al. 2007


def newreno_westwood_shares(buffer_over_bdp: float, floor_half: bool = False, bdp: float = 100.0, m: float = 1.0
                   ) -> dict[str, float]:
    """Möller et al.'s (2007) stationary throughputs of one NewReno (flow 1) and one Westwood+ (flow 2) flow sharing a
    link, as shares of the capacity, at B = ``buffer_over_bdp``·CT (CT = ``bdp`` segments, window growth
    ``m`` segments per round trip each): the windows after a synchronised loss (30), then s* and t* by
    Props. 1–3, the data volumes (7). Returns ``newreno``, ``westwood_plus`` (shares of C), their sum
    ``utilisation`` and ``ratio`` (Westwood+ / NewReno). ``floor_half``: Westwood+ never below half its
    window (β ≥ ½, Möller et al. 2007 §IV)."""
    ct = bdp
    b = buffer_over_bdp * ct
    beta = ct / (ct + b)
    if floor_half:
        beta = max(beta, 0.5)
    scale = (ct + b + m) / (3.0 - 2.0 * beta)
    w1, w2 = scale * (1.0 - beta), scale * beta
    big_w, big_m = w1 + w2, 2.0 * m
    s_tilde = (ct + b - big_w) / big_m
    full = big_w >= ct or b / big_m >= math.exp((ct - big_w) / big_m) - 1.0 - (ct - big_w) / big_m
    c = 1.0  # time in units where C = 1 segment per unit: shares are scale-free
    cap = ct  # with C = 1 segment/unit, T = CT units
    if full:
        z = 1.0 + s_tilde
        s_star = s_tilde + 1.0 + lambert_w(-z * math.exp(-z), 0)
        t_star = s_star / c * (big_w + big_m * s_star / 2.0)
    else:
        s_star = s_tilde + 1.0 + lambert_w(-math.exp(-1.0 - b / big_m), 0)
        s1 = 1.0 + (cap - big_w) / big_m + lambert_w(-(1.0 + s_tilde) * math.exp(-1.0 - (cap - big_w) / big_m), -1)
        s3 = 1.0 + b / big_m + lambert_w(-math.exp(-1.0 - b / big_m), 0)
        s2 = (cap - big_w) / big_m - s1
        # t1 + t2 + t3 of Prop. 3's proof (the printed (21) lost a term in the conversion: CT·(s3 − s1) where
        # the phases sum to CT·(s2 + s3))
        t_star = ((b + big_w * s1 + big_m * s1 * s1 / 2.0) + cap * s2 + (-b + cap * s3 + big_m * s3 * s3 / 2.0)) / c
    d1 = s_star * (w1 + m * s_star / 2.0)
    d2 = s_star * (w2 + m * s_star / 2.0)
    return {"newreno": d1 / t_star / c, "westwood_plus": d2 / t_star / c, "utilisation": (d1 + d2) / t_star / c,
            "ratio": d2 / d1 if d1 > 0 else math.inf}


def newreno_westwood_curve(lo: float = 0.05, hi: float = 8.0, points: int = 25, floor_half: bool = False
                  ) -> list[dict[str, float]]:
    """The shares over buffer/BDP from ``lo`` to ``hi`` (log-spaced)."""
    out = []
    for i in range(points):
        x = lo * (hi / lo) ** (i / max(points - 1, 1))
        out.append({"buffer_over_bdp": x, **newreno_westwood_shares(x, floor_half)})
    return out


def replayed_verdicts(decision_rows: Sequence[Mapping[str, Any]], buffer_over_bdp: float) -> dict[str, dict[str, Any]]:
    """The buffer study's rule for every replayed decision rule on this path: per estimator (the Westwood family,
    NewReno, and any decision-only rule replay adds, by its name), its decrease factor at this flow's losses —
    the median of ``1 − ssthresh/w`` with w the real sender's flight at the loss — and whether one flow backing
    off so keeps the link busy (``B ≥ b/(1−b)·BDP``); ``real_sender``: the same for what the captured sender
    did (its flight one smoothed RTT after the loss)."""
    by: dict[str, list[float]] = {}
    real: dict[int, float] = {}
    for r in decision_rows:
        w = r.get("flight_before_bytes")
        if not w or w <= 0:
            continue
        ss = r.get("ssthresh_bytes")
        if ss is not None:
            by.setdefault(str(r["estimator"]), []).append(1.0 - float(ss) / float(w))
        after = r.get("flight_after_srtt_bytes")
        if after is not None:
            real[int(r["episode"])] = 1.0 - float(after) / float(w)
    if real:
        by["real_sender"] = list(real.values())
    out: dict[str, dict[str, Any]] = {}
    for name, bs in by.items():
        b = sorted(bs)[len(bs) // 2] if len(bs) % 2 else (sorted(bs)[len(bs) // 2 - 1] + sorted(bs)[len(bs) // 2]) / 2
        out[name] = {"decrease": b, "losses": len(bs), "busy_link": busy_link(b, buffer_over_bdp)}
    return out


#: A sender whose window falls by a factor in this range at its losses behaves as NewReno (b = ½).
NEWRENO_LIKE = (0.4, 0.6)
#: A sender whose window after a loss lies within this ratio of its rate × RTTmin behaves as Westwood+.
WESTWOOD_LIKE = (0.8, 1.25)


def sender_behaviour(decision_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How the captured sender backed off at its losses, from the replay's decision rows (one per event):
    ``decrease`` (median 1 − flight one srtt after / flight before), ``pipe_ratio`` (median flight after /
    (achieved rate × RTTmin), the Westwood+ target) and ``kind``: ``westwood_plus`` when the window lands on
    the pipe — the median ratio within :data:`WESTWOOD_LIKE` — and more steadily than on a fixed fraction of
    the window (the relative spread of after/pipe below that of after/w: a constant-factor sender such as
    CUBIC can land near the pipe on average, but its after/w is what stays put); else ``newreno`` (b within
    :data:`NEWRENO_LIKE`); else ``other``; ``unknown`` without losses."""
    by_event: dict[int, tuple[float, float | None]] = {}
    for r in decision_rows:
        w, after = r.get("flight_before_bytes"), r.get("flight_after_srtt_bytes")
        if w and w > 0 and after is not None:
            ideal = r.get("ideal_bytes")
            by_event[int(r["episode"])] = (after / w, after / ideal if ideal else None)
    if not by_event:
        return {"kind": "unknown", "decrease": None, "pipe_ratio": None, "losses": 0}
    kept = [v[0] for v in by_event.values()]
    b = 1.0 - statistics.median(kept)
    ratios = [v[1] for v in by_event.values() if v[1] is not None]
    pipe = statistics.median(ratios) if ratios else None
    steadier = bool(ratios) and _spread(ratios) < _spread(kept)
    kind = ("westwood_plus" if pipe is not None and WESTWOOD_LIKE[0] <= pipe <= WESTWOOD_LIKE[1] and steadier else
            "newreno" if NEWRENO_LIKE[0] <= b <= NEWRENO_LIKE[1] else "other")
    return {"kind": kind, "decrease": b, "pipe_ratio": pipe, "losses": len(by_event)}


def _spread(xs: Sequence[float]) -> float:
    """Interquartile range over the median (inf for a median of 0)."""
    s = sorted(xs)
    q1, q3, mid = s[len(s) // 4], s[(3 * len(s)) // 4], statistics.median(s)
    return (q3 - q1) / mid if mid > 0 else math.inf




def measured_shares(members: Sequence[Mapping[str, Any]], capacity_bps: float | None,
                    buffer_over_bdp: float | None) -> dict[str, Any] | None:
    """Möller et al. 2007 beside the measurement, for a group of flows sharing a bottleneck that holds a NewReno-like
    and a Westwood+-like sender (``members``: ``flow_id``, ``kind``, ``rate_bps`` — its wire rate while
    delivering): each kind's measured share of the capacity (summed over its flows) and the model's at the
    path's buffer/BDP; None when the group lacks either kind or a figure."""
    kinds = {m["kind"] for m in members}
    if not {"newreno", "westwood_plus"} <= kinds or not capacity_bps or buffer_over_bdp is None:
        return None
    measured = {k: sum(m["rate_bps"] for m in members if m["kind"] == k) / capacity_bps
                for k in ("newreno", "westwood_plus")}
    model = newreno_westwood_shares(buffer_over_bdp)
    return {"measured": measured, "model": {k: model[k] for k in ("newreno", "westwood_plus")},
            "model_floor_half": {k: v for k, v in newreno_westwood_shares(buffer_over_bdp, floor_half=True).items()
                                 if k in ("newreno", "westwood_plus")}}

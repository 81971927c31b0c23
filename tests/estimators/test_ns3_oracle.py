"""The §8 controls replayed against ns-3 senders that ran them (``tests/data/ns3``, ``testbed/ns3``).

Each capture is the sender side of an ns-3.37 run (10 Mbit/s drop-tail bottleneck, RTT 60 ms, 20 s): one
flow at B = 1·BDP and at 0.1·BDP, and two flows (the second NewReno) at 1·BDP; ``<name>.ns3.json`` holds the
ssthresh ns-3 itself set at each loss (its SlowStartThreshold at every entry into recovery or loss). Each
ns-3 loss is matched to the replayed loss event whose first retransmission is within ``MATCH_S`` of it, and
the replayed ssthresh compared with ns-3's: per algorithm and scenario, the median of replayed/ns-3 over
the events where their states agree within 0.95–1.05, and each such event within 0.8–1.25. The other
events are marked with why ns-3's own state differs (:func:`departure`); they are listed, not hidden.

``python -m tests.estimators.test_ns3_oracle`` prints the table of medians and every departure.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import ackreplay.estimators as E
from ackreplay.core.capture_scoring import score_file

DATA = Path(__file__).resolve().parents[1] / "data" / "ns3"
ALGORITHMS = ("stcp", "hstcp", "htcp", "bic", "cubic")
SCENARIOS = ("1f_bdp1", "1f_bdp01", "2f_bdp1")
MATCH_S = 0.02  # ns-3 retransmits as it enters recovery; the sender-side capture sees it at once
#: ns-3's window at the loss that each of its controls multiplies: the bytes in flight (TcpScalable,
#: TcpHighSpeed, TcpHtcp get them as GetSsThresh's argument) or cwnd (TcpBic, TcpCubic: GetCwndInSegments).
NS3_WINDOW = {"stcp": "inflight_bytes", "hstcp": "inflight_bytes", "htcp": "inflight_bytes", "bic": "cwnd_bytes",
              "cubic": "cwnd_bytes", "newreno": "inflight_bytes"}
#: The NewReno competitor of a two-flow run whose capture is kept (flow 1 of its JSON): ns-3's TcpNewReno halves
#: the bytes in flight, replayed ``newreno`` the capture's flight (§1.3).
COMPETITOR = ("cubic", "2f_bdp1")  # its capture: <alg>_<scenario>.newreno.pcap.gz
WINDOW_TOLERANCE = 0.1  # ns-3's window and the capture's flight differ by more: another input, not a check
MEDIAN_BAND = (0.95, 1.05)
EVENT_BAND = (0.8, 1.25)


@dataclass(frozen=True)
class Compared:
    t: float
    kind: str
    ns3_segments: float  # ns-3's ssthresh
    ours_segments: float | None  # replayed (None: no replayed loss event within MATCH_S)
    w: float | None  # the capture's flight at the loss, segments
    ns3_window: float  # what ns-3 multiplied, segments
    why: str | None  # why ns-3's state differs (None: it agrees, the event is checked)

    @property
    def ratio(self) -> float | None:
        return None if self.ours_segments is None else self.ours_segments / self.ns3_segments


def departure(alg: str, ns3: dict[str, float], ours: dict[str, object] | None, mss: int) -> str | None:
    """Why ns-3's own state at this loss is not the one §8 replays from the capture, or None."""
    if ours is None:
        return "no loss event in the capture within 20 ms (ns-3 entered recovery again as it left the last one)"
    w = int(ours["flight_before_bytes"]) / mss  # type: ignore[call-overload]
    ns_w = ns3[NS3_WINDOW[alg]] / mss
    if abs(ns_w / w - 1) > WINDOW_TOLERANCE:
        what = "bytes in flight" if NS3_WINDOW[alg] == "inflight_bytes" else "cwnd"
        return (f"ns-3 multiplies its {what} at the loss, {ns_w:.0f} segments, not the capture's flight at the "
                f"decision ACK, {w:.0f}" + (" (data sent after the last ACK before the RTO)"
                                           if ns3["kind"] == "timeout" else ""))
    if alg == "bic":
        low = E.create("bic").params["low_window"]
        if (ns_w < low) != (w <= low):  # ns-3: segCwnd < m_lowWnd; Linux and §8: w ≤ low_window
            return f"on either side of BIC's low window {low:g}: ns-3's cwnd {ns_w:.0f}, the capture's flight {w:.0f}"
    if alg == "htcp":
        ns_beta = ns3["ssthresh_bytes"] / ns3["inflight_bytes"]
        beta = float(ours["ssthresh_segments"]) / w  # type: ignore[arg-type]
        ns_halved, halved = abs(ns_beta - 0.5) < 0.02, abs(beta - 0.5) < 1e-9
        if ns_halved and not halved:
            return (f"ns-3 TcpHtcp fell back to β 0.5 (its integer division: unless the throughput rose, 0.5); "
                    f"§8 β = {beta:.3f}")
        if halved and not ns_halved:
            return (f"ns-3 TcpHtcp β = {ns_beta:.3f}: RTTmin/RTTmax of its smoothed RTT within the epoch (RTTmin reset "
                    f"at every loss, no 0.8 cap); §8 β = 0.5 (the flow's RTTmin, or the epoch throughput moved > 20 %)")
        if not halved and ns_beta > E.create("htcp").params["beta_max"]:
            return f"ns-3 TcpHtcp β = {ns_beta:.3f} is not capped at 0.8"
    return None


@cache
def compare(alg: str, scenario: str, competitor: bool = False) -> tuple[Compared, ...]:
    """Each ns-3 loss of the run's flow 0 (of its NewReno flow 1 with ``competitor``) beside the replayed one."""
    name = f"{alg}_{scenario}"
    doc = json.loads((DATA / f"{name}.ns3.json").read_text())
    replayed = "newreno" if competitor else alg
    capture = DATA / f"{name}{'.newreno' if competitor else ''}.pcap.gz"
    sc = score_file(capture, [E.create(replayed)], use_sidecar=False)
    flow = max(sc.replay.flows, key=lambda f: f.events)  # the bulk flow (each capture holds one sender's)
    rows = [r for r in flow.decision_rows if r["estimator"] == replayed]
    mss = int(doc["mss"])
    out = []
    for loss in (x for x in doc["losses"] if x["flow"] == (1 if competitor else doc["captured_flow"])):
        near = min(rows, key=lambda r: abs(r["t"] - loss["t"]), default=None)
        ours = near if near is not None and abs(near["t"] - loss["t"]) <= MATCH_S else None
        out.append(Compared(
            loss["t"], loss["kind"], loss["ssthresh_bytes"] / mss,
            None if ours is None else ours["ssthresh_segments"],
            None if ours is None else ours["flight_before_bytes"] / mss, loss[NS3_WINDOW[replayed]] / mss,
            departure(replayed, loss, ours, mss)))
    return tuple(out)


def median_ratio(events: tuple[Compared, ...], agreeing_only: bool) -> float | None:
    rs = [c.ratio for c in events if c.ratio is not None and (c.why is None or not agreeing_only)]
    return statistics.median(rs) if rs else None


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("alg", ALGORITHMS)
def test_replayed_ssthresh_matches_ns3s(alg, scenario):
    events = compare(alg, scenario)
    checked = [c for c in events if c.why is None]
    assert len(checked) >= 2, f"{alg} {scenario}: too few comparable loss events ({len(events)} in all)"
    med = median_ratio(events, agreeing_only=True)
    assert med is not None and MEDIAN_BAND[0] <= med <= MEDIAN_BAND[1], f"{alg} {scenario}: median {med}"
    off = [c for c in checked if not EVENT_BAND[0] <= c.ratio <= EVENT_BAND[1]]
    assert not off, f"{alg} {scenario}: events outside {EVENT_BAND} with no reason: {off}"


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_every_algorithm_pooled_over_its_scenarios(alg):
    """Per algorithm over all its scenarios, the events where ns-3's state agrees: median within the band;
    and most ns-3 loss events are such events (the departures are the exception, each with its reason)."""
    events = tuple(c for s in SCENARIOS for c in compare(alg, s))
    med = median_ratio(events, agreeing_only=True)
    assert med is not None and MEDIAN_BAND[0] <= med <= MEDIAN_BAND[1]
    assert sum(c.why is None for c in events) > len(events) / 2


def test_replayed_newreno_matches_ns3s_competitor():
    """The NewReno flow of a two-flow run: ns-3 halves its bytes in flight, replay the capture's flight."""
    events = compare(*COMPETITOR, competitor=True)
    checked = [c for c in events if c.why is None]
    assert len(checked) >= 2
    med = median_ratio(events, agreeing_only=True)
    assert med is not None and MEDIAN_BAND[0] <= med <= MEDIAN_BAND[1]
    assert all(EVENT_BAND[0] <= c.ratio <= EVENT_BAND[1] for c in checked)


def test_the_oracle_sees_each_controls_own_decrease():
    """The check can fail: the wrong control's decrease against an ns-3 run falls outside the band (CUBIC's
    0.7 replayed on the STCP sender's losses, which ns-3 cut by 1/8)."""
    stcp = compare("stcp", "1f_bdp1")
    wrong = [c.w * 0.7 / c.ns3_segments for c in stcp if c.why is None and c.w is not None]
    assert statistics.median(wrong) < MEDIAN_BAND[0]


def table() -> str:
    """The median table (agreeing events; all matched events) and every departure with its reason."""
    lines = ["| algorithm | scenario | ns-3 losses | compared | median (agreeing) | median (all) | range (agreeing) |",
             "|---|---|---|---|---|---|---|"]
    notes = []
    for alg in ALGORITHMS:
        for s in SCENARIOS:
            ev = compare(alg, s)
            ok = [c.ratio for c in ev if c.why is None and c.ratio is not None]
            agree, every = median_ratio(ev, True), median_ratio(ev, False)
            lines.append(f"| {alg} | {s} | {len(ev)} | {len(ok)} | {agree:.3f} | "
                         f"{'-' if every is None else f'{every:.3f}'} | {min(ok):.3f}–{max(ok):.3f} |")
            for c in ev:
                if c.why is not None:
                    r = "-" if c.ratio is None else f"{c.ratio:.3f}"
                    notes.append(f"- {alg} {s} t = {c.t:.3f} s ({c.kind}): ns-3 {c.ns3_segments:.1f}, replayed "
                                 f"{'-' if c.ours_segments is None else f'{c.ours_segments:.1f}'} (ratio {r}): "
                                 f"{c.why}")
    ev = compare(*COMPETITOR, competitor=True)
    ok = [c.ratio for c in ev if c.why is None and c.ratio is not None]
    lines.append(f"| newreno (the NewReno flow of {'_'.join(COMPETITOR)}) | {COMPETITOR[1]} | {len(ev)} | {len(ok)} | "
                 f"{statistics.median(ok):.3f} | {median_ratio(ev, False):.3f} | {min(ok):.3f}–{max(ok):.3f} |")
    notes += [f"- newreno (NewReno flow) t = {c.t:.3f} s ({c.kind}): ns-3 {c.ns3_segments:.1f}, replayed "
              f"{c.ours_segments:.1f}: {c.why}" for c in ev if c.why is not None and c.ours_segments is not None]
    pooled = ["| algorithm | ns-3 losses | compared | median (agreeing) | median (all) |", "|---|---|---|---|---|"]
    for alg in ALGORITHMS:
        ev = tuple(c for s in SCENARIOS for c in compare(alg, s))
        every = median_ratio(ev, False)
        pooled.append(f"| {alg} | {len(ev)} | {sum(c.why is None for c in ev)} | {median_ratio(ev, True):.3f} | "
                      f"{'-' if every is None else f'{every:.3f}'} |")
    return "\n".join([*lines, "", "Pooled over the three scenarios:", "", *pooled, "", "Departures:", "", *notes])


if __name__ == "__main__":
    print(table(), file=sys.stdout)

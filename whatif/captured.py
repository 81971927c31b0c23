"""The captured flow's own figures, measured as the simulation measures its flows, and the congestion control
its sender ran: given by the user, named by the capture's metadata (the capture testbed's JSON, an ns-3 run's),
or assumed to be CUBIC, Linux's default since 2.6.19 (every sender whose control is not known is taken to be
one)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from ackreplay.ingest.capture_metadata import metadata_files
from ackreplay.scoring.comparable import MAX_OTHER_SHARE, OTHER_LIMITS

#: The control a sender is taken to run when nothing names it: Linux's default.
DEFAULT_SENDER = "cubic"
#: Metadata names of the controls, as the simulation calls them (Linux's module names, ns-3's class names).
ALIASES = {"reno": "newreno", "newreno": "newreno", "cubic": "cubic", "bic": "bic", "scalable": "stcp", "stcp": "stcp",
           "highspeed": "hstcp", "hstcp": "hstcp", "westwood": "westwood_plus", "htcp": "htcp", "bbr": "bbr",
           "tcpnewreno": "newreno", "tcpcubic": "cubic", "tcpbic": "bic", "tcpscalable": "stcp",
           "tcphighspeed": "hstcp", "tcpwestwoodplus": "westwood_plus", "tcphtcp": "htcp", "tcpbbr": "bbr"}
#: How much later than the run's first flow its competitor starts, s (testbed/ns3/scenario.cc: flow i at 0.1 + 0.5 i).
NS3_COMPETITOR_DELAY_S = 0.5
#: The self-check's goodput tolerance (issue #37: the re-enactment within 10 % of the captured flow's goodput).
GOODPUT_TOLERANCE = 0.10
#: The most of its time a sender re-enacted as a bulk one may have been idle (nothing outstanding: the application
#: gave it nothing to send; ``FlowLimits.idle_share``). Idle for a share s of its span, it delivered its bytes in
#: the other 1 − s, so a sender with a backlog under the same control on the same path gets 1/(1 − s) of its
#: goodput on that count alone: beyond the goodput tolerance from s = 1 − 1/(1 + tolerance) (0.091) on.
MAX_IDLE_SHARE = 1.0 - 1.0 / (1.0 + GOODPUT_TOLERANCE)


@dataclass(frozen=True)
class CapturedFlow:
    """What the captured flow did: goodput while it delivered (payload bits/s), over how long (s), its loss
    rate (segments retransmitted per data segment sent, :meth:`on_the_wire` where a host capture's TSO/GSO
    super-segments are counted in segments) and loss events (ingest's count); ``limits``: what
    limited its sender, each label's share of its time (``scoring.limits``), None where not known."""

    goodput_bps: float
    span_s: float
    loss_rate: float
    loss_events: int
    share: float = 1.0  # its bytes over those of every flow sharing its bottleneck (their whole lives)
    limits: Mapping[str, float] | None = None
    idle_share: float | None = None  # the share of its time with nothing outstanding (None: not known)

    @staticmethod
    def of(summary: Any, others: Sequence[Any] = (), limits: Mapping[str, float] | None = None,
           idle_share: float | None = None) -> CapturedFlow:
        """From an ingest ``FlowSummary`` or its dict: the span is the time it delivered its bytes at its
        delivery rate (first data segment to last ACK); ``others``: the summaries of the flows sharing its
        bottleneck; ``limits``: the limit labels' shares of its time; ``idle_share``: the share of its time
        its sender had nothing outstanding (``FlowLimits.idle_share``)."""
        get = summary.get if isinstance(summary, Mapping) else (lambda k: getattr(summary, k, None))
        rate = float(get("delivery_rate_bps") or 0.0)
        span = 8.0 * float(get("bytes") or 0) / rate if rate > 0 else float(get("duration_s") or 0.0)
        segments = int(get("data_segments") or 0)
        mine = float(get("bytes") or 0)
        theirs = sum(float((o.get("bytes") if isinstance(o, Mapping) else getattr(o, "bytes", 0)) or 0) for o in others)
        return CapturedFlow(rate, span, int(get("retransmissions") or 0) / segments if segments else 0.0,
                            int(get("loss_events") or 0), mine / (mine + theirs) if mine + theirs > 0 else 1.0,
                            dict(limits) if limits is not None else None,
                            None if idle_share is None else float(idle_share))

    def on_the_wire(self, loss_rate: float | None) -> CapturedFlow:
        """The same flow with its loss rate counted in segments on the wire (``whatif.flows.wire_loss_rate``: a
        super-segment as the MSS-sized segments it carries, as the simulation counts), where known."""
        return self if loss_rate is None else replace(self, loss_rate=float(loss_rate))

    @property
    def not_bulk(self) -> str | None:
        """Why the sender was not a bulk one (None: it was, or its limits are not known): it was idle — nothing
        outstanding — for more of its time than the goodput tolerance leaves (:data:`MAX_IDLE_SHARE`), or the
        application, its send buffer or the receive window limited it most of the time (``scoring.comparable``'s
        threshold), so a bulk sender re-enacting its control cannot reproduce it."""
        other = {k: float((self.limits or {}).get(k) or 0.0) for k in OTHER_LIMITS}
        if sum(other.values()) < MAX_OTHER_SHARE:
            if self.idle_share is None or self.idle_share <= MAX_IDLE_SHARE:
                return None
            return (f"the sender was idle — nothing outstanding, its application giving it nothing to send — "
                    f"{100 * self.idle_share:.0f} % of its time (more than {100 * MAX_IDLE_SHARE:.1f} %, where a "
                    f"sender with a backlog would deliver more than {100 * GOODPUT_TOLERANCE:.0f} % more on that "
                    "count alone): a bulk sender cannot re-enact it")
        words = {"app": "the application", "sndbuf": "the send buffer", "rwnd": "the receive window"}
        parts = ", ".join(f"{words[k]} {100 * v:.0f} %" for k, v in other.items() if v > 0)
        return (f"the sender was not limited by the network most of the time ({parts} of its time; at least "
                f"{100 * MAX_OTHER_SHARE:.0f} % in all): a bulk sender cannot re-enact it")

    @property
    def loss_event_rate(self) -> float:
        """Loss events per second."""
        return self.loss_events / self.span_s if self.span_s > 0 else 0.0

    def as_dict(self, payload_bps: float) -> dict[str, Any]:
        return {"goodput_bps": self.goodput_bps, "utilisation": self.goodput_bps / payload_bps if payload_bps else None,
                "loss_rate": self.loss_rate, "loss_events": self.loss_events,
                "loss_event_rate": self.loss_event_rate, "span_s": self.span_s, "share": self.share,
                "limits": dict(self.limits) if self.limits is not None else None, "idle_share": self.idle_share}


@dataclass(frozen=True)
class SenderControl:
    """The control the captured sender ran (the simulation's name; ``bbr``: BBR v1, sim/bbr.py), where that
    comes from, and whether the sender is an ns-3 one (its stack's settings and its H-TCP's and CUBIC's rules
    differ from Linux's: ``NS3_PARAMS`` of ackreplay.sim.model)."""

    algorithm: str
    source: str
    ns3: bool = False


def sender_control(capture: Path | None, sender: str, given: str | None = None) -> SenderControl:
    """The control of the flow sent from ``sender`` (``host:port``): ``given`` (the user's), else the capture's
    metadata beside it (``x.pcap.gz`` → ``x.json`` of the capture testbed, by the sender's port, or
    ``x.ns3.json``), else :data:`DEFAULT_SENDER`. The sender is an ns-3 one where an ns-3 run's metadata is
    beside the capture, whichever names the control (a control given for an ns-3 capture runs on ns-3's stack)."""
    docs = _metadata_docs(capture)
    if given:
        return SenderControl(ALIASES.get(given.lower(), given.lower()), "given", any(_ns3_run(d) for _, d in docs))
    for meta, doc in docs:
        found = _named(doc, capture, sender)
        if found:
            return SenderControl(ALIASES.get(found.lower(), found.lower()), f"the capture's metadata ({meta.name})",
                                 _ns3_run(doc))
    return SenderControl(DEFAULT_SENDER, "assumed: Linux's default (nothing names the sender's control)")


def _metadata_docs(capture: Path | None) -> list[tuple[Path, dict[str, Any]]]:
    """The capture's metadata files that hold a JSON object, with it."""
    out = []
    for meta in _metadata_files(capture):
        try:
            doc = json.loads(meta.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict):
            out.append((meta, doc))
    return out


def _ns3_run(doc: Mapping[str, Any]) -> bool:
    return str(doc.get("simulator", "")).startswith("ns-3")


def _metadata_files(capture: Path | None) -> list[Path]:
    """The capture's metadata files the what-if reads: ns-3's and the testbed's, an ns-3 run's other flows' too."""
    return metadata_files(capture, ns3=True, run_stem=True) if capture is not None else []


def _named(doc: Mapping[str, Any], capture: Path | None, sender: str) -> str | None:
    """The control a metadata document names for this flow: ns-3's ``cc`` (``x.newreno.pcap.gz`` is the NewReno
    competitor's capture), the testbed's flow whose client port is the sender's, or its only ``cc``."""
    if str(doc.get("simulator", "")).startswith("ns-3"):
        name = capture.name if capture is not None else ""
        competitor = doc.get("competitor")
        if competitor and f".{str(competitor).lower().removeprefix('tcp')}." in name.lower():
            return str(competitor)
        return str(doc.get("cc") or "") or None
    port = sender.rsplit(":", 1)[-1]
    for fd in doc.get("flow_details") or []:
        if isinstance(fd, dict) and str(fd.get("client_port")) == port:
            return str(fd.get("sender_cc") or fd.get("cc") or "") or None
    ccs = {str(c) for c in doc.get("cc") or [] if c}
    return ccs.pop() if len(ccs) == 1 else None


class Ns3Competitor(NamedTuple):
    """The other flow of a two-flow ns-3 run: its control (the simulation's name), when it started relative to
    the captured flow (s), the metadata file naming it, and the captured flow's share of the bytes the two
    delivered (the run's ``rx_bytes``; None without them)."""

    control: str
    offset_s: float
    source: str
    captured_share: float | None


def ns3_competitor(capture: Path | None) -> Ns3Competitor | None:
    """The other flow of a two-flow ns-3 run, which each of the run's captures leaves out; None for a capture
    without ns-3 metadata or of a one-flow run."""
    for meta, doc in _metadata_docs(capture):
        if not _ns3_run(doc):
            continue
        if int(doc.get("flows") or 1) < 2 or not doc.get("competitor") or not doc.get("cc"):
            return None
        first_is_mine = _named(doc, capture, "") == str(doc["cc"])
        other = str(doc["competitor"] if first_is_mine else doc["cc"])
        rx = [float(b) for b in doc.get("rx_bytes") or []]
        share = (rx[0] if first_is_mine else rx[1]) / sum(rx[:2]) if len(rx) >= 2 and sum(rx[:2]) > 0 else None
        return Ns3Competitor(ALIASES.get(other.lower(), other.lower()),
                             NS3_COMPETITOR_DELAY_S if first_is_mine else -NS3_COMPETITOR_DELAY_S, meta.name, share)
    return None

"""Ground truth given by the user (ESTIMATORS.md §4): a bottleneck shared by the bulk flows, or a fixed
share per flow, with per-flow overrides.

Text form (CLI ``--truth``): comma-separated ``key=value``: ``bottleneck=5Mbit,shared_by=all``,
``fair_share=2.5Mbit``, ``min_flow_bytes=64kB``. Rates accept bit/s with k/M/G prefixes (``5Mbit``,
``5Mbps``, ``500kbit``, ``5e6``); sizes accept B, kB (1000), KiB (1024), MB, MiB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ackreplay.estimators.params import EstimatorError

_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]?)(bit/s|bits/s|bit|bps|b/s)?\s*$", re.I)
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$", re.I)
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_SIZES = {"b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}


def parse_rate(text: str | float) -> float:
    """A rate in bit/s from '5Mbit', '2.5 Mbps', '500kbit', '5e6' or a number."""
    if isinstance(text, int | float):
        value = float(text)
    else:
        m = _RATE.match(str(text))
        if not m:
            raise EstimatorError("invalid_truth", f"cannot read {text!r} as a rate (e.g. 5Mbit, 2.5Mbps, 5e6)")
        value = float(m[1]) * _PREFIX[m[2].lower()]
    if not value > 0:
        raise EstimatorError("invalid_truth", f"a rate must be positive, got {text!r}")
    return value


def parse_size(text: str | int) -> int:
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise EstimatorError("invalid_truth", f"cannot read {text!r} as a size (e.g. 64kB, 65536)")
    return int(float(m[1]) * _SIZES[(m[2] or "b").lower()])


def parse_drops(items: Any) -> list[tuple[float, int, int]]:
    """``[{t, src_port, dst_port}, …]`` → tuples (the testbed's ``random_loss_log`` entries fit: extra keys are
    ignored)."""
    if not isinstance(items, list):
        raise EstimatorError("invalid_truth", "random_drops must be a list of {t, src_port, dst_port}")
    try:
        return [(float(x["t"]), int(x["src_port"]), int(x["dst_port"])) for x in items]
    except (KeyError, TypeError, ValueError):
        raise EstimatorError("invalid_truth", "random_drops must be a list of {t, src_port, dst_port}") from None


#: Flows carrying fewer bytes are control connections, not competitors for a fair share (§4).
DEFAULT_MIN_FLOW_BYTES = 65536


@dataclass
class Truth:
    """``bottleneck_bps`` shared by ``all`` active bulk flows or given to ``each``; or a fixed
    ``fair_share_bps`` per flow; ``flows`` overrides the fair share of single flows (by flow id)."""

    bottleneck_bps: float | None = None
    shared_by: str = "all"
    fair_share_bps: float | None = None
    min_flow_bytes: int = DEFAULT_MIN_FLOW_BYTES
    flows: dict[int, float] = field(default_factory=dict)
    #: Per-loss ground truth (the capture testbed's NFLOG log): every randomly dropped data packet as
    #: (time, source port, destination port); None = the losses are not labelled.
    random_drops: list[tuple[float, int, int]] | None = None

    def __post_init__(self) -> None:
        if self.shared_by not in ("all", "each"):
            raise EstimatorError("invalid_truth", f"shared_by must be 'all' or 'each', got {self.shared_by!r}")
        if self.bottleneck_bps is None and self.fair_share_bps is None and not self.flows:
            raise EstimatorError("invalid_truth", "ground truth needs bottleneck=…, fair_share=… or per-flow shares")

    def to_dict(self) -> dict[str, Any]:
        return {"bottleneck_bps": self.bottleneck_bps, "shared_by": self.shared_by,
                "fair_share_bps": self.fair_share_bps, "min_flow_bytes": self.min_flow_bytes,
                "flows": {str(k): v for k, v in self.flows.items()},
                **({"random_drops": [{"t": t, "src_port": s, "dst_port": d} for t, s, d in self.random_drops]}
                   if self.random_drops is not None else {})}

    def loss_labels(self, sender: str, receiver: str, episode_starts: list[float]) -> dict[int, str] | None:
        """Each loss episode of the flow ``sender`` → ``receiver`` (``host:port``), labelled ``random`` when
        one of its data packets was dropped at random since the previous episode began, else
        ``congestion`` (the bottleneck dropped it); None when the losses are not labelled."""
        if self.random_drops is None:
            return None
        sport, dport = int(sender.rsplit(":", 1)[1]), int(receiver.rsplit(":", 1)[1])
        mine = sorted(t for t, s, d in self.random_drops if s == sport and d == dport)
        labels: dict[int, str] = {}
        prev = float("-inf")
        for i, start in enumerate(episode_starts):
            labels[i] = "random" if any(prev < t <= start for t in mine) else "congestion"
            prev = start
        return labels

    @staticmethod
    def from_mapping(data: dict[str, Any]) -> Truth:
        """From a JSON/YAML mapping (keys as in the text form, ``*_bps`` numbers also accepted)."""
        known = {"bottleneck", "bottleneck_bps", "shared_by", "fair_share", "fair_share_bps", "min_flow_bytes",
                 "flows", "random_drops"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise EstimatorError("invalid_truth", f"unknown ground-truth key {unknown[0]!r} "
                                 f"(known: {', '.join(sorted(known))})")
        bottleneck = data.get("bottleneck", data.get("bottleneck_bps"))
        share = data.get("fair_share", data.get("fair_share_bps"))
        flows: dict[int, float] = {}
        for key, value in (data.get("flows") or {}).items():
            try:
                fid = int(key)
            except ValueError:
                raise EstimatorError("invalid_truth", f"per-flow truth keys are flow ids, got {key!r}") from None
            rate: Any = value.get("fair_share", value.get("fair_share_bps")) if isinstance(value, dict) else value
            flows[fid] = parse_rate(rate)
        return Truth(
            bottleneck_bps=None if bottleneck is None else parse_rate(bottleneck),
            shared_by=str(data.get("shared_by", "all")),
            fair_share_bps=None if share is None else parse_rate(share),
            min_flow_bytes=parse_size(data.get("min_flow_bytes", DEFAULT_MIN_FLOW_BYTES)),
            flows=flows,
            random_drops=parse_drops(data["random_drops"]) if "random_drops" in data else None,
        )

    @staticmethod
    def parse(text: str) -> Truth:
        """From the CLI text form."""
        items: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                raise EstimatorError("invalid_truth", f"expected key=value in --truth, got {part!r}")
            items[key.strip()] = value.strip()
        return Truth.from_mapping(items)


def min_flow_bytes(truth: Truth | None) -> int:
    """The bytes a flow needs to count as a bulk flow: the truth's ``min_flow_bytes``, 64 kB without truth."""
    return truth.min_flow_bytes if truth is not None else DEFAULT_MIN_FLOW_BYTES

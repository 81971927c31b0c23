"""Ground truth given by the user (docs/scores.md §4): a bottleneck shared by the bulk flows, or a fixed
share per flow, with per-flow overrides.

Text form (CLI ``--truth``): comma-separated ``key=value``: ``bottleneck=5Mbit,shared_by=all``,
``fair_share=2.5Mbit``, ``min_flow_bytes=64kB``. Rates accept bit/s with k/M/G prefixes (``5Mbit``,
``5Mbps``, ``500kbit``, ``5e6``); sizes accept B, kB (1000), KiB (1024), MB, MiB.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ackreplay.estimators.params import EstimatorError

_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]?)(bit/s|bits/s|bit|bps|b/s)?\s*$", re.I)
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$", re.I)
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_SIZES = {"b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}


#: The largest rate (bit/s) and size (bytes) ground truth may state: beyond any link, and within a 64-bit count.
MAX_RATE = 1e15
MAX_SIZE = (1 << 63) - 1
MAX_FLOW_ID = (1 << 31) - 1


def parse_rate(text: str | float) -> float:
    """A rate in bit/s from '5Mbit', '2.5 Mbps', '500kbit', '5e6' or a number (finite, positive, at most
    ``MAX_RATE``; ``true`` is no rate)."""
    if isinstance(text, bool):
        raise EstimatorError("invalid_truth", f"a rate must be a number or text like 5Mbit, got {text!r}")
    if isinstance(text, int | float):
        value = float(text) if abs(text) < 1e300 else math.inf
    else:
        m = _RATE.match(str(text))
        if not m:
            raise EstimatorError("invalid_truth", f"cannot read {text!r} as a rate (e.g. 5Mbit, 2.5Mbps, 5e6)")
        value = float(m[1]) * _PREFIX[m[2].lower()]
    if not value > 0:
        raise EstimatorError("invalid_truth", f"a rate must be positive, got {text!r}")
    if not value <= MAX_RATE:  # also NaN and infinity
        raise EstimatorError("invalid_truth", f"a rate must be finite and at most {MAX_RATE:g} bit/s, got {text!r}")
    return value


def parse_size(text: str | float) -> int:
    """A size in bytes from '64kB', '1.5MiB', '65536' or a whole number (0 to 2^63 − 1; ``true`` is none)."""
    if isinstance(text, bool) or (isinstance(text, float) and not text.is_integer()):
        raise EstimatorError("invalid_truth", f"a size must be a whole number of bytes or text like 64kB, got {text!r}")
    if isinstance(text, int | float):
        value = int(text)
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise EstimatorError("invalid_truth", f"cannot read {text!r} as a size (e.g. 64kB, 65536)")
        number = float(m[1]) * _SIZES[(m[2] or "b").lower()]
        if not number <= MAX_SIZE:
            raise EstimatorError("invalid_truth", f"a size must be at most {MAX_SIZE} bytes, got {text!r}")
        value = int(number)
    if not 0 <= value <= MAX_SIZE:
        raise EstimatorError("invalid_truth", f"a size must be between 0 and {MAX_SIZE} bytes, got {text!r}")
    return value


def parse_drops(items: Any) -> list[tuple[float, int, int]]:
    """``[{t, src_port, dst_port}, …]`` → tuples (the testbed's ``random_loss_log`` entries fit: extra keys are
    ignored)."""
    if not isinstance(items, list):
        raise EstimatorError("invalid_truth", "random_drops must be a list of {t, src_port, dst_port}")
    try:
        drops = [(float(x["t"]), int(x["src_port"]), int(x["dst_port"])) for x in items]
    except (KeyError, TypeError, ValueError, OverflowError):
        raise EstimatorError("invalid_truth", "random_drops must be a list of {t, src_port, dst_port}") from None
    if not all(math.isfinite(t) and 0 <= s <= 65535 and 0 <= d <= 65535 for t, s, d in drops):
        raise EstimatorError("invalid_truth", "random_drops need finite times and ports from 0 to 65535")
    return drops


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
        given = data.get("flows") or {}
        if not isinstance(given, dict):
            raise EstimatorError("invalid_truth", f"flows must map flow ids to rates, got {given!r}"[:200])
        for key, value in given.items():
            try:
                fid = int(key)
            except ValueError:
                raise EstimatorError("invalid_truth", f"per-flow truth keys are flow ids, got {key!r}") from None
            if not 0 <= fid <= MAX_FLOW_ID:
                raise EstimatorError("invalid_truth", f"a flow id is between 0 and {MAX_FLOW_ID}, got {key!r}")
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

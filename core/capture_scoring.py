"""Score capture files: ingest → replay (``replay.capture.replay_capture``) → one JSON-ready document, for
``ackreplay score`` and scripts; the estimators from names and parameters and the path's models, for the
service too, so that both report exactly the same numbers. Files in, dicts and tables out.

Ground truth comes from the caller, or from a sidecar next to the capture:
``<capture>.truth.json|yaml|yml`` (keys as ``scoring.truth.Truth.from_mapping``), or the capture
testbed's metadata ``<capture stem>.json`` (``x.pcap.gz`` → ``x.json``; a pair's ``x_rcv``/``x_mid`` capture
reads ``x.json``) when it holds ``bottleneck_rate_bps`` (then the bottleneck is shared by all bulk flows) —
with ``random_loss_log``, every loss episode is labelled random or congestion (``Truth.loss_labels``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ackreplay.estimators import DEFAULT_ORDER, Estimator, EstimatorError, expand, names
from ackreplay.estimators import __version__ as VERSION
from ackreplay.estimators.sweep import MAX_VARIANTS, variants
from ackreplay.graphs.frame_numbers import flow_frames
from ackreplay.ingest import CaptureIngest, ingest_capture
from ackreplay.ingest.capture import DEFAULT_MEMORY_BUDGET
from ackreplay.ingest.capture_metadata import metadata_files
from ackreplay.replay.capture import is_bulk, replay_capture
from ackreplay.replay.engine import describe
from ackreplay.replay.results import CaptureReplay
from ackreplay.replay.results import jsonable as jsonable  # (re-exported)
from ackreplay.scoring.limits import FlowLimits
from ackreplay.scoring.truth import Truth, min_flow_bytes, parse_drops

ProgressFn = Callable[[str, float], None]


@dataclass
class ScoredCapture:
    """One capture ingested, replayed and scored: ``score_file``'s result, for scripts and notebooks."""

    path: Path
    ingest: CaptureIngest
    replay: CaptureReplay
    truth: Truth | None
    truth_source: str | None

    @property
    def min_flow_bytes(self) -> int:
        return min_flow_bytes(self.truth)

    def bulk(self, size: int) -> bool:
        """Whether a flow that carried ``size`` bytes is a bulk flow of this capture (``replay.capture.is_bulk``)."""
        return bool(is_bulk(size, self.truth))

    def scores_frame(self) -> Any:
        """One row per (replayed flow, estimator): the flow's endpoints, bytes, ``bulk`` (at least
        ``min_flow_bytes``: not a control connection), vantage, and every score (a Polars DataFrame; the
        same columns as ``ackreplay score -f csv`` without the parameters)."""
        import polars as pl

        flows = self.ingest.flows.frame.select(
            "flow_id", "sender", "receiver", "bytes", is_bulk(pl.col("bytes"), self.truth).alias("bulk"),
            pl.col("vantage").cast(pl.String), pl.col("reconstruction").cast(pl.String))
        frame = self.replay.scores_frame()
        return flows.join(frame, on="flow_id", how="inner").with_columns(pl.lit(str(self.path)).alias("file")) \
            .select("file", pl.exclude("file"))

    def to_pandas(self) -> Any:
        """:meth:`scores_frame` as a pandas DataFrame (``pip install 'ackreplay[pandas]'``)."""
        return self.scores_frame().to_pandas()

    def _repr_html_(self) -> str:  # notebooks: the bulk flows' scores
        import html

        import polars as pl

        bulk = self.scores_frame().filter(pl.col("bulk"))
        return (f"<p><b>{html.escape(str(self.path))}</b>: {len(self.ingest.flows)} flows, "
                f"{bulk['flow_id'].n_unique()} bulk flows replayed"
                + (f"; truth {html.escape(str(self.truth_source))}" if self.truth_source else "") + "</p>"
                + bulk._repr_html_())


def build_estimators(selected: Sequence[str] | None, params: dict[str, dict[str, Any]]) -> list[Estimator]:
    """Estimators by name or group word (``highspeed``, ``all``: ``estimators.GROUPS``; default: the default
    set, in the reference order) with per-estimator parameters; a parameter naming several values
    (``"0.1,0.5,1"``, ``"0.1:2:0.1"``, a list) makes one variant per value (``estimators.sweep``)."""
    chosen = expand(selected) if selected else list(DEFAULT_ORDER)
    for name in list(params):
        if name not in names():
            raise EstimatorError("unknown_estimator", f"--param names unknown estimator {name!r} "
                                 f"(known: {', '.join(names())})")
        if name not in chosen:
            raise EstimatorError("unknown_estimator", f"--param sets {name} but {name} is not among the "
                                 f"selected estimators ({', '.join(chosen)})")
    seen: set[str] = set()
    out: list[Estimator] = []
    for n in chosen:
        if n in seen:
            continue
        seen.add(n)
        out += variants(n, params.get(n, {}))  # one, or one per swept value (estimators.sweep)
    if len(out) > MAX_VARIANTS + len(seen):
        raise EstimatorError("too_many_variants", f"{len(out)} estimators and variants in one run, at most "
                             f"{MAX_VARIANTS + len(seen)}")
    return out


def parse_params(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["abse.N=12", "be.tau=0.5"]`` → ``{"abse": {"N": "12"}, "be": {"tau": "0.5"}}`` (validated later; a
    sweep's ``"0.1,0.5"`` or ``"0.1:2:0.1"`` stays a string until ``build_estimators``)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        est, dot, param = key.strip().partition(".")
        if not sep or not dot or not est or not param:
            raise EstimatorError("invalid_parameter", f"expected ESTIMATOR.PARAM=VALUE, got {item!r}")
        value = value.strip()
        parsed: Any = value
        if value.lower() in ("null", "none"):
            parsed = None
        out.setdefault(est, {})[param.strip()] = parsed
    return out


#: A spreadsheet runs a cell starting with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text starting with = + - @ tab or CR gets a leading ``'``
    (numbers are left alone: a negative number is no formula)."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


class FoundTruth(NamedTuple):
    """Ground truth found for a capture (None: none) and where (the sidecar's path)."""

    truth: Truth | None
    source: str | None


def sidecar_truth(path: Path) -> FoundTruth:
    """Ground truth stored next to a capture, if any (see module docstring)."""
    for suffix in (".truth.json", ".truth.yaml", ".truth.yml"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            text = side.read_text()
            import yaml  # only for a YAML sidecar: it costs a short command's start-up otherwise

            try:
                data = json.loads(text) if suffix.endswith("json") else yaml.safe_load(text)
            except (json.JSONDecodeError, yaml.YAMLError) as exc:
                raise EstimatorError("invalid_truth", f"{side}: not valid {suffix[7:].upper()}: {exc}") from exc
            if not isinstance(data, dict):
                raise EstimatorError("invalid_truth", f"{side}: expected a mapping of ground-truth keys")
            return FoundTruth(Truth.from_mapping(data), str(side))
    testbed = metadata_files(path)  # x.pcap.gz → x.json (x_rcv, x_mid: x.json too); the first found is read
    if testbed:
        meta = testbed[0]
        try:
            data = json.loads(meta.read_text())
        except json.JSONDecodeError:
            return FoundTruth(None, None)
        if isinstance(data, dict) and isinstance(data.get("bottleneck_rate_bps"), int | float):
            drops = data.get("random_loss_log")  # the testbed's per-loss labels (NFLOG), when it logged them
            return FoundTruth(Truth(bottleneck_bps=float(data["bottleneck_rate_bps"]), shared_by="all",
                                    random_drops=parse_drops(drops) if isinstance(drops, list) else None), str(meta))
    return FoundTruth(None, None)


def score_file(path: Path | str, estimators: Sequence[Estimator], *, truth: Truth | None = None,
               use_sidecar: bool = True, allow_vantage: bool = False,
               progress: ProgressFn | None = None, memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
               select: Callable[[Any], bool] | None = None, keep_series: bool = True,
               network_only: bool = True) -> ScoredCapture:
    """Ingest and replay one capture. Raises ``IngestError`` / ``EstimatorError`` on bad input. Without
    ``keep_series`` the flows' series are not kept (scores, decisions and diagnostics are); without
    ``network_only`` the scores cover the flows' whole time, not only where the network limited the sender."""
    path = Path(path)
    source = "command line" if truth is not None else None
    if truth is None and use_sidecar:
        truth, source = sidecar_truth(path)
    cap = ingest_capture(path, memory_budget=memory_budget,
                         progress=(lambda done, total: progress("ingest", done / max(total, 1)))
                         if progress else None)
    only = {s.flow_id for s in cap.flows if select(s)} if select is not None else None
    rep = replay_capture(cap, estimators, truth=truth, allow_vantage=allow_vantage, only=only, keep_series=keep_series,
                         network_only=network_only,
                         progress=(lambda done, total: progress("replay", done / max(total, 1))) if progress else None)
    return ScoredCapture(path, cap, rep, truth, source)


def summary_document(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A flow's summary fields (``FlowSummary.to_dict``) as its document in ``ackreplay score``'s and the service's
    JSON: all of them, but ``invalid`` only on a flow that breaks an invariant (its reasons also make the flow's
    ``skipped_reason``), so that a valid flow's document has the fields it always had."""
    return {k: v for k, v in summary.items() if k != "invalid" or v}


def capture_document(sc: ScoredCapture) -> dict[str, Any]:
    """The JSON document of one scored capture (the ``captures[]`` element of ``ackreplay score``)."""
    replayed = {f.flow_id: f for f in sc.replay.flows}
    frames = flow_frames(sc.ingest.acks, sc.ingest.segments)
    flows = []
    for s in sc.ingest.flows:
        doc = summary_document(s.to_dict())  # (flow_id is its first field)
        fr = replayed.get(s.flow_id)
        doc["replayed"] = fr is not None
        doc["skipped_reason"] = sc.replay.skipped.get(s.flow_id)
        doc["scores"] = fr.scores if fr is not None else {}
        doc["score_window_rel_s"] = list(fr.window) if fr is not None else None
        doc["diagnostics"] = fr.diagnostics if fr is not None else None
        doc["path"] = fr.path if fr is not None else None
        doc["path_models"] = path_models(fr.path, fr.decision_rows) if fr is not None and fr.path else None
        doc["limits"] = limit_shares(fr.limits) if fr is not None else None
        doc["comparable"] = fr.comparable_reason is None if fr is not None else None
        doc["comparable_reason"] = fr.comparable_reason if fr is not None else None
        # the packets behind its figures, by frame number in the file (as the service stores them: a replayed flow's)
        doc["frames"] = frames.get(s.flow_id) if fr is not None else None
        flows.append(doc)
    return {
        "file": str(sc.path),
        "stats": sc.ingest.stats.to_dict(),
        "truth": sc.truth.to_dict() if sc.truth is not None else None,
        "truth_source": sc.truth_source,
        "flows": flows,
        "scores": sc.replay.scores,
        "path_groups": sc.replay.path_groups,
    }


def limit_shares(limits: FlowLimits | None) -> dict[str, float] | None:
    """What limited a flow's sender: each label's share of its time (``scoring.limits.LABELS``, summing to 1)."""
    return dict(limits.shares) if limits is not None else None


def limit_record(limits: FlowLimits | None) -> dict[str, Any] | None:
    """What limited a flow's sender as the service stores and serves it: each label's share of its time, the
    intervals, consecutive intervals of one label merged (``[start, end, label]``, s since its first packet:
    the label at every moment, in far fewer rows than one per round trip), the share of its time it was idle
    and the receive window its first recovery ran into, and whether it paced (``FlowLimits.idle_share``,
    ``loss_rwnd_bytes``, ``paced_share``: the what-if reads them)."""
    if limits is None:
        return None
    return {"shares": dict(limits.shares), "intervals": [list(r) for r in limits.runs()],
            "idle_share": limits.idle_share, "loss_rwnd_bytes": limits.loss_rwnd_bytes,
            "paced_share": limits.paced_share}


def path_models(path: dict[str, Any], decision_rows: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any] | None:
    """What the papers' models predict on a flow's path (§9, ``path.analytic``): the buffer study's decrease
    factor, busy-link verdict and single-flow utilisation per decision rule, and Möller et al.'s (2007)
    NewReno/Westwood+ shares at its buffer/BDP (with and without the floor-half fix) and over a range of buffer/BDP
    around it (``share_model_curve``: the dashboard draws it); with the flow's ``decision_rows``, the buffer study's
    verdict for every replayed rule at this flow's losses (``replayed``); None when the path lacks a figure."""
    from ackreplay.path.analytic import (
        PathModel,
        busy_link_verdicts,
        newreno_westwood_curve,
        newreno_westwood_shares,
        replayed_verdicts,
    )

    c, rtt, over = path.get("capacity_bps"), path.get("base_rtt_s"), path.get("buffer_over_bdp")
    if not c or not rtt or over is None:
        return None
    hi = max(8.0, 2.0 * over)
    curve = [{"buffer_over_bdp": p["buffer_over_bdp"], "newreno": p["newreno"], "westwood_plus": p["westwood_plus"],
              "westwood_plus_floor_half": f["westwood_plus"]}
             for p, f in zip(newreno_westwood_curve(0.05, hi, 25),
                             newreno_westwood_curve(0.05, hi, 25, floor_half=True), strict=True)]
    return {"busy_link": busy_link_verdicts(PathModel.of(c, rtt, over)), "share_model": newreno_westwood_shares(over),
            "share_model_floor_half": newreno_westwood_shares(over, floor_half=True), "share_model_curve": curve,
            "replayed": replayed_verdicts(decision_rows, over)}


def document(scored: Sequence[ScoredCapture], estimators: Sequence[Estimator]) -> dict[str, Any]:
    return {"ackreplay_version": VERSION, "estimators": describe(estimators),
            "captures": [capture_document(sc) for sc in scored]}

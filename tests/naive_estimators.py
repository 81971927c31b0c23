"""Row-by-row versions of replay and estimator code that only the tests call: adapters from one flow's rows to
the compiled kernels, which the tests compare with numpy's own expressions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ackreplay.replay.decisions import decision_scores_kernel
from ackreplay.replay.results import DECISION_KEYS, DECISION_TRUTH_KEYS


def decision_scores_of(rows: Sequence[Mapping[str, Any]], with_truth: bool) -> dict[str, Any]:
    """The §5 decision scores of one estimator's decision rows at one flow's loss events (``ssthresh_segments``,
    ``ideal_segments``, ``ideal_truth_segments``, ``newreno_ssthresh_segments``; None = none), by the batched
    kernel: ``decisions`` counts every event with an ssthresh; the ratios use the events with an ideal > 0."""
    def col(name: str) -> np.ndarray:
        return np.array([np.nan if r.get(name) is None else float(r[name]) for r in rows], np.float64)

    out = decision_scores_kernel(np.array([0, len(rows)], np.int64), col("ssthresh_segments"),
                                 col("ideal_segments"), col("ideal_truth_segments"),
                                 col("newreno_ssthresh_segments"), with_truth)[0].tolist()
    scores: dict[str, Any] = {k: (None if math.isnan(v) else v) for k, v in zip(DECISION_KEYS[:4], out, strict=False)}
    scores["decisions"] = int(out[4])
    if with_truth:
        scores.update({k: (None if math.isnan(v) else v) for k, v in zip(DECISION_TRUTH_KEYS, out[5:], strict=True)})
    return scores

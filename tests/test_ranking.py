"""Rankings that can be trusted (issue #12): every score declares what "best" means, one-sided shares are not
ranked alone, the default ranking is the documented composite with its spread over flows, and an estimator
that over-estimates everywhere is never ranked first for it."""

from __future__ import annotations

import random

import pytest

from ackreplay.cli.score_table import score_cells, score_table
from ackreplay.scoring.ranking import DIRECTIONS, ORDER, board, derived, quartiles


def _flows(n: int = 12) -> dict[int, dict[str, dict[str, float]]]:
    """Synthetic flows: `over` over-estimates by ~60 % everywhere (ssthresh 1.6× the ideal), `good` is within
    ~10 %, `under` under-estimates by ~30 %; all equally stable (cov), none converges faster by luck."""
    rng = random.Random(7)
    out = {}
    for f in range(n):
        j = lambda x: x * rng.uniform(0.9, 1.1)  # noqa: E731
        out[f] = {
            "over": {"mean_signed_rel_error": j(0.6), "mean_abs_rel_error": j(0.6), "nrmse": j(0.7),
                     "over_share": 0.95, "under_share": 0.0, "cov": j(0.3), "convergence_s": None,
                     "ssthresh_over_ideal_median": j(1.6), "ssthresh_over_ideal_mean": j(1.7),
                     "closer_than_newreno_share": j(0.2)},
            "good": {"mean_signed_rel_error": j(-0.03), "mean_abs_rel_error": j(0.1), "nrmse": j(0.15),
                     "over_share": 0.08, "under_share": 0.1, "cov": j(0.3), "convergence_s": j(2.0),
                     "ssthresh_over_ideal_median": j(0.97), "ssthresh_over_ideal_mean": j(0.98),
                     "closer_than_newreno_share": j(0.8)},
            "under": {"mean_signed_rel_error": j(-0.3), "mean_abs_rel_error": j(0.3), "nrmse": j(0.35),
                      "over_share": 0.0, "under_share": 0.9, "cov": j(0.3), "convergence_s": None,
                      "ssthresh_over_ideal_median": j(0.7), "ssthresh_over_ideal_mean": j(0.7),
                      "closer_than_newreno_share": j(0.5)},
        }
    return out


def test_every_score_declares_what_best_means_and_the_composite_comes_first():
    assert ORDER[0] == "composite_error" and DIRECTIONS["composite_error"][:2] == ("min", True)
    assert DIRECTIONS["mean_signed_rel_error"][0] == "zero" and DIRECTIONS["mean_abs_rel_error"][0] == "min"
    assert DIRECTIONS["ssthresh_over_ideal_median"][0] == "one"
    assert not DIRECTIONS["over_share"][1] and not DIRECTIONS["under_share"][1]  # one-sided: never alone
    assert DIRECTIONS["off_share"][1]


def test_an_estimator_that_over_estimates_everywhere_is_never_ranked_first():
    b = board(_flows())
    for score, entry in b["scores"].items():
        over = entry["estimators"]["over"]
        if not entry["ranked"]:
            assert "rank" not in over and over["wins"] == 0  # where it would "win" (under_share): no rank
            continue
        if score == "cov":
            continue  # stability: a steady estimate is steady whichever way it errs (all tie here)
        assert over.get("rank") != 1, score
        assert over["wins"] == 0, score
    assert b["scores"]["composite_error"]["estimators"]["good"]["rank"] == 1
    assert b["scores"]["under_share"]["estimators"]["over"]["median"] == 0.0  # reported, not rewarded
    # the spread is shown: median and interquartile range over flows
    e = b["scores"]["mean_abs_rel_error"]["estimators"]["over"]
    assert e["q1"] <= e["median"] <= e["q3"] and e["flows"] == 12


def test_the_cli_table_never_stars_a_one_sided_share():
    flows = _flows(1)[0]
    scores = {n: {**s, "mean_bps": 1e6} for n, s in flows.items()}
    names, headers, cells = score_cells(scores, with_truth=False)
    over_col, under_col = headers.index(("over", "share")), headers.index(("under", "share"))
    for name, row in zip(names, cells, strict=True):
        assert not row[over_col].endswith("*") and not row[under_col].endswith("*"), name
    assert any(n == "good" and any(c.endswith("*") for c in row) for n, row in zip(names, cells, strict=True))
    table = score_table(scores, with_truth=False, width=None)  # the rendered table shows the same cells
    assert [line.split()[0] for line in table.splitlines()[3:]] == names


def test_derived_scores_and_quartiles():
    d = derived({"over_share": 0.2, "under_share": 0.1, "mean_abs_rel_error": 0.2,
                 "ssthresh_over_ideal_median": 1.0})
    assert d["off_share"] == pytest.approx(0.3) and d["composite_error"] == pytest.approx(0.1)
    assert derived({"mean_abs_rel_error": 0.4})["composite_error"] == pytest.approx(0.4)
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)


def test_board_statistics_bootstrap_intervals_ties_and_the_minimum_sample():
    """Seeded bootstrap intervals of each median (the same every time), the flows behind each, ties where the
    intervals of the ranking key overlap, a warning under the minimum sample; over captures when grouped."""
    from ackreplay.scoring.ranking import MIN_FLOWS, board, bootstrap_medians, interval

    near = {i: {"a": {"mean_abs_rel_error": 0.10 + 0.01 * (i % 5)}, "b": {"mean_abs_rel_error": 0.11 + 0.01 * (i % 5)},
                "c": {"mean_abs_rel_error": 0.90 + 0.01 * (i % 5)}} for i in range(30)}
    got = board(near)
    assert got == board(near) and got["warning"] is None and got["resampled"] == "flows"
    e = got["scores"]["mean_abs_rel_error"]["estimators"]
    assert e["a"]["ci"][0] <= e["a"]["median"] <= e["a"]["ci"][1] and e["a"]["flows"] == 30 and not e["a"]["few"]
    assert e["a"]["ties"] == ["b"] and e["b"]["ties"] == ["a"] and e["c"]["ties"] == []  # c is clearly last
    few = board({k: v for k, v in near.items() if k < MIN_FLOWS - 1})
    assert few["warning"].startswith(f"{MIN_FLOWS - 1} flow(s), under {MIN_FLOWS}")
    assert few["scores"]["mean_abs_rel_error"]["estimators"]["a"]["few"]
    # grouped: two captures, one holding 1.0 on 10 flows, the other 2.0 on 10 — resampling the captures draws
    # one capture twice in half of the resamples (the median then its value): the interval spans both
    xs, caps = [1.0] * 10 + [2.0] * 10, ["x"] * 10 + ["y"] * 10
    assert interval(bootstrap_medians(xs, caps)) == (1.0, 2.0)

"""Parameter sweeps (issue #25): -p re.tau=0.25,0.5,1 or START:STOP:STEP replays one variant per value over
the same ingested stream, in the CLI and the API, with a sensitivity plot under --out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from ackreplay.core.capture_scoring import build_estimators, parse_params
from ackreplay.estimators import EstimatorError
from ackreplay.estimators.sweep import MAX_VARIANTS, from_spec, sweep_values, variant_spec
from tests.conftest import ROOT
from tests.service.harness import client, configured, upload, wait_run
from tests.valuecompare import differences

SAMPLE = ROOT / "samples" / "sample.pcap"


def test_sweep_values_lists_and_ranges() -> None:
    assert sweep_values("re.tau", "0.25,0.5, 1") == ["0.25", "0.5", "1"]
    assert sweep_values("tibet.a", "0.9:0.99:0.03") == [0.9, 0.93, 0.96, 0.99]
    assert sweep_values("re.tau", "0.1:0.5:0.2") == [0.1, 0.3, 0.5]
    assert sweep_values("re.tau", [1, 2]) == [1, 2] and sweep_values("re.tau", "0.5") is None
    for bad, code in (("1:0:1", "invalid_parameter"), ("0:1:0", "invalid_parameter"), ("a:b:c", "invalid_parameter"),
                      ("0:1000:1", "too_many_variants"), ("1,,2", "invalid_parameter"),
                      # more steps than a float holds, or than an integer should be made of: refused before counting
                      ("0:1e308:1e-308", "too_many_variants"), ("-1e308:1e308:1", "too_many_variants"),
                      ("0:1:5e-324", "too_many_variants"), ("0:1e300:1e-10", "too_many_variants")):
        with pytest.raises(EstimatorError) as exc:
            sweep_values("re.tau", bad)
        assert exc.value.code == code and "re.tau" in exc.value.message


def test_numbers_no_float_holds_are_invalid_parameters_not_overflows() -> None:
    """An integer of 400 digits (JSON allows it) overflowed float() inside validation: a 500 from POST /runs."""
    from ackreplay.estimators.registry import create

    for name, param in (("re", "tau"), ("bbr_bw", "rtt_window")):
        for value in (10**400, -(10**400), "1" + "0" * 400, "1e400"):
            with pytest.raises(EstimatorError) as exc:
                create(name, **{param: value})
            assert exc.value.code == "invalid_parameter", (name, exc.value.message)
    assert create("bbr_bw", rtt_window=12).params["rtt_window"] == 12 and create("re", tau=3).params["tau"] == 3.0


def test_variants_are_named_validated_and_round_trip() -> None:
    ests = build_estimators(["be", "re"], parse_params(["re.tau=0.25,0.5,1"]))
    assert [e.name for e in ests] == ["be", "re[tau=0.25]", "re[tau=0.5]", "re[tau=1.0]"]
    assert [e.kind for e in ests] == ["be", "re", "re", "re"] and ests[2].params["tau"] == 0.5
    spec = variant_spec(ests)
    assert spec[0] == {"name": "be", "parameters": ests[0].params} and spec[1]["estimator"] == "re"
    again = from_spec(json.loads(json.dumps(spec)))
    assert [(e.name, e.params) for e in again] == [(e.name, e.params) for e in ests]
    with pytest.raises(EstimatorError) as exc:
        build_estimators(["re"], parse_params(["re.tau=0.5,-1"]))
    assert exc.value.code == "parameter_out_of_range"
    with pytest.raises(EstimatorError) as exc:  # two swept parameters multiply
        build_estimators(["tibet"], parse_params(["tibet.a=0.5:0.99:0.05", "tibet.ncong=1:9:1"]))
    assert exc.value.code == "too_many_variants" and str(MAX_VARIANTS) in exc.value.message


def test_a_sweep_from_the_cli_scores_each_variant_like_a_single_run(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["score", str(SAMPLE), "-e", "re", "-p", "re.tau=0.25,0.5,1,2,4", "-f", "json",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    names = [e["name"] for e in doc["estimators"]]
    assert names == ["re[tau=0.25]", "re[tau=0.5]", "re[tau=1.0]", "re[tau=2.0]", "re[tau=4.0]"]
    assert {e["estimator"] for e in doc["estimators"]} == {"re"}
    (flow,) = [f for f in doc["captures"][0]["flows"] if f["bytes"] > 1e6]
    means = [flow["scores"][n]["mean_bps"] for n in names]
    assert len(set(means)) == 5  # each value replayed, not one result copied
    single = CliRunner().invoke(app, ["score", str(SAMPLE), "-e", "re", "-p", "re.tau=0.5", "-f", "json"])
    (alone,) = [f for f in json.loads(single.stdout)["captures"][0]["flows"] if f["bytes"] > 1e6]
    assert not list(differences(alone["scores"]["re"], flow["scores"]["re[tau=0.5]"]))
    plot = tmp_path / "sensitivity_re_tau.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
    table = CliRunner().invoke(app, ["score", str(SAMPLE), "-e", "re", "-p", "re.tau=0.5:1:0.5", "--no-legend"])
    assert "re[tau=0.5]" in table.stdout and "re[tau=1.0]" in table.stdout


def test_a_sweep_through_the_api(tmp_path: Path) -> None:
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        api = client()
        cid = upload(api, SAMPLE).json()["capture"]["id"]
        r = api.post("/api/v1/runs", json={"captures": [cid], "estimators": [
            "be", {"name": "re", "parameters": {"tau": [0.25, 0.5, 1, 2, 4]}}]})
        assert r.status_code == 202, r.text
        run = wait_run(api, r.json()["run_id"])
        assert run["status"] == "succeeded"
        assert [e["name"] for e in run["estimators"]] == ["be", "re[tau=0.25]", "re[tau=0.5]", "re[tau=1.0]",
                                                          "re[tau=2.0]", "re[tau=4.0]"]
        assert run["estimators"][2]["estimator"] == "re" and "estimator" not in run["estimators"][0]
        rows = api.get(f"/api/v1/runs/{run['id']}/scores", params={"estimator": "re[tau=0.5]"}).json()["items"]
        assert rows and all(r["parameters"]["tau"] == 0.5 for r in rows)
        # the board behind the dashboard's compare page ranks the variants side by side
        board = api.get("/api/v1/leaderboard", params={"runs": run["id"]}).json()
        # τ = 4 s needs 20 s of network-limited time (scoring.comparable): the sample's flow is left out ...
        assert board["flows"] == 0 and board["incomparable"] == 1
        board = api.get("/api/v1/leaderboard", params={"runs": run["id"], "include_incomparable": True}).json()
        assert set(board["estimators"]) == {e["name"] for e in run["estimators"]}  # ... unless asked
        ranks = {n: board["scores"]["mean_abs_rel_error"]["estimators"][n]["rank"] for n in board["estimators"]}
        assert sorted(ranks.values()) == [1, 2, 3, 4, 5, 6]
        bad = api.post("/api/v1/runs", json={"captures": [cid], "estimators": [
            {"name": "re", "parameters": {"tau": "0:1000:1"}}]})
        assert bad.status_code == 422 and bad.json()["error"] == "too_many_variants"
        long = api.post("/api/v1/runs", json={"captures": [cid], "estimators": [
            {"name": "newbr", "parameters": {"beta": [0.9047619047619048, 0.8], "gamma": [10.5, 11.25]}}]})
        assert long.status_code == 422 and "longer than 40" in long.json()["detail"]

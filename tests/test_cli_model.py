"""``ackreplay model CAPTURE``: the analytic models on the path a capture shows, each figure with its source, what-ifs
in place of a figure, and what is missing and why."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from ackreplay.path.analytic import newreno_westwood_shares
from tests.conftest import ROOT, SHARED, shared_captures

SAMPLE = ROOT / "samples" / "sample.pcap"
S01 = SHARED / "generated" / "s01_cubic_1f_10M_rtt40_buf1bdp.pcap"  # a buffer of one BDP: every figure
S02 = SHARED / "generated" / "s02_bbr_1f_10M_rtt40_buf4bdp.pcap"  # no loss: no buffer figure
runner = CliRunner()


def run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_the_models_run_on_the_path_score_infers():
    """The largest bulk flow's path, each figure from the capture with its evidence — the same figures as the score
    document's ``path`` — and the models on them."""
    code, out, _ = run("score", S01, "-e", "newreno", "-f", "json")
    path = next(f for f in json.loads(out)["captures"][0]["flows"] if f["flow_id"] == 2)["path"]
    code, out, _ = run("model", S01, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["flow_id"] == 2 and "largest bulk flow" in doc["chosen"]
    for key in ("capacity_bps", "base_rtt_s", "buffer_over_bdp"):
        assert doc["figures"][key]["value"] == path[key] and doc["figures"][key]["source"] == "capture"
    assert "packet-pair dispersion mode" in doc["figures"]["capacity_bps"]["note"]
    assert doc["share_model"] == newreno_westwood_shares(path["buffer_over_bdp"])
    assert set(doc["busy_link"]) >= {"newreno", "westwood_plus", "cubic"} and "real_sender" in doc["replayed"]
    code, out, _ = run("model", S01)
    text = " ".join(out.split())
    assert code == 0 and "flow 2, the largest bulk flow" in text and "capacity: 10.02 Mbit/s" in text
    assert "from the capture: packet-pair dispersion mode" in text
    assert "(Möller et al., NGI 2007) at B = 0.9857×BDP" in text
    assert "single-flow model, one flow on 10.02 Mbit/s, 40.51 ms" in text and "b: the window's decrease factor" in text
    assert "busy-link rule at this flow's 9 losses" in text


def test_an_option_is_a_what_if_in_place_of_the_captures_figure():
    code, out, _ = run("model", S01, "--buffer-bdp", "4", "--json")
    doc = json.loads(out)
    buffer = doc["figures"]["buffer_over_bdp"]
    assert code == 0 and buffer["value"] == 4 and buffer["source"] == "--buffer-bdp"
    assert buffer["note"].startswith("what-if (the capture shows 0.9857)")
    assert doc["figures"]["capacity_bps"]["source"] == "capture" and doc["share_model"] == newreno_westwood_shares(4)


def test_an_incomplete_path_says_what_is_missing_and_why():
    """s02 lost nothing, so its buffer never overflowed: no buffer/BDP, and no model runs until a what-if gives
    one."""
    code, out, _ = run("model", S02)
    assert code == 0
    assert "buffer/BDP: —, missing: no buffer: no loss in the capture" in " ".join(out.split())
    assert "NewReno/Westwood+ sharing (Möller et al., NGI 2007): needs the buffer/BDP" in out
    assert "busy-link rule and single-flow model: needs the buffer/BDP" in out
    code, out, _ = run("model", S02, "--json")
    doc = json.loads(out)
    assert doc["figures"]["buffer_over_bdp"]["source"] == "missing" and doc["share_model"] is None is doc["busy_link"]
    assert doc["figures"]["capacity_bps"]["source"] == "capture"
    code, out, _ = run("model", S02, "--buffer-bdp", "4", "--json")
    assert code == 0 and json.loads(out)["busy_link"]["newreno"]["busy_link"]


def test_a_flow_not_replayed_or_unknown():
    code, out, _ = run("model", SAMPLE, "--flow", "1")
    assert code == 0 and "flow 1 was not replayed: vantage receiver" in " ".join(out.split())
    assert "capacity: —, missing: --capacity gives one" in out
    code, _, err = run("model", SAMPLE, "--flow", "9")
    assert code == 4 and "error [flow_not_found]" in err
    code, _, err = run("model", SAMPLE, "--curve", "1:2")
    assert code == 2 and "takes no capture" in err
    code, _, err = run("model", "--flow", "2")
    assert code == 2 and "give the capture too" in err


@pytest.mark.slow
def test_model_works_on_every_shared_capture():
    """Every shared capture: a flow's figures, each from the capture or missing with a reason, and the models that
    the figures allow."""
    for capture in shared_captures():
        code, out, err = run("model", capture, "--json")
        assert code == 0, (capture, err)
        doc = json.loads(out)
        for key, fig in doc["figures"].items():
            assert (fig["value"] is None) == (fig["source"] == "missing") and fig["note"], (capture, key)
        assert (doc["share_model"] is None) == (doc["figures"]["buffer_over_bdp"]["value"] is None), capture
        if doc["flow_id"] is None:
            assert doc["chosen"].startswith("no flow was replayed"), capture

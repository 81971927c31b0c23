"""``ackreplay whatif CAPTURE``: the JSON document's shape, the table, and every refusal's exit code and message."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
TESTBED = DATA / "testbed" / "cubic_1f_10M_rtt40_buf025bdp.pcap.gz"
RESULT_KEYS = {"goodput_bps", "utilisation", "loss_rate", "queue_delay_mean_s", "queue_delay_p95_s", "share"}
runner = CliRunner()


def run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_the_json_holds_each_algorithms_figures_with_ranges_and_the_self_check() -> None:
    code, out, err = run("whatif", TESTBED, "-e", "cubic,westwood_plus", "--duration", "5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["flow_id"] == 2 and list(doc["results"]) == ["cubic", "westwood_plus"] and doc["withheld"] is None
    sc = doc["self_check"]
    assert {"algorithm", "goodput_ratio", "loss_rate_ratio", "passed"} <= set(sc)
    assert sc["algorithm"] == "cubic" and sc["passed"] is True
    for r in doc["results"].values():
        assert set(r) >= RESULT_KEYS and set(r["ranges"]) == RESULT_KEYS
        for key in RESULT_KEYS:
            lo, hi = r["ranges"][key]
            assert lo <= r[key] <= hi
        assert 0.5 < r["utilisation"] <= 1.0 and r["share"] == 1.0
        assert 0 <= r["queue_delay_mean_s"] <= r["queue_delay_p95_s"] < 0.05
        series = r["series"]
        assert len(series["t"]) == len(series["cwnd"]) == len(series["queue_delay_s"]) > 100
        assert series["t"][-1] <= 5.0
        assert r["ranges"]["goodput_bps"][0] < r["goodput_bps"] < r["ranges"]["goodput_bps"][1]
    assert doc["duration_s"] == 5.0 and doc["path"]["confidence"] == "high"
    assert doc["captured"]["goodput_bps"] == pytest.approx(9.06e6, rel=0.01)
    assert set(doc["path"]["ranges"]) == {"capacity_bps", "base_rtt_s", "buffer_bytes", "random_loss_rate"}
    assert doc["path"]["paced"] is True


def test_the_same_seed_gives_the_same_document_and_the_table_shows_it() -> None:
    _, a, _ = run("whatif", TESTBED, "-e", "newreno", "--duration", "3", "--json", "--seed", "7")
    _, b, _ = run("whatif", TESTBED, "-e", "newreno", "--duration", "3", "--json", "--seed", "7")
    assert json.loads(a) == json.loads(b)
    code, out, _ = run("whatif", TESTBED, "-e", "newreno,stcp", "--duration", "3")
    text = " ".join(out.split())
    assert code == 0 and "self-check (cubic" in text and "passed" in text
    assert "the sender paced (every sender re-enacted paces)" in text  # (the testbed's sender paced)
    assert "newreno" in text and "stcp" in text and "captured" in text and "[low–high]" in text


def test_on_a_lossy_path_every_algorithm_meets_the_captures_drops_and_the_table_says_so() -> None:
    """``paths/r20_rtt30_loss``: its 14 random drops replayed in every run, the self-check's and each algorithm's;
    the rate draws only in the 322 segments of the overflows' windows and past the capture's 4 091."""
    code, out, err = run("whatif", DATA / "paths" / "r20_rtt30_loss.pcap.gz", "-e", "newreno,cubic", "--duration", "3",
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["path"]["random_drops"] == {"replayed": 14, "hidden_segments": 322, "segments": 4091}
    assert doc["self_check"]["simulated"]["decided_by"] == "replayed_drops"
    for r in doc["results"].values():
        assert r["loss_events"] >= 1 and r["ranges"]["goodput_bps"][0] <= r["goodput_bps"]
    code, out, _ = run("whatif", DATA / "paths" / "r20_rtt30_loss.pcap.gz", "-e", "newreno", "--duration", "3")
    text = " ".join(out.split())
    assert code == 0 and "the capture's 14 random drops replayed in every run" in text
    assert "the mean over 10 draws at the rate, beside it: goodput ratio 1.051" in text


def test_a_westwood_family_estimator_decides_in_the_loop_at_each_loss() -> None:
    """TIBET and BE in control (NewReno's growth, their own ssthresh at each loss event) on the testbed path: they
    run, fill a link whose buffer is a quarter of the BDP better than NewReno's halving leaves it idle, and lose."""
    code, out, err = run("whatif", TESTBED, "-e", "tibet,be,newreno", "--duration", "5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc["results"]) == ["tibet", "be", "newreno"] and doc["withheld"] is None
    for name in ("tibet", "be"):
        r = doc["results"][name]
        assert set(r) >= RESULT_KEYS and 0.5 < r["utilisation"] <= 1.0 and r["loss_rate"] > 0
        assert r["utilisation"] >= doc["results"]["newreno"]["utilisation"] - 0.02


@pytest.mark.parametrize(("args", "exit_code", "words"), [
    (("-e", "cubic,vegas"), 2, "[unknown_algorithm]: unknown algorithm 'vegas' (accepted: newreno, westwood_plus"),
    (("--duration", "0"), 2, "[bad_duration]"),
    (("--duration", "500"), 2, "[bad_duration]: --duration is in (0, 120] s, not 500"),
    (("--flow", "99"), 4, "[flow_not_found]"),
])
def test_bad_options_exit_with_a_code_and_a_message(args: tuple[str, ...], exit_code: int, words: str) -> None:
    code, out, err = run("whatif", TESTBED, *args)
    assert code == exit_code and words in " ".join(err.split()) and out == ""


def test_a_path_without_a_figure_exits_6_naming_it() -> None:
    code, _, err = run("whatif", DATA / "ns3" / "cubic_2f_bdp1.newreno.pcap.gz", "-e", "cubic")
    assert code == 6 and "[path_incomplete]" in err and "the path lacks buffer_bytes" in err


def test_a_failed_self_check_withholds_the_results_with_the_reason() -> None:
    """ns-3's H-TCP flow re-enacted as the STCP sender the user says it ran (on ns-3's stack, the capture's metadata
    says ns-3): 4.4 times its loss events."""
    code, out, _ = run("whatif", DATA / "ns3" / "htcp_1f_bdp1.pcap.gz", "-e", "cubic", "--sender-cc", "stcp", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["results"] == {} and doc["self_check"]["passed"] is False
    assert doc["withheld"].startswith("the self-check failed") and doc["withheld_code"] == "not_reproduced"
    code, out, _ = run("whatif", DATA / "ns3" / "htcp_1f_bdp1.pcap.gz", "-e", "cubic", "--sender-cc", "stcp")
    assert "what-if withheld [not_reproduced]: the self-check failed" in " ".join(out.split())


def test_the_help_lists_every_algorithm_the_loop_accepts() -> None:
    """The ``-e`` help names the algorithms as fixed text (``--help`` loads no registry): it must name exactly the
    compiled controls and the built-in estimators the loop accepts, so a new estimator cannot go unlisted."""
    import re
    from typing import get_type_hints

    from ackreplay.cli.whatif_cmd import whatif
    from ackreplay.sim.model import CONTROLS
    from ackreplay.whatif.algorithms import accepted

    help_text = str(get_type_hints(whatif, include_extras=True)["algorithms"].__metadata__[0].help)
    found = re.search(r"control: (.*?) \(default.*?estimator \((.*?)\)", help_text)
    assert found is not None, help_text
    compiled, estimators = found.groups()
    assert compiled.split(", ") == list(CONTROLS)
    assert set(estimators.split(", ")) == set(accepted()) - set(CONTROLS)


def test_bbr_is_put_in_control_and_bbr_bw_names_it() -> None:
    """A Linux BBR sender (tests/data/bbr, 10 Mbit/s, 40 ms, 2 BDP) re-enacted as BBR passes the self-check; BBR
    (asked for as ``bbr_bw``) gets CUBIC's goodput there with a fraction of its queue: it paces at its estimate of
    the bottleneck's rate instead of filling the buffer until a loss."""
    code, out, err = run("whatif", DATA / "bbr" / "bbr_1f_10M_rtt40_buf2bdp.pcap.gz", "-e", "bbr_bw,cubic",
                         "--sender-cc", "bbr", "--duration", "5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["self_check"]["algorithm"] == "bbr" and doc["self_check"]["passed"], doc["self_check"]
    assert list(doc["results"]) == ["bbr", "cubic"]
    bbr, cubic = doc["results"]["bbr"], doc["results"]["cubic"]
    assert bbr["utilisation"] > 0.9 and abs(bbr["goodput_bps"] / cubic["goodput_bps"] - 1) < 0.05
    assert bbr["queue_delay_mean_s"] < cubic["queue_delay_mean_s"] / 3

"""``POST /runs/{r}/captures/{c}/flows/{f}/whatif``: the what-if on the path the run inferred — the same figures as
``ackreplay whatif`` on the same capture — and its refusals, each a 422 with its code."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from ackreplay.core import run_views
from tests.conftest import ROOT
from tests.service.harness import client, configured, upload, wait_run

TESTBED = ROOT / "tests" / "data" / "testbed" / "cubic_1f_10M_rtt40_buf025bdp.pcap.gz"
PAIR = ROOT / "tests" / "data" / "pairs" / "two.pcap.gz"  # flows 2 (CUBIC) and 5 (Reno) share the bottleneck


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path_factory.mktemp("whatif") / "data")}):
        yield uploaded(client(), TESTBED)


def test_the_api_gives_the_clis_what_if(ran):
    api, flows = ran
    r = api.post(f"{flows}/2/whatif", json={"algorithms": ["cubic", "newreno"], "duration_s": 4, "sender_cc": "cubic"})
    assert r.status_code == 200, r.text
    doc = r.json()
    cli = json.loads(CliRunner().invoke(app, ["whatif", str(TESTBED), "-e", "cubic,newreno", "--duration", "4",
                                              "--json"]).stdout)
    assert doc["path"]["figures"] == pytest.approx(cli["path"]["figures"], rel=1e-9)
    assert doc["path"]["ranges"]["random_loss_rate"] == pytest.approx(cli["path"]["ranges"]["random_loss_rate"])
    # the receive window and the idle share come with the flow's stored limits, as the CLI reads them
    assert doc["path"]["rwnd_bytes"] == cli["path"]["rwnd_bytes"] and cli["path"]["rwnd_bytes"] > 0
    assert doc["captured"]["idle_share"] == pytest.approx(cli["captured"]["idle_share"], abs=1e-12)
    assert doc["path"]["paced"] is cli["path"]["paced"] is True  # (the testbed's sender paced: its stored limits)
    assert doc["self_check"]["passed"] is True and doc["self_check"]["algorithm_source"] == "given"
    assert doc["self_check"]["goodput_ratio"] == pytest.approx(cli["self_check"]["goodput_ratio"], rel=1e-9)
    for alg in ("cubic", "newreno"):
        for key in ("goodput_bps", "utilisation", "loss_rate", "queue_delay_mean_s", "share"):
            assert doc["results"][alg][key] == pytest.approx(cli["results"][alg][key], rel=1e-9), (alg, key)
        assert doc["results"][alg]["ranges"]["goodput_bps"] == pytest.approx(cli["results"][alg]["ranges"]
                                                                              ["goodput_bps"], rel=1e-9)
    assert len(doc["results"]["cubic"]["series"]["t"]) > 100


@pytest.mark.parametrize(("flow", "body", "status", "code"), [
    (2, {"algorithms": ["vegas"]}, 422, "unknown_algorithm"),
    (2, {"duration_s": 100}, 422, "invalid_request"),
    (0, {"algorithms": ["cubic"]}, 422, "path_incomplete"),
    (9, {}, 404, "results_not_found"),
])
def test_refusals_carry_their_code(ran, flow, body, status, code):
    api, flows = ran
    r = api.post(f"{flows}/{flow}/whatif", json=body)
    assert (r.status_code, r.json()["error"]) == (status, code), r.text
    if code == "unknown_algorithm":
        assert "accepted: newreno, westwood_plus" in r.json()["detail"]


def test_a_request_beyond_the_services_bound_is_refused(ran, monkeypatch):
    api, flows = ran
    monkeypatch.setattr(run_views, "WHATIF_MAX_PACKETS", 10_000)
    r = api.post(f"{flows}/2/whatif", json={"duration_s": 10})
    assert r.status_code == 422 and r.json()["error"] == "whatif_too_large"
    assert "fewer algorithms or a shorter duration_s" in r.json()["detail"]


def uploaded(api, capture):
    """``capture`` uploaded and run: the client and its flows' URL."""
    body = upload(api, capture).json()
    assert wait_run(api, body["run_id"])["status"] == "succeeded"
    return api, f"/api/v1/runs/{body['run_id']}/captures/{body['capture']['id']}/flows"


@pytest.fixture(scope="module")
def pair(ran):
    api, _ = ran
    return uploaded(api, PAIR)


def test_a_flow_after_its_groups_first_has_the_group_as_cross_traffic(pair):
    """The group is stored once, by its first flow (2): flow 5's what-if finds it through ``path_group_of``
    and races flow 2 as the CLI does (CUBIC: the capture's metadata there, Linux's default here)."""
    api, flows = pair
    r = api.post(f"{flows}/5/whatif", json={"algorithms": ["newreno"], "duration_s": 2, "sender_cc": "reno"})
    assert r.status_code == 200, r.text
    doc = r.json()
    cli = json.loads(CliRunner().invoke(app, ["whatif", str(PAIR), "--flow", "5", "-e", "newreno", "--duration", "2",
                                              "--json"]).stdout)
    assert [(c["flow_id"], c["control"]) for c in doc["cross_traffic"]] == [(2, "cubic")]
    assert doc["cross_traffic"][0]["paced"] is cli["cross_traffic"][0]["paced"] is True  # (flow 5's host's)
    assert doc["cross_traffic"][0]["offset_s"] == pytest.approx(cli["cross_traffic"][0]["offset_s"], rel=1e-9)
    assert doc["captured"]["share"] == pytest.approx(cli["captured"]["share"], rel=1e-9)
    assert doc["self_check"]["goodput_ratio"] == pytest.approx(cli["self_check"]["goodput_ratio"], rel=1e-9)


LOSSY = ROOT / "tests" / "data" / "paths" / "r20_rtt30_loss.pcap.gz"  # 0.37 % random loss, 14 drops seen


@pytest.fixture(scope="module")
def lossy(ran):
    api, _ = ran
    return uploaded(api, LOSSY)


def test_the_capture_s_random_drops_are_stored_and_replayed_as_the_cli_replays_them(lossy):
    """The run stores the flow's random drops with its diagnostics; the what-if's self-check and runs meet them, as
    the CLI's do: the same drops, the same decisive run, the same mean over draws beside it."""
    api, flows = lossy
    r = api.post(f"{flows}/2/whatif", json={"algorithms": ["newreno"], "duration_s": 3, "sender_cc": "cubic"})
    assert r.status_code == 200, r.text
    doc = r.json()
    cli = json.loads(CliRunner().invoke(app, ["whatif", str(LOSSY), "-e", "newreno", "--duration", "3",
                                              "--json"]).stdout)
    assert doc["path"]["random_drops"] == cli["path"]["random_drops"] == {"replayed": 14, "hidden_segments": 322,
                                                                          "segments": 4091}
    sim, cli_sim = doc["self_check"]["simulated"], cli["self_check"]["simulated"]
    assert sim["decided_by"] == cli_sim["decided_by"] == "replayed_drops"
    assert doc["self_check"]["goodput_ratio"] == pytest.approx(cli["self_check"]["goodput_ratio"], rel=1e-9)
    assert sim["draws"]["goodput_ratio"] == pytest.approx(cli_sim["draws"]["goodput_ratio"], rel=1e-9)
    assert doc["results"]["newreno"]["goodput_bps"] == pytest.approx(cli["results"]["newreno"]["goodput_bps"],
                                                                     rel=1e-9)


DLOSS = ROOT / "tests" / "data" / "pairs" / "dloss.pcap.gz"  # no loss followed a full queue: the buffer is bounded


def test_a_buffer_bounded_below_is_searched_under_the_stored_flight_room_as_the_cli_searches_it(ran):
    """The run stores what the flow's largest flight could queue beyond the BDP (``buffer_room_bytes``) beside the
    buffer's bound; the what-if's least consistent buffer is searched under it and comes out as the CLI's."""
    api, flows = uploaded(ran[0], DLOSS)
    r = api.post(f"{flows}/2/whatif", json={"algorithms": ["newreno"], "duration_s": 2, "sender_cc": "cubic"})
    assert r.status_code == 200, r.text
    doc = r.json()
    cli = json.loads(CliRunner().invoke(app, ["whatif", str(DLOSS), "-e", "newreno", "--duration", "2",
                                              "--json"]).stdout)
    got, want = doc["path"]["buffer_bound"], cli["path"]["buffer_bound"]
    assert got["room_checked"] is want["room_checked"] is True and got["runs"] == want["runs"] == 7
    for key in ("seen_bytes", "least_bytes", "room_bytes"):
        assert got[key] == pytest.approx(want[key], rel=1e-9), key
    assert got["seen_bytes"] < got["least_bytes"] <= got["room_bytes"]
    assert doc["path"]["figures"]["buffer_bytes"] == pytest.approx(got["least_bytes"], rel=1e-9)

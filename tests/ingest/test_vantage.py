"""Issue #27 (3): the capture point placed by delays — the handshake's parts, checked against the data/ACK
pairs' — with a continuous position instead of three boxes (``ingest.vantage``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ingest.naive import classify_vantage

MS = 1_000_000


def classify(a_ms: float, b_ms: float, pairs_ms: float | None = None, sender_is_client: bool = True):
    """SYN at 0, SYN-ACK ``a_ms`` later, the handshake's ACK ``b_ms`` after that; the data/ACK pairs' data→ACK
    times (``pairs_ms`` and above), if any."""
    rtt = np.array([] if pairs_ms is None else [pairs_ms / 1e3 + 0.001 * i for i in range(20)])
    return classify_vantage(sender_is_client=sender_is_client, syn_ns=0, synack_ns=int(a_ms * MS),
                            hsack_ns=int((a_ms + b_ms) * MS), rtt_samples=rtt, data_send_ns=np.arange(20) * MS)


@pytest.mark.parametrize(("a", "b", "client", "vantage", "position"), [
    (42.0, 0.03, True, "sender", 0.03 / 42.03),  # at the client, which sends: its own turnaround
    (0.03, 42.0, True, "receiver", 42.0 / 42.03),  # at the server, which receives
    (41.0, 1.0, True, "mid_path", 1.0 / 42.0),  # 1 ms from the sender of a 42 ms path: was "sender" (3× rule)
    (55.0, 5.0, True, "mid_path", 5.0 / 60.0),  # 5 ms from it on a 60 ms path: was "sender"
    (2.0, 40.0, True, "mid_path", 40.0 / 42.0),  # 2 ms before the receiver: was "receiver"
    (2.0, 40.0, False, "mid_path", 2.0 / 42.0),  # the same tap when the server sends: 2 ms from the sender
    (60.0, 0.4, True, "sender", 0.4 / 60.4),  # within END_SHARE (1 %) of the RTT: at the end
])
def test_the_handshake_places_the_capture_point(a, b, client, vantage, position):
    got, evidence, pos = classify(a, b, sender_is_client=client)
    assert got == vantage, evidence
    assert pos == pytest.approx(position, rel=1e-3)
    if vantage == "mid_path":
        assert f"{100 * position:.1f} % of the round trip lies between the sender and the tap" in evidence


def test_data_ack_pairs_are_given_beside_a_taps_handshake_and_can_contradict_it():
    got, evidence, pos = classify(20.0, 30.0, pairs_ms=20.5)  # tap→server(receiver)→tap 20 ms both ways
    assert got == "mid_path" and pos == pytest.approx(0.6) and "data→ACK at the tap at least 20.500 ms" in evidence
    # the data come back acknowledged in 5 ms though the handshake says the receiver (the server) is 60 ms away:
    # the server answered the SYN slowly; the split is not the path's, and only a 3× factor tells the end
    got, evidence, pos = classify(60.0, 5.0, pairs_ms=5.0)
    assert got == "sender" and pos == 0.0 and "contradict the handshake's split" in evidence
    assert classify(60.0, 5.0, pairs_ms=40.0)[0] == "mid_path"  # (pairs that agree: a tap 5 ms from the sender)
    got, _, pos = classify(60.0, 30.0, pairs_ms=5.0)
    assert got != "mid_path" and pos is None  # neither end by 3×: the ACK-clocking test decides


def test_without_a_handshake_ack_clocking_decides_and_there_is_no_position():
    got, _, pos = classify_vantage(sender_is_client=True, syn_ns=-(1 << 62), synack_ns=0, hsack_ns=0,
                                   rtt_samples=np.full(20, 0.040), data_send_ns=np.arange(20) * MS)
    assert (got, pos) == ("sender", None)


def test_outputs_name_a_tap_with_its_position():
    from ackreplay.cli.score_cmd import vantage_label
    from ackreplay.cli.wording import vantage_text

    assert vantage_text("mid_path", 0.0911) == "mid_path at 9 % of the RTT from the sender"
    assert vantage_text("mid_path", None) == "mid_path" and vantage_text("receiver", 0.9996) == "receiver"
    label = vantage_label({"vantage": "mid_path", "vantage_position": 0.946, "reconstruction": "mid_path",
                           "confidence": "medium", "confidence_note": "x"})
    assert label.startswith("mid_path at 95 % of the RTT from the sender (reconstructed, medium confidence")

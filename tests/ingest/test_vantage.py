"""Issue #27 (3): the capture point placed by delays — the handshake's parts, checked against the data/ACK
pairs' — with a continuous position instead of three boxes (``ingest.vantage``)."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.vantage import classify_vantages
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
    (60.0, 0.4, False, "receiver", 60.0 / 60.4),  # the same capture point for the server's data
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


def _connection(a_ms: float, b_ms: float, client_pairs_ms: float | None, server_pairs_ms: float | None):
    """Both directions of one connection (the client's data flow first): SYN at 0, SYN-ACK ``a_ms`` later, the
    handshake's ACK ``b_ms`` after that; each direction's data/ACK pairs from the given shortest time, if any."""
    def pairs(low: float | None) -> np.ndarray:
        return np.array([] if low is None else [low / 1e3 + 0.001 * i for i in range(20)])

    rtt = [pairs(client_pairs_ms), pairs(server_pairs_ms)]
    times = np.array([0, 0]), np.full(2, int(a_ms * MS)), np.full(2, int((a_ms + b_ms) * MS))
    return classify_vantages(np.array([True, False]), *times, np.concatenate(rtt),
                             np.array([len(r) for r in rtt]), np.tile(np.arange(20) * MS, 2), np.array([20, 20]),
                             np.array([7, 7]))


def test_one_capture_point_per_connection():
    # the server's data are acknowledged 1.6 ms after they pass: the client's handshake ACK (4.2 ms) was slow, the
    # split is not the path's for the whole connection, and the 3× factor puts the capture next to the client —
    # for both directions (flow by flow, the client's data were "mid_path" at 7 %, the server's "receiver")
    got = _connection(56.7, 4.2, None, 1.6)
    assert got.verdicts == ["sender", "receiver"] and got.capture_positions == [0.0, 0.0]
    assert got.positions == [0.0, 1.0] and all("contradict" in e for e in got.evidence)
    alone = classify_vantages(np.array([True, False]), np.zeros(2, np.int64), np.full(2, int(56.7 * MS)),
                              np.full(2, int(60.9 * MS)), np.array([1.6e-3 + 0.001 * i for i in range(20)]),
                              np.array([0, 20]), np.tile(np.arange(20) * MS, 2), np.array([20, 20]))
    assert alone.verdicts == ["mid_path", "receiver"]
    # a tap: both directions "mid_path", one position from the client, each flow's from its sender
    got = _connection(30.0, 10.0, 31.0, 10.5)
    assert got.verdicts == ["mid_path", "mid_path"] and got.capture_positions == [pytest.approx(0.25)] * 2
    assert got.positions == [pytest.approx(0.25), pytest.approx(0.75)]
    # next to the server by its own turnaround: the client's data direction at its receiver, the server's at its
    # sender
    got = _connection(0.05, 38.3, 38.4, None)
    assert got.verdicts == ["receiver", "sender"] and got.capture_positions == [pytest.approx(38.3 / 38.35)] * 2


def test_ack_clocking_gives_one_capture_point_per_connection():
    no = np.full(2, tf.NOT_SEEN)
    quick, slow = np.full(20, 0.0002), np.full(20, 0.040)  # ACK at once / a round trip after the data
    data = np.tile(np.arange(20) * MS, 2)
    # the first direction's ACKs come a round trip after its data (next to its sender); the second has too few
    # pairs to tell: it is the capture next to its receiver
    got = classify_vantages(np.array([True, False]), no, no, no, np.concatenate([slow, quick[:3]]),
                            np.array([20, 3]), data, np.array([20, 20]), np.array([1, 1]))
    assert got.verdicts == ["sender", "receiver"] and "other direction" in got.evidence[1]
    # both "next to the receiver" (a LAN): the direction with more pairs decides
    got = classify_vantages(np.array([True, False]), no, no, no, np.concatenate([quick[:10], quick]),
                            np.array([10, 20]), data, np.array([20, 20]), np.array([1, 1]))
    assert got.verdicts == ["sender", "receiver"] and got.capture_positions == [None, None]


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

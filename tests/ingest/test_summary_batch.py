"""Issue #26: flow summaries are made for all the flows of a group at once (``ingest.flow_summary``,
``ingest.vantage.classify_vantages``); each flow's must be what it is alone, and what numpy and ``ipaddress``
give flow by flow."""

from __future__ import annotations

import ipaddress

import numpy as np

from ackreplay.ingest.flow_summary import format_endpoints
from ackreplay.ingest.vantage import classify_vantages
from tests.ingest.naive import classify_vantage, format_endpoint

NONE = -(1 << 62)


def random_flows(n: int, seed: int) -> list[tuple]:
    """Flows around every threshold of the classification: handshakes or none, 0–5000 RTT samples with NaNs,
    0–6000 data segments with repeated send times, runs of odd and even length."""
    rng = np.random.default_rng(seed)
    flows = []
    for _ in range(n):
        syn = int(rng.integers(0, 10**15))
        scale = rng.choice([0.05, 0.3, 1.0, 5.0, 50.0])
        a, b = (0 if rng.random() < 0.08 else int(rng.exponential(scale) * 1e6) for _ in range(2))
        synack, hsack = syn + a, syn + a + b
        r = rng.random()
        if r < 0.15:
            syn = NONE
        elif r < 0.2:
            hsack = NONE
        elif r < 0.25:
            synack, hsack = hsack, synack
        rtt = rng.exponential(rng.choice([0.0005, 0.005, 0.05]), int(rng.choice([0, 3, 7, 8, 9, 20, 5000])))
        if rng.random() < 0.3:
            rtt = np.round(rtt, 4)
        rtt[rng.random(len(rtt)) < 0.1] = np.nan
        n_data = int(rng.choice([0, 5, 8, 9, 10, 31, 6000]))
        data = np.cumsum(rng.integers(0, 3, n_data) * rng.choice([1, 1000, 20000, 10**6])) + 10**12
        flows.append((bool(rng.integers(2)), syn, synack, hsack, rtt, data))
    return flows


def batch(flows: list[tuple]) -> tuple[list[str], list[str], list[float | None], list[float | None]]:
    return classify_vantages(
        np.array([f[0] for f in flows]), np.array([f[1] for f in flows]), np.array([f[2] for f in flows]),
        np.array([f[3] for f in flows]), np.concatenate([f[4] for f in flows]), np.array([len(f[4]) for f in flows]),
        np.concatenate([f[5] for f in flows]), np.array([len(f[5]) for f in flows]))


def test_a_flows_vantage_in_a_batch_is_its_vantage_alone():
    flows = random_flows(3000, seed=26)
    verdicts, evidence, positions, _ = batch(flows)
    seen = set()
    for i, (client, syn, synack, hsack, rtt, data) in enumerate(flows):
        alone = classify_vantage(sender_is_client=client, syn_ns=syn, synack_ns=synack, hsack_ns=hsack,
                                 rtt_samples=rtt[~np.isnan(rtt)], data_send_ns=data)
        assert (verdicts[i], evidence[i], positions[i]) == alone, i
        seen.add((verdicts[i], evidence[i].split(" ")[0], "contradict" in evidence[i], "at least" in evidence[i]))
        if evidence[i].startswith("data→ACK median"):  # the medians are numpy's, flow by flow
            gaps = np.diff(data)
            rtt_med, gap_med = float(np.median(rtt[~np.isnan(rtt)])), float(np.median(gaps[gaps > 0])) / 1e9
            assert evidence[i].startswith(f"data→ACK median {rtt_med * 1e3:.3f} ms vs data segment gap median "
                                          f"{gap_med * 1e3:.3f} ms (ratio {rtt_med / gap_med:.1f})")
    # every way of deciding was taken: each end by the handshake, contradicted or not, a tap with and without
    # pairs, ACK clocking's three answers, nothing to tell
    assert len(seen) >= 10, seen


def test_vantage_of_no_flow_and_of_flows_without_rows():
    empty = np.zeros(0, np.int64)
    got = classify_vantages(np.zeros(0, bool), empty, empty, empty, np.zeros(0), empty, empty, empty)
    assert got == ([], [], [], [])
    two = np.array([NONE, NONE])
    got = classify_vantages(np.array([True, False]), two, two, two, np.zeros(0), np.zeros(2, np.int64),
                            np.zeros(0, np.int64), np.zeros(2, np.int64))
    assert got == (["unknown"] * 2, ["no handshake timing and too few RTT samples to tell"] * 2, [None, None],
                   [None, None])


def reference_endpoint(hi: int, lo: int, port: int) -> str:
    addr = ipaddress.IPv6Address(((hi & (2**64 - 1)) << 64) | (lo & (2**64 - 1)))
    return f"{addr.ipv4_mapped}:{port}" if addr.ipv4_mapped is not None else f"[{addr.compressed}]:{port}"


def test_endpoints_are_written_as_ipaddress_writes_them():
    words = []
    for text in ["::ffff:10.0.0.1", "::ffff:255.255.255.255", "::ffff:0.0.0.0", "::1.2.3.4", "::", "::1",
                 "2001:db8::8a2e:370:7334", "fe80::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::fffe:1.2.3.4",
                 "0:0:0:1:0:ffff:a00:1"]:
        value = int(ipaddress.IPv6Address(text))
        words.append((value >> 64, value & (2**64 - 1)))
    hi = np.array([w[0] for w in words], np.uint64).view(np.int64)  # as the demultiplexer keeps them (signed)
    lo = np.array([w[1] for w in words], np.uint64).view(np.int64)
    for port in (0, 80, 65535):
        got = format_endpoints(np.concatenate([hi, hi]), np.concatenate([lo, lo]), np.full(2 * len(hi), port))
        want = [reference_endpoint(int(h), int(low), port) for h, low in zip(hi, lo, strict=True)] * 2
        assert got == want
        assert [format_endpoint(int(h), int(low), port) for h, low in zip(hi, lo, strict=True)] == want[: len(hi)]
    assert format_endpoints(np.zeros(0), np.zeros(0), np.zeros(0)) == []


def test_a_summary_as_a_dict_is_its_fields_in_order():
    from dataclasses import MISSING, fields

    from ackreplay.ingest.model import FLOW_FIELDS, FlowSummary

    s = FlowSummary(*(f"v{i}" for i, f in enumerate(fields(FlowSummary)) if f.default is MISSING))
    s.srtt_s = 0.25
    d = s.to_dict()
    assert list(d) == list(FLOW_FIELDS) and d == {name: getattr(s, name) for name in FLOW_FIELDS}
    d["srtt_s"] = 1.0
    assert s.srtt_s == 0.25 and s.to_dict() is not s.to_dict()


def testrun_medians_are_numpys_medians() -> None:
    """Each wanted run's median (compiled, a run sorted at a time) is ``np.median`` of the run, to the bit, and the
    values given are left as they were: float and integer values, runs of one, two, odd and even lengths, long runs
    and empty ones, runs not wanted."""
    from ackreplay.ingest.vantage import run_medians

    rng = np.random.default_rng(26)
    for dtype in (np.float64, np.int64):
        counts = rng.choice([0, 1, 2, 3, 4, 7, 8, 150, 5000], 400)
        raw: np.ndarray = (rng.exponential(1e-3, int(counts.sum())) if dtype is np.float64
                           else rng.integers(0, 10**12, int(counts.sum())))
        values = raw.astype(dtype)
        wanted = rng.random(len(counts)) < 0.8
        kept = values.copy()
        got = run_medians(values, counts, wanted)
        assert np.array_equal(values, kept)  # (the runs are sorted in a copy, not in the caller's column)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for r, (s, c) in enumerate(zip(starts, counts, strict=True)):
            if wanted[r] and c:
                assert got[r] == np.median(values[s: s + c]), (dtype, r, c)
            else:
                assert np.isnan(got[r])
    assert run_medians(np.empty(0), np.empty(0, np.int64), np.empty(0, bool)).shape == (0,)

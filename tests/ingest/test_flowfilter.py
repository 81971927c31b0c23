"""pcap-filter expressions selecting connections (ingest.flowfilter), checked against the filter's own
grammar and, on a real capture, against tcpdump's reading of the same expression where tcpdump is
installed (it is not needed: the expected flows are also written out)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from ackreplay.ingest.flowfilter import FilterError, compile_filter
from tests.conftest import ROOT, SHARED

S09 = SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"
V6 = SimpleNamespace(sender="[2001:db8::1]:443", receiver="[2001:db8::2]:50000", acks=10)


def flow(sender: str, receiver: str, acks: int = 10) -> SimpleNamespace:
    return SimpleNamespace(sender=sender, receiver=receiver, acks=acks)


A = flow("10.0.0.1:40001", "192.168.1.2:5201")


@pytest.mark.parametrize(("expr", "want"), [
    ("host 10.0.0.1", True), ("host 10.0.0.9", False), ("src host 10.0.0.1", True),
    ("src host 192.168.1.2", True),  # the ACK direction: receiver → sender
    ("dst port 5201", True), ("src port 5201", True), ("port 80 or 5201", True), ("port 80 or 443", False),
    ("net 10.0.0.0/8", True), ("net 10.0.0.0 mask 255.0.0.0", True), ("net 172.16.0.0/12", False),
    ("portrange 5200-5210", True), ("portrange 1-1000", False), ("tcp", True), ("ip", True), ("ip6", False),
    ("udp", False), ("udp port 53", False), ("not udp", True), ("tcp port 5201 and not host 10.0.0.9", True),
    ("(port 80 || port 5201) && net 192.168.0.0/16", True), ("! port 5201", False),
    ("src host 10.0.0.1 and dst host 192.168.1.2", True), ("src host 10.0.0.1 and src host 192.168.1.2", False),
    ("src and dst net 10.0.0.0/8", False), ("src or dst net 10.0.0.0/8", True), ("port iperf3", True),
])
def test_expressions_select_connections(expr, want):
    assert compile_filter(expr)(A) is want


def test_one_direction_only_when_no_ack_was_captured():
    assert compile_filter("src host 192.168.1.2")(flow(A.sender, A.receiver, acks=0)) is False


def test_ipv6():
    assert compile_filter("ip6 and net 2001:db8::/32 and src port 443")(V6)
    assert not compile_filter("ip and port 443")(V6)


@pytest.mark.parametrize(("expr", "named"), [
    ("", "empty"), ("port", "ends"), ("host 10.0.0.1 and", "ends"), ("(port 80", "not closed"),
    ("less 100", "'less' tests single packets"), ("tcp[13] & 2 != 0", "tests single packets"),
    ("host example.com", "not resolved"), ("port 99999", "not a port"), ("portrange 10", "A-B"),
    ("frobnicate 3", "'frobnicate' is not a primitive"), ("port 80 80", "unexpected '80'"),
])
def test_expressions_it_cannot_use_are_named(expr, named):
    with pytest.raises(FilterError, match=named) as info:
        compile_filter(expr)
    assert info.value.code == "invalid_filter"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ackreplay.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_cli_filter_selects_flows_and_refuses_bad_expressions():
    listed = _cli("flows", str(S09), "--filter", "port 5202", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(f["flow_id"] for f in json.loads(listed.stdout)) == [2, 3, 5]  # both iperf3 connections on 5202
    scored = json.loads(_cli("score", str(S09), "-F", "port 5202 and portrange 40000-40010", "-f",
                             "json").stdout)
    replayed = [f["flow_id"] for f in scored["captures"][0]["flows"] if f["replayed"]]
    assert replayed == [5]
    bad = _cli("score", str(S09), "--filter", "less 60")
    assert bad.returncode == 2 and "error [invalid_filter]" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed (the test needs none)")
@pytest.mark.parametrize("expr", ["port 5202", "src port 40001", "host 10.201.2.1 and port 5201", "not port 5201"])
def test_connections_kept_are_those_tcpdump_finds_a_packet_of(expr, tmp_path):
    """Where tcpdump is installed: a connection is kept exactly when tcpdump's filter matches a packet of it."""
    out = subprocess.run(["tcpdump", "-nn", "-r", str(S09), "-q", expr], capture_output=True, text=True).stdout
    ends = set()
    for line in out.splitlines():
        parts = line.split()
        src, dst = parts[2], parts[4].rstrip(":")
        ends.add(frozenset((src.rsplit(".", 1)[1], dst.rsplit(".", 1)[1])))
    listed = json.loads(_cli("flows", str(S09), "--json").stdout)
    keep = compile_filter(expr)
    for f in listed:
        conn = frozenset((f["sender"].rsplit(":", 1)[1], f["receiver"].rsplit(":", 1)[1]))
        assert keep(SimpleNamespace(**f)) is (conn in ends), (expr, f["sender"], f["receiver"])

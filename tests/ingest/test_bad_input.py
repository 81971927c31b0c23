"""Bad input: a typed error that names the problem, or the valid part plus a warning; never a hang."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import zlib

import pytest

from ackreplay.ingest import (
    CaptureReadError,
    CorruptCaptureError,
    DecompressedTooLargeError,
    EmptyCaptureError,
    UnknownFormatError,
    UnsupportedLinkTypeError,
    ingest_capture,
)
from tests import pcapgen as g


def conversation() -> bytes:
    conv = g.Conv()
    conv.handshake(0, 10)
    for i in range(20):
        conv.send(11 + i, i * 1000, 1000)
        conv.ack(21 + i, (i + 1) * 1000)
    return conv.pcap()


def test_zero_length_file(tmp_capture):
    with pytest.raises(EmptyCaptureError, match="empty"):
        ingest_capture(tmp_capture(b""))


def test_random_bytes(tmp_capture):
    with pytest.raises(UnknownFormatError, match="not a pcap or pcapng"):
        ingest_capture(tmp_capture(os.urandom(4096)))


def test_text_file_named_pcap(tmp_capture):
    with pytest.raises(UnknownFormatError, match="looks like text"):
        ingest_capture(tmp_capture(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n", name="page.pcap"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(CaptureReadError, match="cannot read"):
        ingest_capture(tmp_path / "nope.pcap")
    with pytest.raises(CaptureReadError, match="directory"):
        ingest_capture(tmp_path)


def test_cut_mid_record_keeps_the_valid_part(tmp_capture):
    data = conversation()
    whole = ingest_capture(tmp_capture(data, "whole.pcap"))
    cut_at = len(data) - 30  # inside the last record
    part = ingest_capture(tmp_capture(data[:cut_at], "cut.pcap"))
    assert part.stats.records == whole.stats.records - 1
    last_record_start = len(data) - (16 + 54)  # header + Ethernet/IP/TCP ACK frame
    assert part.stats.truncated_at == last_record_start
    assert f"truncated at byte {last_record_start}" in " ".join(part.stats.warnings)
    assert len(part.acks) == len(whole.acks) - 1


def test_cut_inside_global_header(tmp_capture):
    with pytest.raises(CorruptCaptureError, match="global header"):
        ingest_capture(tmp_capture(conversation()[:10]))


def test_record_announcing_a_2gb_packet(tmp_capture):
    data = conversation()
    bad = data[:24] + struct.pack("<IIII", 1, 0, 0x80000000, 0x80000000) + data[40:]
    with pytest.raises(CorruptCaptureError, match=r"announces a 2147483648-byte packet .* at byte 24"):
        ingest_capture(tmp_capture(bad))


def test_pcapng_block_with_corrupt_length(tmp_capture):
    recs = [g.Rec(i, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", g.tcp_header(1, 2, 0, 0, g.ACK)))) for i in range(3)]
    data = bytearray(g.pcapng(recs))
    shb_len = struct.unpack("<I", data[4:8])[0]
    idb_len = struct.unpack("<I", data[shb_len + 4 : shb_len + 8])[0]
    first_epb = shb_len + idb_len
    data[first_epb + 4 : first_epb + 8] = struct.pack("<I", 0x7FFFFFF0)  # absurd block length
    with pytest.raises(CorruptCaptureError, match=f"impossible length at byte {first_epb}"):
        ingest_capture(tmp_capture(bytes(data), "bad.pcapng"))
    data[first_epb + 4 : first_epb + 8] = struct.pack("<I", 92)  # plausible (real: 88), trailer disagrees
    with pytest.raises(CorruptCaptureError, match="trailer"):
        ingest_capture(tmp_capture(bytes(data), "bad2.pcapng"))


def test_pcapng_cut_mid_block(tmp_capture):
    recs = [g.Rec(i, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", g.tcp_header(1, 2, 0, 0, g.ACK)))) for i in range(3)]
    data = g.pcapng(recs)
    cap = ingest_capture(tmp_capture(data[:-10], "cut.pcapng"))
    assert cap.stats.records == 2 and cap.stats.truncated_at is not None


def test_truncated_gzip_keeps_what_decompressed(tmp_capture):
    data = g.gz(conversation())
    cap = ingest_capture(tmp_capture(data[: len(data) // 2], "half.pcap.gz"))
    assert cap.stats.records > 0
    assert any("gzip stream truncated" in w for w in cap.stats.warnings)


def _bomb(pcap_header: bytes, zero_bytes: int) -> bytes:
    co = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    out = [co.compress(pcap_header)]
    block = b"\0" * (1 << 20)
    for _ in range(zero_bytes >> 20):
        out.append(co.compress(block))  # zero-length records: a valid, endless capture
    out.append(co.flush())
    return b"".join(out)


def test_gzip_bomb_stops_at_the_limit(tmp_capture):
    header = g.pcap([])
    path = tmp_capture(_bomb(header, 64 << 20), "bomb.pcap.gz")
    with pytest.raises(DecompressedTooLargeError, match="expands beyond 8388608 bytes"):
        ingest_capture(path, max_decompressed_bytes=8 << 20)


def test_gzip_bomb_default_limit(tmp_capture):
    header = g.pcap([])
    path = tmp_capture(_bomb(header, (1 << 30) + (64 << 20)), "bomb.pcap.gz")
    assert path.stat().st_size < 2 << 20  # ~1 MB that would expand to over 1 GiB
    with pytest.raises(DecompressedTooLargeError):
        ingest_capture(path)


CASES = {
    "empty.pcap": (b"", "empty_capture"),
    "random.pcap": (bytes(range(256)) * 8, "unknown_format"),
    "text.pcap": (b"hello, this is not a capture\n" * 10, "unknown_format"),
    "huge-record.pcap": (g.pcap([]) + struct.pack("<IIII", 1, 0, 0x80000000, 60), "corrupt_capture"),
    "bad-link.pcap": (g.pcap([g.Rec(1, b"\0" * 60)], linktype=147), "unsupported_link_type"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_reports_bad_input_without_traceback(tmp_capture, name):
    data, code = CASES[name]
    path = tmp_capture(data, name)
    proc = subprocess.run([sys.executable, "-m", "ackreplay.cli.main", "flows", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert f"error [{code}]" in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def _readers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ingest-read")]


def test_errors_on_either_side_of_the_read_ahead_thread_stop_it(tmp_capture):
    """A corrupt record found by the reading thread is raised in the caller; an unsupported link type
    found by the caller (while the thread reads ahead) stops the thread. Neither leaves it running."""
    many = b"".join([conversation()[24:]] * 400)  # several chunks
    header = conversation()[:24]
    bad_late = header + many + struct.pack("<IIII", 1, 0, 0x80000000, 0x80000000)
    with pytest.raises(CorruptCaptureError, match="announces a 2147483648-byte packet"):
        ingest_capture(tmp_capture(bad_late), chunk_bytes=1 << 16)
    assert _readers() == []
    odd_link = g.pcap([g.Rec(i, b"\0" * 60) for i in range(20_000)], linktype=147)
    with pytest.raises(UnsupportedLinkTypeError):
        ingest_capture(tmp_capture(odd_link, "odd.pcap"), chunk_bytes=1 << 16)
    assert _readers() == []

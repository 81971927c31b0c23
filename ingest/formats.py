"""The magic numbers that tell the capture formats apart (read by ``records`` and ``record_count``)."""

#: pcap's magic → (byte order, nanoseconds per timestamp unit).
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),  # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),  # nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
PCAPNG_BOM = 0x1A2B3C4D

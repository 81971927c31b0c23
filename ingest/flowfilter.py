"""Selecting flows with a pcap-filter expression (the syntax of ``tcpdump`` and Wireshark's capture filters).

ackreplay replays connections, and a flow needs both of its directions (data one way, ACKs the other), so
the expression selects *connections*: a flow is kept when at least one direction of its connection that
the capture holds (sender → receiver, and receiver → sender when any ACK was seen) matches, with that
direction's source and destination. ``src host 10.0.0.1`` therefore keeps every connection in which
10.0.0.1 sent packets, both directions included — what ``tcpdump 'src host 10.0.0.1'`` would cut in half.

Supported (pcap-filter(7)): ``host``, ``net`` (CIDR, or ``net N mask M``), ``port``, ``portrange A-B``,
each optionally after ``src``, ``dst``, ``src or dst``, ``src and dst``; the protocol words ``ip``, ``ip6``,
``tcp`` (alone, or before a primitive: ``tcp port 80``) and ``udp``/``icmp``/``icmp6``/``arp``/``sctp`` (never
true: every flow is TCP); ``and``/``&&``, ``or``/``||``, ``not``/``!``, parentheses; and pcap's shorthand
of a bare value repeating the last qualifiers (``port 80 or 443``). Per-packet predicates (``less``,
``greater``, byte offsets such as ``tcp[13]``) do not select connections and are refused with
:class:`FilterError` naming them, as is anything else the grammar does not know.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Endpoint = tuple[IPAddress, int]
Predicate = Callable[[Endpoint, Endpoint], bool]  # (source, destination) → matches

_TOKEN = re.compile(r"\s*(\(|\)|&&|\|\||!|[^\s()!]+)")
_NEVER = {"udp", "icmp", "icmp6", "arp", "rarp", "sctp", "igmp", "ether", "vlan", "mpls"}
_PER_PACKET = {"less", "greater", "len", "broadcast", "multicast", "gateway", "proto"}
_SERVICES = {"http": 80, "https": 443, "ssh": 22, "ftp": 21, "ftp-data": 20, "smtp": 25, "domain": 53,
             "telnet": 23, "imap": 143, "pop3": 110, "iperf3": 5201}


class FilterError(ValueError):
    """The filter expression cannot be used (``invalid_filter``); the message names the problem."""

    code = "invalid_filter"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class _Qual:
    direction: str = "src or dst"  # src | dst | src or dst | src and dst
    kind: str = "host"  # host | net | port | portrange
    proto: str | None = None  # ip | ip6 | tcp


def _endpoint(text: str) -> Endpoint:
    host, port = text.rsplit(":", 1)
    return ipaddress.ip_address(host.strip("[]")), int(port)


def _port(word: str) -> int:
    if word.isdigit() and int(word) < 65536:
        return int(word)
    try:
        return socket.getservbyname(word, "tcp")
    except OSError:
        if word in _SERVICES:
            return _SERVICES[word]
    raise FilterError(f"invalid filter: {word!r} is not a port number or a known service name")


class _Parser:
    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.tokens = _TOKEN.findall(expr)
        if "".join(self.tokens).replace(" ", "") != re.sub(r"\s+", "", expr):
            raise FilterError(f"invalid filter {expr!r}: cannot read it")
        self.i = 0
        self.last = _Qual()

    def peek(self) -> str | None:
        return self.tokens[self.i].lower() if self.i < len(self.tokens) else None

    def take(self) -> str:
        if self.i >= len(self.tokens):
            raise FilterError(f"invalid filter {self.expr!r}: it ends where a value was expected")
        self.i += 1
        return self.tokens[self.i - 1]

    def parse(self) -> Predicate:
        if not self.tokens:
            raise FilterError("invalid filter: the expression is empty")
        pred = self.or_expr()
        if self.i != len(self.tokens):
            raise FilterError(f"invalid filter {self.expr!r}: unexpected {self.tokens[self.i]!r}")
        return pred

    def or_expr(self) -> Predicate:
        return self._chain(("or", "||"), self.and_expr, any)

    def and_expr(self) -> Predicate:
        return self._chain(("and", "&&"), self.not_expr, all)

    def _chain(self, ops: tuple[str, ...], operand: Callable[[], Predicate],
               combine: Callable[[Any], bool]) -> Predicate:
        """``operand (op operand)*``, left to right, short-circuiting like ``any``/``all``."""
        parts = [operand()]
        while self.peek() in ops:
            self.take()
            parts.append(operand())
        if len(parts) == 1:
            return parts[0]
        return lambda s, d: combine(p(s, d) for p in parts)

    def not_expr(self) -> Predicate:
        if self.peek() in ("not", "!"):
            self.take()
            inner = self.not_expr()
            return lambda s, d: not inner(s, d)
        if self.peek() == "(":
            self.take()
            inner = self.or_expr()
            if self.peek() != ")":
                raise FilterError(f"invalid filter {self.expr!r}: a '(' is not closed")
            self.take()
            return inner
        return self.primitive()

    def primitive(self) -> Predicate:
        word = self.peek()
        if word is None:
            raise FilterError(f"invalid filter {self.expr!r}: it ends where a primitive was expected")
        if word in _PER_PACKET or "[" in word:
            raise FilterError(f"invalid filter: {self.tokens[self.i]!r} tests single packets; the filter selects "
                              "connections (host, net, port, portrange, ip, ip6, tcp)")
        if word in _NEVER:
            self.take()
            if self.peek() in ("host", "net", "port", "portrange", "src", "dst"):
                self.primitive()  # "udp port 53": parsed, and never true
            return lambda s, d: False
        q = _Qual()
        explicit = False
        if word in ("ip", "ip6", "tcp"):
            q.proto = self.take().lower()
            explicit = True
            if self.peek() not in ("src", "dst", "host", "net", "port", "portrange"):
                return self._proto_only(q.proto)
        if self.peek() in ("src", "dst"):
            q.direction = self.take().lower()
            if self.peek() in ("or", "and") and self.i + 1 < len(self.tokens) and \
                    self.tokens[self.i + 1].lower() in ("src", "dst"):
                q.direction = f"src {self.take().lower()} dst"
                self.take()
            explicit = True
        if self.peek() in ("host", "net", "port", "portrange"):
            q.kind = self.take().lower()
            explicit = True
        if not explicit:  # a bare value: pcap repeats the last qualifiers ("port 80 or 443")
            q = _Qual(self.last.direction, self.last.kind, self.last.proto)
            if re.fullmatch(r"[A-Za-z][\w.-]*", self.peek() or "") and q.kind in ("host", "net") \
                    and not _looks_like_address(self.peek() or ""):
                raise FilterError(f"invalid filter: {self.tokens[self.i]!r} is not a primitive ackreplay knows "
                                  "(host, net, port, portrange, src, dst, ip, ip6, tcp, and, or, not)")
        self.last = q
        value = self.take()
        test = self._value_test(q, value)
        proto_ok = self._proto_test(q.proto)
        both = q.direction == "src and dst"
        sides = {"src": (True, False), "dst": (False, True)}.get(q.direction, (True, True))

        def pred(s: Endpoint, d: Endpoint) -> bool:
            if not proto_ok(s):
                return False
            hits = [test(e) for e, on in zip((s, d), sides, strict=True) if on]
            return all(hits) if both else any(hits)

        return pred

    def _value_test(self, q: _Qual, value: str) -> Callable[[Endpoint], bool]:
        try:
            if q.kind == "host":
                addr = ipaddress.ip_address(value)
                return lambda e: e[0] == addr
            if q.kind == "net":
                if self.peek() == "mask":
                    self.take()
                    net = ipaddress.ip_network(f"{value}/{self.take()}", strict=False)
                else:
                    net = ipaddress.ip_network(value, strict=False)
                return lambda e: e[0].version == net.version and e[0] in net
        except ValueError as exc:
            raise FilterError(f"invalid filter: {value!r} is not an address or network ({exc}); host names are "
                              "not resolved") from exc
        if q.kind == "port":
            port = _port(value)
            return lambda e: e[1] == port
        m = re.fullmatch(r"([\w-]+)-([\w-]+)", value)
        if not m:
            raise FilterError(f"invalid filter: portrange wants A-B, got {value!r}")
        lo, hi = _port(m.group(1)), _port(m.group(2))
        return lambda e: lo <= e[1] <= hi

    @staticmethod
    def _proto_test(proto: str | None) -> Callable[[Endpoint], bool]:
        if proto == "ip":
            return lambda e: e[0].version == 4
        if proto == "ip6":
            return lambda e: e[0].version == 6
        return lambda e: True

    def _proto_only(self, proto: str) -> Predicate:
        test = self._proto_test(proto)
        return lambda s, d: test(s)


def _looks_like_address(word: str) -> bool:
    try:
        ipaddress.ip_network(word, strict=False)
        return True
    except ValueError:
        return False


def compile_filter(expr: str) -> Callable[[Any], bool]:
    """A predicate on ``FlowSummary``: does the flow's connection match ``expr`` (see the module)?
    Raises :class:`FilterError` for an expression it cannot use."""
    pred = _Parser(expr).parse()

    def keep(flow: Any) -> bool:
        a, b = _endpoint(flow.sender), _endpoint(flow.receiver)
        if pred(a, b):
            return True
        return bool(getattr(flow, "acks", 1)) and pred(b, a)

    return keep

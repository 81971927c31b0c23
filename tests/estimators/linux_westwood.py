"""An integer-faithful reading of Linux ``net/ipv4/tcp_westwood.c`` (plain Python).

HZ is 1024 here, not one of Linux's configurable values (100/250/300/1000), so that jiffy times are
exact binary fractions: the continuous-time implementation under test then takes bit-identical window
decisions on the same jiffy-grid stream, and what the comparison measures is the integer arithmetic.

State and arithmetic as the kernel keeps them: u32 bytes ``bk``, ``bw_ns_est`` and ``bw_est`` in bytes
per jiffy, ``rtt`` and ``rtt_min`` in jiffies (``usecs_to_jiffies`` rounds up), the window test
``delta > max(rtt, HZ/20)``, the filter ``((7·a) + b) >> 3`` and ``ssthresh = max(bw_est·rtt_min/mss, 2)``
in whole segments. It is fed the ACK rows one by one, each ACK's RTT sample taken before the window
test (ESTIMATORS.md: "rtt_latest includes this ACK's sample").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HZ = 1024
RTT_MIN_JIFFIES = HZ // 20


def usecs_to_jiffies(us: float) -> int:
    return max(1, math.ceil(us * HZ / 1_000_000))


@dataclass
class LinuxWestwood:
    t0_jiffies: int
    bk: int = 0
    bw_ns_est: int = 0
    bw_est: int = 0
    rtt: int = 0
    rtt_min: int = 20 * HZ
    reset_rtt_min: bool = True

    def __post_init__(self) -> None:
        self.rtt_win_sx = self.t0_jiffies

    def ack(self, t_s: float, delivered: int, rtt_s: float | None) -> None:
        now = int(t_s * HZ)  # tcp_jiffies32
        if rtt_s is not None and rtt_s > 0:
            self.rtt = usecs_to_jiffies(rtt_s * 1e6)  # tcp_westwood_pkts_acked
        delta = now - self.rtt_win_sx
        if self.rtt and delta > max(self.rtt, RTT_MIN_JIFFIES):  # westwood_update_window
            if self.bw_ns_est == 0 and self.bw_est == 0:
                self.bw_ns_est = self.bk // delta
                self.bw_est = self.bw_ns_est
            else:
                self.bw_ns_est = (7 * self.bw_ns_est + self.bk // delta) >> 3
                self.bw_est = (7 * self.bw_est + self.bw_ns_est) >> 3
            self.bk = 0
            self.rtt_win_sx = now
        self.bk += delivered
        if self.rtt:  # update_rtt_min
            if self.reset_rtt_min:
                self.rtt_min = self.rtt
                self.reset_rtt_min = False
            else:
                self.rtt_min = min(self.rtt, self.rtt_min)

    def ssthresh(self, mss: int) -> int:
        return max(self.bw_est * self.rtt_min // mss, 2)

    def bytes_per_second(self) -> float:
        return self.bw_est * HZ

#!/usr/bin/env bash
# Short testbed captures for the path inference (issue #24, ESTIMATORS.md §9): real Linux TCP through
# ackreplay's testbed (../../../testbed/run_scenario.sh: network namespaces, tbf bottleneck, NFQUEUE delay,
# iptables random loss), sender side (one also at the receiver), snaplen 96, gzip -9. Run as root; Debian
# packages iperf3 tcpdump iptables ethtool. Each NAME.pcap.gz comes with NAME.json (the ground truth).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tb="$here/../../../testbed/run_scenario.sh"
run() {  # NAME OPTIONS...
  local name=$1; shift
  "$tb" --snaplen 96 --prefix p24 --out "$here/$name" "$@" >/dev/null
  gzip -9f "$here/$name.pcap"
  [ -f "$here/${name}_rcv.pcap" ] && gzip -9f "$here/${name}_rcv.pcap"
  [ -f "$here/${name}_mid.pcap" ] && gzip -9f "$here/${name}_mid.pcap"
  return 0
}
run r5_rtt100_b2      --rate 5mbit   --rtt 100 --buffer-bdp 2    --duration 12
run r50_rtt10_b05     --rate 50mbit  --rtt 10  --buffer-bdp 0.5  --duration 4
run r20_rtt30_loss    --rate 20mbit  --rtt 30  --buffer-bdp 1    --loss 0.005 --duration 6 --capture both
run r3_rtt300_b1      --rate 3mbit   --rtt 300 --buffer-bdp 1    --duration 16
run r10_rtt60_b025    --rate 10mbit  --rtt 60  --buffer-bdp 0.25 --duration 8
run r8_rtt40_cross    --rate 8mbit   --rtt 40  --buffer-bdp 1    --flows 3 --cc cubic,reno,bbr --start-gap 2 --duration 10
run r100_rtt20_b1     --rate 100mbit --rtt 20  --buffer-bdp 1    --duration 2
run r2_rtt50_b01      --rate 2mbit   --rtt 50  --buffer-bdp 0.1  --duration 15
run r12_rtt40_b4_loss --rate 12mbit  --rtt 40  --buffer-bdp 4    --loss 0.01 --duration 8
run r15_rtt40_mid     --rate 15mbit  --rtt 40  --buffer-bdp 1    --tap-delay 10:10 --capture all --duration 6

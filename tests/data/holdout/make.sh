#!/usr/bin/env bash
# Hold-out testbed captures for the what-if self-check and the path inference (issue #37): paths nobody tuned
# against. Parameters chosen before any was run and not changed after (docs/whatif.md, "Hold-out captures"):
# each differs from every capture in ../paths, ../pairs, ../limits and ../testbed. Real Linux TCP through
# ackreplay's testbed (../../../testbed/run_scenario.sh: network namespaces, tbf bottleneck, NFQUEUE delay,
# iptables random loss), sender side, snaplen 96, gzip -9. Run as root, on an otherwise idle machine (timing
# sensitive); Debian packages iperf3 tcpdump iptables ethtool. Each NAME.pcap.gz comes with NAME.json (the
# ground truth). `make.sh NAME...` makes only those.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tb="$here/../../../testbed/run_scenario.sh"
want=("$@")
run() {  # NAME OPTIONS...
  local name=$1; shift
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then return 0; fi
  "$tb" --snaplen 96 --prefix ho37 --net 237 --out "$here/$name" "$@" >/dev/null
  gzip -9f "$here/$name.pcap"
  return 0
}
run h01_cubic_r7_rtt25_b15    --rate 7mbit  --rtt 25  --buffer-bdp 1.5 --cc cubic --duration 10
run h02_reno_r30_rtt70_b06    --rate 30mbit --rtt 70  --buffer-bdp 0.6 --cc reno  --duration 5
run h03_cubic_r4_rtt150_b25   --rate 4mbit  --rtt 150 --buffer-bdp 2.5 --cc cubic --duration 15
run h04_cubic_r25_rtt18_b04_l03 --rate 25mbit --rtt 18 --buffer-bdp 0.4 --cc cubic --loss 0.003 --duration 6
run h05_reno_r9_rtt45_b12_l08 --rate 9mbit  --rtt 45  --buffer-bdp 1.2 --cc reno  --loss 0.008 --duration 10
run h06_cubic_r40_rtt22_b03   --rate 40mbit --rtt 22  --buffer-bdp 0.3 --cc cubic --duration 4
run h07_2cubic_r16_rtt55_b1   --rate 16mbit --rtt 55  --buffer-bdp 1   --flows 2 --cc cubic,cubic --start-gap 1.5 --duration 9
run h08_reno_cubic_r6_rtt90_b2 --rate 6mbit --rtt 90  --buffer-bdp 2   --flows 2 --cc reno,cubic --start-gap 3 --duration 12
run h09_reno_r11_rtt120_b05   --rate 11mbit --rtt 120 --buffer-bdp 0.5 --cc reno  --duration 12
run h10_cubic_r13_rtt190_b18_l02 --rate 13mbit --rtt 190 --buffer-bdp 1.8 --cc cubic --loss 0.002 --duration 12

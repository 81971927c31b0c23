#!/usr/bin/env bash
# Real-Linux-TCP capture testbed:  sender ns -- router ns -- receiver ns
#
#   <P>-snd [s0] ===veth=== [r0] <P>-rtr [r1] ===veth=== [c0] <P>-rcv
#   10.R.1.1                 10.R.1.2   10.R.2.2           10.R.2.1
#
# Router:  iptables FORWARD:  (optional random-loss DROP)  ->  NFQUEUE 0 / 1
#          nfq_delay.py holds every forwarded packet FWD / REV ms (no netem here)
#          egress r1 (towards receiver):  tbf rate RATE burst BURST limit BUFFER
#          (drop-tail bottleneck with a byte-sized buffer)
# Traffic: one iperf3 client per flow in the sender ns (congestion control per
#          flow), one iperf3 server per flow in the receiver ns.
# Capture: tcpdump on s0 (sender side) and/or c0 (receiver side).
#
# ackreplay's copy (the shared original is ../shared/testbed/run_scenario.sh) adds a mid-path tap:
# --tap-delay F:R puts a fourth namespace <P>-tap between sender and router, with its own delayer
# (F ms towards the receiver, R ms back), and --capture mid|all records on its router-side interface t1:
# data after F ms, ACKs R ms before they reach the sender — a capture on a link in the middle of the path.
#
#   <P>-snd [s0]==[t0] <P>-tap [t1]==[r0] <P>-rtr [r1]==[c0] <P>-rcv
#   10.R.1.1   10.R.1.2    10.R.3.1  10.R.3.2  10.R.2.2  10.R.2.1
#
# Everything stays inside the three namespaces this script creates; they are
# named "<prefix>-snd/-rtr/-rcv" and deleted (with the processes it started,
# killed by PID) on exit, also on error or Ctrl-C.
#
# Needs: iproute2 (ip, tc), iptables (nft or legacy backend, statistic + NFQUEUE),
#        tcpdump, iperf3 (>= 3.1, for -C and --cport), ethtool, python3, ping.
#        Debian: apt-get install -y iproute2 iptables tcpdump iperf3 ethtool iputils-ping
#
# Example:
#   sudo ./run_scenario.sh --rate 10mbit --rtt 40 --buffer-bdp 1 --flows 2 \
#        --cc cubic,bbr --duration 20 --out /tmp/caps/cubic_vs_bbr
# writes /tmp/caps/cubic_vs_bbr.pcap (sender side; _rcv.pcap for receiver side)
# and /tmp/caps/cubic_vs_bbr.json (ground truth + measured counters).
set -euo pipefail

usage() {
  cat <<'EOF'
run_scenario.sh [options]
  --rate RATE          bottleneck rate, tc syntax (default 10mbit)
  --rtt MS             base RTT in ms, split evenly over both directions (default 40)
  --fwd-delay MS       one-way delay sender->receiver (overrides --rtt half)
  --rev-delay MS       one-way delay receiver->sender (overrides --rtt half)
  --buffer BYTES       bottleneck (tbf) queue limit in bytes
  --buffer-bdp X       ... or as a multiple of BDP = rate*rtt (default 1)
  --burst BYTES        tbf bucket size (default 4500)
  --flows N            number of bulk TCP flows (default 1)
  --cc LIST            congestion control per flow, comma list cycled (default cubic)
  --start-gap S        flow i starts i*S seconds after flow 0 (default 0)
  --duration S         seconds each flow ends at (flow i runs duration - i*gap) (default 20)
  --loss P             random drop probability of data-direction packets
                       (only packets > 200 bytes, i.e. data segments) (default 0)
  --ack-loss P         random drop probability of reverse-direction packets (default 0)
  --sack 0|1           net.ipv4.tcp_sack at the sender (default 1)
  --timestamps 0|1     net.ipv4.tcp_timestamps at the sender (default 1)
  --ecn 0|1|2          net.ipv4.tcp_ecn at the sender (default 0)
  --snaplen N          tcpdump snap length (default 128)
  --capture WHERE      sender | receiver | both | mid | all (default sender; mid and all
                       need --tap-delay; all = sender + receiver + mid, written PREFIX_mid.pcap)
  --tap-delay F:R      mid-path tap namespace between sender and router holding packets
                       F ms towards the receiver and R ms back (added to --rtt's delays)
  --out PREFIX         output prefix (default ./capture); writes PREFIX.pcap,
                       PREFIX_rcv.pcap (receiver side), PREFIX.json
  --prefix NAME        namespace name prefix (default wwtb); use distinct ones
                       to run several testbeds at once
  --net N              second octet of the 10.N.x.y addresses (default 201)
  -h, --help
EOF
}

RATE=10mbit; RTT=40; FWD=""; REV=""; BUFFER=""; BUFFER_BDP=1; BURST=4500
FLOWS=1; CC=cubic; GAP=0; DUR=20; LOSS=0; ACKLOSS=0; SACK=1; TS=1; ECN=0
SNAP=128; CAPTURE=sender; OUT=./capture; PFX=wwtb; NET=201; TAPF=""; TAPR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE=$2; shift 2;;
    --rtt) RTT=$2; shift 2;;
    --fwd-delay) FWD=$2; shift 2;;
    --rev-delay) REV=$2; shift 2;;
    --buffer) BUFFER=$2; shift 2;;
    --buffer-bdp) BUFFER_BDP=$2; shift 2;;
    --burst) BURST=$2; shift 2;;
    --flows) FLOWS=$2; shift 2;;
    --cc) CC=$2; shift 2;;
    --start-gap) GAP=$2; shift 2;;
    --duration) DUR=$2; shift 2;;
    --loss) LOSS=$2; shift 2;;
    --ack-loss) ACKLOSS=$2; shift 2;;
    --sack) SACK=$2; shift 2;;
    --timestamps) TS=$2; shift 2;;
    --ecn) ECN=$2; shift 2;;
    --snaplen) SNAP=$2; shift 2;;
    --capture) CAPTURE=$2; shift 2;;
    --tap-delay) TAPF=${2%%:*}; TAPR=${2#*:}; shift 2;;
    --out) OUT=$2; shift 2;;
    --prefix) PFX=$2; shift 2;;
    --net) NET=$2; shift 2;;
    -h|--help) usage; exit 0;;
    *) echo "unknown option $1" >&2; usage >&2; exit 2;;
  esac
done

[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
case "$CAPTURE" in mid|all) [ -n "$TAPF" ] || { echo "--capture $CAPTURE needs --tap-delay" >&2; exit 2; };; esac
for t in ip tc iptables tcpdump iperf3 ethtool python3 ping; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done
HERE=$(cd "$(dirname "$0")" && pwd)
DELAYER="$HERE/nfq_delay.py"
[ -f "$DELAYER" ] || { echo "missing $DELAYER" >&2; exit 1; }

# ---- derived parameters ----------------------------------------------------
rate_bps=$(python3 - "$RATE" <<'EOF'
import re, sys
m = re.fullmatch(r"([0-9.]+)\s*([kmg]?)(bit|bps)?", sys.argv[1].lower())
if not m: sys.exit("cannot parse rate " + sys.argv[1])
v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
if m.group(3) == "bps": v *= 8          # tc: "bps" means bytes per second
print(int(v))
EOF
)
[ -n "$FWD" ] || FWD=$(python3 -c "print(float('$RTT')/2)")
[ -n "$REV" ] || REV=$(python3 -c "print(float('$RTT')/2)")
RTT_EFF=$(python3 -c "print(float('$FWD')+float('$REV')+float('${TAPF:-0}')+float('${TAPR:-0}'))")
BDP_BYTES=$(python3 -c "print(int($rate_bps/8*$RTT_EFF/1000))")
[ -n "$BUFFER" ] || BUFFER=$(python3 -c "print(max(1514, int($BDP_BYTES*float('$BUFFER_BDP'))))")
IFS=, read -r -a CCS <<<"$CC"

S=$PFX-snd; R=$PFX-rtr; C=$PFX-rcv; T=$PFX-tap
NSS=("$S" "$R" "$C"); [ -z "$TAPF" ] || NSS+=("$T")
A_S=10.$NET.1.1; A_R1=10.$NET.1.2; A_R2=10.$NET.2.2; A_C=10.$NET.2.1
mkdir -p "$(dirname "$OUT")"
OUT_ABS=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
WORK=$(mktemp -d /tmp/wwtb.XXXXXX)
PIDS=()

cleanup() {
  local rc=$?
  set +e
  for ((i=${#PIDS[@]}-1; i>=0; i--)); do
    kill "${PIDS[i]}" 2>/dev/null
  done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for ns in "${NSS[@]}"; do
    ip netns list | awk '{print $1}' | grep -qx "$ns" && ip netns del "$ns"
  done
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in "${NSS[@]}"; do
  if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
    echo "removing leftover namespace $ns" >&2; ip netns del "$ns"
  fi
done

# ---- topology ----------------------------------------------------------------
for ns in "${NSS[@]}"; do ip netns add "$ns"; done
if [ -n "$TAPF" ]; then
  ip link add s0 netns "$S" type veth peer name t0 netns "$T"
  ip link add t1 netns "$T" type veth peer name r0 netns "$R"
  DEVS=("$S:s0" "$T:t0" "$T:t1" "$R:r0" "$R:r1" "$C:c0")
else
  ip link add s0 netns "$S" type veth peer name r0 netns "$R"
  DEVS=("$S:s0" "$R:r0" "$R:r1" "$C:c0")
fi
ip link add r1 netns "$R" type veth peer name c0 netns "$C"
for pair in "${DEVS[@]}"; do
  ns=${pair%%:*}; dev=${pair#*:}
  # wire-like segments (no TSO/GSO/GRO) and real checksums in the capture
  ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
  ip netns exec "$ns" ip link set "$dev" up
done
for ns in "${NSS[@]}"; do ip netns exec "$ns" ip link set lo up; done
ip netns exec "$S" ip addr add $A_S/24 dev s0
ip netns exec "$R" ip addr add $A_R2/24 dev r1
ip netns exec "$C" ip addr add $A_C/24 dev c0
ip netns exec "$C" ip route add default via $A_R2
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
if [ -n "$TAPF" ]; then
  ip netns exec "$T" ip addr add $A_R1/24 dev t0           # the sender's gateway is the tap
  ip netns exec "$T" ip addr add 10.$NET.3.1/24 dev t1
  ip netns exec "$R" ip addr add 10.$NET.3.2/24 dev r0
  ip netns exec "$S" ip route add default via $A_R1
  ip netns exec "$T" ip route add 10.$NET.2.0/24 via 10.$NET.3.2
  ip netns exec "$R" ip route add 10.$NET.1.0/24 via 10.$NET.3.1
  ip netns exec "$T" sysctl -qw net.ipv4.ip_forward=1
else
  ip netns exec "$R" ip addr add $A_R1/24 dev r0
  ip netns exec "$S" ip route add default via $A_R1
fi
for ns in "$S" "$C"; do
  ip netns exec "$ns" sysctl -qw net.ipv4.tcp_no_metrics_save=1
done
ip netns exec "$S" sysctl -qw net.ipv4.tcp_sack="$SACK"
ip netns exec "$S" sysctl -qw net.ipv4.tcp_timestamps="$TS"
ip netns exec "$S" sysctl -qw net.ipv4.tcp_ecn="$ECN"

# bottleneck: drop-tail token bucket on the router's egress towards the receiver
ip netns exec "$R" tc qdisc add dev r1 root tbf rate "$RATE" burst "$BURST" limit "$BUFFER"

# delay (userspace, NFQUEUE) and optional random loss, in the router
ip netns exec "$R" python3 "$DELAYER" 0:"$FWD" 1:"$REV" 2>"$WORK/delay.log" &
PIDS+=($!)
for _ in $(seq 50); do grep -q ready "$WORK/delay.log" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$WORK/delay.log" || { cat "$WORK/delay.log" >&2; echo "delayer failed" >&2; exit 1; }
IPT="ip netns exec $R iptables -w"
if [ "$LOSS" != 0 ]; then
  # each random drop is logged first (NFLOG group 7, recorded below): per-loss ground truth
  $IPT -N RANDLOSS
  $IPT -A RANDLOSS -j NFLOG --nflog-group 7 --nflog-prefix randloss
  $IPT -A RANDLOSS -j DROP
  $IPT -A FORWARD -i r0 -m length --length 201:65535 -m statistic --mode random --probability "$LOSS" -j RANDLOSS
fi
if [ "$ACKLOSS" != 0 ]; then
  $IPT -A FORWARD -i r1 -m statistic --mode random --probability "$ACKLOSS" -j DROP
fi
$IPT -A FORWARD -i r0 -j NFQUEUE --queue-num 0
$IPT -A FORWARD -i r1 -j NFQUEUE --queue-num 1
if [ -n "$TAPF" ]; then  # the tap's own delayer: TAPF ms towards the receiver, TAPR ms back
  ip netns exec "$T" python3 "$DELAYER" 0:"$TAPF" 1:"$TAPR" 2>"$WORK/delay_tap.log" &
  PIDS+=($!)
  for _ in $(seq 50); do grep -q ready "$WORK/delay_tap.log" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$WORK/delay_tap.log" || { cat "$WORK/delay_tap.log" >&2; echo "tap delayer failed" >&2; exit 1; }
  ip netns exec "$T" iptables -w -A FORWARD -i t0 -j NFQUEUE --queue-num 0
  ip netns exec "$T" iptables -w -A FORWARD -i t1 -j NFQUEUE --queue-num 1
fi

# base RTT through the delayer (before any load)
PING=$(ip netns exec "$S" ping -n -q -c 10 -i 0.2 $A_C | tail -1)
echo "base RTT: $PING" >&2

# ---- servers, capture, clients ---------------------------------------------
for ((i=0; i<FLOWS; i++)); do
  ip netns exec "$C" iperf3 -s -1 -p $((5201+i)) >"$WORK/srv$i.log" 2>&1 &
  PIDS+=($!)
done
TCPDUMP_PIDS=()
if [ "$CAPTURE" = sender ] || [ "$CAPTURE" = both ] || [ "$CAPTURE" = all ]; then
  ip netns exec "$S" tcpdump -i s0 -n -s "$SNAP" -B 32768 -w "$OUT_ABS.pcap" tcp 2>"$WORK/tcpdump_snd.log" &
  PIDS+=($!); TCPDUMP_PIDS+=($!)
fi
if [ "$LOSS" != 0 ]; then  # the randomly dropped data packets, as NFLOG records (link type 239)
  ip netns exec "$R" tcpdump -i nflog:7 -n -s 4096 -w "$WORK/randloss.pcap" 2>"$WORK/tcpdump_nflog.log" &
  PIDS+=($!); TCPDUMP_PIDS+=($!)
fi
if [ "$CAPTURE" = mid ] || [ "$CAPTURE" = all ]; then
  ip netns exec "$T" tcpdump -i t1 -n -s "$SNAP" -B 32768 -w "${OUT_ABS}_mid.pcap" tcp 2>"$WORK/tcpdump_mid.log" &
  PIDS+=($!); TCPDUMP_PIDS+=($!)
fi
if [ "$CAPTURE" = receiver ] || [ "$CAPTURE" = both ] || [ "$CAPTURE" = all ]; then
  ip netns exec "$C" tcpdump -i c0 -n -s "$SNAP" -B 32768 -w "${OUT_ABS}_rcv.pcap" tcp 2>"$WORK/tcpdump_rcv.log" &
  PIDS+=($!); TCPDUMP_PIDS+=($!)
fi
sleep 1.5
CLIENT_PIDS=()
for ((i=0; i<FLOWS; i++)); do
  cc=${CCS[$((i % ${#CCS[@]}))]}
  t=$(python3 -c "print(int(round($DUR - $i*$GAP)))")
  ( sleep "$(python3 -c "print($i*$GAP)")"
    exec ip netns exec "$S" iperf3 -c $A_C -p $((5201+i)) --cport $((40001+i)) \
        -C "$cc" -t "$t" -J >"$WORK/cli$i.json" 2>"$WORK/cli$i.err" ) &
  PIDS+=($!); CLIENT_PIDS+=($!)
done
fail=0
for p in "${CLIENT_PIDS[@]}"; do wait "$p" || fail=1; done
sleep 1
for p in "${TCPDUMP_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
for p in "${TCPDUMP_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done

# ---- ground truth + counters -------------------------------------------------
ip netns exec "$R" tc -s -j qdisc show dev r1 >"$WORK/tbf.json" 2>/dev/null || echo '[]' >"$WORK/tbf.json"
$IPT -L FORWARD -v -x -n >"$WORK/ipt.txt"
kill -TERM "${PIDS[0]}" 2>/dev/null || true; sleep 0.3
python3 - "$WORK" "$OUT_ABS" <<EOF
import json, os, re, sys, glob
work, out = sys.argv[1], sys.argv[2]
def rd(p):
    try: return open(os.path.join(work, p)).read()
    except OSError: return ""
ping = """$PING"""
m = re.search(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+)", ping)
tbf = json.loads(rd("tbf.json") or "[]")
tbf = tbf[0] if tbf else {}
ipt = rd("ipt.txt")
loss_drops = [int(l.split()[0]) for l in ipt.splitlines() if "statistic" in l]
flows = []
ccs = "$CC".split(",")
for i in range($FLOWS):
    f = {"flow": i, "cc": ccs[i % len(ccs)], "server_port": 5201 + i, "client_port": 40001 + i,
         "start_offset_s": i * float("$GAP")}
    try:
        j = json.loads(rd("cli%d.json" % i))
        s = j["end"]["streams"][0]["sender"]
        f.update(bytes_sent=s["bytes"], duration_s=round(s["seconds"], 3),
                 mean_throughput_bps=int(s["bits_per_second"]),
                 retransmits=s.get("retransmits"),
                 max_snd_cwnd=s.get("max_snd_cwnd"), min_rtt_us=s.get("min_rtt"),
                 mean_rtt_us=s.get("mean_rtt"), max_rtt_us=s.get("max_rtt"),
                 receiver_bytes=j["end"]["streams"][0]["receiver"]["bytes"],
                 sender_cc=j["end"].get("sender_tcp_congestion"))
        f["start_epoch"] = j["start"]["timestamp"]["timesecs"]
    except Exception as e:
        f["error"] = "%s %s" % (e, rd("cli%d.err" % i)[:300])
    flows.append(f)
def random_drop_log(path):
    """Every randomly dropped data packet: capture time, ports, raw sequence number, payload length
    (the NFLOG pcap's payload TLV holds the IPv4 packet)."""
    import struct
    out = []
    try:
        data = open(path, "rb").read()
    except OSError:
        return out
    if len(data) < 24:
        return out
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    off = 24
    while off + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from(endian + "IIII", data, off)
        rec = data[off + 16: off + 16 + incl]
        off += 16 + incl
        at = 4
        when = sec + usec / 1e6  # tcpdump's receipt time; the drop's own time (TLV 3) when present
        while at + 4 <= len(rec):
            ln, kind = struct.unpack_from("<HH", rec, at)
            if ln < 4:
                break
            if kind == 3 and ln >= 20:  # NFULA_TIMESTAMP: seconds, microseconds (big-endian)
                s_, us_ = struct.unpack_from(">QQ", rec, at + 4)
                when = s_ + us_ / 1e6
            if kind == 9:
                ip = rec[at + 4: at + ln]
                ihl = (ip[0] & 15) * 4
                tot = struct.unpack_from(">H", ip, 2)[0]
                sport, dport, seq = struct.unpack_from(">HHI", ip, ihl)
                doff = (ip[ihl + 12] >> 4) * 4
                out.append({"t": when, "src_port": sport, "dst_port": dport, "seq": seq,
                            "len": tot - ihl - doff})
                break
            at += (ln + 3) & ~3
    return out
caps = {}
for tag, fn, log in (("sender", out + ".pcap", "tcpdump_snd.log"),
                     ("receiver", out + "_rcv.pcap", "tcpdump_rcv.log"),
                     ("mid", out + "_mid.pcap", "tcpdump_mid.log")):
    if os.path.exists(fn):
        lg = rd(log)
        g = lambda k: int(re.search(r"(\d+) packets? " + k, lg).group(1)) if re.search(r"(\d+) packets? " + k, lg) else None
        caps[tag] = {"file": os.path.basename(fn), "size_bytes": os.path.getsize(fn),
                     "interface": {"sender": "s0", "receiver": "c0", "mid": "t1"}[tag],
                     "packets_captured": g("captured"), "dropped_by_kernel": g("dropped by kernel")}
gt = {
  "generator": "run_scenario.sh (Linux netns + tbf + NFQUEUE userspace delay + iperf3)",
  "kernel": os.uname().release,
  "bottleneck_rate_bps": $rate_bps, "bottleneck_rate_tc": "$RATE",
  "bottleneck_qdisc": "tbf rate $RATE burst $BURST limit $BUFFER (drop-tail, router egress to receiver)",
  "buffer_bytes": $BUFFER, "buffer_packets_1514B": round($BUFFER / 1514, 1),
  "bdp_bytes": $BDP_BYTES, "buffer_over_bdp": round($BUFFER / max(1, $BDP_BYTES), 2),
  "base_rtt_configured_ms": $RTT_EFF, "fwd_delay_ms": float("$FWD"), "rev_delay_ms": float("$REV"),
  "tap": {"fwd_delay_ms": float("${TAPF:-0}"), "rev_delay_ms": float("${TAPR:-0}"), "interface": "t1",
          "note": "tap namespace between sender and router; its delays come before the router's"} if "$TAPF" else None,
  "base_rtt_ping_ms": {"min": float(m.group(1)), "avg": float(m.group(2)), "max": float(m.group(3))} if m else None,
  "flows": $FLOWS, "cc": ccs, "flow_details": flows,
  "random_loss_prob_data": float("$LOSS"), "random_loss_prob_ack": float("$ACKLOSS"),
  "random_loss_drops": loss_drops,
  "random_loss_log": random_drop_log(os.path.join(work, "randloss.pcap")),
  "random_loss_log_note": "every randomly dropped data packet (NFLOG before the DROP): time, ports, raw seq, payload; a loss episode with none of its flow's since the previous episode was a bottleneck (congestion) drop",
  "tbf_stats": {k: tbf.get(k) for k in ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")},
  "sender_sysctl": {"tcp_sack": $SACK, "tcp_timestamps": $TS, "tcp_ecn": $ECN},
  "mtu": 1500, "offloads": "tso/gso/gro/checksum off on all veths",
  "addresses": {"sender": "$A_S", "receiver": "$A_C", "router_sender_side": "$A_R1", "router_receiver_side": "$A_R2"},
  "notes": "extra short TCP flow per iperf3 client = iperf3 control connection (same server port, ephemeral client port)",
  "duration_s": float("$DUR"), "snaplen": $SNAP, "captures": caps,
  "delayer_log": rd("delay.log").strip().splitlines()[-1:] ,
  "client_failed": bool($fail),
}
json.dump(gt, open(out + ".json", "w"), indent=1)
print(json.dumps({k: gt[k] for k in ("buffer_bytes", "bdp_bytes", "base_rtt_ping_ms", "tbf_stats", "random_loss_drops", "captures")}))
for f in flows: print(f)
EOF
exit $fail

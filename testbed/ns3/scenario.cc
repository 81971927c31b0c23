// One or two bulk TCP flows over a drop-tail bottleneck, the sender running the congestion control under
// test; ns-3's own ssthresh traced at every loss. The oracle of tests/estimators/test_ns3_oracle.py.
//
//   sender0 --100 Mbit/s, 1 ms--+
//                               router --rate, delay--> receiver   (drop-tail FIFO of `buffer` packets)
//   sender1 --100 Mbit/s, 1 ms--+          (two-flow run: sender1 runs NewReno, starting 0.5 s later)
//
// Writes <prefix>-<node>-<device>.pcap at each sender (sender-side vantage, what ackreplay replays) and
// <prefix>.trace.csv: one row per change of SlowStartThreshold and of CongState, with the cwnd and bytes in
// flight traced just before (t_ns,what,flow,old,new,cwnd,inflight,state), and one `loss` row per entry into
// recovery (state 3) or loss (4, an RTO) with the ssthresh ns-3 set there (t_ns,loss,flow,state,ssthresh,
// cwnd,inflight,state). See README.md and regenerate.py.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <fstream>
#include <string>

using namespace ns3;

namespace
{

std::ofstream g_trace;

struct Traced
{
    uint32_t flow = 0;
    uint32_t cwnd = 0;
    uint32_t inflight = 0;
    uint32_t ssthresh = 0;
    int state = 0;
};

Traced g_flows[2];

void
Row(const Traced* s, const char* what, uint64_t oldv, uint64_t newv)
{
    g_trace << Simulator::Now().GetNanoSeconds() << ',' << what << ',' << s->flow << ',' << oldv << ','
            << newv << ',' << s->cwnd << ',' << s->inflight << ',' << s->state << '\n';
}

void
OnCwnd(Traced* s, uint32_t, uint32_t v)
{
    s->cwnd = v;
}

void
OnInflight(Traced* s, uint32_t, uint32_t v)
{
    s->inflight = v;
}

void
OnSsthresh(Traced* s, uint32_t oldv, uint32_t newv)
{
    Row(s, "ssthresh", oldv, newv);
    s->ssthresh = newv;
}

// Once the event that entered recovery (or the RTO) is done: the ssthresh it set, which the trace source does
// not report when it equals the previous one; cwnd and bytes in flight as they were when the state changed.
void
LogLoss(Traced* s, int kind, uint32_t cwnd, uint32_t inflight)
{
    g_trace << Simulator::Now().GetNanoSeconds() << ",loss," << s->flow << ',' << kind << ',' << s->ssthresh
            << ',' << cwnd << ',' << inflight << ',' << s->state << '\n';
}

void
OnState(Traced* s, TcpSocketState::TcpCongState_t oldv, TcpSocketState::TcpCongState_t newv)
{
    Row(s, "state", oldv, newv);
    s->state = newv;
    if (newv == TcpSocketState::CA_RECOVERY || newv == TcpSocketState::CA_LOSS)
    {
        Simulator::ScheduleNow(&LogLoss, s, static_cast<int>(newv), s->cwnd, s->inflight);
    }
}

void
Connect(uint32_t node, Traced* s)
{
    std::string base = "/NodeList/" + std::to_string(node) + "/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(base + "CongestionWindow", MakeBoundCallback(&OnCwnd, s));
    Config::ConnectWithoutContext(base + "BytesInFlight", MakeBoundCallback(&OnInflight, s));
    Config::ConnectWithoutContext(base + "SlowStartThreshold", MakeBoundCallback(&OnSsthresh, s));
    Config::ConnectWithoutContext(base + "CongState", MakeBoundCallback(&OnState, s));
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string cc = "TcpCubic";
    std::string prefix = "run";
    std::string rate = "10Mbps";
    double rttMs = 60.0;
    double bufferBdp = 1.0;
    double duration = 20.0;
    uint32_t flows = 1;
    uint32_t mss = 1448;
    CommandLine cmd(__FILE__);
    cmd.AddValue("cc", "congestion control of flow 0 (ns-3 type name without ns3::)", cc);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("rtt", "base round-trip time, ms", rttMs);
    cmd.AddValue("buffer", "bottleneck buffer in bandwidth-delay products", bufferBdp);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("flows", "1, or 2 (the second runs NewReno)", flows);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName("ns3::" + cc)));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));

    NodeContainer senders(flows);
    NodeContainer router(1);
    NodeContainer receiver(1);
    InternetStackHelper stack;
    stack.InstallAll();
    if (flows > 1)
    {
        Config::Set("/NodeList/1/$ns3::TcpL4Protocol/SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    }

    const double accessDelayMs = 1.0;
    const double bottleneckDelayMs = rttMs / 2 - accessDelayMs;
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(accessDelayMs)));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MilliSeconds(bottleneckDelayMs)));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));  // the queue disc holds the backlog

    const double packetBytes = mss + 52.0;  // TCP/IP headers with timestamps
    const double bdpPackets = DataRate(rate).GetBitRate() * rttMs / 1000.0 / 8.0 / packetBytes;
    const auto bufferPackets = static_cast<uint32_t>(std::max(1.0, std::round(bufferBdp * bdpPackets)));

    Ipv4AddressHelper addresses;
    std::vector<NetDeviceContainer> accessDevices;
    for (uint32_t i = 0; i < flows; ++i)
    {
        NetDeviceContainer d = access.Install(senders.Get(i), router.Get(0));
        addresses.SetBase(("10.1." + std::to_string(i + 1) + ".0").c_str(), "255.255.255.0");
        addresses.Assign(d);
        accessDevices.push_back(d);
    }
    NetDeviceContainer core = bottleneck.Install(router.Get(0), receiver.Get(0));
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                         QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, bufferPackets)));
    tch.Install(core.Get(0));
    addresses.SetBase("10.2.1.0", "255.255.255.0");
    Ipv4InterfaceContainer sink = addresses.Assign(core);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const uint16_t port = 5201;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinks = sinkHelper.Install(receiver.Get(0));
    sinks.Start(Seconds(0.0));
    for (uint32_t i = 0; i < flows; ++i)
    {
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sink.GetAddress(1), port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer app = bulk.Install(senders.Get(i));
        const double start = 0.1 + 0.5 * i;
        app.Start(Seconds(start));
        app.Stop(Seconds(duration));
        g_flows[i].flow = i;
        Simulator::Schedule(Seconds(start) + NanoSeconds(1), &Connect, senders.Get(i)->GetId(), &g_flows[i]);
        access.EnablePcap(prefix, accessDevices[i].Get(0), false);
    }

    g_trace.open(prefix + ".trace.csv");
    g_trace << "# cc=" << cc << " rate=" << rate << " rtt_ms=" << rttMs << " buffer_bdp=" << bufferBdp
            << " buffer_packets=" << bufferPackets << " flows=" << flows << " mss=" << mss << '\n';
    g_trace << "t_ns,what,flow,old,new,cwnd,inflight,state\n";
    Simulator::Stop(Seconds(duration + 0.5));
    Simulator::Run();
    Simulator::Destroy();
    g_trace.close();
    return 0;
}

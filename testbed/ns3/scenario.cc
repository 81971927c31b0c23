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
// Also <prefix>.summary: the bottleneck's backlog (packets waiting: the queue disc's and the device queue's,
// the packet being sent not counted) sampled every millisecond from 0 to the end of the applications, its
// mean, the bytes each flow's receiver got by then, and the packets dropped at random (--loss: a Bernoulli
// error model on the router's side of each access link, so before the bottleneck queue).
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
uint64_t g_rxBytes[2] = {0, 0};
double g_queueSum = 0.0;
uint64_t g_queueSamples = 0;
uint64_t g_randomDrops = 0;
Time g_until;

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

void
SampleQueue(Ptr<QueueDisc> disc, Ptr<Queue<Packet>> device, Time every, Time until)
{
    g_queueSum += disc->GetNPackets() + device->GetNPackets();
    ++g_queueSamples;
    if (Simulator::Now() + every <= until)
    {
        Simulator::Schedule(every, &SampleQueue, disc, device, every, until);
    }
}

void
OnSinkRx(Ptr<const Packet> p, const Address& from)
{
    // sender i is 10.1.(i+1).1
    const uint32_t sender = (InetSocketAddress::ConvertFrom(from).GetIpv4().Get() >> 8) & 0xff;
    if (sender >= 1 && sender <= 2 && Simulator::Now() <= g_until)
    {
        g_rxBytes[sender - 1] += p->GetSize();
    }
}

void
OnRandomDrop(Ptr<const Packet>)
{
    ++g_randomDrops;
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
    std::string cc1 = "TcpNewReno";
    double loss = 0.0;
    CommandLine cmd(__FILE__);
    cmd.AddValue("cc", "congestion control of flow 0 (ns-3 type name without ns3::)", cc);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("rtt", "base round-trip time, ms", rttMs);
    cmd.AddValue("buffer", "bottleneck buffer in bandwidth-delay products", bufferBdp);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("flows", "1, or 2 (the second runs NewReno)", flows);
    cmd.AddValue("cc1", "congestion control of flow 1 in a two-flow run", cc1);
    cmd.AddValue("loss", "random loss rate of data packets before the bottleneck", loss);
    cmd.Parse(argc, argv);

    // TcpWestwoodPlus: ns-3.37's TcpWestwood with ProtocolType WestwoodPlus (its default filter, Tustin)
    const auto typeOf = [](const std::string& name) {
        return TypeId::LookupByName(name == "TcpWestwoodPlus" ? "ns3::TcpWestwood" : "ns3::" + name);
    };
    if (cc == "TcpWestwoodPlus" || cc1 == "TcpWestwoodPlus")
    {
        Config::SetDefault("ns3::TcpWestwood::ProtocolType", EnumValue(TcpWestwood::WESTWOODPLUS));
    }
    if (cc == "TcpBbr" || cc1 == "TcpBbr")
    {
        // ns-3's TcpBbr runs only on a pacing socket (as Linux's bbr_init marks its socket for pacing)
        Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
    }
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(typeOf(cc)));
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
        Config::Set("/NodeList/1/$ns3::TcpL4Protocol/SocketType", TypeIdValue(typeOf(cc1)));
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
        if (loss > 0.0)
        {
            Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
            em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
            em->SetRate(loss);
            d.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
            d.Get(1)->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnRandomDrop));
        }
    }
    NetDeviceContainer core = bottleneck.Install(router.Get(0), receiver.Get(0));
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                         QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, bufferPackets)));
    QueueDiscContainer discs = tch.Install(core.Get(0));
    g_until = Seconds(duration);
    Ptr<Queue<Packet>> deviceQueue = DynamicCast<PointToPointNetDevice>(core.Get(0))->GetQueue();
    Simulator::Schedule(Seconds(0), &SampleQueue, discs.Get(0), deviceQueue, MilliSeconds(1), g_until);
    addresses.SetBase("10.2.1.0", "255.255.255.0");
    Ipv4InterfaceContainer sink = addresses.Assign(core);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const uint16_t port = 5201;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinks = sinkHelper.Install(receiver.Get(0));
    sinks.Start(Seconds(0.0));
    sinks.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&OnSinkRx));
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
            << " buffer_packets=" << bufferPackets << " flows=" << flows << " mss=" << mss << " cc1=" << cc1
            << " loss=" << loss << '\n';
    g_trace << "t_ns,what,flow,old,new,cwnd,inflight,state\n";
    Simulator::Stop(Seconds(duration + 0.5));
    Simulator::Run();
    Simulator::Destroy();
    g_trace.close();
    std::ofstream summary(prefix + ".summary");
    summary << "queue_mean_packets=" << g_queueSum / std::max<uint64_t>(g_queueSamples, 1) << '\n'
            << "queue_samples=" << g_queueSamples << '\n'
            << "rx_bytes_0=" << g_rxBytes[0] << '\n'
            << "rx_bytes_1=" << g_rxBytes[1] << '\n'
            << "random_drops=" << g_randomDrops << '\n';
    return 0;
}

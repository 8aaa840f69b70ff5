"""Run a set of TCP bulk flows on a :class:`~fabric.validate.network.PacketNetwork` in ns-3 (the ``packet`` extra).

ns-3 is imported lazily (``from ns import ns`` takes ~20 s); :func:`ns3_available` tells whether it can be.

The simulated network:

- every link is a point-to-point link at its own capacity in the fabric (uplinks may run at another speed than the
  hosts' links), its delay the propagation plus half of each end's
  switch/NIC latency (:func:`fabric.validate.network.packet_network`);
- switch ports are plain FIFOs (``DropTailQueue``; the default fq_codel queue disc is removed). By default they are
  deep enough that nothing can overflow (:func:`lossless_queue_packets`): AI fabrics run lossless transports
  (RoCE with PFC, InfiniBand credits), which is what fabric's evaluator assumes, and ns-3's point-to-point links
  have no PFC. ``switch_queue_packets`` sets a finite drop-tail buffer instead (then TCP loss recovery shows);
- hosts are Linux-like: an fq_codel queue disc (per-flow round robin, like a NIC scheduling its queue pairs) over
  a short device ring (``host_ring_packets``), so one flow's ACKs do not wait behind another flow's data;
  ``host_qdisc="fifo"`` gives a single deep FIFO instead. TCP: NewReno, MSS 1448 (1500-byte MTU with
  timestamps), 256 KiB socket buffers, 5 ms minimum RTO (a data-centre setting; Linux defaults to 200 ms);
- hosts route with ns-3's global routing (one link each). On switches the routing depends on ``routing``:
  ``ecmp``: a small C++ routing protocol (compiled through cppyy, placed ahead of global routing in each switch's
  ``Ipv4ListRouting``) picks the next hop per flow from the 5-tuple hashed with the switch's salt
  (:func:`fabric.validate.network.flow_hash`, the same arithmetic); it records the choice it made for every
  5-tuple, so the fluid bound can be checked to use the very same paths. ``spray``: ns-3's own
  ``Ipv4GlobalRouting`` with ``RandomEcmpRouting`` (a random equal-cost next hop per packet, ACKs included).
  ``spray_rr``: the same C++ protocol in round-robin mode (each packet takes the next port of its candidate set,
  an exactly even split). Spraying runs turn TCP SACK off (random per-packet routing with SACK on has been seen
  to crash ns-3 3.44). With ``reorder_buffer`` (a reorder-tolerant transport) the C++ protocol runs on every
  switch, ``spray`` as a random port per packet (seeded per switch), and the switch that delivers to a host
  resequences each TCP flow's data segments before the host sees them (:class:`SimConfig`);
- each flow is a ``BulkSendApplication`` bound to a fixed source port (so its 5-tuple is known before the run)
  sending to its own ``PacketSink``; a C++ recorder notes when each sink has received the flow's bytes. All flows
  start at time zero (the connection handshake is part of the measured time).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from fabric.errors import FabricError

__all__ = ["ns3_available", "import_ns3", "simulate", "SimResult", "SimConfig", "NS3_MISSING", "cpp_flow_hash",
           "lossless_queue_packets"]

NS3_MISSING = ("the packet-level check needs ns-3's Python bindings, which are not installed: "
               "pip install .[packet]  (or: pip install ns3)")

_LOCK = threading.Lock()
_NS = None
_CPP_READY = False

_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/applications-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fabricval {
using namespace ns3;

inline uint64_t Mix64(uint64_t x) {
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27; x *= 0x94D049BB133111EBULL;
    x ^= x >> 31; return x;
}

inline uint64_t FlowHash(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport, uint16_t dport, uint64_t salt) {
    uint64_t h = Mix64((((uint64_t)src) << 32 | (uint64_t)dst) ^ (salt * 0x9E3779B97F4A7C15ULL));
    return Mix64(h ^ (((uint64_t)proto) << 32 | ((uint64_t)sport) << 16 | (uint64_t)dport));
}

// A segment held by the reorder buffer, and the buffer's state per TCP flow.
struct HeldSegment {
    Ptr<Ipv4Route> route;
    Ptr<const Packet> packet;
    Ipv4Header header;
    Ipv4RoutingProtocol::UnicastForwardCallback ucb;
    uint32_t len;
};
struct ReorderState {
    bool init = false;
    uint32_t expected = 0;
    uint64_t key = 0;
    std::map<uint32_t, HeldSegment> held;
    EventId timer;
};

// Per-flow ECMP: the next hop towards a destination address is candidates[hash(5-tuple, salt) % n].
class HashEcmpRouting : public Ipv4RoutingProtocol {
  public:
    struct Hop { uint32_t iface; uint32_t gateway; };
    struct Choice { uint32_t src, dst; uint16_t sport, dport; uint32_t iface; };

    static TypeId GetTypeId() {
        static TypeId tid = TypeId("fabricval::HashEcmpRouting")
            .SetParent<Ipv4RoutingProtocol>().SetGroupName("Internet");
        return tid;
    }
    HashEcmpRouting() : m_salt(0), m_forwarded(0) {}
    void SetSalt(uint64_t salt) { m_salt = salt; m_rng = (salt * 0x9E3779B97F4A7C15ULL) | 1ULL; }
    // round robin: every packet with a choice takes the next port of its candidate set (per-packet spraying that
    // splits exactly evenly, as switches spraying in hardware do)
    void SetRoundRobin(bool rr) { m_roundRobin = rr; }
    // random: every packet with a choice takes a uniformly random port of its candidate set (xorshift64*, seeded
    // from the salt): per-packet spraying like ns-3's RandomEcmpRouting, inside this protocol
    void SetRandom(bool r) { m_random = r; }
    // receiver-side reorder buffer for a host cabled to this switch: the data segments of each TCP flow towards it
    // leave this switch in sequence order (a segment that arrives ahead of a gap is held until the gap fills, or at
    // most ``hold``), so the host's transport never sees the reordering that spraying causes, as a reorder-tolerant
    // NIC (out-of-order placement, per-packet sequence tracking) presents data to its transport in order
    void AddReorderHost(uint32_t dst) { m_reorderHosts.insert(dst); }
    void SetReorderHold(double seconds) { m_hold = Seconds(seconds); }
    uint64_t Held() const { return m_heldTotal; }
    uint64_t Flushed() const { return m_flushed; }
    void AddRoute(uint32_t dst, uint32_t iface, uint32_t gateway) { m_table[dst].push_back(Hop{iface, gateway}); }
    uint64_t Forwarded() const { return m_forwarded; }
    uint64_t Changed() const { return m_changed; }
    size_t NChoices() const { return m_choices.size(); }
    const Choice& GetChoice(size_t i) const { return m_choices[i]; }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p, const Ipv4Header& header, Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override {
        sockerr = Socket::ERROR_NOROUTETOHOST;
        return nullptr;   // switches originate nothing; global routing answers
    }

    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& header, Ptr<const NetDevice> idev,
                    const UnicastForwardCallback& ucb, const MulticastForwardCallback& mcb,
                    const LocalDeliverCallback& lcb, const ErrorCallback& ecb) override {
        auto it = m_table.find(header.GetDestination().Get());
        if (it == m_table.end()) return false;
        const std::vector<Hop>& hops = it->second;
        size_t k = 0;
        if (hops.size() > 1 && m_roundRobin) {
            k = (m_rr[it->first]++) % hops.size();
        } else if (hops.size() > 1 && m_random) {
            k = NextRandom() % hops.size();
        } else if (hops.size() > 1) {
            uint16_t sport = 0, dport = 0;
            if (header.GetProtocol() == 6) {
                TcpHeader tcp;
                p->PeekHeader(tcp);
                sport = tcp.GetSourcePort();
                dport = tcp.GetDestinationPort();
            }
            uint32_t src = header.GetSource().Get(), dst = header.GetDestination().Get();
            k = FlowHash(src, dst, header.GetProtocol(), sport, dport, m_salt) % hops.size();
            uint64_t key = (((uint64_t)src) << 32 | dst) * 0x9E3779B97F4A7C15ULL ^ (((uint64_t)sport) << 16 | dport);
            auto ins = m_seen.emplace(key, hops[k].iface);
            if (ins.second)
                m_choices.push_back(Choice{src, dst, sport, dport, hops[k].iface});
            else if (ins.first->second != hops[k].iface)
                ++m_changed;
        }
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetDestination(header.GetDestination());
        r->SetGateway(Ipv4Address(hops[k].gateway));
        r->SetSource(m_ipv4->GetAddress(hops[k].iface, 0).GetLocal());
        r->SetOutputDevice(m_ipv4->GetNetDevice(hops[k].iface));
        ++m_forwarded;
        if (header.GetProtocol() == 6 && !m_reorderHosts.empty()
                && m_reorderHosts.count(header.GetDestination().Get()) && Resequence(r, p, header, ucb))
            return true;
        ucb(r, p, header);
        return true;
    }
    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}

  private:
    uint64_t NextRandom() {
        m_rng ^= m_rng >> 12; m_rng ^= m_rng << 25; m_rng ^= m_rng >> 27;
        return m_rng * 2685821657736338717ULL;
    }

    // true when the packet was taken here (forwarded in order, or held until its turn)
    bool Resequence(Ptr<Ipv4Route> r, Ptr<const Packet> p, const Ipv4Header& h, const UnicastForwardCallback& ucb) {
        TcpHeader tcp;
        p->PeekHeader(tcp);
        uint32_t len = p->GetSize() - tcp.GetSerializedSize();
        uint64_t key = (((uint64_t)h.GetSource().Get()) << 32 | h.GetDestination().Get()) * 0x9E3779B97F4A7C15ULL
                       ^ (((uint64_t)tcp.GetSourcePort()) << 16 | tcp.GetDestinationPort());
        ReorderState& f = m_flows[key];
        f.key = key;
        uint32_t seq = tcp.GetSequenceNumber().GetValue();
        if (tcp.GetFlags() & TcpHeader::SYN) { f.init = true; f.expected = seq + 1; return false; }
        if (len == 0 || !f.init) return false;
        int32_t ahead = (int32_t)(seq - f.expected);
        if (ahead < 0) return false;                     // a retransmission or duplicate: no reason to wait
        if (ahead == 0) {
            ucb(r, p, h);
            f.expected = seq + len;
            Release(f);
            return true;
        }
        if (f.held.count(seq)) return false;
        f.held.emplace(seq, HeldSegment{r, p, h, ucb, len});
        ++m_heldTotal;
        if (!f.timer.IsPending())
            f.timer = Simulator::Schedule(m_hold, &HashEcmpRouting::Flush, this, key);
        return true;
    }

    void Release(ReorderState& f) {
        bool progress = false;
        while (!f.held.empty()) {
            auto it = f.held.begin();
            uint32_t seq = it->first;
            if ((int32_t)(seq - f.expected) > 0) break;
            HeldSegment x = it->second;
            f.held.erase(it);
            x.ucb(x.route, x.packet, x.header);
            uint32_t end = seq + x.len;
            if ((int32_t)(end - f.expected) > 0) f.expected = end;
            progress = true;
        }
        if (f.timer.IsPending() && (f.held.empty() || progress)) f.timer.Cancel();
        if (!f.held.empty() && !f.timer.IsPending()) {
            uint64_t key = f.key;
            f.timer = Simulator::Schedule(m_hold, &HashEcmpRouting::Flush, this, key);
        }
    }

    // the gap did not fill in time (a loss): deliver what is held, in order, and let the transport recover
    void Flush(uint64_t key) {
        ReorderState& f = m_flows[key];
        for (auto& kv : f.held) {
            kv.second.ucb(kv.second.route, kv.second.packet, kv.second.header);
            uint32_t end = kv.first + kv.second.len;
            if ((int32_t)(end - f.expected) > 0) f.expected = end;
            ++m_flushed;
        }
        f.held.clear();
    }

    bool m_random = false;
    uint64_t m_rng = 1;
    std::unordered_set<uint32_t> m_reorderHosts;
    std::map<uint64_t, ReorderState> m_flows;
    Time m_hold = MilliSeconds(5);
    uint64_t m_heldTotal = 0, m_flushed = 0;
    Ptr<Ipv4> m_ipv4;
    uint64_t m_salt;
    uint64_t m_forwarded;
    std::unordered_map<uint32_t, std::vector<Hop>> m_table;
    std::unordered_map<uint64_t, uint32_t> m_seen;
    uint64_t m_changed = 0;
    bool m_roundRobin = false;
    std::unordered_map<uint32_t, uint64_t> m_rr;
    std::vector<Choice> m_choices;
};

Ptr<HashEcmpRouting> InstallHashEcmp(Ptr<Node> node, uint64_t salt, bool roundRobin, bool random) {
    Ptr<Ipv4> ipv4 = node->GetObject<Ipv4>();
    Ptr<Ipv4ListRouting> list = DynamicCast<Ipv4ListRouting>(ipv4->GetRoutingProtocol());
    NS_ABORT_MSG_IF(!list, "expected Ipv4ListRouting on every node");
    Ptr<HashEcmpRouting> proto = CreateObject<HashEcmpRouting>();
    proto->SetSalt(salt);
    proto->SetRoundRobin(roundRobin);
    proto->SetRandom(random);
    list->AddRoutingProtocol(proto, 100);   // ahead of global routing (-10) and static routing (0)
    return proto;
}

// Interface index of the ipv4 interface bound to a device.
int32_t IfaceOf(Ptr<NetDevice> dev) {
    return dev->GetNode()->GetObject<Ipv4>()->GetInterfaceForDevice(dev);
}

void SetQueuePackets(Ptr<NetDevice> dev, uint32_t packets) {
    Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev);
    p2p->GetQueue()->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, packets));
}

uint64_t EnqueuedBytes(Ptr<NetDevice> dev) {
    Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev);
    return p2p->GetQueue()->GetTotalReceivedBytes();
}

uint64_t DroppedPackets(Ptr<NetDevice> dev) {
    Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev);
    uint64_t n = p2p->GetQueue()->GetTotalDroppedPackets();
    Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
    if (tc) {
        Ptr<QueueDisc> qd = tc->GetRootQueueDiscOnDevice(dev);
        if (qd) n += qd->GetStats().nTotalDroppedPackets;
    }
    return n;
}

// Completion time of each flow: when its sink has received the flow's bytes.
class FlowRecorder {
  public:
    std::vector<uint64_t> target, got;
    std::vector<double> done_s, first_s;
    uint32_t remaining = 0;
    bool stop_when_done = true;

    uint32_t Add(Ptr<Application> app, uint64_t bytes) {
        uint32_t id = target.size();
        target.push_back(bytes); got.push_back(0); done_s.push_back(-1.0); first_s.push_back(-1.0);
        ++remaining;
        Ptr<PacketSink> sink = DynamicCast<PacketSink>(app);
        sink->TraceConnectWithoutContext("Rx", MakeBoundCallback(&FlowRecorder::OnRx, this, id));
        return id;
    }
    uint64_t retransmissions = 0, ip_drops = 0;

    // TCP sockets exist once the applications have started: connect their retransmission traces just after 0.
    void WatchTransport() {
        Simulator::Schedule(NanoSeconds(1), &FlowRecorder::ConnectSockets, this);
        Config::ConnectWithoutContextFailSafe("/NodeList/*/$ns3::Ipv4L3Protocol/Drop",
                                              MakeBoundCallback(&FlowRecorder::OnIpDrop, this));
        // a full device queue without a queue disc: the traffic-control layer drops the packet (TcDrop)
        Config::ConnectWithoutContextFailSafe("/NodeList/*/$ns3::TrafficControlLayer/TcDrop",
                                              MakeBoundCallback(&FlowRecorder::OnDevDrop, this));
    }
    static void ConnectSockets(FlowRecorder* self) {
        Config::ConnectWithoutContextFailSafe("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/Retransmission",
                                              MakeBoundCallback(&FlowRecorder::OnRetx, self));
    }
    static void OnRetx(FlowRecorder* self, Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
                       Ptr<const TcpSocketBase>) { ++self->retransmissions; }
    static void OnIpDrop(FlowRecorder* self, const Ipv4Header&, Ptr<const Packet>, Ipv4L3Protocol::DropReason,
                         Ptr<Ipv4>, uint32_t) { ++self->ip_drops; }

    uint64_t dev_drops = 0;
    static void OnDevDrop(FlowRecorder* self, Ptr<const Packet>) { ++self->dev_drops; }
    static void OnRx(FlowRecorder* self, uint32_t id, Ptr<const Packet> p, const Address& from) {
        if (self->first_s[id] < 0) self->first_s[id] = Simulator::Now().GetSeconds();
        self->got[id] += p->GetSize();
        if (self->done_s[id] < 0 && self->got[id] >= self->target[id]) {
            self->done_s[id] = Simulator::Now().GetSeconds();
            if (--self->remaining == 0 && self->stop_when_done) Simulator::Stop();
        }
    }
};

}  // namespace fabricval
"""


def ns3_available() -> bool:
    """True when ns-3's Python bindings can be imported (without importing them: that takes ~20 s)."""
    if _NS is not None:
        return True
    import importlib.util

    try:
        return importlib.util.find_spec("ns") is not None and importlib.util.find_spec("cppyy") is not None
    except (ImportError, ValueError):
        return False


def import_ns3():
    """Import ns-3's bindings once (``from ns import ns``) and compile fabric's C++ helpers; returns ``ns``."""
    global _NS, _CPP_READY
    with _LOCK:
        if _NS is None:
            if not ns3_available():
                raise FabricError(NS3_MISSING)
            try:
                with _quiet_stderr():
                    from ns import ns  # noqa: PLC0415 (lazy by design: ~20 s)
            except Exception as err:  # broken install: say so instead of a cppyy traceback
                raise FabricError(f"{NS3_MISSING} (importing ns-3 failed: {type(err).__name__}: {err})") from err
            _NS = ns
        if not _CPP_READY:
            import cppyy

            if not hasattr(cppyy.gbl, "fabricval"):
                cppyy.cppdef(_CPP)
            _CPP_READY = True
    return _NS


class _quiet_stderr:
    """Silence the harmless "[runStaticInitializersOnce]: Failed to materialize symbols" lines of the import."""

    def __enter__(self):
        try:
            sys.stderr.flush()
            self._fd = os.dup(2)
            self._null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(self._null, 2)
        except OSError:
            self._fd = None
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            os.dup2(self._fd, 2)
            os.close(self._fd)
            os.close(self._null)
        return False


def cpp_flow_hash(src: int, dst: int, proto: int, sport: int, dport: int, salt: int) -> int:
    """The C++ protocol's hash (for checking the Python replica)."""
    import_ns3()
    import cppyy

    return int(cppyy.gbl.fabricval.FlowHash(src, dst, proto, sport, dport, salt))


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the packet-level model (see the module docstring).

    ``switch_queue_packets``: FIFO size of every switch port (``None``: lossless, see :func:`lossless_queue_packets`).
    ``host_qdisc``: ``fq_codel`` (default) or ``fifo`` (one ``host_queue_packets`` FIFO). ``time_limit_factor``:
    the simulation stops at this many times the fluid bound (flows not done by then count as unfinished).
    ``reorder_buffer``: a reorder-tolerant transport: each flow's data segments reach the receiving host in sequence
    order (held at its leaf while a gap is open, at most ``reorder_hold_s``), as a NIC that places out-of-order
    packets and tracks them per packet presents them to its transport; spraying then costs no spurious
    retransmissions. Off: plain TCP, which takes three duplicate ACKs for a loss. ``None`` (default): off here;
    :func:`fabric.validate.packet.run_packet` turns it on for designs with a reorder-tolerant transport.
    """

    switch_queue_packets: int | None = None
    host_qdisc: str = "fq_codel"
    host_ring_packets: int = 4
    host_queue_packets: int = 100_000
    mss_bytes: int = 1448
    mtu_bytes: int = 1500
    tcp_buffer_bytes: int = 1 << 18
    min_rto_s: float = 0.005
    congestion_control: str = "ns3::TcpNewReno"
    send_size_bytes: int = 8 * 1448
    time_limit_factor: float = 50.0
    reorder_buffer: bool | None = None
    reorder_hold_s: float = 0.005


@dataclass
class SimResult:
    """What one ns-3 run measured."""

    done_s: np.ndarray              # completion time of each flow (NaN: did not finish)
    first_byte_s: np.ndarray
    drops: int
    choices: list                   # ECMP: (switch, src addr, dst addr, sport, dport, link id) as chosen in ns-3
    wall_s: float
    link_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    retransmissions: int = 0
    ip_drops: int = 0
    path_changes: int = 0           # ECMP: packets of a 5-tuple that left a switch on another port than the first
    sim_end_s: float = 0.0
    extra: dict = field(default_factory=dict)


def lossless_queue_packets(n_flows: int, config: SimConfig | None = None) -> int:
    """A switch FIFO no packet can overflow: every flow's data and ACKs in flight, at their largest windows."""
    cfg = config or SimConfig()
    return int(2 * n_flows * math.ceil(cfg.tcp_buffer_bytes / cfg.mss_bytes) + 1000)


def simulate(net, flows, *, routing: str, salts=None, seed: int = 0, config: SimConfig | None = None,
             expected_s: float | None = None, probe=None) -> SimResult:
    """Run ``flows`` (``(src host, dst host, bytes, sport, dport)`` each) on ``net`` in ns-3.

    ``routing``: ``ecmp`` (per-flow hash with ``salts``) or ``spray`` (``RandomEcmpRouting``).
    ``expected_s`` bounds the simulated time at ``time_limit_factor`` times it (flows unfinished then are NaN).
    ``probe``: an object with ``attach(devs)`` (called with every link's ``(device at its first end, device at its
    second end)`` before the run) and ``collect(end_s) -> dict`` (after it, kept as ``extra["probe"]``), e.g. the
    switch-queue counters of :mod:`fabric.audit.ns3queues`.
    """
    if routing not in ("ecmp", "spray", "spray_rr"):
        raise FabricError(f"packet-level routing must be 'ecmp', 'spray' or 'spray_rr', got {routing!r}")
    cfg = config or SimConfig()
    ns = import_ns3()
    import cppyy

    fv = cppyy.gbl.fabricval
    t0 = time.perf_counter()
    with _LOCK:
        ns.RngSeedManager.SetSeed(1 + (int(seed) & 0x7FFFFFFF))
        ns.RngSeedManager.SetRun(1)
        ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(cfg.mss_bytes))
        ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(cfg.tcp_buffer_bytes))
        ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(cfg.tcp_buffer_bytes))
        ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(cfg.min_rto_s)))
        ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(routing == "ecmp"))
        ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(
            cfg.congestion_control)))
        custom = routing in ("ecmp", "spray_rr") or bool(cfg.reorder_buffer)
        ns.Config.SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", ns.BooleanValue(not custom))

        nodes = ns.NodeContainer()
        nodes.Create(net.n_nodes)
        ns.InternetStackHelper().Install(nodes)
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("Mtu", ns.UintegerValue(cfg.mtu_bytes))
        addr = ns.Ipv4AddressHelper()
        mask = ns.Ipv4Mask("255.255.255.252")
        tch = ns.TrafficControlHelper()
        queue = cfg.switch_queue_packets or lossless_queue_packets(len(flows), cfg)
        devs = []
        for k in range(net.n_links):
            u, v = (int(x) for x in net.link_ends[k])
            p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(net.link_capacity_bps[k]))))
            p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(net.link_delay_s[k] * 1e9)))))
            pair = p2p.Install(nodes.Get(u), nodes.Get(v))
            addr.SetBase(ns.Ipv4Address(int(net.link_addr[k, 0]) - 1), mask)
            addr.Assign(pair)
            for side, node in ((0, u), (1, v)):
                dev = pair.Get(side)
                if node >= net.n_hosts or cfg.host_qdisc == "fifo":
                    tch.Uninstall(dev)
                fv.SetQueuePackets(dev, queue if node >= net.n_hosts else
                                   cfg.host_queue_packets if cfg.host_qdisc == "fifo" else cfg.host_ring_packets)
            devs.append((pair.Get(0), pair.Get(1)))
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

        protos = {}
        if custom:
            for s in range(net.n_switches):
                x = net.n_hosts + s
                salt = int(salts[s]) if salts is not None else (int(seed) + 1) * 0x2545F4914F6CDD1D + s
                proto = fv.InstallHashEcmp(nodes.Get(x), salt & ((1 << 64) - 1), routing == "spray_rr",
                                           routing == "spray")
                if cfg.reorder_buffer:
                    proto.SetReorderHold(float(cfg.reorder_hold_s))
                for h, links in net.next_hops[x].items():
                    for k in links:
                        side = 0 if int(net.link_ends[k, 0]) == x else 1
                        iface = int(fv.IfaceOf(devs[k][side]))
                        proto.AddRoute(int(net.host_addr[h]), iface, int(net.link_addr[k, 1 - side]))
                        if cfg.reorder_buffer and int(net.link_ends[k, 1 - side]) == h:
                            proto.AddReorderHost(int(net.host_addr[h]))
                protos[s] = proto

        rec = fv.FlowRecorder()
        any_addr = ns.Ipv4Address.GetAny()
        for i, (src, dst, nbytes, sport, dport) in enumerate(flows):
            sink_helper = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                              ns.InetSocketAddress(any_addr, int(dport)).ConvertTo())
            sinks = sink_helper.Install(nodes.Get(int(dst)))
            sinks.Start(ns.Seconds(0.0))
            rec.Add(sinks.Get(0), int(nbytes))
            remote = ns.InetSocketAddress(ns.Ipv4Address(int(net.host_addr[dst])), int(dport))
            bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", remote.ConvertTo())
            bulk.SetAttribute("MaxBytes", ns.UintegerValue(int(nbytes)))
            bulk.SetAttribute("SendSize", ns.UintegerValue(cfg.send_size_bytes))
            local = ns.InetSocketAddress(ns.Ipv4Address(int(net.host_addr[src])), int(sport))
            bulk.SetAttribute("Local", ns.AddressValue(local.ConvertTo()))
            apps = bulk.Install(nodes.Get(int(src)))
            apps.Start(ns.Seconds(0.0))
        t_setup = time.perf_counter() - t0
        rec.WatchTransport()
        if probe is not None:
            probe.attach(devs)
        if expected_s:
            ns.Simulator.Stop(ns.Seconds(float(expected_s) * cfg.time_limit_factor))
        ns.Simulator.Run()
        end = ns.Simulator.Now().GetSeconds()
        t_run = time.perf_counter() - t0 - t_setup

        done = np.array([float(rec.done_s[i]) for i in range(len(flows))])
        first = np.array([float(rec.first_s[i]) for i in range(len(flows))])
        done[done < 0] = np.nan
        first[first < 0] = np.nan
        drops = int(sum(int(fv.DroppedPackets(d)) for pair in devs for d in pair))
        drops += int(rec.dev_drops)
        retx, ip_drops = int(rec.retransmissions), int(rec.ip_drops)
        # bytes sent on each directed link (2k: from the link's first end, 2k + 1: from its second)
        link_bytes = np.array([float(fv.EnqueuedBytes(d)) for pair in devs for d in pair])
        choices = []
        changed = sum(int(p.Changed()) for p in protos.values()) if routing == "ecmp" else 0
        for s, proto in (protos.items() if routing == "ecmp" else ()):
            x = net.n_hosts + s
            node_links = {}
            for k in range(net.n_links):
                for side in (0, 1):
                    if int(net.link_ends[k, side]) == x:
                        node_links[int(fv.IfaceOf(devs[k][side]))] = k
            for i in range(int(proto.NChoices())):
                c = proto.GetChoice(i)
                choices.append((s, int(c.src), int(c.dst), int(c.sport), int(c.dport), node_links[int(c.iface)]))
        probed = probe.collect(end) if probe is not None else None
        held = sum(int(p.Held()) for p in protos.values())
        flushed = sum(int(p.Flushed()) for p in protos.values())
        ns.Simulator.Destroy()
    return SimResult(done_s=done, first_byte_s=first, drops=drops, choices=choices,
                     wall_s=time.perf_counter() - t0, sim_end_s=end,
                     link_bytes=link_bytes, extra={"setup_s": t_setup, "run_s": t_run, "reorder_held": held,
                                                   "reorder_flushed": flushed, "probe": probed},
                     retransmissions=retx, ip_drops=ip_drops, path_changes=changed)

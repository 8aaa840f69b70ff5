"""Switch-queue counters for the ns-3 packet model: the ECN marks and PFC pause exposure a switch would report.

ns-3's switch ports here are FIFOs with no ECN and no PFC (:mod:`fabric.validate.ns3sim`), and TCP does not react
to marks, so this counts what the switches *would* signal on the simulated traffic (open loop):

- ECN: a packet is counted as marked when it joins an egress queue that already holds at least ``k_bytes``
  (a step marker, DCQCN's K_min = K_max with P_max = 1);
- PFC: the time each egress queue holds at least ``xoff_bytes`` (the XOFF threshold: a lossless switch would pause
  the upstream senders meanwhile).

Per switch egress port: bytes enqueued, bytes marked, seconds above XOFF, the largest queue; grouped by tier
(``leaf->spine``, ``spine->leaf``, ``leaf->host``, ...) by :func:`by_tier`.
"""

from __future__ import annotations

__all__ = ["QueueProbe", "by_tier", "DEFAULT_K_BYTES", "DEFAULT_XOFF_BYTES"]

#: ECN marking threshold (bytes queued ahead of a packet) and PFC XOFF threshold for the 10 Gb/s test hardware
DEFAULT_K_BYTES = 32 * 1024
DEFAULT_XOFF_BYTES = 128 * 1024

_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include <vector>

namespace fabricaudit {
using namespace ns3;

class QueueMonitor {
  public:
    uint64_t k_bytes, xoff_bytes;
    std::vector<Ptr<Queue<Packet>>> queues;
    std::vector<uint64_t> enq_bytes, marked_bytes, max_bytes, now_bytes;
    std::vector<double> above_s, above_since;

    QueueMonitor(uint64_t k, uint64_t xoff) : k_bytes(k), xoff_bytes(xoff) {}

    uint32_t Add(Ptr<NetDevice> dev) {
        Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev);
        Ptr<Queue<Packet>> q = p2p->GetQueue();
        uint32_t id = queues.size();
        queues.push_back(q);
        enq_bytes.push_back(0); marked_bytes.push_back(0); max_bytes.push_back(0); now_bytes.push_back(0);
        above_s.push_back(0.0); above_since.push_back(-1.0);
        q->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&QueueMonitor::OnEnqueue, this, id));
        q->TraceConnectWithoutContext("BytesInQueue", MakeBoundCallback(&QueueMonitor::OnBytes, this, id));
        return id;
    }
    static void OnEnqueue(QueueMonitor* self, uint32_t id, Ptr<const Packet> p) {
        uint64_t sz = p->GetSize();
        uint64_t now = self->queues[id]->GetNBytes();
        uint64_t ahead = now >= sz ? now - sz : 0;      // the queue already counts this packet
        self->enq_bytes[id] += sz;
        if (ahead >= self->k_bytes) self->marked_bytes[id] += sz;
    }
    static void OnBytes(QueueMonitor* self, uint32_t id, uint32_t oldv, uint32_t newv) {
        double t = Simulator::Now().GetSeconds();
        if (newv > self->max_bytes[id]) self->max_bytes[id] = newv;
        bool was = oldv >= self->xoff_bytes, is = newv >= self->xoff_bytes;
        if (!was && is) self->above_since[id] = t;
        if (was && !is && self->above_since[id] >= 0) {
            self->above_s[id] += t - self->above_since[id];
            self->above_since[id] = -1.0;
        }
    }
    void Finish(double t) {
        for (size_t i = 0; i < above_since.size(); ++i)
            if (above_since[i] >= 0) { above_s[i] += t - above_since[i]; above_since[i] = -1.0; }
    }
};
}  // namespace fabricaudit
"""


class QueueProbe:
    """A ``probe`` for :func:`fabric.validate.ns3sim.simulate` that counts marks and pause time on every switch
    egress port of ``net`` (a :class:`~fabric.validate.network.PacketNetwork`)."""

    def __init__(self, net, *, k_bytes: int = DEFAULT_K_BYTES, xoff_bytes: int = DEFAULT_XOFF_BYTES):
        self.net, self.k_bytes, self.xoff_bytes = net, int(k_bytes), int(xoff_bytes)
        self.ports: list[tuple[int, int]] = []
        self.mon = None

    def attach(self, devs) -> None:
        import cppyy

        if not hasattr(cppyy.gbl, "fabricaudit"):
            cppyy.cppdef(_CPP)
        self.mon = cppyy.gbl.fabricaudit.QueueMonitor(self.k_bytes, self.xoff_bytes)
        for k, pair in enumerate(devs):
            for side in (0, 1):
                if int(self.net.link_ends[k, side]) >= self.net.n_hosts:      # a switch's egress port
                    self.mon.Add(pair[side])
                    self.ports.append((k, side))

    def collect(self, end_s: float) -> dict:
        m = self.mon
        m.Finish(float(end_s))
        rows = []
        for i, (k, side) in enumerate(self.ports):
            a, b = (int(x) for x in self.net.link_ends[k])
            frm, to = (a, b) if side == 0 else (b, a)
            rows.append({"link": k, "from": frm, "to": to, "capacity_bps": float(self.net.link_capacity_bps[k]),
                         "bytes": int(m.enq_bytes[i]), "marked_bytes": int(m.marked_bytes[i]),
                         "above_xoff_s": float(m.above_s[i]), "max_queue_bytes": int(m.max_bytes[i])})
        return {"k_bytes": self.k_bytes, "xoff_bytes": self.xoff_bytes, "ports": rows}


def _tier_name(net, node: int) -> str:
    if node < net.n_hosts:
        return "host"
    name = str(net.switch_names[node - net.n_hosts])
    return "".join(ch for ch in name.split("@")[0] if not ch.isdigit()) or name


def by_tier(net, probed: dict) -> dict:
    """Per tier ``{"marked": share of bytes marked, "pause": share of busy time above XOFF, "bytes": ..}``."""
    out: dict[str, dict] = {}
    for r in probed["ports"]:
        if r["bytes"] <= 0:
            continue
        tier = f"{_tier_name(net, r['from'])}->{_tier_name(net, r['to'])}"
        t = out.setdefault(tier, {"bytes": 0, "marked_bytes": 0, "busy_s": 0.0, "above_xoff_s": 0.0,
                                  "max_queue_bytes": 0})
        t["bytes"] += r["bytes"]
        t["marked_bytes"] += r["marked_bytes"]
        t["busy_s"] += r["bytes"] * 8.0 / r["capacity_bps"]
        t["above_xoff_s"] += r["above_xoff_s"]
        t["max_queue_bytes"] = max(t["max_queue_bytes"], r["max_queue_bytes"])
    for t in out.values():
        t["marked"] = t["marked_bytes"] / t["bytes"]
        t["pause"] = min(t["above_xoff_s"] / t["busy_s"], 1.0) if t["busy_s"] > 0 else 0.0
    return out

"""The packet-level view of a built fabric: hosts, switches, point-to-point links, addresses and ECMP next hops.

Pure Python (no ns-3): the ns-3 builder (:mod:`fabric.validate.ns3sim`) creates exactly these nodes and links,
and the fluid bound (:mod:`fabric.validate.fluid`) routes flows over the same next-hop sets, so both models see
the network the evaluator was given.

- **Hosts** are the fabric's NIC nodes (one GPU = one NIC with one port: ``gpus_per_node=1``, one plane); GPU
  nodes, PCIe and NVLink attachments are left out. Host ``i`` is the NIC of GPU ``i``.
- **Switches** keep the fabric's order; every network link (``nic-leaf``, ``leaf-spine``, ``spine-core``, ...)
  becomes one point-to-point link at that link's own capacity (uplinks may run at another speed than the hosts:
  ``Design.uplink_gbps``), so a leaf-spine bundle of ``b`` cables is ``b`` parallel links.
- **Addresses**: link ``k`` is the /30 subnet ``10.0.0.0 + 4k``; its ``a`` end (the fabric's ``link_a``) is
  ``.1``, its ``b`` end ``.2``. A host's address is the one on its NIC link.
- **Next hops**: shortest paths by hop count. At node ``x`` the candidates towards host ``h`` are the links to
  neighbours one hop closer to ``h``, in link-id order; per-flow ECMP picks ``candidates[hash % n]``
  (:func:`flow_hash`, salted per switch), spraying splits evenly over them.

The hash is a splitmix64-style mix of the 5-tuple and the switch's salt; the C++ routing protocol in ns-3 uses the
same arithmetic (``tests/test_validate.py`` checks both agree packet for packet).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from fabric.errors import DesignError
from fabric.topology.fabric import LINK_KINDS, NIC, SWITCH

__all__ = ["PacketNetwork", "packet_network", "flow_hash", "switch_salts", "ecmp_path", "spray_split",
           "TCP", "ADDR_BASE", "ip_str"]

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
#: IP protocol number of TCP (the 5-tuple's protocol field).
TCP = 6
#: First link subnet (10.0.0.0); link ``k`` is ``ADDR_BASE + 4k`` / 30.
ADDR_BASE = 0x0A000000
_NETWORK_KINDS = {LINK_KINDS.index(k) for k in ("nic-leaf", "leaf-spine", "spine-core", "router-local",
                                                 "router-global")}


def _mix64(x: int) -> int:
    """The splitmix64 finalizer (a bijection on 64-bit words)."""
    x &= _M64
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    x ^= x >> 31
    return x


def flow_hash(src: int, dst: int, proto: int, sport: int, dport: int, salt: int) -> int:
    """64-bit hash of a 5-tuple (IPv4 addresses as integers) under a switch's salt; same as the C++ protocol."""
    h = _mix64(((src & 0xFFFFFFFF) << 32 | (dst & 0xFFFFFFFF)) ^ ((salt * _GOLDEN) & _M64))
    return _mix64(h ^ ((proto & 0xFF) << 32 | (sport & 0xFFFF) << 16 | (dport & 0xFFFF)))


def switch_salts(n_switches: int, seed: int) -> np.ndarray:
    """One 64-bit salt per switch for a seed (as Python ints in an object array: numpy has no exact uint64 math)."""
    return np.array([_mix64((int(seed) & 0xFFFFFFFF) << 24 ^ (s + 1) * 0x2545F4914F6CDD1D) for s in range(n_switches)],
                    dtype=object)


def ip_str(addr: int) -> str:
    return ".".join(str((int(addr) >> s) & 0xFF) for s in (24, 16, 8, 0))


@dataclass
class PacketNetwork:
    """Hosts ``[0, n_hosts)`` then switches ``[n_hosts, n_nodes)``; links between them (see the module docstring).

    ``link_ends[k] = (u, v)`` local node ids; ``link_addr[k] = (addr of u's end, addr of v's end)``;
    ``next_hops[x][h]`` the candidate link ids at node ``x`` towards host ``h`` (switches only; a host has one
    link). ``host_link[h]`` is the host's only link. ``switch_tier[s]`` is the fabric tier of switch ``s``.
    """

    n_hosts: int
    n_switches: int
    link_ends: np.ndarray
    link_addr: np.ndarray
    link_capacity_bps: np.ndarray
    link_delay_s: np.ndarray
    link_kind: tuple
    link_fabric_id: np.ndarray
    host_of_gpu: np.ndarray
    host_addr: np.ndarray
    host_link: np.ndarray
    switch_tier: np.ndarray
    switch_names: tuple
    switch_latency_s: float
    next_hops: list = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        return self.n_hosts + self.n_switches

    @property
    def n_links(self) -> int:
        return int(self.link_ends.shape[0])

    def other_end(self, link: int, node: int) -> int:
        u, v = self.link_ends[link]
        return int(v) if int(u) == node else int(u)

    def directed(self, link: int, from_node: int) -> int:
        """Directed link id: ``2 link`` from its ``u`` end to ``v``, ``2 link + 1`` the other way."""
        return 2 * int(link) + (0 if int(self.link_ends[link, 0]) == from_node else 1)

    def node_name(self, node: int) -> str:
        return f"host{node}" if node < self.n_hosts else self.switch_names[node - self.n_hosts]

    def summary(self) -> dict:
        tiers = np.bincount(self.switch_tier, minlength=1) if self.n_switches else np.zeros(0, int)
        speeds: dict = {}
        for kind, cap in zip(self.link_kind, self.link_capacity_bps.tolist()):
            speeds.setdefault(kind, cap / 1e9)
        hosts = speeds.get("nic-leaf", float(self.link_capacity_bps.max()) / 1e9 if self.n_links else 0.0)
        return {"hosts": self.n_hosts, "switches": self.n_switches, "links": self.n_links,
                "switches_per_tier": [int(t) for t in tiers], "link_speed_gbps": hosts,
                "link_speeds_gbps": speeds}


def packet_network(fabric, *, link_delay_s: float | None = None) -> PacketNetwork:
    """Translate a built :class:`~fabric.topology.fabric.Fabric` (one NIC port per GPU) into a :class:`PacketNetwork`.

    ``link_delay_s`` overrides every link's one-way delay (default: the fabric's propagation latency of the link
    plus half the latency of each end node, so switch hops and NICs are counted once per path).
    """
    d = fabric.design
    if fabric.planes != 1:
        raise DesignError("the packet-level check supports single-plane fabrics only (planes: 1)")
    if fabric.gpu_nics.shape[1] != 1 or fabric.nic_ports.shape[1] != 1:
        raise DesignError("the packet-level check needs one NIC with one port per GPU (nics_per_gpu: 1, a "
                          "single-port NIC)")
    if fabric.n_nics != fabric.n_gpus or len(np.unique(fabric.gpu_nics[:, 0])) != fabric.n_gpus:
        raise DesignError("the packet-level check needs one NIC per GPU (GPUs sharing a NIC are not supported)")
    if getattr(d, "gpus_per_node", 1) != 1:
        raise DesignError(f"the packet-level check models one GPU per host: use gpus_per_node: 1 (got "
                          f"{d.gpus_per_node}; fabric validate --one-gpu-per-host does it); flows inside a node "
                          "would use NVLink, which ns-3 does not model here")
    if fabric.n_switches == 0:
        raise DesignError("the fabric has no switches")
    nic_nodes = fabric.gpu_nics[:, 0].astype(np.int64)
    H = fabric.n_gpus
    local = np.full(fabric.n_nodes, -1, np.int64)
    local[nic_nodes] = np.arange(H)
    sw_nodes = np.arange(fabric.switch_base, fabric.switch_base + fabric.n_switches)
    assert (fabric.node_kind[sw_nodes] == SWITCH).all() and (fabric.node_kind[nic_nodes] == NIC).all()
    local[sw_nodes] = H + np.arange(fabric.n_switches)
    keep = np.array([int(k) in _NETWORK_KINDS for k in fabric.link_kind], bool)
    ids = np.flatnonzero(keep)
    ends = np.stack([local[fabric.link_a[ids]], local[fabric.link_b[ids]]], axis=1)
    if (ends < 0).any():
        raise DesignError("a network link ends at a node that is neither a host NIC nor a switch")
    L = ids.shape[0]
    if L * 4 >= (1 << 24):
        raise DesignError(f"{L:,} links are too many for the packet-level check (keep it to a few hundred)")
    base = ADDR_BASE + 4 * np.arange(L, dtype=np.int64)
    addr = np.stack([base + 1, base + 2], axis=1)
    host_link = np.full(H, -1, np.int64)
    host_addr = np.zeros(H, np.int64)
    for k in range(L):
        for side in (0, 1):
            n = int(ends[k, side])
            if n < H:
                if host_link[n] != -1:
                    raise DesignError(f"host {n} has more than one network link")
                host_link[n] = k
                host_addr[n] = addr[k, side]
    if (host_link < 0).any():
        raise DesignError(f"host {int(np.flatnonzero(host_link < 0)[0])} is not cabled to a switch")
    if link_delay_s is not None:
        delay = np.full(L, float(link_delay_s))
    else:
        # propagation plus half the latency of each end (switch hop, NIC), so a path's delay is its propagation
        # plus every switch and both NICs once: what the evaluator charges per latency step
        node_lat = fabric.node_latency_s.astype(float)
        delay = (fabric.link_latency_s[ids].astype(float)
                 + 0.5 * (node_lat[fabric.link_a[ids]] + node_lat[fabric.link_b[ids]]))
    names = tuple(fabric.node_label(int(s)) for s in sw_nodes)
    net = PacketNetwork(
        n_hosts=H, n_switches=int(fabric.n_switches), link_ends=ends, link_addr=addr,
        link_capacity_bps=fabric.link_capacity_bps[ids].astype(float), link_delay_s=delay,
        link_kind=tuple(LINK_KINDS[int(k)] for k in fabric.link_kind[ids]), link_fabric_id=ids,
        host_of_gpu=np.arange(H), host_addr=host_addr, host_link=host_link,
        switch_tier=fabric.node_tier[sw_nodes].astype(np.int64), switch_names=names,
        switch_latency_s=float(fabric.node_latency_s[fabric.switch_base]))
    net.next_hops = _next_hops(net)
    return net


def _next_hops(net: PacketNetwork) -> list:
    """``[node][host] -> tuple of link ids`` one hop closer to ``host`` (BFS by hop count; hosts do not relay)."""
    N, H = net.n_nodes, net.n_hosts
    adj: list[list[tuple[int, int]]] = [[] for _ in range(N)]
    for k, (u, v) in enumerate(net.link_ends):
        adj[int(u)].append((k, int(v)))
        adj[int(v)].append((k, int(u)))
    hops: list[dict] = [dict() for _ in range(N)]
    for h in range(H):
        dist = np.full(N, -1, np.int64)
        dist[h] = 0
        q = deque([h])
        while q:
            x = q.popleft()
            if x < H and x != h:
                continue              # hosts are end points, never transit
            for _, y in adj[x]:
                if dist[y] < 0:
                    dist[y] = dist[x] + 1
                    q.append(y)
        for x in range(H, N):
            if dist[x] > 0:
                hops[x][h] = tuple(k for k, y in adj[x] if dist[y] == dist[x] - 1)
    return hops


def ecmp_path(net: PacketNetwork, src: int, dst: int, sport: int, dport: int, salts, proto: int = TCP) -> list:
    """The directed links a flow's packets take under per-flow hashing (``salts[s]`` of switch ``s``)."""
    sa, da = int(net.host_addr[src]), int(net.host_addr[dst])
    node, path = src, []
    link = int(net.host_link[src])
    for _ in range(net.n_nodes):
        path.append(net.directed(link, node))
        node = net.other_end(link, node)
        if node == dst:
            return path
        if node < net.n_hosts:
            raise DesignError(f"the route from host {src} to host {dst} runs through another host")
        cand = net.next_hops[node].get(dst)
        if not cand:
            raise DesignError(f"{net.node_name(node)} has no route to host {dst}")
        s = node - net.n_hosts
        link = cand[flow_hash(sa, da, proto, sport, dport, int(salts[s])) % len(cand)] if len(cand) > 1 else cand[0]
    raise DesignError(f"routing loop from host {src} to host {dst}")


def spray_split(net: PacketNetwork, src: int, dst: int) -> dict:
    """Per-packet spraying as a fluid: ``{directed link: share of the flow}`` (even split at every hop)."""
    share = {src: 1.0}
    out: dict[int, float] = {}
    frontier = [src]
    while frontier:
        nxt: dict[int, float] = {}
        for node in frontier:
            f = share.pop(node)
            cand = (int(net.host_link[node]),) if node < net.n_hosts else net.next_hops[node].get(dst, ())
            if not cand:
                raise DesignError(f"{net.node_name(node)} has no route to host {dst}")
            for k in cand:
                dk = net.directed(k, node)
                out[dk] = out.get(dk, 0.0) + f / len(cand)
                y = net.other_end(k, node)
                if y != dst:
                    nxt[y] = nxt.get(y, 0.0) + f / len(cand)
        share = nxt
        frontier = list(nxt)
    return out

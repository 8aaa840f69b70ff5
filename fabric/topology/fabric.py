"""The built fabric: nodes, links with capacity and latency, the GPU -> NIC -> switch map, tiers.

Arrays, not objects: a 131,072-GPU fabric has about half a million links, so nodes and links are numpy arrays
indexed by node id / link id. Node ids are laid out as GPUs ``[0, n_gpus)``, NICs ``[nic_base, nic_base+n_nics)``,
then switches, then one aggregate NVSwitch node per scale-up domain. Links are duplex; ``capacity_bps`` is per
direction. A networkx view (:func:`fabric.topology.graph.to_networkx`) is built on demand for drawing and checks.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "NODE_KINDS", "LINK_KINDS", "TIER_NAMES", "MEDIA",
    "GPU", "NIC", "SWITCH", "NVSWITCH",
    "Fabric",
]

#: Node kind codes (index into NODE_KINDS).
NODE_KINDS = ("gpu", "nic", "switch", "nvswitch")
GPU, NIC, SWITCH, NVSWITCH = range(4)
#: Switch tier names by tier code (dragonfly routers are tier 0 and named "router" by the builder).
TIER_NAMES = ("leaf", "spine", "core")
#: Link kind codes.
LINK_KINDS = ("nvlink", "pcie", "nic-leaf", "leaf-spine", "spine-core", "router-local", "router-global")
#: Link media codes: "copper" is passive copper (DAC), "active_copper" ACC/AEC, "aoc" an active optical cable,
#: "optics" a transceiver at each end and fibre (see fabric.topology.racks for which link gets which).
MEDIA = ("nvlink", "pcie", "copper", "optics", "active_copper", "aoc")


#: links per kind of a fabric's ``link_kind`` array (shared by the copies of one build), kept for the few last
_KIND_COUNTS: dict = {}


def _kind_counts(link_kind: np.ndarray) -> np.ndarray:
    """``np.bincount(link_kind)`` over every link kind, kept per array (a bincount over a million 8-bit kinds takes
    milliseconds, and the bill of materials, the rack report and the search ask for it per design)."""
    hit = _KIND_COUNTS.get(id(link_kind))
    if hit is not None and hit[0]() is link_kind:
        return hit[1]
    counts = np.bincount(link_kind, minlength=len(LINK_KINDS))
    if len(_KIND_COUNTS) >= 32:
        _KIND_COUNTS.clear()
    _KIND_COUNTS[id(link_kind)] = (weakref.ref(link_kind), counts)
    return counts


#: link ids of each kind of a fabric's ``link_kind`` array (shared by the copies of one build), for the last few
_KIND_INDEX: dict = {}


def kind_index(link_kind: np.ndarray, kind: int) -> np.ndarray:
    """The ids of the links of kind code ``kind`` (ascending), kept per array: the bill of materials, the rack
    power and the cabling ask for them per kind, and a pass over a million 8-bit kinds takes milliseconds."""
    hit = _KIND_INDEX.get(id(link_kind))
    if hit is None or hit[0]() is not link_kind:
        if len(_KIND_INDEX) >= 32:
            _KIND_INDEX.clear()
        hit = (weakref.ref(link_kind), {})
        _KIND_INDEX[id(link_kind)] = hit
    table = hit[1]
    if kind not in table:
        table[kind] = np.flatnonzero(link_kind == kind)
    return table[kind]


def remember_kind_index(link_kind: np.ndarray, index: dict) -> None:
    """Keep ``index`` (kind code -> ascending link ids) for the ``link_kind`` array a builder made."""
    if len(_KIND_INDEX) >= 32:
        _KIND_INDEX.clear()
    _KIND_INDEX[id(link_kind)] = (weakref.ref(link_kind), dict(index))


def remember_kind_counts(link_kind: np.ndarray, counts: np.ndarray) -> None:
    """Keep ``counts`` (links per kind) for the ``link_kind`` array a builder made (it knows them without a pass
    over the links)."""
    if len(_KIND_COUNTS) >= 32:
        _KIND_COUNTS.clear()
    _KIND_COUNTS[id(link_kind)] = (weakref.ref(link_kind), np.asarray(counts, np.int64))


#: propagation delay in fibre or copper (seconds per metre of link)
PROPAGATION_S_PER_M = 5e-9


@dataclass(frozen=True, eq=False)
class Fabric:
    """A built network. See the module docstring for the node-id layout.

    Maps: ``gpu_node[g]`` server of GPU g; ``gpu_domain[g]`` its scale-up domain; ``gpu_nics[g, k]`` the k-th NIC
    node id serving GPU g (shared NICs repeat); ``nic_ports[n - nic_base, p]`` the switch node id port p of NIC n
    is cabled to (``plane`` of port p is ``p // ports_per_plane``). ``structure`` records the sizing decisions
    (radix, tiers, ports down/up, spines, bundles, pods, ...) per plane.
    """

    design: Any
    family: str
    tier_names: tuple[str, ...]
    link_speed_bps: float
    n_gpus: int
    nic_base: int
    n_nics: int
    switch_base: int
    n_switches: int
    nvswitch_base: int
    n_domains: int
    node_kind: np.ndarray
    node_tier: np.ndarray
    node_plane: np.ndarray
    node_group: np.ndarray
    node_latency_s: np.ndarray
    link_a: np.ndarray
    link_b: np.ndarray
    link_kind: np.ndarray
    link_medium: np.ndarray
    link_capacity_bps: np.ndarray
    link_reach_m: np.ndarray
    gpu_node: np.ndarray
    gpu_domain: np.ndarray
    gpu_nics: np.ndarray
    nic_ports: np.ndarray
    structure: dict = field(default_factory=dict)
    reserved_links: dict = field(default_factory=dict)
    #: the cabling's key (:func:`fabric.topology.build.cabling_key`) and the catalog's fingerprint: equal keys, equal
    #: arrays (for caches)
    cache_key: str = ""
    #: the halls of its racks and switches (:class:`fabric.topology.floor.Floor`; None: not laid out)
    floor: Any = None

    # ------------------------------------------------------------------ sizes
    @property
    def link_latency_s(self) -> np.ndarray:
        """Each link's propagation delay: its reach at :data:`PROPAGATION_S_PER_M` (made when asked: a search
        builds many fabrics and never reads it)."""
        return self.link_reach_m * PROPAGATION_S_PER_M

    @property
    def n_nodes(self) -> int:
        return int(self.node_kind.shape[0])

    @property
    def n_links(self) -> int:
        return int(self.link_a.shape[0])

    @property
    def planes(self) -> int:
        return int(self.structure.get("planes", 1))

    @property
    def tiers(self) -> int:
        """Switch tiers above the NICs (1 = a single switch layer)."""
        return int(self.structure.get("tiers", 1))

    # ------------------------------------------------------------------ counts
    def switch_counts(self) -> dict[str, int]:
        """Switches per tier name, e.g. ``{"leaf": 8, "spine": 4}``."""
        sw = self.node_kind == SWITCH
        tiers = self.node_tier[sw]
        counts = np.bincount(tiers, minlength=len(self.tier_names)) if tiers.size else np.zeros(0, int)
        return {self.tier_names[t]: int(c) for t, c in enumerate(counts) if c}

    def links_of_kind(self, kind: str) -> np.ndarray:
        """Ids of the links of ``kind`` (a LINK_KINDS name), ascending; shared: do not write to it."""
        return kind_index(self.link_kind, LINK_KINDS.index(kind))

    def link_counts(self, *, network_only: bool = True) -> dict[str, int]:
        """Physical links per kind; ``network_only`` leaves out NVLink and PCIe attachments."""
        counts = _kind_counts(self.link_kind)
        out = {LINK_KINDS[k]: int(c) for k, c in enumerate(counts) if c}
        if network_only:
            out.pop("nvlink", None)
            out.pop("pcie", None)
        return out

    def link_speeds_gbps(self) -> dict[str, float]:
        """Line rate (Gb/s per direction) of the network links of each kind, e.g. ``{"nic-leaf": 400, "leaf-spine":
        800}`` (every link of a kind runs at one speed: NIC ports at the NIC speed, uplinks at ``uplink_gbps``)."""
        out = {}
        for k, name in enumerate(LINK_KINDS):
            if name in ("nvlink", "pcie"):
                continue
            sel = kind_index(self.link_kind, k)
            if sel.size:
                out[name] = float(self.link_capacity_bps[sel[0]]) / 1e9
        return out

    def link_kind_name(self, link: int) -> str:
        return LINK_KINDS[int(self.link_kind[link])]

    def node_label(self, node: int) -> str:
        """A readable name: ``gpu17``, ``nic3``, ``leaf12@p0``, ``nvswitch2``."""
        k = int(self.node_kind[node])
        if k == GPU:
            return f"gpu{node}"
        if k == NIC:
            return f"nic{node - self.nic_base}"
        if k == NVSWITCH:
            return f"nvswitch{node - self.nvswitch_base}"
        tier = self.tier_names[int(self.node_tier[node])]
        # switches hold the ids from switch_base on (the module docstring's layout): count those of the same tier
        # and plane before this one there, not over every GPU and NIC of the fabric
        before = slice(min(self.switch_base, node), node)
        same = (self.node_kind[before] == SWITCH) & (self.node_tier[before] == self.node_tier[node]) \
            & (self.node_plane[before] == self.node_plane[node])
        idx = int(np.count_nonzero(same))
        plane = f"@p{int(self.node_plane[node])}" if self.planes > 1 else ""
        return f"{tier}{idx}{plane}"

    def switch_ports_used(self) -> np.ndarray:
        """Links terminated on each switch node (index = node id - switch_base), reserved slots included: the ports
        in use counted at the links' speed (with uplinks at another speed than the NIC ports, a leaf's NIC links and
        uplinks occupy ports at their own breakouts: :class:`fabric.topology.sizing.TierPorts`)."""
        ends = np.concatenate([self.link_a, self.link_b])
        kinds = np.concatenate([self.link_kind, self.link_kind])
        on_switch = (ends >= self.switch_base) & (ends < self.switch_base + self.n_switches)
        ends = ends[on_switch & (kinds != LINK_KINDS.index("nvlink"))]
        used = np.bincount(ends - self.switch_base, minlength=self.n_switches)
        extra = self.reserved_links.get("ports_per_switch")
        if extra is not None:
            used = used + extra
        return used

    def summary(self) -> dict[str, Any]:
        """Counts and sizing facts as plain Python values."""
        return {
            "family": self.family,
            "gpus": self.n_gpus,
            "nics": self.n_nics,
            "planes": self.planes,
            "tiers": self.tiers,
            "link_speed_gbps": self.link_speed_bps / 1e9,
            "switches": self.switch_counts(),
            "links": self.link_counts(),
            "structure": self.structure,
        }

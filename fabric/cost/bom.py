"""Bill of materials, capex and power of a built fabric.

Counting rules (documented in docs/cost.md):

- switches per tier at the catalog price and power of the design's switch model;
- one NIC per NIC slot (``nics_per_gpu`` x GPUs);
- every link is bought at its own speed (uplinks may run at another speed than the NIC ports, ``uplink_gbps``);
- every optical link has a fibre cable and a transceiver at each end: NIC ends take one NIC-side module per port,
  switch ends take switch-side modules counted per switch (a twin-port module serves two ports of one switch);
- every other link is one cable with its ends built in, no transceivers: passive copper (DAC, no power) in the
  rack, active copper (ACC) or an active optical cable (AOC, both with the catalog row's power) to the next rack;
  which link gets which is decided by the builder from the rack layout (:mod:`fabric.topology.racks`);
- each link takes the cheapest catalog cable of its medium and speed at least as long as the link; the optical
  links of one kind share the module model that covers the longest of them;
- NVLink/NVSwitch and the PCIe GPU-NIC attachment are part of the server and are not network items;
- ports of reserved node slots (e.g. a SuperPOD's UFM node) are counted as used on the leaves, not costed;
- ``storage_isolation`` buys a separate storage/checkpoint network: one extra NIC per node (the cheapest Ethernet
  NIC), a top-of-rack switch port per node on the cheapest Ethernet switch (switches = nodes / half its ports, the
  other half uplinks), and one DAC per node.

The network capex (``cost_usd``) and power (``power_w``) are what the search minimizes; the servers' price and
power are reported beside them (``compute_cost_usd``, ``compute_power_w``) for the network's share of the cluster.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from fabric.topology.fabric import LINK_KINDS, MEDIA, SWITCH, Fabric

__all__ = ["BomItem", "BillOfMaterials", "bill_of_materials"]

_OPTICS = MEDIA.index("optics")
#: Catalog cable kind of each cable-only medium (no transceivers: the cable's ends are part of it).
_CABLE_KIND = {"copper": "dac", "active_copper": "acc", "aoc": "aoc"}
_NETWORK_KINDS = [k for k in LINK_KINDS if k not in ("nvlink", "pcie")]


@dataclass(frozen=True)
class BomItem:
    """One line of the bill of materials."""

    category: str           # switch | nic | transceiver | cable
    model: str
    where: str              # tier or link kind the item serves
    count: int
    unit_price_usd: float
    unit_power_w: float
    source: str = ""

    @property
    def price_usd(self) -> float:
        return self.count * self.unit_price_usd

    @property
    def power_w(self) -> float:
        return self.count * self.unit_power_w

    def to_dict(self) -> dict:
        return {"category": self.category, "model": self.model, "where": self.where, "count": self.count,
                "unit_price_usd": self.unit_price_usd, "unit_power_w": self.unit_power_w,
                "price_usd": self.price_usd, "power_w": self.power_w, "source": self.source}


@dataclass(frozen=True)
class BillOfMaterials:
    """Counts, items, network capex and power of one fabric (plus the servers' cost and power for context)."""

    items: tuple[BomItem, ...]
    switches: dict
    links: dict
    cables: dict
    transceivers: dict
    nics: int
    compute_cost_usd: float
    compute_power_w: float
    gpus: int
    structure: dict = field(default_factory=dict)

    @property
    def cost_usd(self) -> float:
        """Network capex in dollars."""
        return float(sum(i.price_usd for i in self.items))

    @property
    def power_w(self) -> float:
        """Network power in watts."""
        return float(sum(i.power_w for i in self.items))

    @property
    def cable_count(self) -> int:
        return int(sum(self.cables.values()))

    def by_category(self) -> dict[str, dict[str, float]]:
        """``{category: {"cost_usd": .., "power_w": ..}}``."""
        out: dict[str, dict[str, float]] = {}
        for i in self.items:
            row = out.setdefault(i.category, {"cost_usd": 0.0, "power_w": 0.0})
            row["cost_usd"] += i.price_usd
            row["power_w"] += i.power_w
        return out

    def to_dict(self) -> dict:
        """The ``fabric build --json`` form."""
        total = self.cost_usd + self.compute_cost_usd
        return {
            "switches": dict(self.switches),
            "links": dict(self.links),
            "cables": dict(self.cables),
            "transceivers": dict(self.transceivers),
            "nics": self.nics,
            "cost_usd": self.cost_usd,
            "power_w": self.power_w,
            "cost_per_gpu_usd": self.cost_usd / self.gpus,
            "by_category": self.by_category(),
            "compute_cost_usd": self.compute_cost_usd,
            "compute_power_w": self.compute_power_w,
            "network_share_of_capex": self.cost_usd / total if total else 0.0,
            "items": [i.to_dict() for i in self.items],
            "structure": {k: v for k, v in self.structure.items()},
            "partial_pod": self.partial_pod(),
        }

    def partial_pod(self) -> dict | None:
        """A partly filled last pod built as a full one, and its cost (:mod:`fabric.cost.partial_pod`); None when
        there is none."""
        from fabric.cost.partial_pod import partial_pod_of

        pod = partial_pod_of(self.structure, self)
        return pod.to_dict() if pod is not None else None


def _switch_end_modules(fabric: Fabric, optical: np.ndarray, ports_per_module: int):
    """Switch-side modules per switch tier: optical link ends on each switch, rounded up per switch (``optical``:
    link ids or a mask over the links)."""
    ends = np.concatenate([fabric.link_a[optical], fabric.link_b[optical]])
    ends = ends[(ends >= fabric.switch_base) & (ends < fabric.switch_base + fabric.n_switches)]
    per_switch = np.bincount(ends - fabric.switch_base, minlength=fabric.n_switches)
    modules = -(-per_switch // ports_per_module)
    tiers = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches]
    return {fabric.tier_names[t]: int(modules[tiers == t].sum()) for t in np.unique(tiers)}


def _links_by_kind_and_speed(fabric: Fabric):
    """``(kind, speed_bps, link ids)`` of the network links, per kind and per link speed (uplinks may run at
    another speed than the NIC ports: ``Design.uplink_gbps``)."""
    for kind in _NETWORK_KINDS:
        sel = np.flatnonzero(fabric.link_kind == LINK_KINDS.index(kind))
        if not sel.size:
            continue
        caps = fabric.link_capacity_bps[sel]
        if caps.min() == caps.max():                  # the common case: one speed per kind
            yield kind, float(caps[0]), sel
            continue
        for speed in np.unique(caps).tolist():
            yield kind, float(speed), sel[caps == speed]


_CACHE: "OrderedDict[tuple, tuple]" = OrderedDict()
#: bills kept (a few kB to 1 MB each; they hold no fabric)
_CACHE_SIZE = 256
_LOCK = threading.Lock()


def bill_of_materials(fabric: Fabric, catalog=None) -> BillOfMaterials:
    """Count and price everything the fabric needs (kept for reuse per cabling and catalog, like the fabric)."""
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    key = (fabric.cache_key, bool(fabric.design.storage_isolation)) if fabric.cache_key else None
    if key is not None:
        with _LOCK:
            hit = _CACHE.get(key)
        if hit is not None and hit[0] is cat:
            return hit[1]
    bom = _bill_of_materials(fabric, cat)
    if key is not None:
        with _LOCK:
            _CACHE[key] = (cat, bom)
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return bom


def _bill_of_materials(fabric: Fabric, cat) -> BillOfMaterials:
    design = fabric.design
    sw = cat.switch(design.switch_model)
    nic = cat.nic(design.nic_model)
    gpu = cat.gpu(design.gpu_model)
    items: list[BomItem] = []

    switches = fabric.switch_counts()
    for tier, n in switches.items():
        items.append(BomItem("switch", sw.model, tier, n, sw.price_usd, sw.power_w, sw.source))
    items.append(BomItem("nic", nic.model, "server", fabric.n_nics, nic.price_usd, nic.power_w, nic.source))

    cables: dict[str, int] = {}
    transceivers: dict[str, int] = {}
    links = fabric.link_counts()
    for kind, speed, sel in _links_by_kind_and_speed(fabric):
        medium_of, reach_of = fabric.link_medium[sel], fabric.link_reach_m[sel]
        optical = sel[medium_of == _OPTICS]
        if optical.size:
            # modules for the longest optical link of the kind (one model serves all of them, so twin-port
            # modules pair ports of one switch whatever their lengths); fibre by length below
            reach = float(fabric.link_reach_m[optical].max())
            if kind == "nic-leaf":                    # NIC ends: one NIC-side module per port
                tx = cat.transceiver_for(speed, reach, "nic")
                items.append(BomItem("transceiver", tx.model, f"{kind} (NIC end)", optical.size, tx.price_usd,
                                     tx.power_w, tx.source))
                transceivers[tx.model] = transceivers.get(tx.model, 0) + int(optical.size)
            tx = cat.transceiver_for(speed, reach, "switch", cage_bps=sw.cage_bps)
            for tier, modules in _switch_end_modules(fabric, optical, tx.ports_per_module).items():
                if modules:
                    items.append(BomItem("transceiver", tx.model, f"{kind} ({tier} end)", modules,
                                         tx.price_usd, tx.power_w, tx.source))
                    transceivers[tx.model] = transceivers.get(tx.model, 0) + modules
        # cables: one per link, by medium and length (optics first, as the lines above)
        counts: dict[str, list] = {}
        present = np.flatnonzero(np.bincount(medium_of, minlength=len(MEDIA)))
        for code in sorted(present.tolist(), key=lambda c: (c != _OPTICS, c)):
            lengths = reach_of[medium_of == code]
            if lengths.min() == lengths.max():        # the common case: one length per kind and medium
                groups = [(float(lengths[0]), int(lengths.size))]
            else:
                groups = list(zip(*[a.tolist() for a in np.unique(lengths, return_counts=True)]))
            for reach, n in groups:
                medium = MEDIA[code]
                cable = cat.cable_for("fibre" if medium == "optics" else _CABLE_KIND[medium], speed, reach)
                counts.setdefault(cable.model, [cable, 0])[1] += n
        for cable, n in counts.values():
            items.append(BomItem("cable", cable.model, kind, n, cable.price_usd, cable.power_w, cable.source))
            cables[cable.kind] = cables.get(cable.kind, 0) + n

    if design.storage_isolation:
        items += _storage_network_items(cat, fabric.n_gpus // design.gpus_per_node)

    per_gpu_server = gpu.server_price_usd / gpu.server_gpus
    per_gpu_power = gpu.server_power_w / gpu.server_gpus
    return BillOfMaterials(
        items=tuple(items), switches=switches, links=links, cables=cables, transceivers=transceivers,
        nics=fabric.n_nics, compute_cost_usd=fabric.n_gpus * per_gpu_server,
        compute_power_w=fabric.n_gpus * per_gpu_power, gpus=fabric.n_gpus, structure=dict(fabric.structure),
    )


def _storage_network_items(cat, nodes: int) -> list[BomItem]:
    """A separate Ethernet storage/checkpoint network: one NIC and one ToR port (plus DAC) per node."""
    eth_nics = [n for n in cat.nics.values() if n.fabric == "ethernet"]
    eth_switches = [s for s in cat.switches.values() if s.fabric == "ethernet"]
    if not eth_nics or not eth_switches:
        from fabric.errors import CatalogError

        raise CatalogError("storage_isolation needs an Ethernet NIC and an Ethernet switch in the catalog")
    nic = min(eth_nics, key=lambda n: (n.price_usd, n.model))
    sw = min(eth_switches, key=lambda s: (s.price_usd, s.model))
    per_switch = max(1, sw.radix_at(nic.port_speed_bps) // 2)
    n_sw = -(-nodes // per_switch)
    dac = cat.cable_for("dac", nic.port_speed_bps, 3.0)
    return [
        BomItem("nic", nic.model, "storage network", nodes, nic.price_usd, nic.power_w, nic.source),
        BomItem("switch", sw.model, "storage network", n_sw, sw.price_usd, sw.power_w, sw.source),
        BomItem("cable", dac.model, "storage network", nodes, dac.price_usd, dac.power_w, dac.source),
    ]

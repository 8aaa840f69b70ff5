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
- each link takes the cheapest catalog cable of its medium and speed at least as long as the link (its length is
  the builder's, from the floor: :mod:`fabric.topology.floor`); an optical link takes the cheapest switch-side
  module that reaches its length, the NIC-side module and the fibre of that module's medium (multimode inside a
  hall, single-mode between halls: :func:`optical_groups`);
- NVLink/NVSwitch and the PCIe GPU-NIC attachment are part of the server and are not network items;
- ports of reserved node slots (e.g. a SuperPOD's UFM node) are counted as used on the leaves, not costed;
- ``storage_isolation`` buys a separate storage/checkpoint network: one extra NIC per node (the cheapest Ethernet
  NIC), a top-of-rack switch port per node on the cheapest Ethernet switch (switches = nodes / half its ports, the
  other half uplinks), and one DAC per node.

The network capex (``cost_usd``) and power (``power_w``) are what the search minimizes; the servers' price and
power are reported beside them (``compute_cost_usd``, ``compute_power_w``) for the network's share of the cluster.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from fabric.arrays import group_index
from fabric.topology.fabric import LINK_KINDS, MEDIA, Fabric

__all__ = ["BomItem", "BillOfMaterials", "bill_of_materials", "optical_groups", "optics_for_length", "OpticalGroup",
           "floor_sentence"]

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
    #: the floor the lengths were taken from (:meth:`fabric.topology.floor.Floor.to_dict`; {}: not laid out)
    floor: dict = field(default_factory=dict)
    #: links on single-mode optics (between halls) and what their modules and fibre cost, in dollars
    single_mode: dict = field(default_factory=dict)

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
            "floor": dict(self.floor),
            "single_mode": dict(self.single_mode),
        }

    def floor_text(self) -> str:
        """The floor the bill was priced on and its single-mode share, in words ("" when not laid out)."""
        return floor_sentence(self.to_dict())


    def partial_pod(self) -> dict | None:
        """A partly filled last pod built as a full one, and its cost (:mod:`fabric.cost.partial_pod`); None when
        there is none."""
        from fabric.cost.partial_pod import partial_pod_of

        pod = partial_pod_of(self.structure, self)
        return pod.to_dict() if pod is not None else None


def floor_sentence(bom: dict) -> str:
    """The floor a bill (its ``to_dict`` form, or any dict with its ``floor``, ``single_mode`` and ``cost_usd``)
    was priced on and its single-mode share, in words; "" when it was not laid out."""
    from fabric.topology.floor import floor_text

    if not bom.get("floor"):
        return ""
    out = floor_text(bom["floor"])
    sm = bom.get("single_mode") or {}
    if sm.get("links"):
        out += (f" {sm['links']:,} links run on single-mode optics, ${sm['cost_usd']:,.0f} of modules and fibre "
                f"({sm['cost_usd'] / bom['cost_usd']:.1%} of the network capex).")
    return out


def _switch_end_modules(fabric: Fabric, per_switch: np.ndarray, ports_per_module: int):
    """Switch-side modules per switch tier: the optical link ends on each switch (``per_switch``:
    :func:`switch_ends`), rounded up per switch."""
    modules = -(-per_switch // ports_per_module)
    tiers = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches]
    return {fabric.tier_names[t]: int(modules[tiers == t].sum()) for t in np.unique(tiers)}


def switch_ends(fabric: Fabric, links: np.ndarray) -> np.ndarray:
    """Per switch (index from the switch base): the ends of ``links`` (link ids or a mask over the links) on it."""
    sb, ns = fabric.switch_base, fabric.n_switches
    ids = np.flatnonzero(links) if links.dtype == bool else links
    per_switch = np.zeros(ns, np.int64)
    for side in (fabric.link_a, fabric.link_b):
        ends = np.take(side, ids)
        if not ends.size:
            continue
        lo, hi = int(ends.min()), int(ends.max())
        if hi < sb or lo >= sb + ns:                  # no switch at this end (a NIC's end of a server link)
            continue
        if lo < sb or hi >= sb + ns:
            ends = ends[(ends >= sb) & (ends < sb + ns)]
        per_switch += np.bincount(ends - sb, minlength=ns)
    return per_switch


@dataclass(frozen=True)
class OpticalGroup:
    """Optical links of one kind and speed that take the same modules: ``nic_module`` (the NIC end of a server
    link, else None), ``switch_module`` and the fibre of their medium per length (``fibre_by_length``); ``links``
    are link ids, ``switch_ends`` their ends on each switch (:func:`switch_ends`: the bill's modules and the rack
    power count them)."""

    kind: str
    speed_bps: float
    nic_module: object
    switch_module: object
    links: np.ndarray
    fibre_by_length: dict
    switch_ends: np.ndarray | None = None

    @property
    def medium(self) -> str:
        return self.switch_module.medium


def optics_for_length(cat, speed_bps: float, length_m: float, cage_bps, nic_end: bool):
    """``(NIC-side module or None, switch-side module, fibre)`` of one optical link ``length_m`` long: the
    cheapest switch-side module (per port) that reaches it, with the NIC-side module and the fibre of the same
    medium; when the catalog lacks one of those for that medium, the next medium that has all three. A
    :class:`~fabric.errors.CatalogError` names what is missing when no medium has them."""
    from fabric.errors import CatalogError

    first_error = None
    tried = []
    for medium in (None, "multimode", "singlemode"):
        try:
            sw_tx = cat.transceiver_for(speed_bps, length_m, "switch", cage_bps=cage_bps, medium=medium)
            if sw_tx.model in tried:
                continue
            tried.append(sw_tx.model)
            nic_tx = cat.transceiver_for(speed_bps, length_m, "nic", medium=sw_tx.medium) if nic_end else None
            fibre = cat.cable_for("fibre", speed_bps, length_m, medium=sw_tx.medium)
            return nic_tx, sw_tx, fibre
        except CatalogError as err:
            first_error = first_error or err
    raise first_error


#: optical groups per link-length array and catalog (the bill of materials and the rack power both ask)
_GROUPS: dict = {}


def optical_groups(fabric: Fabric, cat) -> list[OpticalGroup]:
    """The fabric's optical links grouped by the modules they take (:func:`optics_for_length` of each link's
    length), per link kind and speed: what the bill of materials counts and the rack power and cabling plan
    place. Kept for the last few fabrics (a built fabric's arrays are shared by its copies)."""
    key = (id(fabric.link_reach_m), id(cat), fabric.design.switch_model)
    hit = _GROUPS.get(key)
    if hit is not None and hit[0]() is fabric.link_reach_m and hit[1]() is cat:
        return hit[2]
    out = _optical_groups(fabric, cat)
    if len(_GROUPS) >= 16:
        _GROUPS.clear()
    _GROUPS[key] = (weakref.ref(fabric.link_reach_m), weakref.ref(cat), out)
    return out


def _optical_groups(fabric: Fabric, cat) -> list[OpticalGroup]:
    sw = cat.switch(fabric.design.switch_model)
    out = []
    for kind, speed, sel in _links_by_kind_and_speed(fabric):
        is_optical = np.take(fabric.link_medium, sel) == _OPTICS
        optical = sel if is_optical.all() else sel[is_optical]
        if not optical.size:
            continue
        reach = np.take(fabric.link_reach_m, optical)
        if reach.min() == reach.max():
            lengths, inv = [float(reach[0])], None
        else:
            u, inv = _lengths_index(reach)
            lengths = u.tolist()
        groups: dict = {}
        for i, length in enumerate(lengths):
            nic_tx, sw_tx, fibre = optics_for_length(cat, speed, length, sw.cage_bps, kind == "nic-leaf")
            g = groups.setdefault((None if nic_tx is None else nic_tx.model, sw_tx.model), [nic_tx, sw_tx, [], {}])
            g[2].append(i)
            g[3][length] = fibre
        for nic_tx, sw_tx, idx, fibres in groups.values():
            links = optical if inv is None else optical[np.isin(inv, idx)]
            out.append(OpticalGroup(kind, speed, nic_tx, sw_tx, links, fibres, switch_ends(fabric, links)))
    return out


def _lengths_index(reach: np.ndarray):
    """``(distinct lengths ascending, index of each link's length)``: ``np.unique(reach, return_inverse=True)``,
    by counting when the lengths are whole metres in a small range (they are: rounded up runs and in-hall
    classes), else by sorting."""
    lo, hi = float(reach.min()), float(reach.max())
    if lo >= 0 and hi - lo < 1e6 and lo == int(lo):
        codes = (reach - lo).astype(np.int64)
        if np.array_equal(codes, reach - lo):         # every length a whole number of metres
            present, inv = group_index(codes)
            return present.astype(np.float64) + lo, inv
    u, inv = np.unique(reach, return_inverse=True)
    return u, inv.ravel()


_BY_SPEED: dict = {}


def _links_by_kind_and_speed(fabric: Fabric):
    """``(kind, speed_bps, link ids)`` of the network links, per kind and per link speed (uplinks may run at
    another speed than the NIC ports: ``Design.uplink_gbps``); kept per link array (the bill of materials and
    its optical groups both ask)."""
    caps_all = fabric.link_capacity_bps
    hit = _BY_SPEED.get(id(caps_all))
    if hit is not None and hit[0]() is caps_all and hit[1]() is fabric.link_kind:
        return hit[2]
    out = []
    for kind in _NETWORK_KINDS:
        sel = fabric.links_of_kind(kind)
        if not sel.size:
            continue
        caps = np.take(caps_all, sel)
        if caps.min() == caps.max():                  # the common case: one speed per kind
            out.append((kind, float(caps[0]), sel))
            continue
        for speed in np.unique(caps).tolist():
            out.append((kind, float(speed), sel[caps == speed]))
    if len(_BY_SPEED) >= 16:
        _BY_SPEED.clear()
    _BY_SPEED[id(caps_all)] = (weakref.ref(caps_all), weakref.ref(fabric.link_kind), out)
    return out


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
    optics = optical_groups(fabric, cat)
    for kind, speed, sel in _links_by_kind_and_speed(fabric):
        medium_of, reach_of = np.take(fabric.link_medium, sel), np.take(fabric.link_reach_m, sel)
        fibres: dict = {}
        for g in optics:
            if g.kind != kind or g.speed_bps != speed:
                continue
            # modules of each group (twin-port modules pair ports of one switch within a group); fibre below
            if g.nic_module is not None:              # NIC ends: one NIC-side module per port
                tx = g.nic_module
                items.append(BomItem("transceiver", tx.model, f"{kind} (NIC end)", g.links.size, tx.price_usd,
                                     tx.power_w, tx.source))
                transceivers[tx.model] = transceivers.get(tx.model, 0) + int(g.links.size)
            tx = g.switch_module
            for tier, modules in _switch_end_modules(fabric, g.switch_ends, tx.ports_per_module).items():
                if modules:
                    items.append(BomItem("transceiver", tx.model, f"{kind} ({tier} end)", modules,
                                         tx.price_usd, tx.power_w, tx.source))
                    transceivers[tx.model] = transceivers.get(tx.model, 0) + modules
            fibres.update(g.fibre_by_length)
        # cables: one per link, by medium and length (optics first, as the lines above)
        counts: dict[str, list] = {}
        # the media present (a compare per medium: a count over 8-bit codes converts them first)
        present = [c for c in range(len(MEDIA)) if (medium_of == c).any()]
        for code in sorted(present, key=lambda c: (c != _OPTICS, c)):
            lengths = reach_of if len(present) == 1 else reach_of[medium_of == code]
            if lengths.min() == lengths.max():        # the common case: one length per kind and medium
                groups = [(float(lengths[0]), int(lengths.size))]
            else:
                groups = list(zip(*[a.tolist() for a in np.unique(lengths, return_counts=True)]))
            for reach, n in groups:
                medium = MEDIA[code]
                cable = fibres[reach] if medium == "optics" else cat.cable_for(_CABLE_KIND[medium], speed, reach)
                counts.setdefault(cable.model, [cable, 0])[1] += n
        for cable, n in counts.values():
            items.append(BomItem("cable", cable.model, kind, n, cable.price_usd, cable.power_w, cable.source))
            cables[cable.kind] = cables.get(cable.kind, 0) + n

    if design.storage_isolation:
        items += _storage_network_items(cat, fabric.n_gpus // design.gpus_per_node)

    per_gpu_server = gpu.server_price_usd / gpu.server_gpus
    per_gpu_power = gpu.server_power_w / gpu.server_gpus
    single_models = {g.switch_module.model for g in optics if g.medium == "singlemode"}
    single_models |= {g.nic_module.model for g in optics if g.medium == "singlemode" and g.nic_module is not None}
    single_models |= {f.model for g in optics if g.medium == "singlemode" for f in g.fibre_by_length.values()}
    single = {"links": int(sum(g.links.size for g in optics if g.medium == "singlemode")),
              "cost_usd": float(sum(i.price_usd for i in items if i.category in ("transceiver", "cable")
                                    and i.model in single_models))}
    return BillOfMaterials(
        items=tuple(items), switches=switches, links=links, cables=cables, transceivers=transceivers,
        nics=fabric.n_nics, compute_cost_usd=fabric.n_gpus * per_gpu_server,
        compute_power_w=fabric.n_gpus * per_gpu_power, gpus=fabric.n_gpus, structure=dict(fabric.structure),
        floor=fabric.floor.to_dict() if fabric.floor is not None else {}, single_mode=single,
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

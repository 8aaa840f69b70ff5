"""The designs a network team draws by hand, built by one set of rules for the search's baselines and the presets.

- **The switch a NIC's generation calls for** (:func:`generation_switch`): the switch of the NIC's fabric whose
  native port speed is the NIC's (400G NICs: NDR 64 x 400G on InfiniBand, 25.6T 64 x 400G on Ethernet; 800G NICs:
  XDR 144 x 800G), the one with the most ports (then the cheapest). A team buys the switch the NIC was made for; a
  faster switch split into slower ports is another, dearer design. When no switch runs the NIC's speed natively,
  the one with the most ports at that speed. When three tiers of that switch cannot reach the cluster at the stated
  ratio (64 ports at 1:1 reach 64 x 32 x 32 = 65,536 NIC ports, facts.md section 4), the switch of the same fabric
  with the most ports at the NIC's speed that does (XDR 144 x 800G run as 288 x 400G), and the design's name says so.
- **Fat tree at a ratio** (:func:`fat_tree`): a top-of-rack Clos, one NIC per GPU, every leaf and spine at the
  stated down:up ratio on links of the NIC's speed (1:1: a leaf's uplinks carry what its downlinks do), ECMP with
  one queue pair, packed placement.
- **SuperPOD rule** (:func:`superpod`): NVIDIA's DGX SuperPOD compute fabric (DGX H100 reference architecture,
  network fabrics, Table 4; facts.md section 4): rail-optimized, scalable units (SUs) of :data:`SU_NODE_SLOTS` node
  slots, one slot of the cluster taken by the UFM management node (:data:`UFM_SLOTS`), so 4 SUs hold 127 servers
  (1,016 H100 GPUs) and a 128th server starts a fifth SU; 1:1 at every tier, adaptive routing, rail-aligned
  placement. Two tiers while the spines can take every rail leaf's uplinks (8 SUs of 64-port switches); beyond, a
  core tier over pods of whole SUs (:mod:`fabric.topology.build`), as NVIDIA's larger SuperPODs add a core layer
  above the spines (the DGX A100 SuperPOD reference architecture's 140-node fabric is leaf, spine and core).
"""

from __future__ import annotations

import math

from fabric.design.schema import Design
from fabric.errors import DesignError

__all__ = ["SU_NODE_SLOTS", "UFM_SLOTS", "generation_switch", "fat_tree", "superpod", "superpod_on",
           "scalable_unit_note"]

#: Node slots of one scalable unit (NVIDIA DGX SuperPOD: 32; facts.md section 4).
SU_NODE_SLOTS = 32
#: Node slots the UFM management node takes in the compute fabric (one per cluster: 127 DGX in 4 SUs).
UFM_SLOTS = 1


def _builds(design: Design, catalog) -> bool:
    from fabric.topology import build_fabric

    try:
        build_fabric(design, catalog)
    except DesignError:
        return False
    return True


def generation_switch(catalog, nic, switch_models, make, *, fits: bool = True):
    """``(switch, design)``: the switch ``nic``'s generation calls for among ``switch_models`` (module docstring) and
    ``make(switch)``, the design on it; ``(None, None)`` when no allowed switch serves the NIC.

    ``fits``: move to the switch with the most ports at the NIC's speed when the generation's switch cannot build
    the design (too many endpoints for three tiers of it)."""
    speed = nic.port_speed_bps
    same = [catalog.switch(m) for m in switch_models]
    same = [s for s in same if s.fabric == nic.fabric and s.radix_at(speed) >= 2]
    if not same:
        return None, None
    native = [s for s in same if math.isclose(s.port_speed_bps, speed, rel_tol=1e-9)]
    by_ports = lambda s: (-s.radix_at(speed), s.price_usd, s.model)  # noqa: E731
    first = min(native or same, key=by_ports)
    design = make(first)
    if not fits or _builds(design, catalog):
        return first, design
    for s in sorted(same, key=by_ports):
        if s is first or s.radix_at(speed) <= first.radix_at(speed):
            continue
        d = make(s)
        if _builds(d, catalog):
            return s, d
    return first, design


def _on(sw, nic) -> str:
    """``ib-ndr-64x400`` or, for a switch split into slower ports, ``ib-xdr-144x800 as 288 x 400G``."""
    if math.isclose(sw.port_speed_bps, nic.port_speed_bps, rel_tol=1e-9):
        return sw.model
    return f"{sw.model} as {sw.radix_at(nic.port_speed_bps)} x {nic.port_speed_bps / 1e9:g}G"


def fat_tree(system: dict, sw, nic, ratio: float, *, name: str | None = None, tiers: int | None = None) -> Design:
    """A top-of-rack fat tree at ``ratio`` (down:up at every tier) of ``sw`` switches and one ``nic`` per GPU."""
    transport = "infiniband" if sw.fabric == "infiniband" else "roce"
    label = name or f"fat tree {ratio:g}:1, {nic.port_speed_bps / 1e9:g}G on {_on(sw, nic)}"
    return Design(name=label, family="clos", switch_model=sw.model, nic_model=nic.model, nics_per_gpu=1.0,
                  oversubscription=(float(ratio), float(ratio)), routing="ecmp", qps_per_connection=1,
                  placement="packed", transport=transport, **({"tiers": tiers} if tiers else {}), **system)


def superpod_on(system: dict, sw, nic, *, name: str | None = None) -> Design:
    """The SuperPOD rule (module docstring) on ``sw`` switches and ``nic`` NICs for ``system`` (the design fields
    ``gpus``, ``gpu_model``, ``gpus_per_node`` and optionally ``scale_up_size``, ``rack_power_w``)."""
    transport = "infiniband" if sw.fabric == "infiniband" else "roce"
    d1 = sw.radix_at(nic.port_speed_bps) // 2             # a 1:1 leaf's downlinks
    label = name or (f"rail-optimized SuperPOD-style (SUs of {min(SU_NODE_SLOTS, d1)} servers, 1:1, "
                     f"{nic.port_speed_bps / 1e9:g}G on {_on(sw, nic)})")
    return Design(name=label, family="rail_optimized", switch_model=sw.model, nic_model=nic.model,
                  nics_per_gpu=1.0, oversubscription=(1.0, 1.0), nodes_per_su=min(SU_NODE_SLOTS, d1),
                  reserved_node_slots=UFM_SLOTS, routing="adaptive", qps_per_connection=1, placement="rail_aligned",
                  transport=transport, **system)


def superpod(system: dict, catalog, nic_model: str, switch_models, *, name=None) -> Design | None:
    """The SuperPOD rule on the switch ``nic_model``'s generation calls for (:func:`generation_switch`) among
    ``switch_models``; ``None`` when none serves the NIC. ``name(switch)`` names it (default: what it is)."""
    nic = catalog.nic(nic_model)
    _, design = generation_switch(catalog, nic, switch_models,
                                  lambda sw: superpod_on(system, sw, nic, name=name(sw) if name else None))
    return design


#: the multi-plane reference is a baseline from this many GPUs (the size of one Meta AI zone and above)
MULTIPLANE_MIN_GPUS = 16384


def multiplane(system: dict, catalog, nic_models, switch_models, *, name: str | None = None) -> Design | None:
    """The hyperscale multi-plane rule (the ``hyperscale-multiplane`` preset's): every NIC port a plane of its own
    (the NIC with the most ports the host runs, 4 or 2), rail leaves non-blocking to their pod's spines, pods joined
    by a core at 7:1, adaptive routing over RoCE, rail-aligned placement; on the largest-radix Ethernet switch allowed
    that serves the NIC's port speed. ``None`` when no multi-port NIC or no such switch is allowed."""
    nics = sorted((catalog.nic(m) for m in nic_models if catalog.nic(m).ports in (2, 4)
                   and catalog.nic(m).fabric == "ethernet"), key=lambda n: (-n.ports, n.price_usd))
    for nic in nics:
        sws = sorted((catalog.switch(m) for m in switch_models if catalog.switch(m).fabric == "ethernet"
                      and catalog.switch(m).radix_at(nic.port_speed_bps) >= 2),
                     key=lambda s: (-s.radix_at(nic.port_speed_bps), s.price_usd))
        for sw in sws:
            label = name or (f"multi-plane hyperscale ({nic.ports} planes of {nic.port_speed_bps / 1e9:g}G, 1:1 in "
                             f"pods, 7:1 core, on {_on(sw, nic)})")
            d = Design(name=label, family="rail_optimized", switch_model=sw.model, nic_model=nic.model,
                       nics_per_gpu=1.0, planes=nic.ports, tiers=3, oversubscription=(1.0, 7.0), routing="adaptive",
                       qps_per_connection=1, placement="rail_aligned", transport="roce", **system)
            if _builds(d, catalog):
                return d
    return None


def scalable_unit_note(design: Design, catalog=None) -> str:
    """For a rail-optimized design of scalable units (``nodes_per_su``): how many SUs its servers and reserved
    slots fill, and, when that is more than the servers of the SUs before it need, what the last SU adds against
    the largest cluster of one SU fewer (its GPUs, leaves, spines, cores and network capex). ``""`` otherwise."""
    from fabric.cost import bill_of_materials
    from fabric.topology import build_fabric

    nps = design.nodes_per_su
    if design.family != "rail_optimized" or not nps:
        return ""
    slots = design.nodes + design.reserved_node_slots
    sus = math.ceil(slots / nps)
    in_last = slots - (sus - 1) * nps
    gpn = design.gpus_per_node
    reserved = (f" and the UFM management node's slot" if design.reserved_node_slots == 1 else
                f" and {design.reserved_node_slots} reserved slots" if design.reserved_node_slots else "")
    head = (f"{design.gpus:,} GPUs are {design.nodes:,} servers{reserved}: {slots:,} node slots in {sus} scalable "
            f"unit{'s' if sus != 1 else ''} of {nps} slots")
    if in_last == nps or sus == 1:
        return head + (", every one full." if in_last == nps else ".")
    prev_gpus = ((sus - 1) * nps - design.reserved_node_slots) * gpn
    fab = build_fabric(design, catalog)
    now = fab.switch_counts()
    cost = bill_of_materials(fab, catalog).cost_usd
    try:
        pf = build_fabric(design.replace(gpus=prev_gpus, name=f"{prev_gpus} GPUs"), catalog)
    except DesignError:
        return head + f"; the last holds {in_last} of its {nps} slots."
    before = pf.switch_counts()
    pcost = bill_of_materials(pf, catalog).cost_usd
    changes = ", ".join(f"{t} {before.get(t, 0):,} -> {n:,}" for t, n in now.items() if before.get(t, 0) != n)
    why = []
    if before.get("spine", 0) != now.get("spine", 0) and fab.tiers == pf.tiers == 2:
        why.append("spine counts split every leaf's uplinks into equal bundles, as NVIDIA's tables round 12 spines "
                   "up to 16")
    if pf.tiers != fab.tiers:
        why.append(f"a {('', '', 'spine', 'core')[fab.tiers]} tier starts: the spines of two tiers cannot take "
                   f"every rail leaf's uplinks")
    nth = {1: "st", 2: "nd", 3: "rd"}.get(sus % 10 if sus % 100 not in (11, 12, 13) else 0, "th")
    return (f"A {sus}{nth} scalable unit starts above {prev_gpus:,} GPUs. {head}; the last holds {in_last} of its "
            f"{nps}, and a partly "
            f"filled unit is cabled as a full one: "
            f"{changes}" + (f" ({'; '.join(why)})" if why else "") + f". {sus - 1} full unit{'s' if sus != 2 else ''} "
            f"({prev_gpus:,} GPUs) cost{'s' if sus == 2 else ''} ${pcost:,.0f}; {design.gpus:,} GPUs cost "
            f"${cost:,.0f}.")

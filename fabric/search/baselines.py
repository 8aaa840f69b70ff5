"""The designs a person would draw, always evaluated and reported beside the front (rules:
:mod:`fabric.reference.rules`, shared with the presets):

- a full-bisection fat tree (top-of-rack Clos, 1:1 at every tier) of the switch the fastest NIC's generation calls
  for (400G NICs: NDR 64 x 400G, not a faster switch split into 400G ports), ECMP with one queue pair;
- the same at 2:1;
- a rail-optimized SuperPOD-style design (NVIDIA's scalable units of 32 node slots with the UFM slot, 1:1, adaptive
  routing, rail-aligned placement) on InfiniBand when allowed: the same design and price as the preset
  ``dgx-h100-superpod`` at the same GPU count;
- from 16,384 GPUs, the multi-plane hyperscale reference (the preset ``hyperscale-multiplane``'s rule: a plane per
  NIC port, 1:1 in pods, 7:1 between pods, adaptive RoCE) when an allowed NIC with 2 or 4 ports runs on the host.

The fastest NIC is the fastest single-port NIC the first GPU system's host runs; InfiniBand before Ethernet at one
speed (the fabric NVIDIA's reference designs use). Each name says what it is: ratio, link speed and switch.
"""

from __future__ import annotations

import math

from fabric.design import Design
from fabric.reference.rules import MULTIPLANE_MIN_GPUS, fat_tree, generation_switch, multiplane, superpod

__all__ = ["baseline_designs"]


def _fastest_nic(space, fabric: str | None = None):
    """The fastest single-port NIC of the space that the first GPU system's host runs and an allowed switch of its
    fabric serves (InfiniBand first on a tie, then the cheapest); ``None`` when there is none."""
    from fabric.catalog.compat import nic_host_problem

    cat = space.catalog
    switches = [cat.switch(m) for m in space.genes[1].choices]
    best = None
    for nm in space.genes[2].choices:
        nic = cat.nic(nm)
        if nic.ports != 1 or (fabric is not None and nic.fabric != fabric):
            continue
        if nic_host_problem(space.gpu, nic) is not None:      # the first GPU system's host must run it
            continue
        if not any(s.fabric == nic.fabric and s.radix_at(nic.port_speed_bps) >= 2 for s in switches):
            continue
        key = (-nic.port_speed_bps, nic.fabric != "infiniband", nic.price_usd, nic.model)
        if best is None or key < best[0]:
            best = (key, nic)
    return best[1] if best else None


def baseline_designs(space) -> list[Design]:
    """The human baselines for the space's GPU count and allowed hardware."""
    c = space.constraints
    nic = _fastest_nic(space)
    if nic is None:
        return []
    cat = space.catalog
    allowed = space.genes[1].choices
    system = space.system_fields() if hasattr(space, "system_fields") else dict(
        gpus=c.gpus, gpu_model=c.gpu_model, gpus_per_node=c.gpus_per_node)
    out = []
    for ratio in (1.0, 2.0):
        sw, _ = generation_switch(cat, nic, allowed, lambda s: fat_tree(system, s, nic, ratio))
        # a cluster that fits one switch is still drawn as leaves and spines when one switch may not be a single
        # point of failure (facts.md section 8)
        one_switch = system["gpus"] * nic.ports <= sw.radix_at(nic.port_speed_bps)
        tiers = 2 if one_switch and getattr(c, "survive_single_failure", False) else None
        d = fat_tree(system, sw, nic, ratio, tiers=tiers)
        out.append(d.replace(name=f"baseline: {d.name}"))
    rail_nic = _fastest_nic(space, "infiniband")
    if rail_nic is None or rail_nic.port_speed_bps < nic.port_speed_bps * (1 - 1e-9):
        rail_nic = nic
    pod = superpod(system, cat, rail_nic.model, allowed)
    if pod is not None:
        out.append(pod.replace(name=f"baseline: {pod.name}"))
    if system["gpus"] >= MULTIPLANE_MIN_GPUS:
        mp = multiplane(system, cat, space.genes[2].choices, allowed)
        if mp is not None:
            out.append(mp.replace(name=f"baseline: {mp.name}"))
    return out

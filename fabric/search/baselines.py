"""The designs a person would draw, always evaluated and reported beside the front.

- full-bisection fat tree (top-of-rack Clos, 1:1) at the fastest NIC speed the allowed hardware offers, ECMP with
  one queue pair (the default configuration);
- the same at 2:1;
- a rail-optimized SuperPOD-like design (1:1, rail-aligned placement, adaptive routing), preferring
  InfiniBand NDR when allowed.
"""

from __future__ import annotations

from fabric.design import Design

__all__ = ["baseline_designs"]


def _fastest_pair(space):
    """(switch, nic) with the fastest NIC speed a switch of the same fabric can serve, cheapest on ties."""
    from fabric.catalog.compat import nic_host_problem

    cat = space.catalog
    best = None
    for sm in space.genes[1].choices:
        sw = cat.switch(sm)
        for nm in space.genes[2].choices:
            nic = cat.nic(nm)
            if nic.fabric != sw.fabric or nic.ports != 1 or sw.radix_at(nic.port_speed_bps) < 2:
                continue
            if nic_host_problem(space.gpu, nic) is not None:      # the first GPU system's host must run it
                continue
            key = (-nic.port_speed_bps, -sw.radix_at(nic.port_speed_bps), sw.price_usd + nic.price_usd)
            if best is None or key < best[0]:
                best = (key, sw, nic)
    return (best[1], best[2]) if best else (None, None)


def baseline_designs(space) -> list[Design]:
    """The human baselines for the space's GPU count and allowed hardware."""
    c = space.constraints
    sw, nic = _fastest_pair(space)
    if sw is None:
        return []
    transport = "infiniband" if sw.fabric == "infiniband" else "roce"
    system = space.system_fields() if hasattr(space, "system_fields") else dict(
        gpus=c.gpus, gpu_model=c.gpu_model, gpus_per_node=c.gpus_per_node)
    common = dict(**system, nics_per_gpu=1.0, transport=transport)
    # a cluster that fits one switch is still drawn as leaves and spines when one switch may not be a single
    # point of failure (facts.md section 8)
    one_switch = system["gpus"] * nic.ports <= sw.radix_at(nic.port_speed_bps)
    tiers = {"tiers": 2} if one_switch and getattr(c, "survive_single_failure", False) else {}
    out = [
        Design(name="baseline: fat tree 1:1, fastest links", family="clos", switch_model=sw.model,
               nic_model=nic.model, oversubscription=(1.0, 1.0), routing="ecmp", qps_per_connection=1,
               placement="packed", **tiers, **common),
        Design(name="baseline: fat tree 2:1, fastest links", family="clos", switch_model=sw.model,
               nic_model=nic.model, oversubscription=(2.0, 2.0), routing="ecmp", qps_per_connection=1,
               placement="packed", **tiers, **common),
    ]
    from fabric.catalog.compat import nic_host_problem

    cat = space.catalog
    rail_sw, rail_nic = sw, nic
    if "ib-ndr-64x400" in space.genes[1].choices and "nic-cx7-400" in space.genes[2].choices \
            and nic_host_problem(space.gpu, cat.nic("nic-cx7-400")) is None:
        rail_sw, rail_nic = cat.switch("ib-ndr-64x400"), cat.nic("nic-cx7-400")
    rail_transport = "infiniband" if rail_sw.fabric == "infiniband" else "roce"
    routing = "adaptive"
    out.append(Design(name="baseline: rail-optimized SuperPOD-like", family="rail_optimized",
                      switch_model=rail_sw.model, nic_model=rail_nic.model, oversubscription=(1.0, 1.0),
                      routing=routing, qps_per_connection=1, placement="rail_aligned",
                      **{**common, "transport": rail_transport}))
    return out

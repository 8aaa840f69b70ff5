"""Named reference designs a user can start from and compare against, each with its source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from fabric.design.schema import Design
from fabric.errors import DesignError

__all__ = ["Preset", "PRESETS", "list_presets", "preset_design"]


@dataclass(frozen=True)
class Preset:
    """A reference design: ``make(gpus)`` returns the :class:`Design` for a GPU count."""

    name: str
    title: str
    source: str
    default_gpus: int
    make: Callable[[int], Design]

    def design(self, gpus: int | None = None) -> Design:
        return self.make(self.default_gpus if gpus is None else gpus)


def _h100_system(gpus: int) -> dict:
    return {"gpus": gpus, "gpu_model": "h100-sxm", "gpus_per_node": 8}


def _infiniband_switches(catalog) -> list[str]:
    return [m for m, s in catalog.switches.items() if s.fabric == "infiniband"]


def _superpod(gpus: int) -> Design:
    # NVIDIA's SuperPOD rule (fabric.reference.rules.superpod): 32-slot scalable units, the UFM slot, 8 rails, 1:1,
    # on the switch the ConnectX-7's generation calls for (QM9700-class NDR, 64 x 400G), the search's SuperPOD baseline
    from fabric.catalog import default_catalog
    from fabric.reference.rules import superpod

    cat = default_catalog()

    def name(sw) -> str:
        on = "" if sw.model == "ib-ndr-64x400" else (f", on {sw.model} as {sw.radix_at(400e9)} x 400G: 3 tiers of "
                                                     f"64-port NDR switches do not reach it")
        return f"DGX H100 SuperPOD ({gpus:,} GPUs{on})"

    return superpod(_h100_system(gpus), cat, "nic-cx7-400", _infiniband_switches(cat), name=name)


def _meta_zone(gpus: int) -> Design:
    # Meta's RoCE training clusters as the paper draws them (Gangidi et al., SIGCOMM 2024): a rack training switch
    # (RTSW) joins all GPUs of its rack over copper DAC (a top-of-rack Clos, not rails), cluster training switches
    # (CTSW) connect all racks of an AI zone, non-blocking inside, and aggregator training switches (ATSW) join the
    # zones, oversubscribed (~7:1, facts.md section 4); RoCE with ECMP over several QPs. A rack here holds 4 H100
    # servers (the default 40.8 kW rack, docs/topology.md), so an RTSW takes 32 GPUs with 32 uplinks; switches are
    # 51.2T fixed boxes at 400G (the paper's CTSWs are deep-buffer modular chassis): 112 racks per zone at 7:1 above
    # it, 3,584 GPUs per zone (Meta's hold ~3K).
    return Design(name=f"Meta-style RoCE AI zones ({gpus:,} GPUs)", family="clos", gpus=gpus,
                  gpu_model="h100-sxm", gpus_per_node=8, nic_model="nic-eth-400", switch_model="eth-51t-64x800",
                  nodes_per_su=4, tiers=3, oversubscription=(1.0, 7.0), routing="ecmp", qps_per_connection=4,
                  transport="roce", placement="packed")


def _hpn(gpus: int) -> Design:
    # Dual-plane: each 2 x 200G NIC sends one port to each plane; 51.2T switches as 256 x 200G; 2 tiers.
    return Design(name=f"Alibaba HPN-style dual-plane pod ({gpus:,} GPUs)", family="rail_optimized", gpus=gpus,
                  gpu_model="h100-sxm", gpus_per_node=8, nic_model="nic-2x200-dual", switch_model="eth-51t-64x800",
                  planes=2, tiers=2, oversubscription=(1.0, 1.0), routing="ecmp", qps_per_connection=8,
                  transport="roce", placement="rail_aligned")


def _rail_only(gpus: int) -> Design:
    # No spine joining rails: cross-rail traffic goes through NVLink inside the node (arXiv 2307.12169).
    return Design(name=f"Rail-only network ({gpus:,} GPUs)", family="rail_only", gpus=gpus, gpu_model="h100-sxm",
                  gpus_per_node=8, nic_model="nic-cx7-400", switch_model="ib-ndr-64x400",
                  oversubscription=(1.0, 1.0), routing="adaptive", transport="infiniband", placement="rail_aligned")


def _fat_tree(gpus: int) -> Design:
    # The design a person draws first: a full-bisection top-of-rack Clos on the switch the ConnectX-7's generation
    # calls for, the search's "fat tree 1:1" baseline (fabric.reference.rules.fat_tree)
    from fabric.catalog import default_catalog
    from fabric.reference.rules import fat_tree, generation_switch

    cat = default_catalog()
    nic = cat.nic("nic-cx7-400")
    sw, _ = generation_switch(cat, nic, _infiniband_switches(cat), lambda s: fat_tree(_h100_system(gpus), s, nic, 1.0))
    on = "" if sw.model == "ib-ndr-64x400" else f", on {sw.model} as {sw.radix_at(400e9)} x 400G"
    return fat_tree(_h100_system(gpus), sw, nic, 1.0, name=f"Full-bisection fat tree ({gpus:,} GPUs{on})")


def _nvl72_superpod(gpus: int) -> Design:
    # GB200 NVL72 racks (72 GPUs in one NVLink domain, 18 trays of 4), one 800G NIC per GPU, a rail-optimized 1:1
    # compute fabric of 144 x 800G XDR switches; rail-aligned placement and adaptive routing as in the H100 SuperPOD.
    return Design(name=f"GB200 NVL72 SuperPOD-style ({gpus:,} GPUs)", family="rail_optimized", gpus=gpus,
                  gpu_model="gb200-nvl72", gpus_per_node=4, scale_up_size=72, nic_model="nic-cx8-800",
                  switch_model="ib-xdr-144x800", oversubscription=(1.0, 1.0), routing="adaptive",
                  transport="infiniband", placement="rail_aligned")


def _multiplane(gpus: int) -> Design:
    # Four planes: each GPU's 800G NIC runs as 4 x 200G, one port per plane (DeepSeek's multi-plane fat tree, HPN's
    # dual plane); 51.2T switches as 256 x 200G; rail leaves of 128 nodes (1,024 GPUs, HPN's segment size) non-
    # blocking to their pod's spines; pods joined by a core 7:1 oversubscribed (Meta's AI zones: ~7:1 above a zone).
    return Design(name=f"Multi-plane hyperscale cluster ({gpus:,} GPUs, 4 planes)", family="rail_optimized",
                  gpus=gpus, gpu_model="b200", gpus_per_node=8, nic_model="nic-cx8-4x200",
                  switch_model="eth-51t-64x800", planes=4, tiers=3, oversubscription=(1.0, 7.0), routing="adaptive",
                  transport="roce", placement="rail_aligned")


PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("dgx-h100-superpod", "NVIDIA DGX H100 SuperPOD compute fabric (rail-optimized, 1:1, 64 x 400G NDR)",
           "NVIDIA DGX SuperPOD reference architecture (DGX H100), network fabrics, Table 4", 1016, _superpod),
    Preset("meta-roce-zone", "Meta-style RoCE cluster: a rack switch per rack (not rails) in AI zones, "
           "non-blocking inside, 7:1 above",
           "Gangidi et al., 'RDMA over Ethernet for Distributed AI Training at Meta Scale', SIGCOMM 2024 (sections "
           "on the AI zone: rack training switches, cluster training switches, aggregator training switches)", 24576,
           _meta_zone),
    Preset("alibaba-hpn", "Alibaba HPN-style dual-plane pod (2 x 200G NICs, 51.2T switches, 2 tiers)",
           "Qian et al., 'Alibaba HPN: A Data Center Network for Large Language Model Training', SIGCOMM 2024",
           15360, _hpn),
    Preset("rail-only", "Rail-only network: one switch network per rail, cross-rail traffic over NVLink",
           "Wang et al., 'Rail-only: A Low-Cost High-Performance Network for Training LLMs', arXiv 2307.12169",
           512, _rail_only),
    Preset("fat-tree", "Full-bisection top-of-rack fat tree (the design a person draws first)",
           "Al-Fares, Loukissas, Vahdat, 'A Scalable, Commodity Data Center Network Architecture', SIGCOMM 2008",
           1024, _fat_tree),
    Preset("gb200-nvl72-superpod", "GB200 NVL72 SuperPOD-style: 72-GPU NVLink racks, one 800G NIC per GPU, "
           "rail-optimized 1:1 XDR (144 x 800G) compute fabric",
           "NVIDIA GB200 NVL72 product page (72 GPUs in one NVLink 5 domain, 1.8 TB/s per GPU, ~120-132 kW liquid-"
           "cooled rack) and NVIDIA DGX SuperPOD reference architecture with DGX GB200 systems (racks of 72 GPUs in "
           "8-rack scalable units, rail-optimized InfiniBand compute fabric); facts.md sections 4 and 9",
           576, _nvl72_superpod),
    Preset("hyperscale-multiplane", "Multi-plane 100K+ GPU cluster: 4 planes of 200G (one NIC port per plane), "
           "rail-optimized 51.2T pods, 3 tiers, 7:1 between pods",
           "in the style of DeepSeek's multi-plane fat tree (Zhao et al., 'Insights into DeepSeek-V3', ISCA 2025: "
           "each GPU-NIC port in its own plane, 2-tier fat tree per plane), Alibaba HPN (Qian et al., SIGCOMM 2024: "
           "dual-plane, 51.2T switches, 1K-GPU segments in ~15K-GPU pods) and Meta's RoCE clusters (Gangidi et al., "
           "SIGCOMM 2024: ~7:1 above the AI zone); facts.md section 4",
           131072, _multiplane),
]}


def list_presets() -> list[Preset]:
    """All presets, in a stable order."""
    return list(PRESETS.values())


def preset_design(name: str, gpus: int | None = None) -> Design:
    """The design of preset ``name`` at ``gpus`` GPUs (its default size when ``None``)."""
    if name not in PRESETS:
        raise DesignError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus <= 0):
        raise DesignError(f"--gpus must be a positive whole number, got {gpus!r}")
    return PRESETS[name].design(gpus)

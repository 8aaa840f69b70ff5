"""A partly filled last pod, and what building it as a full one costs.

A three-tier fabric's pods are built whole (:func:`fabric.topology.build._upper`): a last pod that holds fewer leaves
than a full one keeps a full pod's spines and their core-facing links, so it can grow to a full pod without
recabling. That is a choice with a price; this module says it: how many leaves the last pod holds, the spines its
leaves alone would need (the builder's own sizing rule, :func:`fabric.topology.sizing.spread_upward`), and the spines,
spine-to-core links and cores beyond that, priced at the bill of materials' own unit prices (issue 39 item 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PartialPod", "partial_pod", "partial_pod_of"]


@dataclass(frozen=True)
class PartialPod:
    """The last pod of a three-tier fabric when it is not full, and the cost of building it full."""

    pods: int
    leaves_per_pod: int
    last_pod_leaves: int
    spines_per_pod: int
    spines_needed: int
    spine_uplinks: int
    extra_spines: int
    extra_core_links: int
    extra_cores: int
    extra_usd: float

    def text(self) -> str:
        """One sentence for the pages, the brief and the CLI."""
        return (f"The last of {self.pods:,} pods holds {self.last_pod_leaves:,} of {self.leaves_per_pod:,} leaves but is "
                f"built as a full pod (room to grow without recabling): {self.spines_per_pod:,} spines where its "
                f"leaves need {self.spines_needed:,}, so {self.extra_spines:,} spines, "
                f"{self.extra_core_links:,} spine-to-core links and {self.extra_cores:,} core switches beyond what "
                f"it holds, ${self.extra_usd / 1e6:,.2f} M of the network capex.")

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {"text": self.text()}


def partial_pod(fabric, bom) -> PartialPod | None:
    """The partly filled last pod of ``fabric`` and what building it full costs (:func:`partial_pod_of`)."""
    return partial_pod_of(fabric.structure, bom)


def partial_pod_of(structure: dict, bom) -> PartialPod | None:
    """The partly filled last pod of ``fabric`` and what building it full costs (None when every pod is full, the
    last pod's leaves need every spine of a full pod, or the fabric has no pods)."""
    from fabric.topology import sizing

    s = structure
    if s.get("tiers") != 3 or "leaves_per_pod" not in s or s.get("regions"):
        return None
    pods, per_pod, s1, u2 = int(s["pods"]), int(s["leaves_per_pod"]), int(s["spines_per_pod"]), int(s["spine_uplinks"])
    last = int(s["leaves"]) - (pods - 1) * per_pod
    if pods < 2 or last >= per_pod:
        return None
    u1 = int(s.get("leaf_up") or 0)
    if not u1:
        return None
    spine_ports = math.ceil(per_pod * u1 / s1)        # leaf-facing ports a full pod's spine uses
    spread = sizing.spread_upward(u1, last, spine_ports)
    need = min(spread.switches if spread is not None else s1, s1)
    extra_spines = s1 - need
    if extra_spines <= 0:
        return None                # the last pod's leaves reach every spine of a full pod anyway
    extra_links = extra_spines * u2
    cores = int(s.get("cores") or 0)
    core_ports = math.ceil(pods * s1 * u2 / cores) if cores else 0
    cores_needed = max(sizing.MIN_UPPER_SWITCHES, math.ceil((pods * s1 * u2 - extra_links) / core_ports)) \
        if core_ports else cores
    extra_cores = max(0, cores - cores_needed)
    spine_usd = _unit_usd(bom, "switch", "spine")
    core_usd = _unit_usd(bom, "switch", "core")
    link_usd = _per_link_usd(bom, "spine-core", int(bom.links.get("spine-core") or pods * s1 * u2))
    usd = extra_spines * spine_usd + extra_cores * core_usd + extra_links * link_usd
    return PartialPod(pods, per_pod, last, s1, need, u2, extra_spines, extra_links, extra_cores, float(usd))


def _unit_usd(bom, category: str, where: str) -> float:
    for item in bom.items:
        if item.category == category and item.where == where:
            return float(item.unit_price_usd)
    return 0.0


def _per_link_usd(bom, where: str, links: int) -> float:
    """Optics and cables of one link of ``where`` (both ends), from the bill's totals for that tier."""
    total = sum(float(i.price_usd) for i in bom.items
                if i.category in ("transceiver", "cable") and i.where.startswith(where))
    return total / links if links else 0.0

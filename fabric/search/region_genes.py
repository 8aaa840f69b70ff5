"""The search's genes for designs of regions (:mod:`fabric.design.regions`), shaped by the workload.

When the constraint ``families`` allows ``regions``, a design of family ``regions`` has two regions, A and B:

- ``region_split`` (hardware where it sizes the regions, policy where it says who sits where): which of the
  workload's jobs region A holds; A is sized to hold them whole (whole servers and scale-up domains) and B holds
  the other jobs and every spare GPU. A workload of one job splits the cluster by share instead (A holds 1/4, 1/2
  or 3/4 of the servers; the job spans both). Jobs that fill the cluster exactly keep only the splits whose A
  holds the largest job (:func:`split_choices`: the others are the same clusters named the other way round);
- ``region_a_family``, ``region_b_family``: each region's cabling (``clos`` or ``rail_optimized``, those the
  constraint ``families`` allows);
- ``region_a_oversub``, ``region_b_oversub``: each region's leaf down:up; the design's ``oversub_spine`` gene is
  every region's spine-to-core ratio (1:1 joins the regions on shared spines when they fit there).

For other families the region genes do not matter and repair sets them to their first choice.
"""

from __future__ import annotations

import itertools
import math

__all__ = ["REGION_GENES", "split_choices", "regions_for", "region_gene_values"]

#: Names of the region genes, in genome order.
REGION_GENES = ("region_split", "region_a_family", "region_b_family", "region_a_oversub", "region_b_oversub")
#: Shares of the servers region A takes when the workload has one job.
SHARES = (0.25, 0.5, 0.75)


def split_choices(jobs, systems=()) -> tuple:
    """The ``region_split`` choices for ``jobs`` (compute jobs): every non-empty proper subset of their names,
    smallest first, as sorted tuples; for fewer than two jobs, the :data:`SHARES` as floats.

    ``systems``: ``(GPUs, GPUs per whole scale-up domain)`` of each GPU system the search may choose. When on every
    one the jobs fill the cluster exactly in whole domains, a split and its complement are one cluster with the
    regions named the other way round (A sized to its jobs, B to the rest, no spare GPUs either side): only the
    splits whose region A holds the largest job are kept. Region A's genes then always mean the same jobs' region,
    and moving a job between the regions is one change of the split (the mirrored choices doubled the splits and
    gave the same shape two sets of genes that crossover could not combine)."""
    names = sorted({j.name for j in jobs})
    if len(names) < 2:
        return SHARES
    out = []
    for k in range(1, len(names)):
        out += [tuple(c) for c in itertools.combinations(names, k)]
    sizes = {j.name: int(j.world_size) for j in jobs}
    total = sum(sizes.values())
    if systems and all(total == gpus and all(v % unit == 0 for v in sizes.values()) for gpus, unit in systems):
        anchor = min(sizes, key=lambda n: (-sizes[n], n))
        out = [c for c in out if anchor in c]
    return tuple(out)


def regions_for(split, fam_a: str, fam_b: str, o_a: float, o_b: float, o_spine: float, *, gpus: int,
                gpus_per_node: int, domain: int, jobs) -> list[dict] | None:
    """The ``regions`` field of a two-region design, or None when one region would hold everything (the uniform
    design of region A's cabling then stands for it: the caller folds it)."""
    nodes = gpus // gpus_per_node
    unit = math.lcm(gpus_per_node, domain) // gpus_per_node          # servers per whole scale-up domain
    if isinstance(split, float):
        a_nodes = max(unit, int(round(nodes * split / unit)) * unit)
        a_jobs, b_jobs = (), ()
    else:
        sizes = {j.name: j.world_size for j in jobs}
        need = sum(sizes.get(n, 0) for n in split)
        a_nodes = math.ceil(math.ceil(need / gpus_per_node) / unit) * unit
        a_jobs = tuple(split)
        b_jobs = tuple(sorted(n for n in sizes if n not in split))
    if a_nodes <= 0 or a_nodes >= nodes:
        return None
    return [{"name": "A", "nodes": a_nodes, "family": fam_a, "oversubscription": [o_a, o_spine],
             **({"jobs": list(a_jobs)} if a_jobs else {})},
            {"name": "B", "nodes": nodes - a_nodes, "family": fam_b, "oversubscription": [o_b, o_spine],
             **({"jobs": list(b_jobs)} if b_jobs else {})}]


def region_gene_values(design) -> dict | None:
    """The region gene values of a two-region design made by :func:`regions_for` (None for another design)."""
    regions = getattr(design, "regions", None)
    if not regions or len(regions) != 2 or [r.name for r in regions] != ["A", "B"]:
        return None
    a, b = regions
    if a.oversub(1) != b.oversub(1) or a.nodes_per_su is not None or b.nodes_per_su is not None \
            or a.rails_per_leaf != 1 or b.rails_per_leaf != 1:
        return None
    if a.jobs:
        split = tuple(sorted(a.jobs))
    else:
        split = round(a.nodes / (a.nodes + b.nodes), 6)
    return {"region_split": split, "region_a_family": a.family, "region_b_family": b.family,
            "region_a_oversub": a.oversub(0), "region_b_oversub": b.oversub(0), "oversub_spine": a.oversub(1)}

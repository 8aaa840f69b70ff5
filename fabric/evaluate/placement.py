"""Placement: map each job's ranks onto the fabric's GPUs, and expand process groups into their instances.

Placement rules (the design's policy: what the scheduler is told to do):

- ``packed``: jobs take consecutive GPUs, one after the other (rank r of a job on GPU start + r);
- ``rail_aligned``: every job starts on a node boundary, and on a scalable-unit boundary when it fills at least
  one unit of a rail-optimized fabric, so that rank-to-rail alignment and unit locality hold; ranks consecutive.

Fragmentation (a condition of the cluster, :attr:`fabric.evaluate.scenario.Scenario.fragmentation`): the rule lays
jobs out over node slots, and a share ``f`` of the slots, drawn at random, trade places at random before the jobs
land on them; at ``f = 1`` every job gets whole nodes drawn at random among all of them (what the placement
"scattered" of earlier releases did). Ranks stay consecutive inside a node.

Rack-scale scale-up domains (a domain of several hosts, GB200 NVL72: 72 GPUs on 18 trays of 4): ``packed`` and
``rail_aligned`` keep a job's tensor-, expert- and context-parallel groups inside the NVLink domain when they fit
(:func:`domain_layout`): when the largest such group block (``tp x ep`` ranks for Megatron's expert groups) does
not divide the domain, each domain takes as many whole blocks as fit and leaves the rest of its GPUs idle (a
64-GPU expert-parallel group on NVL72: 64 ranks per rack, 8 GPUs spare), and jobs start on a domain boundary. When
the design has too few GPUs for that, ranks stay consecutive (groups then straddle domains). Fragmentation moves
node slots (a rack-scale domain's trays) the same way, so a fragmented cluster can split a group over domains.

Process-group instances: a group describes one communicator (say the DP group of rank 0); the same pattern
repeats over the world. A strided pattern (start, stride, size) expands to every translate: blocks of
``stride x size`` ranks, ``stride`` instances per block. Groups whose ranks are listed explicitly and form an
arithmetic progression are treated the same way; other explicit lists are one instance. Groups with neither ranks
nor a pattern follow their role: tp/ep/cp are contiguous blocks, dp/pp/world/unknown are strided by world/size.
"""

from __future__ import annotations

import math

import numpy as np

from fabric.errors import DesignError, WorkloadError
from fabric.workload.groups import group_instances, group_pattern as _pattern
from fabric.workload.model import Job

__all__ = ["PLACEMENT_POLICIES", "place_jobs", "fragmented_nodes", "group_instances", "domain_block", "domain_layout",
           "gpus_for_jobs", "INNER_ROLES"]

#: Process-group roles a scale-up domain should hold whole (their traffic is per layer, on the critical path).
INNER_ROLES = ("tp", "ep", "cp")

PLACEMENT_POLICIES = ("packed", "rail_aligned")


def _unit_gpus(fabric) -> int:
    """GPUs per scalable unit for rail-optimized fabrics (else per node)."""
    s = fabric.structure
    gpn = fabric.design.gpus_per_node
    if fabric.family == "rail_optimized" and "nodes_per_su" in s:
        return int(s["nodes_per_su"]) * gpn
    return gpn


def domain_block(job: Job, domain: int) -> int:
    """Ranks of the largest block of tensor-, expert- or context-parallel groups (:data:`INNER_ROLES`) that fits in a
    scale-up domain of ``domain`` GPUs: a strided group of ``size`` ranks ``stride`` apart tiles the job in blocks of
    ``stride x size`` consecutive ranks (Megatron's expert group: ``tp x ep``). 1 when no such group fits."""
    best = 1
    w = job.world_size
    for g in job.groups:
        if g.role not in INNER_ROLES or g.size <= 1:
            continue
        pat = _pattern(g, w)
        if pat is None:
            continue
        block = pat[1] * g.size
        if block <= domain and w % block == 0 and block > best:
            best = block
    return best


def domain_layout(job: Job, domain: int, gpus_per_node: int) -> int | None:
    """Ranks per scale-up domain that keep ``job``'s inner groups (:func:`domain_block`) whole, when that differs
    from filling the domain (``None``: consecutive ranks already keep them whole, or the domain is one host)."""
    if domain <= gpus_per_node or job.kind == "storage" or job.world_size <= 1:
        return None
    block = domain_block(job, domain)
    if block <= 1 or domain % block == 0:
        return None
    return (domain // block) * block


def _job_gpus_span(w: int, per_domain: int | None, domain: int) -> int:
    """GPUs (whole domains when ``per_domain`` is set) a job of ``w`` ranks spans."""
    if per_domain is None:
        return w
    return math.ceil(w / per_domain) * domain


def gpus_for_jobs(jobs, domain: int, gpus_per_node: int) -> int:
    """GPUs a cluster of ``domain``-GPU scale-up domains needs to place ``jobs`` one after the other with their
    inner groups inside domains (:func:`domain_layout`), in whole domains."""
    total = 0
    for job in jobs:
        if job.kind == "storage":
            continue
        per = domain_layout(job, domain, gpus_per_node)
        if per is None:
            total += job.world_size
        else:
            total = math.ceil(total / domain) * domain + _job_gpus_span(job.world_size, per, domain)
    return max(domain, math.ceil(total / domain) * domain)


def _domain_plan(jobs, fabric) -> list[int | None] | None:
    """Per job, its ranks per domain (None: consecutive), or None when the fabric has too few GPUs for the plan."""
    design = fabric.design
    dom, gpn = design.domain_size, design.gpus_per_node
    plan = [domain_layout(j, dom, gpn) for j in jobs]
    if all(p is None for p in plan):
        return None
    if gpus_for_jobs(jobs, dom, gpn) > fabric.n_gpus:
        return None
    return plan


def place_jobs(jobs: list[Job] | tuple[Job, ...], fabric, policy: str, rng: np.random.Generator | None = None,
               fragmentation: float = 0.0, notes: list | None = None) -> list[np.ndarray]:
    """For each job, the GPU id of each of its ranks (``array[world_size]``): the placement rule ``policy`` on a
    cluster whose node slots are fragmented by ``fragmentation`` (drawn from ``rng``; see the module docstring).
    ``notes`` (a list) receives a line per job whose inner groups keep whole scale-up domains by leaving GPUs idle,
    or could not."""
    if policy not in PLACEMENT_POLICIES:
        hint = (" ('scattered' is a fragmented cluster, a condition rather than a rule: evaluate under the scenario "
                "'fragmented')" if policy == "scattered" else "")
        raise DesignError(f"unknown placement {policy!r}; choose one of {', '.join(PLACEMENT_POLICIES)}{hint}")
    if isinstance(fragmentation, bool) or not isinstance(fragmentation, (int, float)) \
            or not 0.0 <= fragmentation <= 1.0:
        raise DesignError(f"fragmentation must be a share in [0, 1], got {fragmentation!r}")
    total = fabric.n_gpus
    need = sum(j.world_size for j in jobs if j.kind != "storage")
    if need > total:
        raise WorkloadError(f"the workload needs {need:,} GPUs but the design has {total:,}; "
                            f"size the design to at least {need:,} GPUs")
    if fabric.design.family == "regions":
        return _place_in_regions(jobs, fabric, policy, rng, fragmentation, notes)
    return _place_range(jobs, fabric, policy, rng, fragmentation, notes)


def _place_range(jobs, fabric, policy, rng, fragmentation, notes) -> list[np.ndarray]:
    """:func:`place_jobs` on one uniform range of GPUs (``fabric``: a fabric, or a region's view of one)."""
    total = fabric.n_gpus
    gpn = fabric.design.gpus_per_node
    out: list[np.ndarray] = []
    align = 1 if policy == "packed" else gpn
    unit = _unit_gpus(fabric) if policy == "rail_aligned" else 1
    dom = fabric.design.domain_size
    plan = _domain_plan(jobs, fabric)
    placed = _place_in_domains(jobs, plan, policy, unit, dom, total) if plan is not None else None
    if placed is not None:
        if notes is not None:
            for job, per in zip(jobs, plan):
                if per is not None:
                    notes.append(f"{job.name}: {per} ranks per {dom}-GPU NVLink domain ({dom - per} GPUs idle in "
                                 f"each) so its {domain_block(job, dom)}-rank tensor/expert-parallel groups stay "
                                 f"inside one domain")
        return _fragment(placed, total, gpn, fragmentation, rng)
    if notes is not None:
        for j in jobs:
            if domain_layout(j, dom, gpn) is not None:
                notes.append(f"{j.name}: its {domain_block(j, dom)}-rank tensor/expert-parallel groups do not divide "
                             f"the {dom}-GPU NVLink domain and the design has too few GPUs ({total:,}; "
                             f"{gpus_for_jobs(jobs, dom, gpn):,} needed) to leave the rest of each domain idle, so "
                             f"ranks stay consecutive and some groups straddle two domains")
    start = 0
    for job in jobs:
        w = job.world_size if job.kind != "storage" else 0
        if policy == "rail_aligned":
            a = unit if w >= unit else align
            start = math.ceil(start / a) * a
        if start + w > total:
            raise WorkloadError(f"job {job.name!r} ({w:,} GPUs) does not fit after aligning to node/unit "
                                f"boundaries ({total - start:,} GPUs left); use placement 'packed' or more GPUs")
        out.append(np.arange(start, start + w, dtype=np.int64))
        start += w
    return _fragment(out, total, gpn, fragmentation, rng)


class _RegionView:
    """What the placement rules read of a fabric, for one region of a design of regions."""

    def __init__(self, fabric, region: dict):
        d = fabric.design
        self.n_gpus = int(region["gpus"])
        self.family = region["family"]
        self.structure = {"nodes_per_su": region["nodes_per_su"]} if "nodes_per_su" in region else {}
        self.design = _DesignView(d.gpus_per_node, d.domain_size)


class _DesignView:
    def __init__(self, gpus_per_node: int, domain_size: int):
        self.gpus_per_node, self.domain_size = gpus_per_node, domain_size


def region_of_jobs(jobs, fabric, notes: list | None = None) -> list[int | None]:
    """For a design of regions, the region index each job is placed in (None: the job spans regions, placed on the
    free GPUs of the regions in order). Jobs a region names go there; the others go, in order, to the first region
    with room for them whole (its GPUs less those already taken). A region naming a job the workload lacks, or jobs
    that do not fit the region naming them, is said in ``notes``/an error."""
    regions = fabric.structure["regions"]
    by_name = {j.name: i for i, j in enumerate(jobs)}
    free = [int(r["gpus"]) for r in regions]
    where: list[int | None] = [None] * len(jobs)
    for k, (r, spec) in enumerate(zip(regions, fabric.design.regions)):
        for name in spec.jobs:        # the design's (a cached fabric's structure is shared by every placement)
            if name not in by_name:
                if notes is not None:
                    notes.append(f"region {r['name']} names job {name!r}, which the workload does not have")
                continue
            i = by_name[name]
            w = jobs[i].world_size if jobs[i].kind != "storage" else 0
            if w > free[k]:
                raise WorkloadError(f"job {name!r} ({w:,} GPUs) does not fit region {r['name']} ({free[k]:,} of "
                                    f"{int(r['gpus']):,} GPUs free): place it elsewhere or make the region larger")
            where[i] = k
            free[k] -= w
    for i, job in enumerate(jobs):
        if where[i] is not None or job.kind == "storage":
            continue
        fit = next((k for k in range(len(regions)) if free[k] >= job.world_size), None)
        if fit is not None:
            where[i] = fit
            free[fit] -= job.world_size
        elif notes is not None:
            notes.append(f"{job.name}: no region has {job.world_size:,} GPUs free, so it spans regions "
                         f"(placed on their free GPUs in order)")
    return where


def _place_in_regions(jobs, fabric, policy, rng, fragmentation, notes) -> list[np.ndarray]:
    """:func:`place_jobs` on a design of regions: each job in its region (:func:`region_of_jobs`), laid out there by
    the rule; fragmentation moves node slots inside each region."""
    regions = fabric.structure["regions"]
    gpn = fabric.design.gpus_per_node
    where = region_of_jobs(jobs, fabric, notes)
    out: list[np.ndarray | None] = [None] * len(jobs)
    used = []
    for k, r in enumerate(regions):
        mine = [i for i, w in enumerate(where) if w == k]
        g0 = int(r["first_node"]) * gpn
        local = _place_range([jobs[i] for i in mine], _RegionView(fabric, r), policy, None, 0.0, notes)
        taken = np.zeros(int(r["gpus"]), bool)
        for i, g in zip(mine, local):
            out[i] = g + g0
            taken[g] = True
        used.append(g0 + np.flatnonzero(~taken))
    free = np.concatenate(used) if used else np.zeros(0, np.int64)
    cursor = 0
    for i, job in enumerate(jobs):
        if out[i] is None:
            w = job.world_size if job.kind != "storage" else 0
            if cursor + w > free.size:
                raise WorkloadError(f"job {job.name!r} ({w:,} GPUs) does not fit the regions' free GPUs "
                                    f"({free.size - cursor:,} left)")
            out[i] = free[cursor:cursor + w].astype(np.int64)
            cursor += w
    order = _region_fragments(regions, gpn, fragmentation, rng)
    if order is not None:
        out = [order[g // gpn] * gpn + g % gpn for g in out]
    return out


def _region_fragments(regions, gpn: int, fragmentation: float, rng) -> np.ndarray | None:
    """Node-slot moves of a fragmented cluster of regions: each region's slots trade places inside the region."""
    parts, moved = [], False
    rng = rng if rng is not None else np.random.default_rng(0)
    for r in regions:
        o = fragmented_nodes(int(r["nodes"]), fragmentation, rng)
        moved |= o is not None
        parts.append((np.arange(int(r["nodes"])) if o is None else o) + int(r["first_node"]))
    return np.concatenate(parts).astype(np.int64) if moved else None


def _fragment(out: list[np.ndarray], total: int, gpn: int, fragmentation: float, rng) -> list[np.ndarray]:
    """``out`` with its node slots moved as a cluster fragmented by ``fragmentation`` moves them."""
    order = fragmented_nodes(total // gpn, fragmentation, rng)
    if order is not None:
        out = [order[g // gpn] * gpn + g % gpn for g in out]
    return out


def _place_in_domains(jobs, plan, policy: str, unit: int, dom: int, total: int) -> list[np.ndarray] | None:
    """Jobs one after the other from domain boundaries, ``plan[i]`` ranks per domain (consecutive ranks where it
    is None); None when they do not fit in ``total`` GPUs."""
    out = []
    start = 0
    for job, per in zip(jobs, plan):
        w = job.world_size if job.kind != "storage" else 0
        a = math.lcm(unit, dom) if policy == "rail_aligned" and w >= unit else dom
        start = math.ceil(start / a) * a
        r = np.arange(w, dtype=np.int64)
        gpus = start + r if per is None else start + (r // per) * dom + r % per
        span = _job_gpus_span(w, per, dom)
        if gpus.size and int(gpus.max()) >= total:
            return None
        out.append(gpus)
        start += span
    return out


def fragmented_nodes(nodes: int, fragmentation: float, rng: np.random.Generator | None = None) -> np.ndarray | None:
    """Where each of ``nodes`` node slots lands on a cluster fragmented by ``fragmentation``: ``order[slot]`` is the
    physical node, or ``None`` when nothing moves. ``round(fragmentation x nodes)`` slots drawn at random trade
    places at random (all of them: a random permutation of the nodes)."""
    moved = int(round(fragmentation * nodes))
    if moved < 2:
        return None
    rng = rng if rng is not None else np.random.default_rng(0)
    if moved >= nodes:
        return rng.permutation(nodes).astype(np.int64)
    slots = np.sort(rng.choice(nodes, size=moved, replace=False))
    order = np.arange(nodes, dtype=np.int64)
    order[slots] = slots[rng.permutation(moved)]
    return order



"""Placement: map each job's ranks onto the fabric's GPUs, and expand process groups into their instances.

Policies:

- ``packed``: jobs take consecutive GPUs, one after the other (rank r of a job on GPU start + r);
- ``rail_aligned``: every job starts on a node boundary, and on a scalable-unit boundary when it fills at least
  one unit of a rail-optimized fabric, so that rank-to-rail alignment and unit locality hold; ranks consecutive;
- ``scattered``: a fragmented cluster: each job gets whole nodes drawn at random (from ``rng``) among the free
  ones; ranks are consecutive inside a node. Jobs smaller than a node are packed.

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
from fabric.workload.model import Job, ProcessGroup

__all__ = ["PLACEMENT_POLICIES", "place_jobs", "group_instances"]

PLACEMENT_POLICIES = ("packed", "rail_aligned", "scattered")


def _unit_gpus(fabric) -> int:
    """GPUs per scalable unit for rail-optimized fabrics (else per node)."""
    s = fabric.structure
    gpn = fabric.design.gpus_per_node
    if fabric.family == "rail_optimized" and "nodes_per_su" in s:
        return int(s["nodes_per_su"]) * gpn
    return gpn


def place_jobs(jobs: list[Job] | tuple[Job, ...], fabric, policy: str, rng: np.random.Generator | None = None
               ) -> list[np.ndarray]:
    """For each job, the GPU id of each of its ranks (``array[world_size]``)."""
    if policy not in PLACEMENT_POLICIES:
        raise DesignError(f"unknown placement {policy!r}; choose one of {', '.join(PLACEMENT_POLICIES)}")
    total = fabric.n_gpus
    gpn = fabric.design.gpus_per_node
    need = sum(j.world_size for j in jobs if j.kind != "storage")
    if need > total:
        raise WorkloadError(f"the workload needs {need:,} GPUs but the design has {total:,}; "
                            f"size the design to at least {need:,} GPUs")
    out: list[np.ndarray] = []
    if policy == "scattered":
        rng = rng if rng is not None else np.random.default_rng(0)
        free_nodes = list(rng.permutation(total // gpn))
        cursor = 0  # for sub-node jobs, packed from the end of the cluster
        for job in jobs:
            w = job.world_size if job.kind != "storage" else 0
            if w >= gpn:
                k = math.ceil(w / gpn)
                if k > len(free_nodes):
                    raise WorkloadError(f"job {job.name!r} needs {k} free nodes; only {len(free_nodes)} left")
                nodes, free_nodes = np.array(free_nodes[:k]), free_nodes[k:]
                gpus = (nodes[:, None] * gpn + np.arange(gpn)[None, :]).ravel()[:w]
            else:
                gpus = total - 1 - cursor - np.arange(w)[::-1]
                cursor += w
            out.append(gpus.astype(np.int64))
        return out
    align = 1 if policy == "packed" else gpn
    unit = _unit_gpus(fabric) if policy == "rail_aligned" else 1
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
    return out


def _pattern(group: ProcessGroup, world: int) -> tuple[int, int] | None:
    """(start, stride) of a strided group, or ``None``."""
    if group.rank_stride is not None:           # a stride without a start (a trace's "one group per slice") starts at 0
        return group.rank_start or 0, group.rank_stride
    if group.ranks is not None:
        r = np.asarray(group.ranks, dtype=np.int64)
        if r.size == 1:
            return int(r[0]), 1
        d = np.diff(r)
        if (d == d[0]).all() and d[0] > 0:
            return int(r[0]), int(d[0])
        return None
    if group.size == world:
        return 0, 1
    if group.role in ("tp", "ep", "cp"):
        return 0, 1
    if world % group.size == 0:
        return 0, world // group.size
    return None


def group_instances(group: ProcessGroup, world: int) -> np.ndarray:
    """All instances of ``group`` over a world of ``world`` ranks: ``array[n_instances, size]`` of ranks."""
    n = group.size
    if n > world:
        raise WorkloadError(f"process group {group.name!r} has {n} ranks but the job has only {world}")
    pat = _pattern(group, world)
    if pat is None:
        if group.ranks is not None:
            return np.asarray(group.ranks, dtype=np.int64)[None, :]
        return np.arange(n, dtype=np.int64)[None, :]
    _, stride = pat
    block = stride * n
    if block > world or world % block:
        # the pattern does not tile the world: keep the one instance the trace describes
        ranks = group.global_ranks()
        if ranks is None:
            ranks = tuple(pat[0] + i * stride for i in range(n))
        if max(ranks) >= world:
            raise WorkloadError(f"process group {group.name!r} reaches rank {max(ranks)} in a {world}-rank job")
        return np.asarray(ranks, dtype=np.int64)[None, :]
    bases = (np.arange(world // block)[:, None] * block + np.arange(stride)[None, :]).ravel()
    return bases[:, None] + stride * np.arange(n)[None, :]

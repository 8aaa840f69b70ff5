"""Where the instances of a process group sit in its job's ranks: the (start, stride) pattern of a strided group and
every instance of it over the job's world (a tensor-parallel group of 8 in a 64-rank job: 8 instances of 8
consecutive ranks). Used by the workload's accounting (NVLink or network bytes) and by the evaluator's placement."""

from __future__ import annotations

import numpy as np

from fabric.errors import WorkloadError
from fabric.workload.model import ProcessGroup

__all__ = ["group_pattern", "group_instances"]


def group_pattern(group: ProcessGroup, world: int) -> tuple[int, int] | None:
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
    pat = group_pattern(group, world)
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

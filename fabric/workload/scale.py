"""Scale a traced job to the cluster being designed: grow one parallelism dimension, keep every rank's work.

A trace records a few ranks (2-16 GPUs of a profiling run); the fabric is designed for thousands. Growing the
data-parallel dimension ``f`` times keeps each rank's work and messages (a gradient all-reduce still reduces the
same buffer, over ``f`` times as many ranks), so the per-rank bytes of every op and the compute per step are the
trace's; only the groups change.

Ranks are laid out mixed-radix, as Megatron-LM and fabric's placement do: every process group is a pattern
(start 0, stride ``s``, size ``n``) over the world, and its instances tile the world. Growing dimension ``G``
(stride ``s_G``, size ``n_G``) by ``f``:

- groups inside ``G``'s inner ranks (span ``s x n <= s_G``) stay as they are (e.g. TP when DP grows);
- groups outside ``G`` (stride ``>= s_G x n_G``) keep their size, their stride grows ``f`` times (e.g. PP);
- ``G`` itself, and any group that ends where ``G`` ends (stride ``>= s_G``, span ``= s_G x n_G``: the expert data-
  parallel group of an MoE job, a world group), grows ``f`` times in size;
- a group within ``G`` that does not reach its end (the expert-parallel group, carved out of DP) stays as it is;
- a group that straddles ``G`` cannot be grown consistently: an error names it.

Groups without listed ranks follow the placement's role rule (tp/ep/cp contiguous, dp/pp/world strided by world /
size); groups whose listed ranks are not an arithmetic progression cannot be tiled and are refused by name.
"""

from __future__ import annotations

from dataclasses import replace

from fabric.errors import WorkloadError
from fabric.workload.model import Job, ProcessGroup, Workload, validate_workload

__all__ = ["scale_to", "GROWABLE_ROLES"]

#: Roles a trace can be grown along ("world" for jobs whose only group is the whole world).
GROWABLE_ROLES = ("dp", "pp", "ep", "cp", "tp", "world")


def _pattern(group: ProcessGroup, world: int) -> tuple[int, int]:
    """(start, stride) of ``group`` over a ``world``-rank job (the placement's rule for groups without ranks)."""
    if group.rank_stride is not None:           # a stride without a start (a trace's "one group per slice") starts at 0
        return group.rank_start or 0, group.rank_stride
    if group.ranks is not None:
        r = list(group.ranks)
        if len(r) == 1:
            return r[0], 1
        d = {b - a for a, b in zip(r, r[1:])}
        if len(d) == 1 and r[1] > r[0]:
            return r[0], r[1] - r[0]
        raise WorkloadError(f"process group {group.name!r} lists ranks that are not evenly spaced "
                            f"({', '.join(map(str, r[:8]))}{', ...' if len(r) > 8 else ''}), so its copies over a "
                            f"larger world are not known; it cannot be scaled")
    if group.size == world or group.role in ("tp", "ep", "cp"):
        return 0, 1
    if world % group.size == 0:
        return 0, world // group.size
    raise WorkloadError(f"process group {group.name!r} ({group.size} ranks) does not divide the {world}-rank world")


def _grown_dimension(job: Job, grow: str) -> ProcessGroup:
    cands = [g for g in job.groups if g.role == grow] if grow != "world" else []
    if grow in ("dp", "world") and not cands:
        cands = [g for g in job.groups if g.size == job.world_size]
    if not cands:
        roles = sorted({g.role for g in job.groups}) or ["none"]
        raise WorkloadError(f"job {job.name!r} has no {grow!r} group to grow (its groups' roles: {', '.join(roles)});"
                            f" choose one of those with --grow")
    return max(cands, key=lambda g: g.size)


def _scale_job(job: Job, factor: int, grow: str) -> Job:
    world = job.world_size
    G = _grown_dimension(job, grow)
    g_start, s_G = _pattern(G, world)
    n_G = G.size
    end = s_G * n_G
    groups = []
    for g in job.groups:
        start, s = _pattern(g, world)
        span = s * g.size
        if g.size == 1 or span <= s_G:
            new = replace(g, rank_start=start, rank_stride=s, ranks=None)
        elif s >= end:
            new = replace(g, rank_start=start, rank_stride=s * factor, ranks=None)
        elif s >= s_G and span == end:
            new = replace(g, size=g.size * factor, rank_start=start, rank_stride=s, ranks=None)
        elif s >= s_G and span < end:
            new = replace(g, rank_start=start, rank_stride=s, ranks=None)
        else:
            raise WorkloadError(f"job {job.name!r}: group {g.name!r} (stride {s}, {g.size} ranks) straddles the "
                                f"{grow} dimension (stride {s_G}, {n_G} ranks), so it cannot be grown along it")
        groups.append(new)
    del g_start
    return replace(job, world_size=world * factor, groups=tuple(groups),
                   notes=job.notes + (f"scaled from {world:,} to {world * factor:,} ranks by growing {G.name!r} "
                                      f"({grow}) {factor}x; per-rank work and message sizes as traced",))


def scale_to(workload: Workload, gpus: int, *, grow: str = "dp", job: str | None = None) -> Workload:
    """``workload`` with one job grown to ``gpus`` ranks along ``grow`` (see the module docstring).

    ``job`` names the job to grow (default: the only, or the largest, training/inference job); other jobs are left
    as they are. ``gpus`` must be a whole multiple of the job's traced world size.
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise WorkloadError(f"scale to: expected a whole number of GPUs >= 1, got {gpus!r}")
    if grow not in GROWABLE_ROLES:
        raise WorkloadError(f"scale to: cannot grow {grow!r}; choose one of {', '.join(GROWABLE_ROLES)}")
    compute = [j for j in workload.jobs if j.kind != "storage"]
    if not compute:
        raise WorkloadError("scale to: the workload has no training or inference job")
    if job is not None:
        target = next((j for j in compute if j.name == job), None)
        if target is None:
            raise WorkloadError(f"scale to: no job {job!r}; jobs: {', '.join(j.name for j in compute)}")
    else:
        target = max(compute, key=lambda j: (j.kind == "training", j.world_size))
    world = target.world_size
    if gpus % world:
        lo, hi = (gpus // world) * world, (gpus // world + 1) * world
        use = f"{lo:,} or {hi:,}" if lo >= world else f"{world:,} (the traced size) or a multiple of it"
        raise WorkloadError(f"scale to: {gpus:,} GPUs is not a whole multiple of the traced {world:,} ranks of job "
                            f"{target.name!r}; use {use}")
    factor = gpus // world
    if factor == 1:
        return workload
    jobs = []
    for j in workload.jobs:
        if j is target:
            jobs.append(_scale_job(j, factor, grow))
        elif j.kind == "storage" and j.burst_target in (target.name,) and j.world_size == world:
            jobs.append(replace(j, world_size=gpus))          # its checkpoint now comes from every rank
        else:
            jobs.append(j)
    return validate_workload(workload.with_jobs(jobs))

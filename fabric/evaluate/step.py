"""One job's step-time samples (stage 4 of :mod:`fabric.evaluate.engine`): every op's time per sample from its
traffic (:mod:`fabric.evaluate.traffic`), the compute with its stragglers, the exposed communication, checkpoint
interference, the step and its line-rate bound; and what jobs sharing link groups do to each other.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from fabric.evaluate.collectives import NCCL_ALGOS, CollectiveHardware
from fabric.evaluate.flows import algorithm_for, group_shape
from fabric.evaluate.innetwork import runs_on_trees, tree_traffic
from fabric.evaluate.lower_bound import binding, bound_split, gpu_net_bytes_per_s, nvlink_bytes_per_s
from fabric.evaluate.network_models import healthy_model
from fabric.evaluate.patterns import shared_shape
from fabric.evaluate.placement import group_instances
from fabric.evaluate.step_exposure import exposed_time
from fabric.evaluate.traffic import canonical_kind, traffic_samples
from fabric.evaluate.transport import small_message_floor_s
from fabric.workload.accounting import step_ops
from fabric.workload.model import Job

__all__ = ["run_job", "link_usage", "with_background", "competition", "compute_samples", "checkpoint_interference",
           "burst_duration", "nvlink_share"]


def _zmax_samples(n: int, u: np.ndarray) -> np.ndarray:
    """Max of n standard normals by inversion: Phi^-1(u^(1/n))."""
    nd = NormalDist()
    q = np.clip(u ** (1.0 / max(n, 1)), 1e-12, 1 - 1e-16)
    return np.array([nd.inv_cdf(float(v)) for v in q])


def run_job(job: Job, gpus_of_rank, model, seq, *, fabric, design, prof, storage, samples, scenario,
            algorithms, nvls, notes=None, plans=None, memo=None, tree_limit=None) -> dict:
    """One job's step-time samples on ``model`` (its random draws come from ``seq``, so a rerun repeats them)."""
    rng_hash, rng_compute, rng_burst = (np.random.default_rng(x) for x in seq.spawn(3))
    cache: dict = {}
    shapes: dict = {}
    op_times, op_lb, op_meta, nv_shares = [], [], [], []
    hardware = CollectiveHardware(gpus_per_node=1, nvls=nvls, nvlink_bytes_per_s=nvlink_bytes_per_s(fabric),
                                  nic_bytes_per_s=gpu_net_bytes_per_s(fabric),
                                  in_network=design.in_network_reduction and prof.in_network_reduction)
    forced_nccl = NCCL_ALGOS.get(design.nccl_algo) if design.nccl_algo else None
    placed = None
    for op in job.ops:
        kind = canonical_kind(op.kind)
        group = job.group(op.group)
        size = float(op.bytes)
        if op.group not in shapes:
            if placed is None:          # one bytes object per job: it keeps its hash for every group's lookups
                placed = gpus_of_rank.tobytes()
            skey = None if memo is None else ("shape", group, job.world_size, placed)
            shapes[op.group] = memo.get(skey) if skey is not None else None
            if shapes[op.group] is None:
                # kept across evaluations too (fabric.evaluate.patterns): placements and domains repeat
                shapes[op.group] = shared_shape(
                    placed, group, job.world_size, fabric.gpu_domain,
                    lambda g=group: group_shape(gpus_of_rank[group_instances(g, job.world_size)],
                                                fabric.gpu_domain))
                if skey is not None:
                    memo[skey] = shapes[op.group]
        shape = shapes[op.group]
        by_design = kind not in algorithms and kind == "all_reduce" and forced_nccl is not None
        requested = forced_nccl if by_design else algorithms.get(kind)
        alg, fell_back = algorithm_for(kind, requested, size, shape, hardware)
        if fell_back and notes is not None:
            asked = f"NCCL_ALGO {design.nccl_algo!r}" if by_design else f"algorithm {requested!r}"
            note = (f"{job.name}: {asked} cannot run the all-reduce on group "
                    f"{op.group!r} ({shape.domains} node(s) x {shape.per_domain} GPU(s), "
                    f"{'NVLink SHARP' if nvls else 'no NVLink SHARP'}"
                    f"{', in-network reduction' if hardware.in_network else ''}): NCCL falls back to ring")
            if note not in notes:
                notes.append(note)
        key = (op.group, kind, alg)
        if key not in cache and runs_on_trees(kind, alg, shape, hardware.in_network):
            def run(sh, a, hw, m, trees, pl, _kind=kind, _size=size):
                return traffic_samples(fabric, m, design, prof, sh, _kind, _size, a, hw, rng_hash, samples,
                                       scenario.background_load, pl, trees)
            cache[key] = tree_traffic(run, kind=kind, size_bytes=size, algorithm=alg, requested=requested,
                                      shape=shape, hardware=hardware, fabric=fabric, model=model,
                                      limit=tree_limit, plans=plans, notes=notes,
                                      label=f"{job.name}, in-network reduction of group {op.group!r}",
                                      net_eff=prof.bandwidth_efficiency * (1.0 - scenario.background_load),
                                      pxn=design.pxn, routing=design.routing, samples=samples,
                                      healthy=lambda: healthy_model(fabric))
        elif key not in cache:
            cache[key] = traffic_samples(fabric, model, design, prof, shape, kind, size, alg, hardware, rng_hash,
                                         samples, scenario.background_load, plans)
        ts = cache[key]
        eff_scale, alpha_scale, overhead = prof.scales_for(size)
        t = np.maximum(size * ts.per_byte / eff_scale, ts.issue_s) + ts.latency_s * alpha_scale \
            + (overhead if ts.group_size > 1 else 0.0)
        t = np.maximum(t, small_message_floor_s(ts.group_size, size))
        op_times.append(t)
        op_lb.append(size * ts.lb_per_byte)
        op_meta.append((op, ts, key))
        nv_shares.append(nvlink_share(ts, size, eff_scale, alpha_scale, samples))
    ops = step_ops(job)                 # counted per step of the job (a serving job: per request)
    compute = compute_samples(job, rng_compute, samples, memo)
    exposed, comm = exposed_time(op_times, ops, compute, samples)
    interference = checkpoint_interference(job, storage, design, fabric, prof, comm, compute, rng_burst, samples,
                                           gpus_of_rank if "regions" in fabric.structure else None)
    step = compute + comm + interference
    lb_exposed, lb_comm = exposed_time([np.array([lb]) for lb in op_lb], ops, np.array([job.compute_time_s]), 1)
    split = bound_split(op_lb, lb_exposed, op_meta, ops, job.compute_time_s)
    comm_split = {k: v for k, v in split.items() if k != "compute"}
    lower_by = binding(comm_split) if comm_split else "compute"
    order = np.argsort(step, kind="stable")
    i99 = int(order[min(samples - 1, int(math.ceil(0.99 * samples)) - 1)])
    return {"op_times": op_times, "op_lb": op_lb, "op_meta": op_meta, "ops": ops, "compute": compute,
            "exposed": exposed,
            "interference": interference, "step": step, "lower": job.compute_time_s + float(lb_comm[0]),
            "lower_by": lower_by, "lower_split": split, "i99": i99, "nv_shares": nv_shares}


def nvlink_share(ts, size: float, eff_scale: float, alpha_scale: float, samples: int) -> np.ndarray:
    """Per sample, the share of an op's time that is scale-up (NVLink) communication: the NVLink time over the
    NVLink plus network time, or all of it to whichever of the two binds when they overlap (pipelined)."""
    net = ts.net_per_byte if ts.net_per_byte is not None else np.zeros(samples)
    nv_t = size * ts.up_per_byte / eff_scale + ts.nv_latency_s * alpha_scale
    net_t = size * np.broadcast_to(net, (samples,)) / eff_scale + (ts.latency_s - ts.nv_latency_s) * alpha_scale
    if ts.pipelined:
        return (nv_t >= net_t).astype(float)
    total = nv_t + net_t
    return np.divide(nv_t, total, out=np.zeros(samples), where=total > 0)


def link_usage(run: dict, model) -> dict:
    """Per link group a job crosses: (its mean share of the capacity, its bytes per step per link).

    ``{kind: {key: [utilization, bytes_per_step_per_link]}}``.
    """
    step = float(run["step"].mean())
    usage: dict = {}
    if step <= 0:
        return usage
    for op, (_, ts, _) in zip(run["ops"], run["op_meta"]):
        per_step = float(op.bytes) * op.count_per_step
        for cls, _busiest, _pi in ts.link_loads:
            d = usage.setdefault(cls.kind, {})
            cap = model.link_bps(cls.kind) / 8.0
            for key, load in zip(cls.member_ids.tolist(), cls.member_loads.tolist()):
                u = d.setdefault(key, [0.0, 0.0])
                u[0] += per_step * load / (cap * step)
                u[1] += per_step * load
    return usage


def class_shares(design, jobs, me: int) -> dict | None:
    """The share of a contended link each other job takes from job ``me`` when a serving traffic class is scheduled
    apart (``design.serving_class``): a training job loses the whole link to serving under strict priority and the
    serving weight under weighted priority; a serving job under weighted priority loses ``1 - weight`` to training.
    None without a class (max-min fair by demand)."""
    if not design.serving_class:
        return None
    w = 1.0 if design.serving_priority == "strict" else float(design.serving_weight)
    me_serving = jobs[me].serving is not None
    out = {}
    for j, job in enumerate(jobs):
        if j == me or (job.serving is not None) == me_serving:
            continue
        out[j] = (1.0 - w) if me_serving else w
    return out


def with_background(model, usage: list, me: int, *, active: bool = False, shares: dict | None = None):
    """A copy of ``model`` in which job ``me`` sees the other jobs on the link groups it shares with them.

    While two jobs move data through a group at once, max-min fairness splits it by their demand; another job
    is active there for the share ``u`` of the time it uses it alone. So job A loses, on each group,
    sum over other jobs B of u_B x bytes_B / (bytes_A + bytes_B) of the capacity (at most 90 %); with ``active``,
    the others are taken as active all the time (u = 1): what a request meets during their bursts. ``shares``
    (other job -> share of the link it takes while both are active: a traffic class scheduled apart,
    :func:`class_shares`) replaces the demand split for those jobs.
    """
    from dataclasses import replace as _replace

    bg: dict = {}
    sb, ns = model.fabric.switch_base, model.fabric.n_switches
    mine = usage[me]
    for i, u in enumerate(usage):
        if i == me:
            continue
        for kind, per_key in u.items():
            if not kind.startswith(("leaf", "pod")):
                continue
            size = ns if kind.startswith("leaf") else max(model.pod_bins.size, 1)
            arr = bg.setdefault(kind, np.zeros(size))
            for key, (util, volume) in per_key.items():
                own = mine.get(kind, {}).get(key, (0.0, 0.0))[1]
                if own <= 0:
                    continue                      # a group this job never uses cannot slow it
                share = shares[i] if shares is not None and i in shares else volume / (own + volume)
                arr[key - sb if kind.startswith("leaf") else key] += (1.0 if active else util) * share
    bg = {k: np.clip(v, 0.0, 0.9) for k, v in bg.items()}
    return _replace(model, background=bg)


def competition(usage: list, me: int, runs: list, jobs: list) -> tuple[float, float]:
    """``(active share, period)`` of the other jobs on the link groups job ``me`` shares with them: the largest
    utilization any of them has of such a group (when alone), and the mean step of that job."""
    if not usage or not usage[me]:
        return 0.0, 0.0
    best, period = 0.0, 0.0
    for i, u in enumerate(usage):
        if i == me or jobs[i].serving is not None:
            continue
        for kind, per_key in u.items():
            if not kind.startswith(("leaf", "pod")):
                continue
            for key, (util, _vol) in per_key.items():
                if usage[me].get(kind, {}).get(key, (0.0, 0.0))[1] > 0 and util > best:
                    best, period = util, float(runs[i]["step"].mean())
    return min(best, 1.0), period


def compute_samples(job: Job, rng: np.random.Generator, samples: int, memo: dict | None = None) -> np.ndarray:
    if job.compute_time_s <= 0:
        return np.zeros(samples)
    if job.compute_cv <= 0:
        return np.full(samples, job.compute_time_s)
    u = rng.random(samples)
    if memo is None:
        z = _zmax_samples(job.world_size, u)
    else:       # the same job under other scenarios draws the same u (its seed): the maxima are the same
        key = ("zmax", job.world_size, u.tobytes())
        z = memo.get(key)
        if z is None:
            z = memo[key] = _zmax_samples(job.world_size, u)
    return job.compute_time_s * (1.0 + job.compute_cv * np.maximum(z, 0.0))


def checkpoint_interference(job, storage, design, fabric, prof, comm, compute, rng, samples, gpus=None
                            ) -> np.ndarray:
    """Extra time when a checkpoint burst of this job's storage traffic overlaps the step (not with isolation).

    During a burst each NIC shares its link with one storage flow (fair share: half the bandwidth), so the part
    of the step's exposed communication that overlaps the burst takes twice as long.
    """
    out = np.zeros(samples)
    strict = design.serving_class and design.serving_priority == "strict"
    if design.storage_isolation or (job.serving is not None and strict):
        return out
    # a serving class under weighted priority keeps its weight w of the link: what overlaps a burst takes 1/w as long
    slow = (1.0 / design.serving_weight - 1.0) if job.serving is not None and design.serving_class else 1.0
    for s in storage:
        # a burst aimed at another job leaves this one alone; "storage"/"peers" bursts come from every job
        if not s.burst_bytes or s.burst_target not in (job.name, None, "storage", "peers"):
            continue
        nics = max(1, int(round(job.world_size * design.nics_per_gpu)))
        per_nic = s.burst_bytes / nics
        duration = burst_duration(per_nic, design, fabric, prof, gpus)
        step = compute + comm
        p_overlap = np.minimum(1.0, (step + duration) / s.burst_period_s)
        hit = rng.random(samples) < p_overlap
        out += np.where(hit, slow * np.minimum(duration, comm), 0.0)
    return out


def leaf_shapes(fabric, gpus=None) -> list[tuple[int, int, int]]:
    """``(downlinks, uplinks, leaves)`` of the fabric's leaves: one shape for a uniform fabric; for a design of
    regions one per region, only the regions holding some of ``gpus`` (GPU ids; None: every region)."""
    s = fabric.structure
    if "regions" not in s:
        return [(int(s.get("leaf_down", 0)), int(s.get("leaf_up", 0)), int(s.get("leaves", 1) or 1))]
    regs = s["regions"]
    if gpus is not None and len(gpus):
        gpn = fabric.design.gpus_per_node
        first = np.array([r["first_node"] for r in regs]) * gpn
        held = np.unique(np.searchsorted(first, np.asarray(gpus), side="right") - 1)
        regs = [regs[i] for i in held.tolist()]
    return [(int(r["leaf_down"]), int(r["leaf_up"]), int(r["leaves"])) for r in regs]


def burst_duration(per_nic: float, design, fabric, prof, gpus=None) -> float:
    """How long a checkpoint burst lasts: each NIC writes ``per_nic`` bytes to storage outside its leaf.

    The storage traffic class has its own routing (``design.storage_routing``, default the design's): all the
    leaf's NICs send through its uplinks, one flow each; under ECMP the burst lasts until the busiest uplink
    (the expected maximum over all leaves of the balls-in-bins load) has drained. A design of regions: the slowest
    of the regions holding ``gpus`` (the job's GPUs; None: every region).
    """
    return max(_burst_on_leaves(per_nic, design, fabric, prof, *shape) for shape in leaf_shapes(fabric, gpus))


def _burst_on_leaves(per_nic: float, design, fabric, prof, down: int, up: int, leaves: int) -> float:
    from fabric.evaluate.ballsbins import max_load_cdf

    ports = fabric.nic_ports.shape[1]
    rate = fabric.link_speed_bps / 8.0 * prof.bandwidth_efficiency
    nic_time = per_nic / (rate * ports)
    up_bps = fabric.structure.get("uplink_speed_gbps", [fabric.link_speed_bps / 1e9])[0] * 1e9
    up_rate = up_bps / 8.0 * prof.bandwidth_efficiency         # leaf uplinks may run at another speed
    if fabric.tiers < 2 or up <= 0 or down <= 0:
        return nic_time
    flow = per_nic / ports
    routing = design.storage_routing or design.routing
    if routing == "ecmp":
        off, cdf = max_load_cdf(down, up)
        cdf_l = cdf ** max(leaves, 1)
        busiest = off + float(np.sum(1.0 - cdf_l[:-1]))
    elif routing == "adaptive":
        busiest = down / up * (1.0 + prof.adaptive_imbalance)
    elif routing == "computed":
        from fabric.evaluate.computed import computed_busiest_balls

        busiest = computed_busiest_balls(down, up)
    else:
        busiest = down / up
    link_time = busiest * flow / up_rate
    duration = max(nic_time, link_time)
    if routing == "spray" and not prof.reorder_tolerant and prof.reorder_slowdown > 1.0:
        from fabric.evaluate.transport import reorder_factor

        # one storage flow per NIC port; down / up of them per leaf uplink (docs/evaluator.md, "Reordering")
        duration *= float(reorder_factor(prof.reorder_slowdown, link_time / duration, up, 1.0, down / up,
                                         prof.reorder_floor))
    return duration

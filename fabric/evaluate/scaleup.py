"""Scale-up versus scale-out: where each communication op's bytes go, over NVLink inside the scale-up domain or over
the network.

The evaluator charges every op's traffic to the NVLink domain or to the network (:mod:`fabric.evaluate.flows`);
this module adds the bytes up per op, per step and over all GPUs, from the same placement and the same traffic
patterns, so a design review can see what a larger scale-up domain takes off the network: on a GB200 NVL72 design
a 64-GPU expert-parallel group sits inside one rack (:func:`fabric.evaluate.placement.domain_layout`) and its
all-to-all never reaches a NIC, while on 8-GPU HGX nodes 56 of every 64 bytes cross the network.

Counting (per step of the job, all GPUs of the job together, bytes each GPU sends; a serving job's step is one
request, its decode ops once per token step: :mod:`fabric.workload.accounting`):

- network bytes: the op's network flows (each rank's share of the buffer to each member outside its domain; a
  two-level collective's per-rail flows), times the op's size and its count per step;
- NVLink bytes: the scale-up part of a two-level or in-domain collective (bytes each GPU moves through the
  NVSwitch), and the flows of a flat algorithm between members of one domain.
"""

from __future__ import annotations

import numpy as np

from fabric.evaluate.collectives import NCCL_ALGOS, CollectiveHardware
from fabric.evaluate.flows import _flat_phases, algorithm_for, group_shape, op_traffic
from fabric.evaluate.placement import domain_block, group_instances, place_jobs
from fabric.workload.accounting import step_ops, step_unit

__all__ = ["traffic_split"]


def _network_per_byte(tr, gpu_domain: np.ndarray) -> float:
    """Bytes on the network per byte of op size, over all instances and members."""
    total = 0.0
    for ph in tr.phases:
        if ph.all_pairs is not None:                 # a large all-to-all kept implicit: each member sends 1/n of
            m = ph.all_pairs                          # its buffer to every member outside its domain
            n = m.shape[1]
            dom = np.sort(gpu_domain[m], axis=1)
            same = np.zeros(m.shape, np.int64)
            for i, row in enumerate(dom):
                _, inv, counts = np.unique(row, return_inverse=True, return_counts=True)
                same[i] = counts[inv]
            total += float((n - same).sum()) / n
        else:
            total += float(np.sum(ph.bytes_per_byte))
    return total


def _flat_total_per_byte(kind: str, alg: str, members: np.ndarray) -> float:
    """Bytes a flat algorithm moves between members per byte of op size (NVLink and network together)."""
    I, n = members.shape
    if kind in ("all_to_all", "all_to_allv"):
        return float(I * (n - 1))                    # every member sends (n-1)/n of its buffer
    own = np.arange(int(members.max()) + 1)          # every GPU its own domain: every flow counted
    return float(sum(float(np.sum(ph.bytes_per_byte)) for ph in _flat_phases(kind, alg, members, own)))


def traffic_split(design, workload, *, catalog=None, seed: int = 0) -> dict:
    """Per op of every training/inference job: bytes per step over NVLink and over the network (all GPUs together,
    see the module docstring), with the group's spread over scale-up domains and the placement's notes.

    Returns ``{"ops": [...], "jobs": {name: {"nvlink_bytes_per_step", "network_bytes_per_step",
    "network_bytes_per_gpu_per_step", "gpus"}}, "domain_gpus", "notes"}``.
    """
    from fabric.catalog import default_catalog
    from fabric.evaluate.lower_bound import gpu_net_bytes_per_s, nvlink_bytes_per_s
    from fabric.evaluate.transport import profile_for
    from fabric.topology import build_fabric

    cat = catalog or default_catalog()
    fabric = build_fabric(design, cat)
    jobs = [j for j in workload.jobs if j.kind != "storage"]
    notes: list = []
    s_place = np.random.SeedSequence(seed).spawn(3)[1]
    placements = place_jobs(jobs, fabric, design.placement, np.random.default_rng(s_place), notes=notes)
    prof = profile_for(design, None)
    hardware = CollectiveHardware(gpus_per_node=1, nvls=cat.gpu(design.gpu_model).has_nvls,
                                  nvlink_bytes_per_s=nvlink_bytes_per_s(fabric),
                                  nic_bytes_per_s=gpu_net_bytes_per_s(fabric),
                                  in_network=design.in_network_reduction and prof.in_network_reduction)
    forced = NCCL_ALGOS.get(design.nccl_algo) if design.nccl_algo else None
    ops, per_job = [], {}
    for job, gpus_of_rank in zip(jobs, placements):
        shapes: dict = {}
        nv_job = net_job = 0.0
        for op in step_ops(job):
            kind = "all_to_all" if op.kind == "all_to_allv" else op.kind
            group = job.group(op.group)
            if op.group not in shapes:
                shapes[op.group] = group_shape(gpus_of_rank[group_instances(group, job.world_size)],
                                               fabric.gpu_domain)
            sh = shapes[op.group]
            alg, _ = algorithm_for(kind, forced if kind == "all_reduce" else None, float(op.bytes), sh, hardware)
            tr = op_traffic(kind, float(op.bytes), sh.members, fabric.gpu_domain, in_network=hardware.in_network,
                            algorithm=alg, nvls=hardware.nvls, hardware=hardware, shape=sh)
            net = _network_per_byte(tr, fabric.gpu_domain)
            if tr.phases and tr.scaleup_bytes_per_byte == 0 and sh.size > 1:
                nv = max(0.0, _flat_total_per_byte(kind, tr.network_algorithm or tr.algorithm, sh.members) - net)
            else:
                nv = tr.scaleup_bytes_per_byte * sh.size * sh.instances
            scale = float(op.bytes) * float(op.count_per_step)
            ops.append({"job": job.name, "unit": step_unit(job), "op": op.name or op.kind, "kind": op.kind,
                        "group": op.group,
                        "group_size": sh.size, "instances": sh.instances, "domains_per_group": sh.domains,
                        "gpus_per_domain": sh.per_domain, "bytes": int(op.bytes),
                        "count_per_step": float(op.count_per_step), "algorithm": tr.algorithm,
                        "nvlink_bytes_per_step": nv * scale, "network_bytes_per_step": net * scale})
            nv_job += nv * scale
            net_job += net * scale
        per_job[job.name] = {"gpus": int(job.world_size), "unit": step_unit(job), "nvlink_bytes_per_step": nv_job,
                             "network_bytes_per_step": net_job,
                             "network_bytes_per_gpu_per_step": net_job / max(job.world_size, 1),
                             "inner_group_block": domain_block(job, design.domain_size)}
    return {"ops": ops, "jobs": per_job, "domain_gpus": design.domain_size, "notes": notes}

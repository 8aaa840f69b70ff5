"""Predicted load of every switch-to-switch link direction: the evaluator's link-group loads, per link.

The evaluator (:mod:`fabric.evaluate.network`) loads link *groups*: the uplinks of one leaf, the downlinks into one
leaf, the core-facing links of one pod, each with the mean bytes one of its links carries per byte of an op. This
module asks it the same question for every op of the workload on the design (same placement rule, same NCCL-like
algorithm choice, same traffic patterns and routing) and spreads each group's mean over its links, so every
directed link gets its predicted bytes per step. ECMP's imbalance is a random draw per job launch and is not in a
mean; NIC ports and dragonfly router links are not given per link.

Links are named as the fabric names its switches and the scenarios name links: ``leaf3-spine1`` is the direction
from leaf3 to spine1 (``fabric.node_label``; ``@pN`` for the plane of a multi-plane fabric).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.errors import DesignError

__all__ = ["LinkLoad", "PredictedLinks", "predicted_link_loads", "op_phase_loads", "directed_links", "tier_of"]


@dataclass(frozen=True)
class LinkLoad:
    name: str                 # "leaf3-spine1"
    tier: str                 # "leaf->spine", "spine->leaf", "spine->core", "core->spine"
    cables: int               # parallel cables between the two switches
    capacity_bps: float       # per direction, all cables
    bytes_per_step: float     # predicted, all cables
    ops: tuple[str, ...]      # the ops whose traffic crosses it

    @property
    def utilisation_per_step_s(self) -> float:
        """Bytes per step over the capacity (seconds of full-rate transmission per step)."""
        return self.bytes_per_step * 8.0 / self.capacity_bps if self.capacity_bps > 0 else 0.0


@dataclass(frozen=True)
class PredictedLinks:
    links: dict               # name -> LinkLoad (every switch-to-switch direction, loaded or not)
    step_p50_s: float
    phase_loads: tuple        # (op label, count per step, op p50 time s, {link name: bytes per call}) per op
    notes: tuple[str, ...]

    def utilisation(self, name: str) -> float:
        """Predicted mean utilisation of a link over the p50 step."""
        ll = self.links[name]
        return ll.utilisation_per_step_s / self.step_p50_s if self.step_p50_s > 0 else 0.0


def tier_of(fabric, a: int, b: int) -> str:
    """``"<tier of a>-><tier of b>"`` of a directed switch link."""
    return f"{fabric.tier_names[int(fabric.node_tier[a])]}->{fabric.tier_names[int(fabric.node_tier[b])]}"


def directed_links(fabric) -> dict[str, tuple[int, int, int, float]]:
    """Every switch-to-switch link direction: name -> (node a, node b, cables, capacity bits/s of all cables)."""
    sb, ns = fabric.switch_base, fabric.n_switches
    a, b = fabric.link_a, fabric.link_b
    sw = (a >= sb) & (a < sb + ns) & (b >= sb) & (b < sb + ns)
    out: dict[str, list] = {}
    for i in np.flatnonzero(sw).tolist():
        x, y, cap = int(a[i]), int(b[i]), float(fabric.link_capacity_bps[i])
        for s, d in ((x, y), (y, x)):
            name = f"{fabric.node_label(s)}-{fabric.node_label(d)}"
            rec = out.setdefault(name, [s, d, 0, 0.0])
            rec[2] += 1
            rec[3] += cap
    return {k: tuple(v) for k, v in out.items()}


def _member_links(fabric, model, kind: str, member: int, names_by_pair: dict) -> list[str]:
    """The directed links of one evaluator link group."""
    sb = fabric.switch_base
    if kind in ("leaf uplinks", "leaf downlinks"):
        up = kind == "leaf uplinks"
        return [n for (s, d), n in names_by_pair.items()
                if (s == member and int(fabric.node_tier[d]) == 1 and up)
                or (d == member and int(fabric.node_tier[s]) == 1 and not up)]
    if kind in ("pod core uplinks", "pod core downlinks"):
        up = kind == "pod core uplinks"
        out = []
        for (s, d), n in names_by_pair.items():
            spine, other = (s, d) if up else (d, s)
            if int(fabric.node_tier[spine]) == 1 and int(fabric.node_tier[other]) == 2 \
                    and int(model.pod_of_switch[spine - sb]) == member:
                out.append(n)
        return out
    return []


def op_phase_loads(design, workload, *, catalog=None, seed: int = 0, samples: int = 64):
    """``(fabric, model, hardware, notes, [(job, op, traffic, [(phase, PhaseLoad)])])``: every op of the workload
    placed and routed on the design as :func:`fabric.evaluate.evaluate` does (same placement seed, NCCL-like
    algorithm choice, traffic pattern, routing; in-network reduction counted as NCCL's network algorithm)."""
    from fabric.catalog import default_catalog
    from fabric.evaluate.collectives import CollectiveHardware
    from fabric.evaluate.lower_bound import gpu_net_bytes_per_s, nvlink_bytes_per_s
    from fabric.evaluate.flows import algorithm_for, group_shape, op_traffic
    from fabric.evaluate.gpu_compute import on_gpu
    from fabric.evaluate.network import NetworkModel, phase_load
    from fabric.evaluate.placement import group_instances, place_jobs
    from fabric.evaluate.transport import profile_for
    from fabric.topology import build_fabric

    workload, _ = on_gpu(workload, design.gpu_model, catalog)
    fabric = build_fabric(design, catalog)
    model = NetworkModel.build(fabric)
    if model.is_dragonfly:
        raise DesignError("per-link loads are not given for dragonfly fabrics (router links are drawn per group)")
    cat = catalog or default_catalog()
    prof = profile_for(design, None)
    hardware = CollectiveHardware(gpus_per_node=1, nvls=cat.gpu(design.gpu_model).has_nvls,
                                  nvlink_bytes_per_s=nvlink_bytes_per_s(fabric),
                                  nic_bytes_per_s=gpu_net_bytes_per_s(fabric),
                                  in_network=design.in_network_reduction and prof.in_network_reduction)
    notes = []
    if hardware.in_network:
        notes.append("in-network reduction: all-reduce traffic on aggregation trees is counted as if it ran as "
                     "NCCL's network algorithm (per-link tree loads are not given)")
        hardware = CollectiveHardware(hardware.gpus_per_node, hardware.nvls, hardware.nvlink_bytes_per_s,
                                      hardware.nic_bytes_per_s, False)
    jobs = [j for j in workload.jobs if j.kind != "storage"]
    _, s_place, _ = np.random.SeedSequence(seed).spawn(3)
    placements = place_jobs(jobs, fabric, design.placement, np.random.default_rng(s_place))
    cache: dict = {}
    out = []
    for job, gpus in zip(jobs, placements):
        for op in job.ops:
            kind = "all_to_all" if op.kind == "all_to_allv" else op.kind
            group = job.group(op.group)
            shape = group_shape(gpus[group_instances(group, job.world_size)], fabric.gpu_domain)
            alg, _ = algorithm_for(kind, None, float(op.bytes), shape, hardware)
            key = (job.name, op.group, kind, alg, float(op.bytes) if alg.startswith("hierarchical") else None)
            if key not in cache:
                tr = op_traffic(kind, float(op.bytes), shape.members, fabric.gpu_domain, in_network=False,
                                algorithm=alg, nvls=hardware.nvls, hardware=hardware, shape=shape)
                cache[key] = (tr, [(ph, phase_load(ph, model, qps=design.qps_per_connection, pxn=design.pxn,
                                                   routing=design.routing, samples=samples)) for ph in tr.phases])
            out.append((job, op) + cache[key])
    return fabric, model, hardware, notes, out


def predicted_link_loads(design, workload, *, catalog=None, seed: int = 0, samples: int = 64,
                         step_p50_s: float | None = None, op_p50_s: dict | None = None) -> PredictedLinks:
    """Predicted bytes per step of every switch-to-switch link direction for ``workload`` on ``design``.

    ``step_p50_s`` (the evaluated p50 step) and ``op_p50_s`` ({(kind, bytes): p50 time of one call}) come from an
    evaluation of the same pair; they are only carried along for utilisation and per-phase figures.
    """
    fabric, model, _, notes, ops = op_phase_loads(design, workload, catalog=catalog, seed=seed, samples=samples)
    links = directed_links(fabric)
    names_by_pair = {(v[0], v[1]): k for k, v in links.items()}
    per_link = dict.fromkeys(links, 0.0)
    ops_on: dict[str, list[str]] = {k: [] for k in links}
    phases = []
    group_loads: dict = {}
    for job, op, tr, phase_loads in ops:
        if id(tr) not in group_loads:
            loads = {}
            for _ph, pl in phase_loads:
                for cls in pl.classes:
                    ml = cls.member_loads if cls.member_loads.size == cls.member_ids.size else \
                        np.full(cls.member_ids.size, cls.mean_load)
                    for m, load in zip(cls.member_ids.tolist(), ml.tolist()):
                        for n in _member_links(fabric, model, cls.kind, int(m), names_by_pair):
                            # the group's mean per cable, times the cables of this direction
                            loads[n] = loads.get(n, 0.0) + load * links[n][2]
            group_loads[id(tr)] = loads
        loads = group_loads[id(tr)]
        label = f"{op.name or op.kind}@{op.group}"
        per_call = {n: v * float(op.bytes) for n, v in loads.items() if v > 0}
        for n, v in per_call.items():
            per_link[n] += v * op.count_per_step
            if label not in ops_on[n]:
                ops_on[n].append(label)
        t = (op_p50_s or {}).get((op.kind, int(op.bytes)))
        phases.append((label, float(op.count_per_step), t, per_call))
    out = {n: LinkLoad(name=n, tier=tier_of(fabric, v[0], v[1]), cables=v[2], capacity_bps=v[3],
                       bytes_per_step=per_link[n], ops=tuple(ops_on[n])) for n, v in links.items()}
    return PredictedLinks(links=out, step_p50_s=float(step_p50_s or 0.0), phase_loads=tuple(phases),
                          notes=tuple(notes))

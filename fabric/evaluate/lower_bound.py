"""Line-rate lower bounds of the evaluator (stage 3 of :mod:`fabric.evaluate.engine`): an op's bandwidth-optimal time
per byte at line rate per resource (NIC, NVLink, the fabric's leaf and pod cuts, :mod:`fabric.evaluate.bounds`), the
resource that binds, and a step's bound split by resource. No sample of the evaluation falls below them.
"""

from __future__ import annotations

import numpy as np

from fabric.evaluate.bounds import RESOURCES, cut_bound_per_byte
from fabric.evaluate.collectives import bandwidth_factor, lower_bound_time
from fabric.evaluate.step_exposure import exposed_time
from fabric.topology.fabric import LINK_KINDS, kind_index

_NVLINK = LINK_KINDS.index("nvlink")

__all__ = ["line_rate_bound", "op_lower_bound_terms", "bound_split", "binding", "nvlink_bytes_per_s",
           "gpu_net_bytes_per_s"]


def line_rate_bound(fabric, model, plan, kind: str, members, nv_line: float, in_net: bool,
                    nvls: bool) -> tuple[float, str]:
    """An op's lower bound per byte and the resource that sets it: the bandwidth-optimal bound, unless this
    placement moves fewer bytes than it assumes (irregular groups whose pairs share a node): then the line-rate time
    of the traffic itself (every NIC port, NVLink and link group at its mean load) bounds every sample. A function
    of the traffic plan alone (no random draw), so it is computed once per plan."""
    tr = plan.tr
    port_line = fabric.link_speed_bps / 8.0
    injection = 0.0                 # seconds per op byte the busiest NIC port, NVLink or link needs at line rate
    moved_by = dict.fromkeys(RESOURCES, 0.0)
    for load in plan.loads:
        terms = {"nic": load.nic_max / port_line, "nvlink": load.nvlink_max / nv_line if nv_line > 0 else 0.0}
        for c in load.classes:      # a group's busiest link carries at least its mean
            res = _RESOURCE_OF_GROUP.get(c.kind, "router links")
            mean = float(c.member_loads.max()) / (model.link_bps(c.kind) / 8.0) if c.member_loads.size else 0.0
            terms[res] = max(terms.get(res, 0.0), mean)
        injection += max(terms.values())
        for res, v in terms.items():
            moved_by[res] = moved_by.get(res, 0.0) + v
    up_line = tr.scaleup_bytes_per_byte / nv_line if nv_line > 0 else 0.0
    moved = max(up_line, injection) if tr.pipelined else up_line + injection
    moved_by["nvlink"] = max(moved_by["nvlink"], up_line) if tr.pipelined else moved_by["nvlink"] + up_line
    optimal = op_lower_bound_terms(fabric, model, tr, kind, members, nv_line, in_net, nvls)
    best = max(optimal.values(), default=0.0)
    lb, by = (best, optimal) if best <= moved else (moved, moved_by)
    return lb, (binding(by) if lb > 0 else "none")


#: The lower-bound resource of each link-group kind (dragonfly groups are "router links").
_RESOURCE_OF_GROUP = {"nic ports": "nic", "leaf uplinks": "leaf uplinks", "leaf downlinks": "leaf uplinks",
                      "pod core uplinks": "pod uplinks", "pod core downlinks": "pod uplinks"}


def binding(terms: dict) -> str:
    """The resource with the largest term (ties: the order of :data:`RESOURCES`, NIC first)."""
    order = {r: i for i, r in enumerate(RESOURCES)}
    return max(terms, key=lambda r: (terms[r], -order.get(r, len(order))))


def nvlink_bytes_per_s(fabric) -> float:
    """Bytes per second of one NVLink (scale-up) link of ``fabric``; 0 without scale-up links."""
    nv = kind_index(fabric.link_kind, _NVLINK)        # the builder's per-kind link ids: no pass over every link
    return float(fabric.link_capacity_bps[nv[0]]) / 8.0 if nv.size else 0.0


def gpu_net_bytes_per_s(fabric) -> float:
    """Line-rate network bandwidth of one GPU (its NICs' ports; shared NICs divided)."""
    d = fabric.design
    ports = fabric.nic_ports.shape[1]
    return ports * fabric.link_speed_bps / 8.0 * d.nics_per_gpu


def op_lower_bound_terms(fabric, model, tr, kind: str, gpus: np.ndarray, nv_line: float, in_net: bool,
                         nvls: bool = False) -> dict:
    """Bandwidth-optimal time per op byte at line rate, per resource: ``{"nic": .., "nvlink": .., "leaf uplinks":
    .., "pod uplinks": ..}`` (empty for a group of one). NIC and NVLink: facts.md section 1; the fabric's tiers:
    what must cross each leaf's and pod's uplinks (:mod:`fabric.evaluate.bounds`). With NVLink SHARP (``nvls``)
    the NVSwitch reduces, so a domain's all-reduce need only move S once each way per GPU (like in-network
    reduction), below the ring's 2(g-1)/g S."""
    n, g, N = tr.group_size, tr.per_domain, tr.domains
    if n <= 1 or kind == "barrier":
        return {}
    net_bw = gpu_net_bytes_per_s(fabric)
    if N == 1:
        return {"nvlink": lower_bound_time(kind, n, 1.0, nv_line, nvls=nvls) if nv_line > 0 else 0.0}
    if kind in ("all_to_all", "all_to_allv"):
        terms = {"nic": (n - g) / n / net_bw, "nvlink": (g - 1) / n / nv_line if nv_line > 0 and g > 1 else 0.0}
    elif kind == "send_recv":
        terms = {"nic": 1.0 / net_bw}
    else:
        nv = bandwidth_factor(kind, "ring", g) / nv_line if g > 1 and nv_line > 0 else 0.0
        if kind == "all_reduce" and g > 1 and nv_line > 0:
            nv = lower_bound_time(kind, g, 1.0, nv_line, nvls=nvls)
        terms = {"nic": lower_bound_time(kind, N, 1.0 / g, net_bw, in_network=in_net), "nvlink": nv}
    if model.cuts and not (kind == "all_reduce" and tr.network_algorithm == "in_network"):
        members = gpus if gpus.shape[1] < 2 or (np.diff(gpus, axis=1) > 0).all() else np.sort(gpus, axis=1)
        for cuts in model.cuts:
            terms[cuts.resource] = cut_bound_per_byte(kind, members, cuts)
    return terms


def bound_split(op_lb: list, lb_exposed: list, op_meta: list, ops: list, compute_s: float) -> dict:
    """``lower_bound_s`` split into compute and the exposed bound communication of each resource.

    An op whose bound has several parts (``bound_parts``: an in-network op some of whose instances fell back) is
    split by counterfactual: the exposed bound with every such op at its first part (what its trees need) is
    charged to each op's first resource, as if the trees had served every instance; what the step's exposed bound
    grows by when the excess parts are added goes to the resources they name (the leaf uplinks, pod uplinks or
    switch tree slots the fallback lacked), in proportion to each op's growth. So a scenario that takes trees away
    moves the resource whose loss made instances fall back, not the NIC term.
    """
    split = {"compute": float(compute_s)}
    base_lb = [ts.bound_parts[0][1] * (lb / ts.lb_per_byte) if ts.bound_parts and ts.lb_per_byte > 0 else lb
               for lb, (_, ts, _) in zip(op_lb, op_meta)]
    multi = any(len(ts.bound_parts) > 1 for _, ts, _ in op_meta)
    base_ex = exposed_time([np.array([lb]) for lb in base_lb], ops, np.array([compute_s]), 1)[0] if multi \
        else lb_exposed
    for ex, (_, ts, _) in zip(base_ex, op_meta):
        res = ts.bound_parts[0][0] if ts.bound_parts else ts.bound_by
        if res != "none" and float(ex[0]) > 0:
            split[res] = split.get(res, 0.0) + float(ex[0])
    if not multi:
        return split
    grow = float(sum(float(e[0]) for e in lb_exposed) - sum(float(e[0]) for e in base_ex))
    if grow <= 0:
        return split
    # each excess op weighs by how much its own exposed bound grew (by its excess x count when all of it hides)
    rows = [(max(float(full[0]) - float(base[0]), 0.0), (lb - blb) * op.count_per_step, ts.bound_parts[1:])
            for full, base, lb, blb, (op, ts, _) in zip(lb_exposed, base_ex, op_lb, base_lb, op_meta)
            if len(ts.bound_parts) > 1]
    use = 0 if sum(r[0] for r in rows) > 0 else 1
    weights: dict = {}
    for row in rows:
        extra = sum(x for _, x in row[2])
        for res, x in row[2]:
            weights[res] = weights.get(res, 0.0) + row[use] * x / extra
    total = sum(weights.values())
    for res, w in weights.items():
        split[res] = split.get(res, 0.0) + grow * (w / total if total > 0 else 1.0 / len(weights))
    return split

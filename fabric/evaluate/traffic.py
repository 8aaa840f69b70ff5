"""Per-op traffic (stage 2 of :mod:`fabric.evaluate.engine`): an op's traffic pattern on its placed group, the loads
of its phases on the network model's link groups (kept per design and model: :func:`fabric.evaluate.evaluate`'s
``reuse``), and its seconds per byte in each Monte Carlo sample, with its line-rate lower bound
(:mod:`fabric.evaluate.lower_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.evaluate.channels import op_flows_per_pair
from fabric.evaluate.collectives import CollectiveHardware
from fabric.evaluate.flows import op_traffic
from fabric.evaluate.innetwork import tree_phase_load
from fabric.evaluate.lower_bound import line_rate_bound, nvlink_bytes_per_s
from fabric.evaluate.network import phase_load, sample_phase_factor
from fabric.evaluate.patterns import shared_traffic

__all__ = ["TrafficSamples", "TrafficPlan", "traffic_plan", "traffic_samples", "canonical_kind"]


@dataclass
class TrafficSamples:
    per_byte: np.ndarray           # seconds per op byte, per sample
    latency_s: float
    lb_per_byte: float
    algorithm: str
    group_size: int
    link_loads: list               # (class, busiest bytes-per-op-byte per sample, phase index)
    issue_s: float = 0.0           # serial per-peer posting that overlaps the transfer (direct all-to-all)
    bound_by: str = "none"         # the resource that sets lb_per_byte
    up_per_byte: float = 0.0       # seconds per op byte on NVLink (scale-up) alone
    net_per_byte: np.ndarray | None = None   # seconds per op byte on the network alone, per sample
    nv_latency_s: float = 0.0      # the part of latency_s spent in scale-up steps
    pipelined: bool = False        # NVLink and network overlap (the op takes the longer of the two)
    trees: int = 0                 # in-network aggregation trees (fabric.evaluate.innetwork)
    fallback_instances: int = 0    # group instances that found no tree and ran fallback_algorithm
    fallback_algorithm: str = ""
    traffic: object = None         # the traffic pattern (flows.Traffic) the samples come from
    #: the lower bound per op byte by resource when it has several parts (an in-network op some of whose instances
    #: fell back: the trees' bound, then the fallback's excess charged to the resource it lacked); () = bound_by only
    bound_parts: tuple = ()
    story: dict | None = None      # what the aggregation trees did (fabric.evaluate.innetwork._story)


@dataclass(frozen=True)
class TrafficPlan:
    """The deterministic part of an op's traffic on a network model: what :func:`traffic_samples` computes before
    and around the random draws (the traffic pattern and each phase's link-group loads)."""

    tr: object
    loads: tuple
    #: the op's line-rate lower bound per (in-network, NVLink SHARP), memoized (:func:`line_rate_bound`)
    bounds: dict = field(default_factory=dict, compare=False, repr=False)


def traffic_plan(fabric, model, design, shape, kind: str, size_bytes: float, algorithm: str,
                 hardware: CollectiveHardware, samples: int, plans, trees=None) -> TrafficPlan:
    """The traffic pattern of the op and its phases' loads; taken from ``plans`` when an evaluation of the same
    design on the same network model (another workload's scenario, see :func:`evaluate`'s ``reuse``) made it.

    The pattern depends on the op's size only through NCCL's choice of algorithm, which is ``algorithm`` here
    (resolved), except for the hierarchical all-reduce, whose network algorithm is chosen by size again. ``trees``:
    the op's in-network aggregation trees (:func:`fabric.evaluate.innetwork.place_trees`), whose links load the
    in-network phase."""
    key = tr = memo = None
    flows = op_flows_per_pair(design, shape, kind, size_bytes, hopper=hardware.nvls)
    if plans is not None:
        table, model_key = plans
        members = np.ascontiguousarray(shape.members)
        # the pattern does not depend on the network model (failures), its loads do
        tr_key = ("traffic", kind, algorithm, size_bytes if algorithm.startswith("hierarchical") else None,
                  members.shape, members.tobytes())
        key = (model_key, samples, trees is not None, flows, design.routing) + tr_key     # serving may route its own way
        hit = table.get(key)
        if hit is not None:
            return hit
        tr = table.get(tr_key)
        # the pattern's flows at the NIC ports, which do not depend on the model's failures above the leaves, are
        # kept for the design's next network models (failure scenarios)
        memo = table
    if tr is None:
        tr = shared_traffic(shape, fabric.gpu_domain, kind, algorithm,
                            size_bytes if algorithm.startswith("hierarchical") else None, hardware,
                            lambda: op_traffic(kind, size_bytes, shape.members, fabric.gpu_domain,
                                               in_network=hardware.in_network, algorithm=algorithm,
                                               nvls=hardware.nvls, hardware=hardware, shape=shape))
        if plans is not None:
            table[tr_key] = tr
    loads = tuple(phase_load(ph, model, qps=flows, pxn=design.pxn, routing=design.routing,
                             samples=samples, memo=memo) for ph in tr.phases)
    if trees is not None:
        loads = tuple(tree_phase_load(load, trees, model) if ph.injection_only else load
                      for ph, load in zip(tr.phases, loads))
    plan = TrafficPlan(tr, loads)
    if key is not None:
        table[key] = plan
    return plan


def traffic_samples(fabric, model, design, prof, shape, kind: str, size_bytes: float, algorithm: str,
                    hardware: CollectiveHardware, rng: np.random.Generator, samples: int,
                    background: float, plans=None, trees=None) -> TrafficSamples:
    in_net = hardware.in_network
    plan = traffic_plan(fabric, model, design, shape, kind, size_bytes, algorithm, hardware, samples, plans, trees)
    tr = plan.tr
    nv_line = nvlink_bytes_per_s(fabric)
    nv_eff = nv_line * prof.nvlink_efficiency
    net_eff = prof.bandwidth_efficiency * (1.0 - background)
    sw_lat = float(fabric.node_latency_s[fabric.switch_base]) if fabric.n_switches else 0.0
    nic_lat = float(fabric.node_latency_s[fabric.nic_base]) if fabric.n_nics else 0.0
    up_eff = nv_eff * (prof.nvls_efficiency_scale if tr.scaleup_nvls else 1.0)
    up = tr.scaleup_bytes_per_byte / up_eff if up_eff > 0 else 0.0
    net = np.zeros(samples)
    latency = tr.scaleup_steps * prof.nvlink_alpha_s
    link_loads = []
    for pi, (ph, load) in enumerate(zip(tr.phases, plan.loads)):
        reorder = prof.reorder_slowdown if design.routing == "spray" and not prof.reorder_tolerant else 1.0
        t, per_class = sample_phase_factor(load, model, design.routing, net_eff, nv_eff, prof.adaptive_imbalance,
                                           rng, samples, reorder_slowdown=reorder,
                                           reorder_floor=prof.reorder_floor,
                                           hash_correlation=prof.hash_correlation)
        net += t
        prop = 2 * 50.0 * 5e-9 if load.hops > 1 else 2 * 30.0 * 5e-9
        latency += ph.steps * (prof.step_alpha_s + load.hops * sw_lat + 2 * nic_lat + prop
                               + (prof.nvlink_alpha_s if load.forward_nvlink > 0 else 0.0))
        link_loads += [(c, b, pi) for c, b in zip(load.classes, per_class)]
    per_byte = np.maximum(up, net) if tr.pipelined else up + net
    memo = (bool(in_net), bool(hardware.nvls))
    if memo not in plan.bounds:
        plan.bounds[memo] = line_rate_bound(fabric, model, plan, kind, shape.members, nv_line, in_net,
                                            hardware.nvls)
    lb, bound_by = plan.bounds[memo]
    return TrafficSamples(per_byte, latency, lb, tr.algorithm, tr.group_size, link_loads,
                          issue_s=tr.peers * prof.peer_issue_s, bound_by=bound_by, up_per_byte=float(up),
                          net_per_byte=net, nv_latency_s=float(tr.scaleup_steps * prof.nvlink_alpha_s),
                          pipelined=bool(tr.pipelined), traffic=tr)


def canonical_kind(kind: str) -> str:
    return "all_to_all" if kind == "all_to_allv" else kind

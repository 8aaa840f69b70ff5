"""Packet-level cross-check of one communication op: ns-3 vs the fluid bound vs fabric's flow-level evaluator.

:func:`run_packet` takes a design and a workload, picks one op (``op_index`` over the training/inference jobs'
ops), and measures its completion time three ways on the same cabling (:func:`fabric.topology.build_fabric`):

1. **packet**: ns-3 (TCP bulk flows, FIFO ports, per-flow ECMP hashing or per-packet spraying;
   :mod:`fabric.validate.ns3sim`); the op ends when its last flow has delivered its last byte;
2. **fluid**: max-min fair fluid completion of the same flows on the same paths (for ECMP, the very hash choices
   the switches make in ns-3, which are read back and checked), at TCP goodput;
3. **evaluator**: :func:`fabric.evaluate.evaluate` on a one-op workload of the same job (p50 and p1-p99 over its
   hash draws), told the packet model's goodput (``bandwidth_efficiency``) and no per-step software latency
   (``step_alpha_s = 0``) or per-peer posting cost (``peer_issue_s = 0``): the packet slice runs bulk transfers,
   not NCCL's chunked steps. The evaluator as shipped (its transport profile unchanged) is reported beside it.

``packet / fluid - 1`` is the transport's cost (TCP start-up, unfair sharing, losses, ACKs, reordering under
spraying); ``evaluator / packet - 1`` is the flow-level model's error. Under ECMP ns-3 runs one hash draw while the
evaluator's p50 is over many: the fluid bound over ``hash_draws`` other salts (p50) says how typical the simulated
draw was, and ``rel_error_typical_draw`` compares the evaluator with ns-3 scaled by ``fluid p50 / fluid`` (the
packet time the typical draw would have at the same transport overhead).

The flows are the evaluator's own (:func:`fabric.evaluate.flows.op_traffic` on the evaluator's placement): a ring
all-reduce is flows ``i -> i+1`` of ``2(n-1)/n x S`` bytes, an all-to-all every ordered pair with ``S/n``.
All-reduces are forced to the ring algorithm (the tree would not be a set of bulk flows).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from fabric.errors import DesignError, WorkloadError
from fabric.validate.fluid import fluid_bound, goodput_fraction
from fabric.validate.network import PacketNetwork, ecmp_path, packet_network, switch_salts

__all__ = ["PacketResult", "run_packet", "select_op", "op_slice", "slice_flows", "ROUTINGS", "MAX_ENDPOINTS",
           "SRC_PORT_BASE", "DST_PORT_BASE"]

#: ``ecmp``: per-flow 5-tuple hash; ``spray``: ns-3's RandomEcmpRouting (a random next hop per packet);
#: ``spray_rr``: round-robin per packet over the candidate ports (an exactly even split, as hardware spraying does).
ROUTINGS = ("ecmp", "spray", "spray_rr")
#: Largest group the packet-level check accepts by default (ns-3 runs at ~10k packets per second here).
MAX_ENDPOINTS = 64
#: Flow ``i`` goes from source port ``SRC_PORT_BASE + i`` to destination port ``DST_PORT_BASE + i``.
SRC_PORT_BASE = 10_000
DST_PORT_BASE = 40_000
_FORCED_ALGORITHM = {"all_reduce": "ring", "all_gather": "ring", "reduce_scatter": "ring"}


@dataclass
class PacketResult:
    """One packet-level comparison. Times in seconds; errors are relative (``0.05`` = 5 %)."""

    design: str
    routing: str
    seed: int
    op: dict
    network: dict
    flows: int
    packet_s: float
    fluid_s: float
    evaluator_p50_s: float
    evaluator_p1_s: float
    evaluator_p99_s: float
    evaluator_shipped_p50_s: float
    rel_error: float                  # evaluator p50 / packet - 1
    rel_error_typical_draw: float     # ECMP: the same with ns-3 scaled to the typical hash draw (fluid p50 / fluid)
    fluid_gap: float                  # packet / fluid - 1
    evaluator_vs_fluid: float         # evaluator p50 / fluid - 1
    fluid_draws_p50_s: float | None   # ECMP: p50 of the fluid bound over other hash salts
    goodput_fraction: float
    drops: int
    hash_mismatches: int              # ECMP: switch choices seen in ns-3 that differ from the Python replica
    unfinished: int
    wall_s: dict
    flow_src: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    flow_dst: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    flow_bytes: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    packet_flow_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    fluid_flow_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    busiest_link_utilization: float = 0.0
    retransmissions: int = 0
    path_changes: int = 0             # ECMP: packets of a flow that left a switch on another port (must be 0)
    notes: tuple = ()

    def to_dict(self, *, include_flows: bool = False) -> dict:
        d = {k: v for k, v in self.__dict__.items() if not isinstance(v, np.ndarray)}
        d["notes"] = list(self.notes)
        if include_flows:
            d["per_flow"] = [
                {"src": int(s), "dst": int(t), "bytes": int(b), "packet_s": _num(p), "fluid_s": float(f)}
                for s, t, b, p, f in zip(self.flow_src, self.flow_dst, self.flow_bytes, self.packet_flow_s,
                                         self.fluid_flow_s)]
        return d


def _num(x: float):
    return None if x is None or not math.isfinite(float(x)) else float(x)


# ------------------------------------------------------------------ the op and its flows


def select_op(workload, op_index: int = 0):
    """``(job, op)``: the ``op_index``-th op over the workload's training and inference jobs, in file order."""
    ops = [(job, op) for job in workload.jobs if job.kind != "storage" for op in job.ops]
    if not ops:
        raise WorkloadError("the workload has no communication op to check")
    if isinstance(op_index, bool) or not isinstance(op_index, (int, np.integer)) or not 0 <= op_index < len(ops):
        raise WorkloadError(f"op index {op_index!r} is out of range: the workload has {len(ops)} op(s) "
                            f"(0..{len(ops) - 1})")
    return ops[int(op_index)]


def op_slice(workload, op_index: int = 0):
    """A one-op workload: the chosen op's job alone, that op once per step, fully exposed, no compute."""
    from fabric.workload.model import Workload

    job, op = select_op(workload, op_index)
    op1 = replace(op, count_per_step=1.0, overlap_fraction=0.0)
    job1 = replace(job, kind="training", ops=(op1,), compute_time_s=0.0, compute_cv=0.0,
                   request_rate_per_s=None, latency_slo_s=None)
    return Workload(jobs=(job1,), name=f"{workload.name} op {op_index}"), job1, op1


def slice_flows(fabric, design, job, op, *, seed: int = 0):
    """The op's network flows as the evaluator sees them: ``(src host, dst host, bytes)`` arrays and the algorithm.

    Uses the evaluator's placement (same seed) and :func:`fabric.evaluate.flows.op_traffic`; hosts are GPU ids.
    """
    from fabric.evaluate.flows import op_traffic
    from fabric.evaluate.placement import group_instances, place_jobs

    kind = "all_to_all" if op.kind == "all_to_allv" else op.kind
    group = job.group(op.group)
    rng_place = np.random.default_rng(seed).spawn(5)[1]          # as evaluate() draws it
    gpus_of_rank = place_jobs([job], fabric, design.placement, rng_place)[0]
    inst = group_instances(group, job.world_size)
    gpus = gpus_of_rank[inst]
    tr = op_traffic(kind, float(op.bytes), gpus, fabric.gpu_domain, in_network=False,
                    algorithm=_FORCED_ALGORITHM.get(kind))
    if tr.scaleup_bytes_per_byte > 0 or not tr.phases:
        raise WorkloadError(f"op {op.kind} on group {op.group!r} stays inside a scale-up domain; the packet-level "
                            "check needs a network op (use gpus_per_node: 1)")
    if len(tr.phases) != 1:
        raise WorkloadError(f"op {op.kind} ({tr.algorithm}) has {len(tr.phases)} phases; the packet-level check "
                            "runs single-phase ops (ring all-reduce/all-gather/reduce-scatter, all-to-all, "
                            "send/recv, broadcast/reduce chains)")
    ph = tr.phases[0].expand()
    if ph.nvlink_bytes_per_byte > 0:
        raise WorkloadError("part of the op runs over NVLink; the packet-level check needs gpus_per_node: 1")
    nbytes = np.rint(ph.bytes_per_byte * float(op.bytes)).astype(np.int64)
    keep = nbytes > 0
    return ph.src_gpu[keep].astype(np.int64), ph.dst_gpu[keep].astype(np.int64), nbytes[keep], tr


def _flows_tuples(net: PacketNetwork, src, dst, nbytes):
    return [(int(net.host_of_gpu[s]), int(net.host_of_gpu[d]), int(b), SRC_PORT_BASE + i, DST_PORT_BASE + i)
            for i, (s, d, b) in enumerate(zip(src, dst, nbytes))]


def _design_for(design, routing: str):
    """The design with ``routing`` (``spray_rr`` is the design's ``spray``)."""
    routing = "spray" if routing == "spray_rr" else routing
    if routing == design.routing:
        return design
    return design.replace(routing=routing)


# ------------------------------------------------------------------ run


def run_packet(design, workload_slice, *, catalog=None, seed: int = 0, routing: str | None = None,
               op_index: int = 0, config=None, samples: int = 256, hash_draws: int = 16,
               max_endpoints: int = MAX_ENDPOINTS) -> PacketResult:
    """Run one op of ``workload_slice`` on ``design`` in ns-3 and compare it with the fluid bound and the evaluator.

    ``routing``: ``ecmp`` (per-flow hash, salted per switch from ``seed``), ``spray`` (a random next hop per packet:
    ns-3's ``RandomEcmpRouting``) or ``spray_rr`` (round robin per packet); default the design's own. ``config``
    is a :class:`fabric.validate.ns3sim.SimConfig`. Raises :class:`fabric.errors.FabricError` with
    ``pip install .[packet]`` when ns-3 is missing.
    """
    from fabric.evaluate import evaluate
    from fabric.topology import build_fabric
    from fabric.validate import ns3sim

    routing = routing or design.routing
    if routing not in ROUTINGS:
        raise DesignError(f"the packet-level check runs routing 'ecmp', 'spray' or 'spray_rr', not {routing!r}")
    if not ns3sim.ns3_available():
        raise DesignError(ns3sim.NS3_MISSING)
    cfg = config or ns3sim.SimConfig()
    design = _design_for(design, routing)
    if cfg.reorder_buffer is None:
        # the packet model's transport follows the design's: reorder-tolerant profiles get the reorder buffer
        from fabric.evaluate.transport import profile_for

        cfg = replace(cfg, reorder_buffer=profile_for(design).reorder_tolerant)
    t0 = time.perf_counter()
    fabric = build_fabric(design, catalog)
    net = packet_network(fabric)
    wl1, job, op = op_slice(workload_slice, op_index)
    group = job.group(op.group)
    if group.size > max_endpoints:
        raise WorkloadError(f"group {op.group!r} has {group.size} ranks; the packet-level check keeps to "
                            f"{max_endpoints} endpoints (ns-3 is slow: resize the workload)")
    src, dst, nbytes, tr = slice_flows(fabric, design, job, op, seed=seed)
    flows = _flows_tuples(net, src, dst, nbytes)
    g = goodput_fraction(cfg.mss_bytes)
    salts = switch_salts(net.n_switches, seed)

    fluid_flow, paths = fluid_bound(net, flows, routing="spray" if routing == "spray_rr" else routing, salts=salts,
                                    goodput=g)
    fluid_s = float(fluid_flow.max())
    draws_p50 = None
    if routing == "ecmp" and hash_draws > 0:
        draws = [float(fluid_bound(net, flows, routing="ecmp", salts=switch_salts(net.n_switches, 1_000_003 + k),
                                   goodput=g)[0].max()) for k in range(hash_draws)]
        draws_p50 = float(np.median(draws))
    t_fluid = time.perf_counter() - t0

    alg = _FORCED_ALGORITHM.get(tr.kind)
    algorithms = {tr.kind: alg} if alg else None
    ev = evaluate(design, wl1, seed=seed, samples=samples, catalog=catalog, algorithms=algorithms,
                  transport_overrides={"bandwidth_efficiency": g, "step_alpha_s": 0.0, "peer_issue_s": 0.0})
    ev_shipped = evaluate(design, wl1, seed=seed, samples=samples, catalog=catalog, algorithms=algorithms)
    op_t = np.asarray(ev.step_samples_s, float)
    p1, p50, p99 = (float(x) for x in np.percentile(op_t, [1, 50, 99]))
    shipped = float(np.percentile(np.asarray(ev_shipped.step_samples_s, float), 50))
    t_eval = time.perf_counter() - t0 - t_fluid

    sim = ns3sim.simulate(net, flows, routing=routing, salts=salts, seed=seed, config=cfg,
                          expected_s=max(fluid_s, 1e-4))
    mismatches = _hash_mismatches(net, flows, salts, sim.choices) if routing == "ecmp" else 0
    unfinished = int(np.isnan(sim.done_s).sum())
    packet_s = float(np.nanmax(sim.done_s)) if unfinished < len(flows) else float("nan")
    if unfinished:
        packet_s = float("inf")
    busiest = 0.0
    if sim.link_bytes.size and math.isfinite(packet_s) and packet_s > 0:
        cap = np.repeat(net.link_capacity_bps / 8.0, 2)
        busiest = float((sim.link_bytes / (cap * packet_s)).max())
    notes = []
    # the evaluator's per-step network latency (engine: hops x switch + 2 NICs + propagation), paid once per step
    steps = int(tr.phases[0].steps)
    hops = max(len(ecmp_path(net, f[0], f[1], f[3], f[4], salts)) for f in flows) - 1
    nic_lat = float(fabric.node_latency_s[fabric.nic_base])
    path_s = hops * net.switch_latency_s + 2 * nic_lat + (2 * 50.0 if hops > 1 else 2 * 30.0) * 5e-9
    if steps > 1 and steps * path_s > 0.05 * fluid_s:
        notes.append(f"the evaluator charges {steps} algorithm steps x ~{path_s * 1e6:.1f} us of path latency "
                     f"({steps * path_s * 1e3:.3f} ms, {steps * path_s / fluid_s:.0%} of the fluid time); bulk flows "
                     "pay it once: use a larger op or slower links to compare bandwidth")
    if unfinished:
        notes.append(f"{unfinished} flow(s) did not finish within {cfg.time_limit_factor:g}x the fluid bound")
    if routing in ("spray", "spray_rr") and design.transport == "roce":
        notes.append("ns-3 runs TCP: the design's 'roce' transport (go-back-N) is charged the evaluator's RoCE "
                     "reordering factor, which this run does not measure; use transport 'tcp' to compare like "
                     "with like")
    if mismatches:
        notes.append(f"{mismatches} ECMP choice(s) in ns-3 differ from the Python hash replica")
    if sim.drops:
        notes.append(f"{sim.drops} packet(s) dropped at full switch queues ({cfg.switch_queue_packets} packets): "
                     f"TCP loss recovery ({sim.retransmissions} retransmissions, {cfg.min_rto_s * 1e3:g} ms minimum "
                     "RTO) is in the packet time, not in the flow-level model (lossless transports)")
    return PacketResult(
        design=design.name, routing=routing, seed=int(seed),
        op={"kind": op.kind, "bytes": int(op.bytes), "group": op.group, "group_size": int(group.size),
            "algorithm": tr.algorithm, "job": job.name, "index": int(op_index)},
        network={**net.summary(), "switch_queue_packets": cfg.switch_queue_packets or "lossless",
                 "mss_bytes": cfg.mss_bytes,
                 "congestion_control": cfg.congestion_control.split("::")[-1].removeprefix("Tcp"),
                 "oversubscription": list(design.oversubscription), "transport": design.transport,
                 "reorder_buffer": bool(cfg.reorder_buffer)},
        flows=len(flows), packet_s=packet_s, fluid_s=fluid_s, evaluator_p50_s=p50, evaluator_p1_s=p1,
        evaluator_p99_s=p99, evaluator_shipped_p50_s=shipped,
        rel_error=p50 / packet_s - 1.0 if packet_s > 0 else float("nan"),
        rel_error_typical_draw=(p50 / (packet_s * draws_p50 / fluid_s) - 1.0 if draws_p50 and packet_s > 0
                                else p50 / packet_s - 1.0 if packet_s > 0 else float("nan")),
        fluid_gap=packet_s / fluid_s - 1.0 if fluid_s > 0 else float("nan"),
        evaluator_vs_fluid=p50 / fluid_s - 1.0 if fluid_s > 0 else float("nan"),
        fluid_draws_p50_s=draws_p50, goodput_fraction=g, drops=int(sim.drops), hash_mismatches=int(mismatches),
        unfinished=unfinished,
        wall_s={"fluid": round(t_fluid, 3), "evaluator": round(t_eval, 3), "ns3_setup": round(sim.extra["setup_s"], 3),
                "ns3_run": round(sim.extra["run_s"], 3)},
        flow_src=np.array([f[0] for f in flows]), flow_dst=np.array([f[1] for f in flows]),
        flow_bytes=np.array([f[2] for f in flows], float), packet_flow_s=sim.done_s, fluid_flow_s=fluid_flow,
        busiest_link_utilization=busiest, retransmissions=int(sim.retransmissions),
        path_changes=int(sim.path_changes), notes=tuple(notes))


def _hash_mismatches(net: PacketNetwork, flows, salts, choices) -> int:
    """Switch choices recorded in ns-3 (data and ACK directions) that the Python replica of the hash does not
    predict."""
    predicted = {}
    for src, dst, _b, sport, dport in flows:
        sa, da = int(net.host_addr[src]), int(net.host_addr[dst])
        predicted[(sa, da, sport, dport)] = set(ecmp_path(net, src, dst, sport, dport, salts))
        predicted[(da, sa, dport, sport)] = set(ecmp_path(net, dst, src, dport, sport, salts))
    bad = 0
    for s, sa, da, sport, dport, link in choices:
        path = predicted.get((sa, da, sport, dport))
        if path is None or net.directed(link, net.n_hosts + s) not in path:
            bad += 1
    return bad

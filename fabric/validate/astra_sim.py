"""A design and its workload as ASTRA-sim 2.x input (analytical network backend), and a runner for a local build.

Files (:func:`astra_sim_files`, a folder of the design package):

- ``network.yml``: the analytical backend's multi-dimensional topology. Dimension 1 is the scale-up domain (an
  NVSwitch: ``Switch``, NVLink bandwidth per GPU); the network follows as one ``Switch`` of every server, or, when
  the leaf tier is oversubscribed, two: the servers under one leaf at the NIC's bandwidth, then the leaves at the
  NIC's bandwidth divided by the leaf's oversubscription. Bandwidths are the evaluator's effective ones (line rate x
  the transport's efficiency, GB/s with GB = 2^30 B as ASTRA-sim reads them) and a Switch dimension's per-hop
  latency is half the evaluator's per-step latency (a Switch path is two hops), so both tools start from the same
  link figures and differ in what they model.
- ``system.json``: ring all-reduce, all-gather and reduce-scatter per dimension, direct all-to-all (NCCL's
  algorithms at this size), the GPU's dense BF16 rate as ``peak-perf``.
- ``remote_memory.json``: no memory expansion.
- ``workload/workload.<rank>.et`` and ``workload/workload.comm_groups.json``: the job's step as Chakra traces
  (:mod:`fabric.workload.chakra_writer`).
- ``run.sh``: the command line, reading the binary from ``$ASTRA_SIM``.
- ``README.txt``: the mapping and what ASTRA-sim's analytical backend cannot express.

:func:`run_astra_sim` runs a build (``FABRIC_ASTRA_SIM`` names the binary) on such a folder and reads each rank's
finishing time (``sys[R] finished, T cycles``; one cycle is 1 ns).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fabric.errors import DesignError, FabricError

__all__ = ["AstraNetwork", "astra_network", "astra_sim_files", "write_astra_sim", "run_astra_sim",
           "astra_sim_binary", "trace_nodes", "CANNOT_EXPRESS", "GIB", "MAX_TRACE_NODES"]

GIB = float(2 ** 30)
#: what the analytical backend has no way to say about a fabric design (the README of every export lists them)
CANNOT_EXPRESS = (
    "ECMP hash collisions and the flows they put on one link (the congestion-unaware backend moves every transfer "
    "at its dimension's full bandwidth; the congestion-aware one is limited to one dimension in ASTRA-sim 2.x)",
    "oversubscription above the first tier (spine-to-core ratios): only the leaf tier's ratio becomes a dimension",
    "routing (ECMP, adaptive, spraying), queue pairs per connection and transport efficiency beyond one number",
    "rail-optimised cabling: a dimension of servers under one leaf is the same whether the leaf is a rail leaf or "
    "a top-of-rack switch",
    "multiple planes as separate networks (their bandwidth is summed into the NIC bandwidth of a GPU)",
    "in-network reduction (SHARP) and NVLink SHARP",
    "placement, fragmentation and failures (ranks fill servers in order on a healthy fabric)",
    "regions with different hardware: one set of dimensions serves the whole job",
    "the overlap of communication with compute (the traces run one dependency chain per rank)",
    "compute jitter and stragglers: every rank computes for the same time, so p99 equals p50",
    "serving jobs, checkpoint bursts and other jobs sharing the fabric",
)


@dataclass(frozen=True)
class AstraNetwork:
    """The analytical backend's dimensions: topology, NPUs, bandwidth (GB/s, 2^30 B) and latency (ns) per hop."""

    topology: tuple[str, ...]
    npus_count: tuple[int, ...]
    bandwidth_gbps: tuple[float, ...]
    latency_ns: tuple[float, ...]
    notes: tuple[str, ...] = ()

    def yaml(self) -> str:
        """The network configuration file (ASTRA-sim's analytical ``--network-configuration``)."""
        def row(xs, fmt):
            return "[ " + ", ".join(fmt(x) for x in xs) + " ]"
        return ("# ASTRA-sim 2.x analytical network, written by fabric (see README.txt)\n"
                f"topology: {row(self.topology, str)}\n"
                f"npus_count: {row(self.npus_count, str)}\n"
                f"bandwidth: {row(self.bandwidth_gbps, lambda x: f'{x:.3f}')}  # GB/s per link, GB = 2^30 B\n"
                f"latency: {row(self.latency_ns, lambda x: f'{x:.1f}')}  # ns per hop (a Switch path is 2 hops)\n")


def astra_network(design, ranks: int, *, catalog=None) -> AstraNetwork:
    """The dimensions for a job of ``ranks`` GPUs packed onto ``design``'s servers (see the module docstring)."""
    from fabric.catalog import default_catalog
    from fabric.evaluate.lower_bound import gpu_net_bytes_per_s, nvlink_bytes_per_s
    from fabric.evaluate.transport import profile_for
    from fabric.topology import build_fabric

    cat = catalog or default_catalog()
    fab = build_fabric(design, cat)
    if ranks < 1 or ranks > fab.n_gpus:
        raise DesignError(f"a job of {ranks} GPUs does not fit the design's {fab.n_gpus} GPUs")
    prof = profile_for(design)
    notes: list[str] = []
    domain = int(fab.structure.get("scale_up_size") or design.gpus_per_node)
    domain = min(domain, ranks)
    if ranks % domain:
        raise DesignError(f"a job of {ranks} GPUs is not a whole number of {domain}-GPU scale-up domains: ASTRA-sim's "
                          f"dimensions must multiply to the job's ranks")
    nv = nvlink_bytes_per_s(fab) * prof.nvlink_efficiency
    net = gpu_net_bytes_per_s(fab) * prof.bandwidth_efficiency
    step_ns = prof.step_alpha_s * 1e9
    topo, npus, bw, lat = ["Switch"], [domain], [nv / GIB], [prof.nvlink_alpha_s * 1e9 / 2]
    servers = ranks // domain
    if servers > 1:
        per_leaf = int(fab.structure.get("nodes_per_leaf") or 0)
        ratio = float(design.oversubscription[0]) if design.oversubscription else 1.0
        block = max((k for k in range(1, min(per_leaf, servers) + 1) if servers % k == 0), default=1)
        if ratio > 1.0 and 1 < block < servers:
            if block != per_leaf:
                notes.append(f"a leaf holds {per_leaf} servers; ASTRA-sim's dimensions must divide the job's "
                             f"{servers} servers, so the leaf dimension is {block} servers (traffic between the "
                             f"others crosses the oversubscribed dimension: a little pessimistic)")
            topo += ["Switch", "Switch"]
            npus += [block, servers // block]
            bw += [net / GIB, net / ratio / GIB]
            lat += [step_ns / 2, step_ns / 2]
        else:
            if ratio > 1.0:
                notes.append(f"leaf oversubscription {ratio:g}:1 not expressed: the job's {servers} servers fit "
                             f"under one leaf or divide into no leaf-sized blocks")
            topo.append("Switch")
            npus.append(servers)
            bw.append(net / GIB)
            lat.append(step_ns / 2)
    return AstraNetwork(tuple(topo), tuple(npus), tuple(bw), tuple(lat), tuple(notes))


def _system(dims: int, peak_tflops: float) -> dict:
    return {
        "scheduling-policy": "LIFO",
        "endpoint-delay": 10,
        "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 4,
        "all-reduce-implementation": ["ring"] * dims,
        "all-gather-implementation": ["ring"] * dims,
        "reduce-scatter-implementation": ["ring"] * dims,
        "all-to-all-implementation": ["direct"] * dims,
        "collective-optimization": "localBWAware",
        "local-mem-bw": 1600,
        "boost-mode": 0,
        "roofline-enabled": 0,
        "peak-perf": round(peak_tflops, 1),
    }


_RUN_SH = """#!/usr/bin/env bash
# Run this export in ASTRA-sim 2.x (analytical, congestion unaware). ASTRA_SIM names the binary, e.g.
#   ASTRA_SIM=.../build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware ./run.sh
set -euo pipefail
cd "$(dirname "$0")"
"${ASTRA_SIM:?set ASTRA_SIM to the AstraSim_Analytical_Congestion_Unaware binary}" \\
  --workload-configuration="$PWD/workload/workload" \\
  --comm-group-configuration="$PWD/workload/workload.comm_groups.json" \\
  --system-configuration="$PWD/system.json" \\
  --remote-memory-configuration="$PWD/remote_memory.json" \\
  --network-configuration="$PWD/network.yml"
"""


#: most trace nodes (ranks x nodes per rank) an export writes; ASTRA-sim itself takes hours far below it
MAX_TRACE_NODES = 20_000_000


def trace_nodes(job) -> int:
    """Nodes the job's traces would hold over all ranks (compute node and every op occurrence)."""
    per_rank = 1 + sum(int(op.count_per_step + 0.5) * (2 if op.kind == "send_recv" else 1) for op in job.ops)
    return int(job.world_size) * per_rank


def astra_sim_files(design, workload, *, catalog=None, max_nodes: int = MAX_TRACE_NODES) -> dict[str, bytes]:
    """The export as {relative path: bytes} for the workload's primary training job (see the module docstring).

    Raises :class:`FabricError` when the traces would hold more than ``max_nodes`` nodes (a 100K-GPU job)."""
    from fabric.catalog import default_catalog
    from fabric.workload.chakra_writer import job_to_chakra

    cat = catalog or default_catalog()
    job = _primary_training_job(workload)
    n = trace_nodes(job)
    if n > max_nodes:
        raise FabricError(f"job {job.name!r}: {job.world_size:,} ranks x {n // job.world_size:,} operations = "
                          f"{n:,} trace nodes, more than the {max_nodes:,} an export writes (ASTRA-sim would take "
                          f"days on it); export a smaller job of the same plan")
    export = job_to_chakra(job)
    net = astra_network(design, job.world_size, catalog=cat)
    gpu = cat.gpu(design.gpu_model)
    files = {
        "network.yml": net.yaml().encode(),
        "system.json": json.dumps(_system(len(net.topology), gpu.bf16_flops / 1e12), indent=2).encode(),
        "remote_memory.json": json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}).encode(),
        "run.sh": _RUN_SH.encode(),
    }
    for r, data in enumerate(export.traces):
        files[f"workload/workload.{r}.et"] = data
    files["workload/workload.comm_groups.json"] = export.comm_groups_json().encode()
    files["README.txt"] = _readme(design, job, net, export).encode()
    return files


def write_astra_sim(design, workload, directory: str | Path, *, catalog=None) -> Path:
    """Write :func:`astra_sim_files` under ``directory``; the folder."""
    d = Path(directory)
    for rel, data in astra_sim_files(design, workload, catalog=catalog).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if rel == "run.sh":
            p.chmod(0o755)
    return d


def _primary_training_job(workload):
    jobs = workload.training_jobs
    if not jobs:
        raise FabricError("the workload has no training job: ASTRA-sim's traces hold a training step")
    if workload.primary:
        for j in jobs:
            if j.name == workload.primary:
                return j
    return max(jobs, key=lambda j: j.world_size)


def _readme(design, job, net: AstraNetwork, export) -> str:
    dims = "; ".join(f"{t} of {n} at {b:.1f} GB/s, {lat:.0f} ns per hop"
                     for t, n, b, lat in zip(net.topology, net.npus_count, net.bandwidth_gbps, net.latency_ns))
    lines = [
        f"ASTRA-sim 2.x input for design {design.name!r}, job {job.name!r} ({job.world_size} ranks), written by fabric.",
        "",
        "Run: ASTRA_SIM=<path to AstraSim_Analytical_Congestion_Unaware> ./run.sh",
        "Each rank prints 'sys[R] finished, T cycles' (1 cycle = 1 ns); the slowest rank's T is the step.",
        "",
        f"Network dimensions: {dims}.",
        f"Traces: one iteration per rank, {export.nodes_per_rank:,} nodes on the busiest rank; compute "
        f"{job.compute_time_s * 1e3:.3f} ms then the communication, one dependency chain.",
        "",
        "What fabric models that this export cannot express:",
        *[f"- {c}" for c in CANNOT_EXPRESS],
    ]
    extra = list(net.notes) + list(export.notes)
    if extra:
        lines += ["", "Notes on this export:", *[f"- {n}" for n in extra]]
    return "\n".join(lines) + "\n"


def astra_sim_binary() -> Path | None:
    """The ASTRA-sim analytical binary named by ``FABRIC_ASTRA_SIM``, when it exists and runs."""
    p = os.environ.get("FABRIC_ASTRA_SIM")
    if not p:
        return None
    path = Path(p)
    return path if path.is_file() and os.access(path, os.X_OK) else None


_FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


def run_astra_sim(directory: str | Path, binary: str | Path, *, timeout_s: float = 3600.0) -> dict:
    """Run an export folder in ASTRA-sim; {"step_s": slowest rank, "ranks": n, "wall_s": ..., "log": tail}."""
    import time

    d = Path(directory).resolve()
    cmd = [str(binary), f"--workload-configuration={d / 'workload' / 'workload'}",
           f"--comm-group-configuration={d / 'workload' / 'workload.comm_groups.json'}",
           f"--system-configuration={d / 'system.json'}", f"--remote-memory-configuration={d / 'remote_memory.json'}",
           f"--network-configuration={d / 'network.yml'}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=d)
    wall = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    done = {int(r): int(c) for r, c in _FINISHED.findall(out)}
    if proc.returncode != 0 or not done:
        raise FabricError(f"ASTRA-sim exited {proc.returncode} with {len(done)} rank(s) finished: "
                          f"{out.strip()[-400:]}")
    return {"step_s": max(done.values()) * 1e-9, "ranks": len(done), "wall_s": wall, "log": out[-2000:]}

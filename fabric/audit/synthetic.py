"""A synthetic cluster run with one slow link: per-rank Kineto traces, per-port counters and the port map, written
by fabric from a known design and workload, for the audit to read back (tests, docs/audit.md).

How it is made (everything from the evaluator's own figures, then one link slowed):

1. the workload is evaluated on the design (:func:`fabric.evaluate.evaluate`): each op's p50 time; and its
   per-link loads are taken (:func:`fabric.audit.linkload.predicted_link_loads`): bytes per call on every link;
2. the slow link runs at ``slow_factor`` of its design speed. An op whose traffic crosses it lasts at least the time
   that link needs for its bytes at that speed: ``max(p50 time, bytes on the link x 8 / (slow_factor x capacity))``;
3. traces: :mod:`fabric.workload.kineto_writer` writes the traced ranks with those op times (compute as the job
   says);
4. counters (the documented CSV): one port per cable, named ``Ethernet<k>`` on the switch labels of the fabric,
   sampled once per step; bytes per step per link = its predicted bytes per step x (1 + e), e uniform in
   +-``noise`` per link (seeded: hashing is never exactly the mean; the slow link's op times above use its
   bytes with that factor, so it never carries more than its speed allows); the slow link's ports report their reduced
   speed, and mark ``1 - slow_factor`` of their packets (4096-byte) with ECN (the share that arrives faster than
   the link drains), and receive a PFC pause frame per 50 us of extra time per step; every other port marks nothing.
   ``idle`` samples with no traffic come before and after the run (the audit's busy windows leave them out).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from fabric.audit.linkload import directed_links, predicted_link_loads
from fabric.errors import FabricError

__all__ = ["SyntheticRun", "synthetic_run", "PACKET_BYTES", "PAUSE_QUANTUM_S"]

PACKET_BYTES = 4096
PAUSE_QUANTUM_S = 50e-6


@dataclass(frozen=True)
class SyntheticRun:
    traces: tuple[tuple[str, bytes], ...]   # (name, JSON bytes) per traced rank
    counters_csv: str
    mapping_csv: str
    slow_link: str
    step_s: float                           # the run's step time (compute + slowed ops)
    predicted_step_p50_s: float
    op_us: dict                             # op index -> kernel us written


def synthetic_run(design, job, *, slow_link: str, slow_factor: float = 0.25, steps: int = 6,
                  ranks=(0, 1, 2, 3), noise: float = 0.03, idle: int = 2, seed: int = 0, catalog=None,
                  samples: int = 64, t0_s: float = 1.7e9) -> SyntheticRun:
    """Write the run (see the module docstring)."""
    from fabric.evaluate import evaluate
    from fabric.topology import build_fabric
    from fabric.workload.kineto_writer import workload_to_kineto
    from fabric.workload.model import Workload

    if not 0 < slow_factor <= 1:
        raise FabricError(f"slow_factor must be in (0, 1], got {slow_factor!r}")
    if job.compute_cv:
        raise FabricError("the synthetic run needs compute_cv = 0 (one step time)")
    workload = Workload((job,), name=job.name)
    ev = evaluate(design, workload, None, seed=seed, samples=samples, catalog=catalog)
    op_p50 = {(o.kind, o.bytes): o.time_p50_s for o in ev.ops}
    pred = predicted_link_loads(design, workload, catalog=catalog, seed=seed, step_p50_s=ev.step_time_s["p50"],
                                op_p50_s=op_p50)
    if slow_link not in pred.links:
        raise FabricError(f"no link {slow_link!r} in the design (e.g. {next(iter(pred.links), 'none')})")
    cap = pred.links[slow_link].capacity_bps
    links = directed_links(build_fabric(design, catalog))
    rng = np.random.default_rng([seed, 26])
    factor = {name: 1.0 + rng.uniform(-noise, noise) for name in sorted(links)}
    op_us = {}
    extra_per_step = 0.0
    for k, (op, (_, count, t, per_call)) in enumerate(zip(job.ops, pred.phase_loads)):
        t = t or 0.0
        need = per_call.get(slow_link, 0.0) * factor[slow_link] * 8.0 / (slow_factor * cap)
        op_us[k] = max(t, need) * 1e6
        extra_per_step += count * max(need - t, 0.0)
    traces = []
    step_s = None
    for r in ranks:
        doc = workload_to_kineto(job, r, steps=steps, seed=seed, op_us=op_us)
        if step_s is None:
            st = [e["dur"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
            step_s = sum(st) / len(st) * 1e-6
        traces.append((f"synthetic/{job.name}.rank{r}.pt.trace.json", json.dumps(doc).encode()))
    # counters: one port per cable
    port_no: dict[str, int] = {}
    mapping = ["switch,port,link"]
    rows = ["timestamp,switch,port,bytes,ecn_marks,pause_frames,drops,speed_bps"]
    ports = []
    for name in sorted(links):
        src = name.split("-")[0]
        a, b, cables, cap_all = links[name]
        per_step = pred.links[name].bytes_per_step * factor[name] / cables
        speed = cap_all / cables * (slow_factor if name == slow_link else 1.0)
        for _ in range(cables):
            k = port_no[src] = port_no.get(src, 0) + 1
            port = f"Ethernet{k}"
            mapping.append(f"{src},{port},{name}")
            ports.append((src, port, name, per_step, speed))
    n_samples = idle + steps + idle
    for i in range(n_samples + 1):
        t = t0_s + i * step_s
        done = min(max(i - idle, 0), steps)       # steps finished by this sample
        for src, port, name, per_step, speed in ports:
            b = per_step * done
            ecn = pause = 0
            if name == slow_link:
                ecn = math.floor(b / PACKET_BYTES * (1.0 - slow_factor))
                pause = math.floor(done * extra_per_step / PAUSE_QUANTUM_S / max(len([p for p in ports
                                                                                     if p[2] == name]), 1))
            rows.append(f"{t:.6f},{src},{port},{b:.0f},{ecn},{pause},0,{speed:.0f}")
    return SyntheticRun(traces=tuple(traces), counters_csv="\n".join(rows) + "\n",
                        mapping_csv="\n".join(mapping) + "\n", slow_link=slow_link, step_s=step_s,
                        predicted_step_p50_s=ev.step_time_s["p50"], op_us=op_us)

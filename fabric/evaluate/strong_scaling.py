"""Strong scaling: a fixed global batch spread over more GPUs, and where the lost efficiency goes.

Weak scaling (:func:`fabric.evaluate.scaling_efficiency`) grows data parallelism at fixed work per GPU. Strong
scaling keeps the model and the global batch (sequences per optimizer step) and spreads them over each of the
given GPU counts: data parallelism grows, so every pipeline runs fewer micro-batches per step, and the 1F1B
pipeline bubble, ``(pp - 1) / (virtual_stages x micro-batches)`` (Narayanan et al., SC 2021), grows; the gradient
all-reduce keeps its size per rank while the compute it hides behind shrinks. Both cost efficiency that more
network cannot buy back, which is why the loss is split.

For GPU counts ``N_0 < N_1 < ...`` (``N_0`` is the reference), each step ``T(N)`` is evaluated on the design grown
to ``N`` GPUs and the workload synthesized from the same plan at ``N``. Linear scaling would give
``L(N) = T(N_0) x N_0 / N``; the efficiency is ``L(N) / T(N)`` (at p50 and at p99). The time lost at p99,
``T99(N) - L99(N)``, is split exactly, from the p99 sample's breakdown, into

- ``bubble``: the growth of the mean compute time (ideal compute scales linearly, so this is the pipeline bubble's
  growth): ``C(N) - C(N_0) x N_0 / N``;
- ``stragglers``: the rest of the compute growth in the p99 sample (the slowest rank of more ranks);
- ``network``: exposed communication and checkpoint interference beyond their linear share.

Each is reported as a share of ``T99(N)``, so ``efficiency_p99 + lost_bubble + lost_stragglers + lost_network = 1``.
``T99`` here is the p99 sample itself (the step the breakdown describes: compute of its slowest rank plus its
exposed communication), which is the reported p99 up to the percentile's interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fabric.errors import WorkloadError

__all__ = ["strong_scaling", "global_batch_for"]


def _lcm(values) -> int:
    out = 1
    for v in values:
        out = out * v // math.gcd(out, v)
    return out


def global_batch_for(preset: str, gpu_counts: Sequence[int], overrides: dict | None = None,
                     global_batch: int | None = None) -> int:
    """The global batch (sequences) a strong-scaling study of ``preset`` uses at every GPU count.

    It must be a multiple of ``micro_batch x dp`` at each count. Given, it is checked (WorkloadError naming the
    counts and the nearest valid batch); by default it is the smallest valid batch at least as large as the
    preset's own global batch at the first count.
    """
    from fabric.workload.presets import preset_plan

    over = {k: v for k, v in (overrides or {}).items() if k not in ("global_batch", "grad_accum")}
    plans = {n: preset_plan(preset, n, **over)[1] for n in gpu_counts}
    per = {n: p.micro_batch * p.dp for n, p in plans.items()}
    step = _lcm(per.values())
    if global_batch is None:
        want = plans[gpu_counts[0]].sequences_per_step
        return step * max(1, math.ceil(want / step))
    if isinstance(global_batch, bool) or not isinstance(global_batch, int) or global_batch < 1:
        raise WorkloadError(f"global batch: expected a whole number of sequences >= 1, got {global_batch!r}")
    if global_batch % step:
        text = ", ".join(f"{per[n]:,} at {n:,} GPUs" for n in gpu_counts)
        near = step * max(1, round(global_batch / step))
        raise WorkloadError(f"global batch {global_batch:,} sequences is not a multiple of micro_batch x dp at every "
                            f"GPU count ({text}); use a multiple of {step:,}, e.g. {near:,}")
    return global_batch


def strong_scaling(design, preset: str, gpu_counts: Sequence[int], *, overrides: dict | None = None,
                   global_batch: int | Sequence[int] | None = None, virtual_stages: int | None = None,
                   compute: str = "mfu", **evaluate_kwargs) -> list[dict]:
    """Strong-scaling rows of a transformer training preset on ``design`` (see the module docstring).

    ``gpu_counts``: at least two, ascending; the first is the reference. ``overrides``: plan/model overrides of
    the preset (``tp``, ``pp``, ``micro_batch`` ...); ``virtual_stages``: the interleaved pipeline schedule
    (model chunks per stage; 1 = plain 1F1B); ``global_batch``: sequences per step, the same at every count
    (default: :func:`global_batch_for`), or one per count (as a run that could not keep its batch at every size:
    the efficiency is then per sequence, linear scaling ``T(N_0) x (N_0 / N) x (B(N) / B(N_0))``). ``compute``:
    "mfu" (the preset's compute rule: its MFU for every count) or "kernels" (each count's plan timed from its
    kernels on the design's GPU, :func:`fabric.workload.compute_model.step_compute`, with no MFU given). Other
    keyword arguments go to :func:`fabric.evaluate.evaluate`.

    Each row: ``gpus``, ``dp``, ``micro_batches``, ``virtual_stages``, ``bubble_fraction``, ``global_batch``,
    ``step_p50_s``, ``step_p99_s``, ``speedup_p99``, ``efficiency_p50``, ``efficiency_p99``, ``lost_bubble``,
    ``lost_stragglers``, ``lost_network`` (shares of the p99 step), ``compute_s``, ``network_p99_s``,
    ``p99_sample_s``, ``cost_usd``.
    """
    from fabric.evaluate.engine import evaluate
    from fabric.workload.presets import preset_plan, preset_workload
    from fabric.workload.synth import pipeline_bubble_fraction

    counts = list(gpu_counts)
    if len(counts) < 2:
        raise WorkloadError("strong scaling needs at least two GPU counts (the first is the reference)")
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise WorkloadError(f"strong scaling: GPU count {n!r} is not a whole number >= 1")
    if counts != sorted(set(counts)):
        raise WorkloadError(f"strong scaling: give distinct GPU counts in ascending order, got "
                            f"{', '.join(str(n) for n in counts)}")
    over = dict(overrides or {})
    for k in ("global_batch", "grad_accum", "dp"):
        if k in over:
            raise WorkloadError(f"strong scaling: '{k}' follows from the GPU count and the global batch; give the "
                                f"global batch with global_batch=, not as an override")
    if virtual_stages is not None:
        over["virtual_stages"] = virtual_stages
    if compute not in ("mfu", "kernels"):
        raise WorkloadError(f"strong scaling: compute {compute!r}: choose mfu or kernels")
    if global_batch is not None and not isinstance(global_batch, int):
        batches = list(global_batch)
        if len(batches) != len(counts):
            raise WorkloadError(f"strong scaling: {len(batches)} global batches for {len(counts)} GPU counts; give one "
                                f"per count, or one for all")
        batch_of = {n: global_batch_for(preset, [n], over, b) for n, b in zip(counts, batches)}
    else:
        gb = global_batch_for(preset, counts, over, global_batch)
        batch_of = dict.fromkeys(counts, gb)
    rows: list[dict] = []
    ref = None
    for n in counts:
        gb = batch_of[n]
        model, plan = preset_plan(preset, n, **over, global_batch=gb)
        try:
            d = design.replace(gpus=n)
        except Exception as err:          # DesignError names the field
            raise WorkloadError(f"strong scaling at {n:,} GPUs: {err}") from err
        wl = preset_workload(preset, n, **over, global_batch=gb) if compute == "mfu" else \
            _kernel_workload(preset, model, plan, d, evaluate_kwargs.get("catalog"))
        ev = evaluate(d, wl, **evaluate_kwargs)
        br = ev.p99_breakdown
        net99 = float(sum(br["ops"].values())) + float(br.get("interference_s", 0.0))
        row = {"gpus": n, "dp": plan.dp, "micro_batches": plan.micro_batches,
               "virtual_stages": plan.virtual_stages, "bubble_fraction": pipeline_bubble_fraction(plan),
               "global_batch": gb, "step_p50_s": ev.step_time_s["p50"], "step_p99_s": ev.step_time_s["p99"],
               "compute_s": float(ev.compute_s), "compute_p99_s": float(br["compute_s"]),      # on the design's GPU
               "network_p99_s": net99, "p99_sample_s": float(br["compute_s"]) + net99, "cost_usd": ev.cost_usd}
        if ref is None:
            ref = row
        r = ref["gpus"] / n * gb / ref["global_batch"]
        lin50, lin99 = ref["step_p50_s"] * r, ref["p99_sample_s"] * r
        t99 = row["p99_sample_s"]
        bubble = row["compute_s"] - ref["compute_s"] * r
        stragglers = (row["compute_p99_s"] - ref["compute_p99_s"] * r) - bubble
        network = net99 - ref["network_p99_s"] * r
        row.update({"speedup_p99": ref["p99_sample_s"] / t99, "efficiency_p50": lin50 / row["step_p50_s"],
                    "efficiency_p99": lin99 / t99, "lost_bubble": bubble / t99,
                    "lost_stragglers": stragglers / t99, "lost_network": network / t99})
        rows.append(row)
    return rows


def _kernel_workload(preset: str, model, plan, design, catalog):
    """The preset's workload at ``plan`` with the compute of its kernels on ``design``'s GPU (no MFU given)."""
    from dataclasses import replace

    from fabric.catalog import default_catalog
    from fabric.workload.compute_model import roofline_for, step_compute
    from fabric.workload.synth import synthesize

    gpu = (catalog or default_catalog()).gpu(design.gpu_model)
    roof = roofline_for(gpu)
    compute = step_compute(model, plan, roof).step_s
    wl = synthesize(model, plan, gpu_flops=roof.peak_flops, gpus=plan.world_size, name=preset,
                    compute_time_s=compute)
    jobs = [j if j.compute_gpu else replace(j, compute_gpu=design.gpu_model) for j in wl.jobs]
    return wl.with_jobs(jobs)

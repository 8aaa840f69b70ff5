"""Sentences about plans, the same on every surface (``fabric plans``, ``fabric search --plan-space``, the pages)."""

from __future__ import annotations

from fabric.plans.basis import PlanBasis
from fabric.plans.best import PlanRanking, slower_text
from fabric.plans.space import PlanSpace, plan_label
from fabric.units import time_text

__all__ = ["basis_lines", "space_lines", "ranking_lines", "compute_rule_text", "front_plan_lines", "PROVENANCE_TEXT",
           "given_plan_name"]

#: What each provenance label means (shown beside a plan's figures).
PROVENANCE_TEXT = {
    "measured": "measured: the trace's own plan, its compute and bytes as traced",
    "derived": "derived: synthesized from the recognised model shape, its compute the trace's scaled by the compute "
               "model's ratio of the two plans' kernels",
    "synthesized": "synthesized from the model shape",
}


def compute_rule_text(basis: PlanBasis) -> str:
    """The compute rule of ``basis``' plans, with its figures."""
    rate = basis.gpu_flops / 1e12
    at = (f"{basis.mfu:.0%} MFU of {rate:,.4g} TFLOP/s" + (f" ({basis.compute_gpu})" if basis.compute_gpu else "")
          if basis.rate_known else f"the {rate:,.4g} TFLOP/s per GPU the trace's compute implies (its GPU is unknown)")
    ref = "the given plan" if basis.given is not None else "plain data parallelism"
    return (f"compute per step: each plan's own kernels (GEMM shapes, attention, recomputation, bubble: "
            f"fabric.workload.compute_model), scaled so that {ref} runs at {at}; then taken to the design's GPU by "
            f"the ratio of BF16 rates")


def basis_lines(basis: PlanBasis) -> list[str]:
    """What the plans share: model, GPUs, tokens per step, compute rule, and where the model came from."""
    m = basis.model
    moe = f", {m.experts} experts top-{m.top_k}" if m.experts > 1 else ""
    return [
        f"model: {m.name} ({m.parameters / 1e9:,.1f} B parameters, {m.layers} layers, hidden {m.hidden}, "
        f"{m.heads} heads{moe}, {m.seq_len:,}-token sequences), from {basis.source}",
        f"{basis.gpus:,} GPUs, {basis.global_batch:,} sequences x {m.seq_len:,} tokens per step for every plan",
        compute_rule_text(basis),
    ]


def space_lines(space: PlanSpace, catalog=None) -> list[str]:
    """How many plans fit, how many were refused and why (the reasons grouped), and the given plan's fate."""
    from fabric.catalog import default_catalog

    gpu = (catalog or default_catalog()).gpu(space.gpu_model)
    hbm = "no HBM figure in the catalog: memory not checked" if gpu.hbm_bytes is None else \
        f"{gpu.hbm_bytes / 1e9:,.0f} GB HBM"
    why: dict[str, int] = {}
    for _, reason in space.refused:
        key = "memory" if "memory" in reason else "model"
        why[key] = why.get(key, 0) + 1
    reasons = ", ".join(f"{k}: {v}" for k, v in sorted(why.items()))
    lines = [f"plan space on {space.gpu_model} ({hbm}, {space.domain}-GPU scale-up domain): "
             f"{len(space.candidates):,} plans fit, {len(space.refused):,} refused" + (f" ({reasons})" if reasons
                                                                                       else "")]
    if space.basis.given is not None and space.given is None:
        lines.append(f"the given plan ({plan_label(space.basis.given)}) is refused: {space.given_refusal}")
    return lines


def ranking_lines(ranking: PlanRanking, *, refused_examples: int = 2) -> list[str]:
    """The best plans of a design with their figures, the given plan and the slowdown, refused examples."""
    lines = [f"design {ranking.design}: {ranking.evaluated:,} plans evaluated ({ranking.skipped:,} left out by the "
             f"compute bound: their compute alone exceeds the best p99s found)"]
    for i, r in enumerate(ranking.best, 1):
        mem = r.candidate.memory
        lines.append(f"  {i}. {r.label}: p99 {time_text(r.p99_s)} (p50 {time_text(r.p50_s)}, compute "
                     f"{time_text(r.compute_s)}, memory {mem.total_bytes / 1e9:,.1f} GB) [{r.provenance}]")
    if ranking.given is not None:
        g = ranking.given
        lines.append(f"given plan: {g.label}: p99 {time_text(g.p99_s)} [{g.provenance}]; "
                     f"{slower_text(ranking.given_slowdown())}")
    for plan, reason in ranking.space.refused[:refused_examples]:
        lines.append(f"refused, e.g. {plan_label(plan, order=False)}: {reason}")
    return lines


def given_plan_name(basis: PlanBasis) -> str:
    """How the workload's own plan is called in sentences: "the trace's plan" for a trace, else "the given plan"."""
    return "the trace's plan" if basis.measured else "the given plan"


def front_plan_lines(front: list[dict], given_name: str = "the given plan") -> list[str]:
    """For each front design of a plan search: the plan it is on the front with, and what the given plan costs it:
    "'D' is on the front only with P: with the given plan it is 18 % slower (6.99 s against 5.93 s)" when the design
    at its given plan would be dominated by another front design, else that it stays on the front either way.
    ``given_name``: how the workload's own plan is called ("the trace's plan" for a trace)."""
    rows = [r for r in front if r.get("plan")]
    out = []
    for r in rows:
        slow = r.get("given_plan_slowdown")
        given_p99 = r.get("given_plan_p99_s")
        if slow is None or given_p99 is None:
            out.append(f"'{r['design']}' is on the front with {r['plan']} ({given_name} does not fit it).")
            continue
        if slow <= 0.0005:
            out.append(f"'{r['design']}' is on the front with {given_name}, its best ({r['plan']}).")
            continue
        dominated = any(o is not r and o["cost_usd"] <= r["cost_usd"] and o["p99_s"] <= given_p99
                        and (o["cost_usd"] < r["cost_usd"] or o["p99_s"] < given_p99) for o in rows)
        text = (f"with {given_name} it is {slow:.0%} slower ({time_text(given_p99)} against "
                f"{time_text(r['p99_s'])})")
        if dominated:
            out.append(f"'{r['design']}' is on the front only with {r['plan']}: {text}.")
        else:
            out.append(f"'{r['design']}' is on the front with {r['plan']}; {text}, and it would stay on the front.")
    return out

"""The plan space of a training job on a GPU system: every way to split it that the model and the memory allow.

For a :class:`~fabric.plans.basis.PlanBasis` on ``gpus`` GPUs of a catalog GPU (its HBM) in scale-up domains of
``domain`` GPUs, a plan picks (the rules, written out in docs/plans.md):

- ``tp``: divides the attention heads and the MLP width, at most the scale-up domain (tensor parallelism runs on
  NVLink; the rank orders below keep its groups inside a domain);
- ``cp``: divides the sequence length, at most :data:`MAX_CP`, and leaves at least :data:`MIN_CP_TOKENS` tokens
  per rank;
- ``pp``: divides the layers, at most :data:`MAX_PP` (with the basis' interleaving when that divides them too, else
  none);
- ``dp`` = gpus / (tp x pp x cp), a whole number;
- ``ep`` (mixture of experts): divides the experts and dp x cp;
- micro-batch size 1 or 2 sequences: the micro-batches per step, global batch / (micro-batch x dp), must be whole
  and at least ``pp`` (fewer leave pipeline stages idle most of the step);
- the rank order (:data:`SEARCH_ORDERS`, fastest-varying first): Megatron's ``tp-cp-ep-dp-pp`` or ``tp-pp-cp-ep-dp``
  (pipeline neighbours on one server); orders that differ only in dimensions of size 1 are one plan;
- ZeRO: the lowest stage from 1 to 3 whose memory fits (stage 0 moves the same bytes as stage 1 with more memory;
  stages 2 and 3 add traffic or latency for memory, so a higher stage is chosen only when a lower one does not fit);
- activation recomputation: at that stage, the choice of ``none`` / ``selective`` / ``full`` whose memory fits with
  the least compute (:meth:`fabric.plans.basis.PlanBasis.compute_s`): recomputation is bought only with memory.

A plan whose memory (:func:`fabric.plans.memory.plan_memory`) exceeds the HBM at every ZeRO stage, even with full
recomputation, is refused, with the memory of its lightest choice as the reason. The basis' overlap assumptions, bucket size and dtypes carry over.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fabric.errors import WorkloadError
from fabric.plans.basis import PlanBasis, plan_key
from fabric.plans.memory import MemoryUse, plan_memory
from fabric.workload.synth import (DEFAULT_ORDER, RECOMPUTE_CHOICES, ParallelPlan, pipeline_bubble_fraction,
                                   validate_plan)

__all__ = ["Candidate", "PlanSpace", "plan_space", "check_plan", "plan_label", "SEARCH_ORDERS", "MAX_CP",
           "MIN_CP_TOKENS", "MICRO_BATCH_SIZES", "MAX_PP"]

#: Rank orders the plan space tries (every order of fabric.workload.synth.RANK_ORDERS is accepted as a given plan).
SEARCH_ORDERS = (DEFAULT_ORDER, "tp-pp-cp-ep-dp")
#: Deepest pipeline tried (Llama 3 405B trained with 16 stages; deeper ones add bubble and stage imbalance).
MAX_PP = 16
#: Largest context-parallel degree tried.
MAX_CP = 8
#: Fewest tokens of a sequence one context-parallel rank keeps (shorter slices spend more on the K/V exchange).
MIN_CP_TOKENS = 1024
#: Micro-batch sizes tried (sequences).
MICRO_BATCH_SIZES = (1, 2)


def plan_label(plan: ParallelPlan, *, order: bool = True) -> str:
    """``TP 8 x PP 4 x DP 32`` (+ ``CP``, ``EP`` when > 1), ZeRO stage, micro-batches and the rank order."""
    dims = [f"TP {plan.tp}"] + ([f"CP {plan.cp}"] if plan.cp > 1 else []) + [f"PP {plan.pp}"]
    dims += [f"DP {plan.dp}"] + ([f"EP {plan.ep}"] if plan.ep > 1 else [])
    m = plan.micro_batches
    text = (" x ".join(dims) + f", ZeRO {plan.effective_zero}, {m} micro-batch{'es' if m != 1 else ''} of "
            f"{plan.micro_batch}")
    if plan.virtual_stages > 1:
        text += f", {plan.virtual_stages} chunks per stage"
    if plan.recompute != "selective":
        text += ", full recomputation" if plan.recompute == "full" else ", no recomputation"
    return text + (f", order {plan.order}" if order else "")


@dataclass(frozen=True)
class Candidate:
    """One plan of the space with its memory and its compute per step at the basis' rate."""

    plan: ParallelPlan
    memory: MemoryUse
    compute_s: float
    bubble: float
    given: bool = False

    @property
    def label(self) -> str:
        return plan_label(self.plan)

    @property
    def key(self) -> tuple:
        return plan_key(self.plan)

    def to_dict(self) -> dict:
        p = self.plan
        return {"label": self.label, "tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep,
                "zero_stage": p.effective_zero, "micro_batch": p.micro_batch, "micro_batches": p.micro_batches,
                "virtual_stages": p.virtual_stages, "order": p.order, "compute_s": self.compute_s,
                "bubble": self.bubble, "memory": self.memory.to_dict(), "given": self.given}


@dataclass(frozen=True)
class PlanSpace:
    """The feasible plans (sorted by compute per step, then label) and the refused ones with their reasons."""

    basis: PlanBasis
    gpu_model: str
    domain: int
    candidates: tuple[Candidate, ...]
    refused: tuple[tuple[ParallelPlan, str], ...]
    given: Candidate | None
    given_refusal: str | None = None

    def find(self, plan: ParallelPlan) -> Candidate | None:
        k = plan_key(plan)
        return next((c for c in self.candidates if c.key == k), None)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _model_problem(basis: PlanBasis, plan: ParallelPlan) -> str | None:
    try:
        validate_plan(basis.model, plan, basis.gpus)
    except WorkloadError as err:
        return str(err)
    return None


def check_plan(basis: PlanBasis, plan: ParallelPlan, hbm_bytes: float | None, domain: int | None = None,
               *, choose_zero: bool = False) -> tuple[Candidate | None, str | None]:
    """``(candidate, None)`` when ``plan`` fits the model, the domain and the memory; ``(None, reason)`` else.
    ``choose_zero``: take the lowest ZeRO stage that fits (the space's rule) instead of the plan's own."""
    why = _model_problem(basis, plan)
    if why:
        return None, why
    if plan.sequences_per_step != basis.global_batch:
        return None, (f"{plan.sequences_per_step} sequences per step, not the basis' {basis.global_batch} (every plan "
                      "trains the same global batch)")
    if domain is not None and plan.tp > domain:
        return None, f"tp {plan.tp} exceeds the {domain}-GPU scale-up domain (tensor parallelism runs on NVLink)"
    stages = (1, 2, 3) if choose_zero else (plan.effective_zero,)
    mem = None
    for z in stages:
        fitting = []
        for r in (RECOMPUTE_CHOICES if choose_zero else (plan.recompute,)):
            p = replace(plan, zero_stage=z, fsdp=False, recompute=r) if choose_zero else plan
            m = plan_memory(basis.model, p, hbm_bytes)
            if m.fits:
                fitting.append((basis.compute_s(p), p, m))
            elif mem is None or r == "full":
                mem = m
        if fitting:
            compute, p, m = min(fitting, key=lambda x: (x[0], RECOMPUTE_CHOICES.index(x[1].recompute)))
            return Candidate(p, m, compute, pipeline_bubble_fraction(p), basis.is_given(p)), None
    lowest = "at ZeRO 3 with full recomputation" if choose_zero else f"at ZeRO {plan.effective_zero}"
    return None, f"does not fit in memory {lowest}: {mem.text()}"


def _orders(plan: ParallelPlan) -> list[str]:
    """The search orders that give ``plan`` different groups (orders differing only in size-1 dimensions are one)."""
    from fabric.workload.synth import megatron_groups

    seen, out = set(), []
    for order in SEARCH_ORDERS:
        p = replace(plan, order=order)
        groups = tuple(sorted((g.name, g.size, g.rank_stride) for g in megatron_groups(p, moe=p.ep > 1).values()))
        if groups not in seen:
            seen.add(groups)
            out.append(order)
    return out


def plan_space(basis: PlanBasis, gpu_model: str, *, domain: int | None = None, catalog=None) -> PlanSpace:
    """Every plan of the module docstring for ``basis`` on ``gpu_model`` (its HBM from the catalog) in scale-up
    domains of ``domain`` GPUs (default: the GPU's host)."""
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    gpu = cat.gpu(gpu_model)
    hbm = gpu.hbm_bytes
    domain = domain or gpu.host_gpus
    m = basis.model
    base = basis.given or ParallelPlan(sequence_parallel=True, zero_stage=1)
    n = basis.gpus
    tps = [t for t in _divisors(m.heads) if m.ffn_hidden % t == 0 and t <= domain and n % t == 0]
    cps = [c for c in _divisors(m.seq_len) if c <= MAX_CP and m.seq_len // c >= MIN_CP_TOKENS]
    pps = [p for p in _divisors(m.layers) if p <= MAX_PP]
    want_v = base.virtual_stages if basis.given is not None else 1
    out: dict[tuple, Candidate] = {}
    refused: list[tuple[ParallelPlan, str]] = []
    for tp in tps:
        for cp in cps:
            for pp in pps:
                if n % (tp * cp * pp):
                    continue
                dp = n // (tp * cp * pp)
                eps = [1] if m.experts <= 1 else [e for e in _divisors(m.experts) if (dp * cp) % e == 0]
                v = want_v if pp > 1 and m.layers % (pp * want_v) == 0 else 1
                for ep in eps:
                    for b in MICRO_BATCH_SIZES:
                        if basis.global_batch % (b * dp):
                            continue
                        mb = basis.global_batch // (b * dp)
                        if mb < pp:
                            continue
                        plan = replace(base, tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, micro_batch=b, grad_accum=mb,
                                       global_batch=None, virtual_stages=v, sequence_parallel=tp > 1,
                                       fsdp=False, zero_stage=1, order=DEFAULT_ORDER)
                        for order in _orders(plan):
                            p = replace(plan, order=order)
                            cand, why = check_plan(basis, p, hbm, domain, choose_zero=True)
                            if cand is None:
                                refused.append((replace(p, zero_stage=3) if "memory" in why else p, why))
                            else:
                                out.setdefault(cand.key, cand)
    given, given_why = None, None
    if basis.given is not None:
        given, given_why = check_plan(basis, basis.given, hbm, None)
        if given is not None:
            given = replace(given, given=True)
            out[given.key] = given
    cands = sorted(out.values(), key=lambda c: (c.compute_s, c.label))
    return PlanSpace(basis, gpu_model, domain, tuple(cands), tuple(refused), given, given_why)

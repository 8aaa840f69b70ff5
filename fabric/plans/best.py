"""The plans that suit one design: every plan of the space evaluated on it, best p99 step time first.

:func:`rank_plans` evaluates the plans of :func:`fabric.plans.space.plan_space` on a design with
:func:`fabric.evaluate.evaluate` (the same pure evaluation as everything else; one design's plans share its fabric,
network models and traffic patterns through ``reuse``). It is exact without evaluating every plan: no sample of a
step is shorter than its compute (the evaluator's lower bound starts from the mean compute and adds non-negative
communication), so plans are evaluated in order of their compute on the design's GPU and the ranking stops when the
next plan's compute is at least the ``keep``-th best p99 found: none of the remaining plans can enter the top
``keep``. The given plan (the workload's own) is always evaluated, for the comparison "with the given plan it is
X % slower". :func:`screen_plans` is the plan search's cheaper first screen: grouped by parallel degrees, not exact.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from fabric.evaluate import evaluate
from fabric.evaluate.engine import step_time_stats
from fabric.evaluate.gpu_compute import compute_basis
from fabric.evaluate.scenario import Scenario
from fabric.plans.basis import PlanBasis, primary_training_job
from fabric.plans.space import Candidate, PlanSpace, plan_space
from fabric.plans.workloads import plan_workload, provenance

__all__ = ["PlanResult", "PlanRanking", "rank_plans", "screen_plans", "degrees", "evaluate_plan", "slower_text"]


@dataclass(frozen=True)
class PlanResult:
    """One plan evaluated on one design: its step-time percentiles and whether its numbers are measured."""

    candidate: Candidate
    p50_s: float
    p95_s: float
    p99_s: float
    mean_s: float
    compute_s: float
    provenance: str
    evaluation: object = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return self.candidate.label

    def to_dict(self) -> dict:
        return {**self.candidate.to_dict(), "p50_s": self.p50_s, "p95_s": self.p95_s, "p99_s": self.p99_s,
                "mean_s": self.mean_s, "compute_on_design_s": self.compute_s, "provenance": self.provenance}


@dataclass(frozen=True)
class PlanRanking:
    """The best plans of a design (``best``, p99 order), the given plan's result, and what the ranking cost."""

    design: str
    space: PlanSpace
    best: tuple[PlanResult, ...]
    given: PlanResult | None
    evaluated: int
    skipped: int

    @property
    def top(self) -> PlanResult | None:
        return self.best[0] if self.best else None

    def given_slowdown(self) -> float | None:
        """How much slower the given plan's p99 is than the best plan's (0.18 = 18 % slower), or None."""
        if self.given is None or self.top is None:
            return None
        return self.given.p99_s / self.top.p99_s - 1.0

    def to_dict(self) -> dict:
        return {"design": self.design, "best": [r.to_dict() for r in self.best],
                "given": None if self.given is None else self.given.to_dict(),
                "given_slowdown": self.given_slowdown(), "evaluated": self.evaluated, "skipped": self.skipped,
                "plans_in_space": len(self.space.candidates), "refused": len(self.space.refused)}


def slower_text(slowdown: float | None, given_name: str = "the given plan") -> str:
    """``"with the given plan it is 18 % slower"`` (or that the given plan is the best); ``given_name``: how the
    workload's own plan is called ("the trace's plan" for a trace, :func:`fabric.plans.report.given_plan_name`)."""
    if slowdown is None:
        return ""
    if slowdown <= 0.0005:
        return f"{given_name} is its best plan"
    return f"with {given_name} it is {slowdown:.0%} slower"


def _factor(basis: PlanBasis, cand: Candidate, gpu_model: str, catalog) -> float:
    """Compute on ``gpu_model`` / compute at the basis' rate (fabric.evaluate.gpu_compute's rule)."""
    job = primary_training_job(plan_workload(basis, cand.plan))
    return compute_basis(job, gpu_model, catalog).factor


def evaluate_plan(design, basis: PlanBasis, cand: Candidate, *, scenario=None, seed: int = 0, samples: int = 256,
                  catalog=None, transport_overrides=None, reuse: dict | None = None,
                  detail: bool = True) -> PlanResult:
    """``cand`` evaluated on ``design`` (the primary training job's percentiles); with ``detail`` False only the
    percentiles (:func:`fabric.evaluate.engine.step_time_stats`, the same numbers without the report: no
    ``evaluation``)."""
    kw = dict(seed=seed, samples=samples, catalog=catalog, transport_overrides=transport_overrides, reuse=reuse)
    if not detail:
        st = step_time_stats(design, plan_workload(basis, cand.plan), scenario or Scenario(), **kw)
        return PlanResult(cand, st["p50"], st["p95"], st["p99"], st["mean"], st["compute_s"],
                          provenance(basis, cand.plan), None)
    ev = evaluate(design, plan_workload(basis, cand.plan), scenario or Scenario(), **kw)
    st = ev.step_time_s
    return PlanResult(cand, float(st["p50"]), float(st["p95"]), float(st["p99"]), float(st["mean"]),
                      float(ev.compute_s), provenance(basis, cand.plan), ev)


def _in_compute_order(design, basis, cands, keep: int, factor: float, kw: dict, found=()) -> tuple[list, int, int]:
    """Evaluate ``cands`` in order of compute until the next one's compute reaches the ``keep``-th best p99 among
    them and ``found`` (results already in hand): ``(found + new results, evaluated, skipped)``. None of the skipped
    plans can be among the ``keep`` best (see the module docstring)."""
    results = list(found)
    best_p99 = [-r.p99_s for r in heapq.nsmallest(keep, results, key=lambda r: r.p99_s)]
    heapq.heapify(best_p99)         # the keep shortest p99s so far, negated (a max-heap of them)
    done = 0
    for c in sorted(cands, key=lambda c: (c.compute_s, c.label)):
        if len(best_p99) >= keep and c.compute_s * factor * (1 - 1e-9) >= -best_p99[0]:
            break                   # its compute alone reaches the keep-th best p99
        r = evaluate_plan(design, basis, c, **kw)
        done += 1
        results.append(r)
        if len(best_p99) < keep:
            heapq.heappush(best_p99, -r.p99_s)
        elif r.p99_s < -best_p99[0]:
            heapq.heapreplace(best_p99, -r.p99_s)
    return results, done, len(cands) - done


def rank_plans(design, basis: PlanBasis, *, scenario=None, seed: int = 0, samples: int = 256, catalog=None,
               transport_overrides=None, keep: int = 3, space: PlanSpace | None = None,
               candidates=None, reuse: dict | None = None, detail: bool = True) -> PlanRanking:
    """The ``keep`` best plans of ``design`` by p99 step time (exact: see the module docstring). ``candidates``
    restricts the plans tried (default: the whole space); ``detail`` False: the results carry no evaluation
    (:func:`evaluate_plan`; a third faster, for a screen of the whole space)."""
    space = space or plan_space(basis, design.gpu_model, domain=design.domain_size, catalog=catalog)
    cands = list(space.candidates if candidates is None else candidates)
    kw = dict(scenario=scenario, seed=seed, samples=samples, catalog=catalog,
              transport_overrides=transport_overrides, reuse={} if reuse is None else reuse, detail=detail)
    if not cands:
        return PlanRanking(design.name, space, (), None, 0, 0)
    factor = _factor(basis, cands[0], design.gpu_model, catalog)
    results, done, skipped = _in_compute_order(design, basis, cands, keep, factor, kw)
    return _ranking(design, basis, space, results, done, skipped, keep, kw)


def _ranking(design, basis, space, results, done, skipped, keep, kw) -> PlanRanking:
    """The ranking of ``results`` (the given plan evaluated too when it is not among them)."""
    given = next((r for r in results if r.candidate.given), None)
    if space.given is not None and given is None:
        given = evaluate_plan(design, basis, space.given, **kw)
        done += 1
    results = sorted(results, key=lambda r: (r.p99_s, r.label))
    return PlanRanking(design.name, space, tuple(results[:keep]), given, done, skipped)


def degrees(cand: Candidate) -> tuple[int, int, int, int, int]:
    """A plan's parallel degrees (TP, PP, DP, CP, EP): what the screen of :func:`screen_plans` groups by."""
    p = cand.plan
    return (p.tp, p.pp, p.dp, p.cp, p.ep)


def screen_plans(design, basis: PlanBasis, *, keep: int, groups: int, scenario=None, seed: int = 0,
                 samples: int = 256, catalog=None, transport_overrides=None, space: PlanSpace | None = None,
                 reuse: dict | None = None) -> PlanRanking:
    """About the ``keep`` best plans of ``design`` for a third of :func:`rank_plans`' evaluations: first one plan per
    combination of parallel degrees (:func:`degrees`; the one with the least compute, ties by label) is ranked,
    then every plan (rank order, ZeRO stage, micro-batching) of the ``groups`` combinations whose plan ranked best;
    the ``keep`` best of those plans (the compute bound skips those that cannot be among them). Not exact: a
    combination whose least-compute plan ranks low is not looked at further (how often that changes the plan
    search's shortlist: docs/plans.md, ``benchmarks/bench_plan_screen.py``). No ``evaluation`` in the results (as
    ``detail=False``)."""
    space = space or plan_space(basis, design.gpu_model, domain=design.domain_size, catalog=catalog)
    cands = list(space.candidates)
    kw = dict(scenario=scenario, seed=seed, samples=samples, catalog=catalog,
              transport_overrides=transport_overrides, reuse={} if reuse is None else reuse, detail=False)
    if not cands:
        return PlanRanking(design.name, space, (), None, 0, 0)
    factor = _factor(basis, cands[0], design.gpu_model, catalog)
    members: dict[tuple, list[Candidate]] = {}
    for c in sorted(cands, key=lambda c: (c.compute_s, c.label)):
        members.setdefault(degrees(c), []).append(c)
    firsts = [cs[0] for cs in members.values()]
    found, done, _ = _in_compute_order(design, basis, firsts, groups, factor, kw)
    found.sort(key=lambda r: (r.p99_s, r.label))
    seen = {r.label for r in found}
    rest = [c for r in found[:groups] for c in members[degrees(r.candidate)][1:]] + \
        [c for c in firsts if c.label not in seen]       # (skipped above: they may still be among the keep best)
    results, more, _ = _in_compute_order(design, basis, rest, keep, factor, kw, found=found)
    done += more
    return _ranking(design, basis, space, results, done, len(cands) - done, keep, kw)

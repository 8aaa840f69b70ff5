"""Inner mode: every design of a search judged at its best plan (``fabric search --plan-space auto``).

A :class:`PlanObjective` stands in for the workload in :func:`fabric.search.run_search` (a thin layer over the same
evaluation, like :mod:`fabric.search.robust`): each design's record is the record of its best plan, with the plan,
the next two and the given plan's p99 beside it.

Finding each design's best plan among hundreds (207 for Llama-3-70B on 1,024 H100, 828 for Mixtral-8x7B) for every
design of a search would cost hundreds of evaluations per design. So the plan space is narrowed once per search and
GPU system, before the search starts, to a **shortlist**: the best plan of each of a few **probe designs** that
span the search space's networks (:func:`probe_designs`: the human baselines, each other allowed family on the fat
tree's hardware, and the fat tree at the highest allowed oversubscription), plus the given plan. The first probe, the
1:1 fat tree, screens the plan space (:func:`fabric.plans.best.screen_plans`: one plan per combination of parallel
degrees, then every plan of the :data:`GROUPS` best combinations) and passes its best :data:`SCREENED` plans to the
other probes, which rank those exactly. Each design is then evaluated at every shortlisted plan (its step time) and
keeps the best by p99 step time (its record made from that plan's full evaluation). The
shortlist is a function of the search space, so a record stays a pure function of (design, objective, scenario,
seed, samples): identical on every runner, cacheable. A design whose best plan lies outside the shortlist is judged
at the best shortlisted one (how far that is from its exact best is measured in ``benchmarks/bench_plans.py``;
``fabric plans`` and the Design page rank the whole space for one design).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from fabric.errors import DesignError, FabricError
from fabric.plans.basis import PlanBasis, plan_key
from fabric.plans.best import evaluate_plan, rank_plans, screen_plans
from fabric.plans.space import Candidate, plan_space
from fabric.plans.workloads import plan_workload, provenance

__all__ = ["PlanObjective", "probe_designs", "plan_record_fields", "PLAN_COLUMNS", "PER_PROBE"]

#: Best plans of each probe design taken into the shortlist.
PER_PROBE = 1
#: Plans the first probe (the 1:1 fat tree) passes on to the other probes: its best by p99 ...
SCREENED = 24
#: ... among every plan of the combinations of parallel degrees whose least-compute plan ranked among this many
#: best (:func:`fabric.plans.best.screen_plans`); None: the exact ranking of every plan (for comparison:
#: ``benchmarks/bench_plan_screen.py``)
GROUPS = 12
#: Record columns inner and joint mode add (docs/plans.md).
PLAN_COLUMNS = ("plan", "plan_tp", "plan_pp", "plan_dp", "plan_cp", "plan_ep", "plan_zero", "plan_micro_batch",
                "plan_micro_batches", "plan_order", "plan_recompute", "plan_provenance", "plan_memory_gb", "plan_next",
                "plan_tried",
                "given_plan", "given_plan_p99_s", "given_plan_slowdown")


def plan_record_fields(basis: PlanBasis, cand: Candidate) -> dict:
    """The plan columns of a record evaluated at ``cand``."""
    p = cand.plan
    return {"plan": cand.label, "plan_tp": p.tp, "plan_pp": p.pp, "plan_dp": p.dp, "plan_cp": p.cp, "plan_ep": p.ep,
            "plan_zero": p.effective_zero, "plan_micro_batch": p.micro_batch, "plan_micro_batches": p.micro_batches,
            "plan_order": p.order, "plan_recompute": p.recompute, "plan_provenance": provenance(basis, p),
            "plan_memory_gb": round(cand.memory.total_bytes / 1e9, 2)}


def probe_designs(space) -> list:
    """The designs the shortlist is ranked on, for each GPU system of ``space``: the human baselines
    (:func:`fabric.search.baselines.baseline_designs`), the 1:1 fat tree's hardware as each other allowed family,
    and the fat tree at the highest allowed oversubscription (when above 2:1). Those that cannot be built are left
    out."""
    from fabric.search.baselines import baseline_designs
    from fabric.topology import build_fabric

    bases = baseline_designs(space)
    if not bases:
        return []
    tree = bases[0]
    out = []
    families = space.gene("family").choices
    oversub = max(space.gene("oversub_leaf").choices)
    for gpu in space.systems:
        system = space.system_fields(gpu)
        probes = [b.replace(**system) for b in bases]
        for fam in families:
            if fam not in {p.family for p in probes}:
                probes.append(tree.replace(family=fam, routing="adaptive", placement="rail_aligned", **system,
                                           name=f"probe: {fam} on the fat tree's hardware"))
        if oversub > 2:
            probes.append(tree.replace(oversubscription=(float(oversub), float(oversub)), **system,
                                       name=f"probe: fat tree {oversub:g}:1"))
        for d in probes:
            try:
                build_fabric(d, space.catalog)
            except (DesignError, FabricError):
                continue
            out.append(d)
    return out


@dataclass(frozen=True)
class PlanObjective:
    """A training job whose plan is chosen per design (see the module docstring). ``shortlist``: per GPU system
    (catalog model), the plans every design of that system is tried at; set by :meth:`prepared_for`."""

    basis: PlanBasis
    keep: int = 3
    shortlist: tuple | None = None
    mode: str = "inner"

    @property
    def jobs(self):
        """The jobs of the given plan's workload (what sizes the cluster and says whether a job serves)."""
        return plan_workload(self.basis, self._default_plan()).jobs

    def _default_plan(self):
        if self.basis.given is not None:
            return self.basis.given
        raise FabricError("a plan search needs the workload's own plan (a workload or a preset)")

    @property
    def name(self) -> str:
        return f"{self.basis.job_name} at each design's best plan"

    def key(self) -> str:
        """A stable key of the objective's content (basis, shortlist)."""
        short = None if self.shortlist is None else [(g, [list(plan_key(c.plan)) for c in cs])
                                                     for g, cs in self.shortlist]
        return hashlib.sha1(json.dumps([self.mode, self.basis.key, self.keep, short], default=str)
                            .encode()).hexdigest()[:16]

    @property
    def evaluations_per_design(self) -> int:
        return max((len(cs) for _, cs in self.shortlist or ()), default=1)

    def candidates_for(self, gpu_model: str) -> tuple[Candidate, ...]:
        for g, cs in self.shortlist or ():
            if g == gpu_model:
                return cs
        raise FabricError(f"no plan shortlist for GPU system {gpu_model}: call prepared_for(space) first")

    def prepared_for(self, space, *, seed: int = 0, samples: int = 256, overrides=None, scenario=None):
        """A copy with the shortlist of the module docstring for ``space``'s GPU systems."""
        if self.shortlist is not None:
            return self
        self._default_plan()
        per: dict[str, list[Candidate]] = {}
        screened: dict[str, list[Candidate]] = {}
        spaces: dict = {}          # probes of one GPU system and domain share its plan space
        for d in probe_designs(space):
            at = (d.gpu_model, d.domain_size)
            if at not in spaces:
                spaces[at] = plan_space(self.basis, d.gpu_model, domain=d.domain_size, catalog=space.catalog)
            sp = spaces[at]
            if not sp.candidates:
                continue
            kw = dict(scenario=scenario, seed=seed, samples=samples, catalog=space.catalog,
                      transport_overrides=overrides, space=sp)
            first = d.gpu_model not in screened
            if not first:
                r = rank_plans(d, self.basis, keep=PER_PROBE, candidates=screened[d.gpu_model], detail=False, **kw)
            elif GROUPS:
                r = screen_plans(d, self.basis, keep=SCREENED, groups=GROUPS, **kw)
            else:
                r = rank_plans(d, self.basis, keep=SCREENED, detail=False, **kw)
            if first:
                screened[d.gpu_model] = [x.candidate for x in r.best]
            chosen = per.setdefault(d.gpu_model, [])
            for c in [x.candidate for x in r.best[:PER_PROBE]] + ([sp.given] if sp.given is not None else []):
                if all(plan_key(c.plan) != plan_key(o.plan) for o in chosen):
                    chosen.append(c)
        for gpu in space.systems:
            if gpu not in per:
                sp = plan_space(self.basis, gpu, domain=space.system_fields(gpu).get("scale_up_size") or None,
                                catalog=space.catalog)
                per[gpu] = [sp.given] if sp.given is not None else list(sp.candidates[:1])
        short = tuple((g, tuple(sorted(cs, key=lambda c: (c.compute_s, c.label)))) for g, cs in per.items())
        return replace(self, shortlist=short)

    def evaluate_record(self, design, scenario, seed, samples, catalog, constraints, genome=None, repairs=(),
                        transport_overrides=None) -> dict:
        """The record of ``design`` at its best shortlisted plan, with the plan columns (:data:`PLAN_COLUMNS`)."""
        from fabric.search.records import evaluate_record

        cands = self.candidates_for(design.gpu_model)
        reuse: dict = {}
        kw = dict(scenario=scenario, seed=seed, samples=samples, catalog=catalog,
                  transport_overrides=transport_overrides, reuse=reuse)
        tried = []
        for c in cands:       # the step time of every plan (without the report); the full evaluation of the best
            try:
                r = evaluate_plan(design, self.basis, c, detail=False, **kw)
            except FabricError:
                break          # unbuildable: the record below says why
            tried.append((c, r.p99_s))
        tried.sort(key=lambda cp: (cp[1], cp[0].label))
        best_c = tried[0][0] if tried else cands[0]
        evaluation = evaluate_plan(design, self.basis, best_c, **kw).evaluation if tried else None
        best = evaluate_record(design, plan_workload(self.basis, best_c.plan), scenario, seed, samples, catalog,
                               constraints, genome=genome, repairs=repairs, transport_overrides=transport_overrides,
                               reuse=reuse, evaluation=evaluation)
        if not best["buildable"] or not tried:
            return {**best, **dict.fromkeys(PLAN_COLUMNS), "plan": ""}
        out = {**best, **plan_record_fields(self.basis, best_c)}
        out["plan_next"] = [{"plan": c.label, "p99_s": p} for c, p in tried[1:self.keep]]
        # every shortlisted plan's p99 on this design, best first: the one ranking every view shows of it
        out["plan_tried"] = [{"plan": c.label, "p99_s": p, "given": bool(c.given)} for c, p in tried]
        given = next(((c, p) for c, p in tried if c.given), None)
        out["given_plan"] = given[0].label if given else ""
        out["given_plan_p99_s"] = given[1] if given else None
        out["given_plan_slowdown"] = given[1] / best["p99_s"] - 1.0 if given else None
        return out


def given_plan_result(objective: PlanObjective, design, **kw):
    """The given plan evaluated on ``design`` (a :class:`fabric.plans.best.PlanResult`)."""
    sp = plan_space(objective.basis, design.gpu_model, domain=design.domain_size, catalog=kw.get("catalog"))
    if sp.given is None:
        return None
    return evaluate_plan(design, objective.basis, sp.given, **kw)

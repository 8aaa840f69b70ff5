"""Joint mode: plan genes in the NSGA-II genome beside the design genes (``fabric search --plan-space joint``).

:class:`JointSpace` is the design space with six more genes: ``plan_tp``, ``plan_cp``, ``plan_pp``, ``plan_ep``,
``plan_micro_batch`` and ``plan_order`` (the ZeRO stage follows from them: the lowest that fits,
:mod:`fabric.plans.space`). A genome decodes to a :class:`PlannedDesign`, a design that carries its plan, so a
design at two plans is two points of the search with two records. Plan genes that name no plan of the design's GPU
system (a degree that does not divide, a plan that does not fit its memory) are repaired to the nearest plan that
exists: the fewest steps along the genes' choice lists, then the least compute, then the label; the repair is
recorded like a design repair. A plain :class:`~fabric.design.Design` (a human baseline) is at the **default plan**
of its GPU system: the given plan, or where that does not fit the system, the plan of least compute; a genome at
the default plan decodes to the plain design, so a baseline and its genome are one design with one record.

Every genome is one evaluation (inner mode spends a shortlist's worth per design, :mod:`fabric.search.plan_space.inner`); the
two are compared on the same budget in ``benchmarks/bench_plans.py`` (docs/search.md). After a search,
:meth:`JointObjective.annotate_front` evaluates each front design at the given plan, for the sentence "with the
given plan it is X % slower" (:func:`fabric.plans.report.front_plan_lines`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, fields

import numpy as np

from fabric.design import Design
from fabric.errors import FabricError
from fabric.plans.basis import PlanBasis
from fabric.search.plan_space.inner import PLAN_COLUMNS, plan_record_fields
from fabric.plans.space import Candidate, plan_space
from fabric.plans.workloads import plan_workload
from fabric.search.space import DesignSpace, Gene

__all__ = ["PlannedDesign", "JointSpace", "JointObjective", "PLAN_GENES"]

#: The plan genes, in genome order after the design genes.
PLAN_GENES = ("plan_tp", "plan_cp", "plan_pp", "plan_ep", "plan_micro_batch", "plan_order")
_ATTR = {"plan_tp": "tp", "plan_cp": "cp", "plan_pp": "pp", "plan_ep": "ep", "plan_micro_batch": "micro_batch",
         "plan_order": "order"}


@dataclass(frozen=True)
class PlannedDesign(Design):
    """A design with the parallelism plan it is evaluated at (``plan``: the plan's label)."""

    plan: str = ""

    def plain(self) -> Design:
        """The design without its plan."""
        kw = {f.name: getattr(self, f.name) for f in fields(Design)}
        return Design(**kw)


_SPACES: dict = {}
_LOCK = threading.Lock()
#: Per design (at any plan): the ``reuse`` dict of fabric.evaluate.evaluate, so a design's plans share its fabric,
#: network models and single-failure analysis (the session evaluates one cabling's genomes one after the other)
_REUSE: OrderedDict = OrderedDict()
_REUSE_DESIGNS = 8


def _plain(design) -> Design:
    return design.plain() if isinstance(design, PlannedDesign) else design


def _reuse_for(design: Design) -> dict:
    """The intermediate results of plain ``design``'s evaluations at other plans (the record is the same
    without)."""
    from fabric.search.records import design_key

    key = design_key(design)
    with _LOCK:
        hit = _REUSE.get(key)
        if hit is None:
            hit = _REUSE[key] = {}
            while len(_REUSE) > _REUSE_DESIGNS:
                _REUSE.popitem(last=False)
        else:
            _REUSE.move_to_end(key)
    return hit


class _Table:
    """The plans of one GPU system: the candidates (plan_space's order), by label, and the default plan."""

    def __init__(self, catalog, cands: tuple[Candidate, ...]):
        self.catalog = catalog          # kept so that its id, part of the cache key, cannot be reused
        self.cands = cands
        self.by_label = _by_label(cands)
        self.default = _default(cands)


def _table(basis: PlanBasis, gpu_model: str, domain: int, catalog) -> _Table:
    """The plan table of ``gpu_model`` (cached per basis, GPU, domain and catalog)."""
    from fabric.catalog import default_catalog

    catalog = catalog or default_catalog()
    key = (basis.key, gpu_model, domain, id(catalog))
    with _LOCK:
        hit = _SPACES.get(key)
    if hit is None or hit.catalog is not catalog:
        hit = _Table(catalog, plan_space(basis, gpu_model, domain=domain, catalog=catalog).candidates)
        with _LOCK:
            _SPACES[key] = hit
    return hit


def _default(cands: tuple[Candidate, ...]) -> Candidate | None:
    """The plan a plain design is evaluated at: the given plan, else the one of least compute (``cands``' first)."""
    return next((c for c in cands if c.given), cands[0] if cands else None)


def _by_label(cands: tuple[Candidate, ...]) -> dict[str, Candidate]:
    """``cands`` by label; the given plan wins a shared label (it may differ only in sequence parallelism)."""
    out: dict[str, Candidate] = {}
    for c in cands:
        if c.label not in out or c.given:
            out[c.label] = c
    return out


def _genes_of(c: Candidate) -> tuple:
    return tuple(getattr(c.plan, _ATTR[g]) for g in PLAN_GENES)


class JointSpace:
    """The design space (:class:`fabric.search.space.DesignSpace`) with the plan genes (module docstring)."""

    def __init__(self, design_space: DesignSpace, basis: PlanBasis):
        self.inner = design_space
        self.basis = basis
        self.plans: dict[str, tuple[Candidate, ...]] = {}
        for gpu in design_space.systems:
            dom = design_space.system_fields(gpu).get("scale_up_size") or design_space.catalog.gpu(gpu).host_gpus
            cands = _table(basis, gpu, dom, design_space.catalog).cands
            if not cands:
                raise FabricError(f"no plan of {basis.model.name} on {basis.gpus:,} GPUs fits {gpu} (its memory "
                                  f"or its scale-up domain); fabric plans says why")
            self.plans[gpu] = cands
        every = [c for cs in self.plans.values() for c in cs]
        self.plan_genes = tuple(Gene(g, tuple(sorted({getattr(c.plan, _ATTR[g]) for c in every},
                                                     key=lambda v: (str(type(v)), v)))) for g in PLAN_GENES)
        self.genes = tuple(design_space.genes) + self.plan_genes
        self.names = tuple(g.name for g in self.genes)
        self.n_design = design_space.n_var
        self.upper = np.array([len(g.choices) - 1 for g in self.genes], dtype=np.int64)
        self._by_genes = {gpu: {} for gpu in self.plans}
        for gpu, cs in self.plans.items():
            for c in cs:       # the given plan wins a tie of genes (it may differ in chunks or ZeRO)
                k = _genes_of(c)
                if k not in self._by_genes[gpu] or c.given:
                    self._by_genes[gpu][k] = c
        self._by_label = {gpu: _by_label(cs) for gpu, cs in self.plans.items()}
        self.defaults = {gpu: _default(cs) for gpu, cs in self.plans.items()}

    def __getattr__(self, name):          # everything else is the design space's
        return getattr(self.inner, name)

    @property
    def n_var(self) -> int:
        return len(self.genes)

    @property
    def size(self) -> int:
        return int(np.prod(self.upper + 1, dtype=object))

    def gene(self, name: str) -> Gene:
        return self.genes[self.names.index(name)]

    def values(self, x) -> dict:
        return {g.name: g.choices[int(i)] for g, i in zip(self.genes, x)}

    def candidate(self, design) -> Candidate:
        """The plan ``design`` is evaluated at: its own (a PlannedDesign) or its system's default plan."""
        label = getattr(design, "plan", "")
        if not label:
            return self.defaults[design.gpu_model]
        table = self._by_label[design.gpu_model]
        if label not in table:
            raise FabricError(f"plan {label!r} is not a plan of {design.gpu_model}")
        return table[label]

    def _nearest(self, gpu: str, want: tuple) -> Candidate:
        idx = [{v: i for i, v in enumerate(g.choices)} for g in self.plan_genes]

        def steps(c):
            return sum(abs(ix[a] - ix[b]) for ix, a, b in zip(idx, _genes_of(c), want))

        return min(self.plans[gpu], key=lambda c: (steps(c), c.compute_s, c.label))

    def decode(self, x) -> tuple[Design, tuple[str, ...]]:
        """The design of genome ``x`` at its plan (a PlannedDesign; the plain design at the default plan)."""
        x = np.asarray(x, dtype=np.int64)
        design, repairs = self.inner.decode(x[:self.n_design])
        want = tuple(g.choices[int(i)] for g, i in zip(self.plan_genes, x[self.n_design:]))
        cand = self._by_genes[design.gpu_model].get(want)
        if cand is None:
            cand = self._nearest(design.gpu_model, want)
            asked = ", ".join(f"{n} {v}" for n, v in zip(("TP", "CP", "PP", "EP", "micro-batch", "order"), want))
            repairs = tuple(repairs) + (f"plan genes {asked} -> {cand.label} (the nearest plan that exists on "
                                        f"{design.gpu_model})",)
        if cand is self.defaults[design.gpu_model]:
            return design, tuple(repairs)
        kw = {f.name: getattr(design, f.name) for f in fields(Design)}
        return PlannedDesign(**kw, plan=cand.label), tuple(repairs)

    def encode(self, design) -> np.ndarray | None:
        d = design.plain() if isinstance(design, PlannedDesign) else design
        head = self.inner.encode(d)
        if head is None or design.gpu_model not in self.plans:
            return None
        genes = _genes_of(self.candidate(design))
        tail = [g.choices.index(v) for g, v in zip(self.plan_genes, genes)]
        return np.concatenate([head, np.array(tail, dtype=np.int64)])

    repair = DesignSpace.repair        # decode, then encode the repaired (design, plan): the same rule

    def enumerate(self):
        """Every distinct (design, plan) genome: each distinct design at each plan of its GPU system."""
        seen = set()
        for x in itertools.product(*[range(len(g.choices)) for g in self.inner.genes]):
            head = self.inner.repair(np.array(x))
            k = tuple(head.tolist())
            if k in seen:
                continue
            seen.add(k)
            design, _ = self.inner.decode(head)
            for c in self.plans.get(design.gpu_model, ()):
                tail = [g.choices.index(v) for g, v in zip(self.plan_genes, _genes_of(c))]
                if self._by_genes[design.gpu_model][_genes_of(c)] is c:
                    yield np.concatenate([head, np.array(tail, dtype=np.int64)])


@dataclass(frozen=True)
class JointObjective:
    """A training job whose plan is part of the genome (module docstring)."""

    basis: PlanBasis
    mode: str = "joint"

    @property
    def jobs(self):
        if self.basis.given is None:
            raise FabricError("a plan search needs the workload's own plan (a workload or a preset)")
        return plan_workload(self.basis, self.basis.given).jobs

    @property
    def name(self) -> str:
        return f"{self.basis.job_name} with the plan in the genome"

    @property
    def evaluations_per_design(self) -> int:
        return 1

    def key(self) -> str:
        return hashlib.sha1(json.dumps([self.mode, self.basis.key]).encode()).hexdigest()[:16]

    def design_space(self, constraints, catalog=None, *, serving: bool | None = None) -> JointSpace:
        """The joint space of ``constraints``' design space and this job's plans."""
        return JointSpace(DesignSpace(constraints, catalog, self, serving=serving), self.basis)

    def evaluate_record(self, design, scenario, seed, samples, catalog, constraints, genome=None, repairs=(),
                        transport_overrides=None) -> dict:
        """The record of ``design`` at its plan (a PlannedDesign's, else the default plan), with the plan columns
        (:data:`fabric.search.plan_space.inner.PLAN_COLUMNS`; the given plan's figures when it is the given plan, else filled
        for the front by :meth:`annotate_front`)."""
        from fabric.search.records import design_key, evaluate_record

        cand = self._candidate(design, catalog)
        plain = _plain(design)        # evaluated as the plain design, so that its plans share ``reuse``
        rec = evaluate_record(plain, plan_workload(self.basis, cand.plan), scenario, seed, samples, catalog,
                              constraints, genome=genome, repairs=repairs, transport_overrides=transport_overrides,
                              reuse=_reuse_for(plain))
        rec["key"] = design_key(design)        # a design at two plans is two records
        if not rec["buildable"]:
            return {**rec, **dict.fromkeys(PLAN_COLUMNS), "plan": ""}
        out = {**rec, **plan_record_fields(self.basis, cand), "plan_next": [], "given_plan": "",
               "given_plan_p99_s": None, "given_plan_slowdown": None}
        if cand.given:
            out.update(given_plan=cand.label, given_plan_p99_s=rec["p99_s"], given_plan_slowdown=0.0)
        return out

    def _candidate(self, design, catalog) -> Candidate:
        """The plan ``design`` is evaluated at (JointSpace.candidate's rule, without the space)."""
        table = _table(self.basis, design.gpu_model, design.domain_size, catalog)
        label = getattr(design, "plan", "")
        cand = table.by_label.get(label) if label else table.default
        if cand is None:
            raise FabricError(f"design {design.name!r}: plan {label or '(default)'!r} is not a plan of "
                              f"{design.gpu_model} with {design.domain_size}-GPU scale-up domains")
        return cand

    def annotate_front(self, front: list[dict], space, *, scenario, seed: int, samples: int, catalog,
                       overrides=None) -> None:
        """Fill ``given_plan``, ``given_plan_p99_s`` and ``given_plan_slowdown`` of the front's records at another
        plan by evaluating each design at the given plan (in place; a design the given plan does not fit is left
        without them)."""
        from fabric.plans.best import evaluate_plan

        for rec in front:
            if rec.get("genome") is None or not rec.get("plan") or rec.get("given_plan_p99_s") is not None:
                continue
            design, _ = space.decode(rec["genome"])
            given = next((c for c in space.plans.get(design.gpu_model, ()) if c.given), None)
            if given is None:
                continue
            r = evaluate_plan(_plain(design), self.basis, given, scenario=scenario, seed=seed, samples=samples,
                              catalog=catalog, transport_overrides=overrides)
            rec.update(given_plan=given.label, given_plan_p99_s=r.p99_s, given_plan_slowdown=r.p99_s / rec["p99_s"] - 1)

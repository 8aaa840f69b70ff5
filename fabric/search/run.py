"""NSGA-II over the design space (pymoo), seeded with the human baselines; exhaustive enumeration; progress.

The loop is driven through pymoo's ask/tell so that the caller gets a callback per generation (evaluations,
current front, hypervolume), can cancel (a ``threading.Event``), and can stop on an evaluation or time budget.
State is saved as JSON after every generation (population, random-generator state, every record) so an
interrupted search resumes where it stopped. Records are cached by (design, workload, scenario, seed, samples):
a revisited design costs nothing and counts no evaluation.

Objectives: network capex and p99 step time of the primary job (power as an optional third). Constraints as
pymoo ``G`` (<= 0 feasible): buildable, budget, power, cable count, radix, p99 target, each normalised.
Hypervolume is computed on objectives normalised by the first baseline's (the fat tree's) values, against a
reference point of 1.1 x the worst feasible values of the first generation (fixed for the run). The search stops
when it has converged (fabric.search.convergence: the hypervolume's gain over the last generations below a stated
threshold) or on its budget, and says which; at the end the recommended design's one-gene neighbourhood is
evaluated until no neighbour dominates it, after a converged search's front is made 1-opt
(fabric.search.neighbourhood).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.mutation import Mutation
from pymoo.core.population import Population
from pymoo.core.problem import Problem
from pymoo.core.termination import NoTermination
from pymoo.core.repair import Repair
from pymoo.operators.crossover.ux import UX

from fabric.design.schema import LEGACY_PLACEMENTS
from fabric.errors import FabricError
from fabric.evaluate.scenario import Scenario
from fabric.limits import current_limits
from fabric.search.baselines import baseline_designs
from fabric.search.constraints import Constraints
from fabric.search.prepare import has_serving_jobs
from fabric.search.convergence import DEFAULT_RULE, STALE_GENERATIONS, ConvergenceRule
from fabric.search.neighbourhood import check_recommendation
from fabric.search.niches import shape_niches_for
from fabric.search.records import INFEASIBLE_P99, EvaluationCache, design_key, workload_key
from fabric.search.records import record_objectives
from fabric.search.result import SearchResult, hypervolume, pareto_mask
from fabric.search.runners import InProcessRunner
from fabric.search.space import DesignSpace
from fabric.search.ties import front_order, plain_variants

__all__ = ["SearchProgress", "run_search", "continue_search", "exhaustive_search", "random_search", "GLOBAL_CACHE"]

#: Records shared by every search in this process (the dashboard benefits across reruns).
GLOBAL_CACHE = EvaluationCache()
_CONSTRAINT_ORDER = ("buildable", "budget", "power", "cables", "radix", "p99_target", "partition", "p99_failure",
                     "inference_ttft", "inference_tpot", "inference_slo", "rack_power", "facility_power", "gpus_lost",
                     "p99_failure_slowdown")


@dataclass(frozen=True)
class SearchProgress:
    """What the per-generation callback is told."""

    generation: int
    evaluations: int
    budget_evals: int | None
    elapsed_s: float
    hypervolume: float
    front: list
    baselines: list
    done: bool = False


class _ChoiceMutation(Mutation):
    """Random reset: each gene takes a new random choice with probability 1/n_var (at least one gene changes).

    With ``space`` holding designs of regions (:mod:`fabric.search.region_genes`), a design of regions whose
    region split changes also redraws, half of the time, one of its regions' leaf ratios: a split that moves a job
    to the other region usually wants that region's ratio changed too (the job brings or takes its traffic), a
    move of two genes at once that independent resets make about once in a search (docs/regions.md)."""

    def __init__(self, space=None, **kwargs):
        super().__init__(**kwargs)
        self._linked = None
        if space is not None and "region_split" in space.names:
            names = space.names
            fam = space.genes[names.index("family")]
            if "regions" in fam.choices:
                self._linked = (names.index("family"), fam.choices.index("regions"), names.index("region_split"),
                                names.index("region_a_oversub"), names.index("region_b_oversub"))

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        X = X.copy()
        n, m = X.shape
        hit = random_state.random((n, m)) < 1.0 / m
        force = random_state.integers(0, m, n)
        hit[np.arange(n), force] = True
        new = random_state.integers(0, problem.xu + 1, size=(n, m))
        if self._linked is not None:
            fam, regions, split, ra, rb = self._linked
            link = random_state.random(n) < 0.5
            which = np.where(random_state.random(n) < 0.5, ra, rb)
            rows = np.flatnonzero(link & hit[:, split] & (np.where(hit[:, fam], new[:, fam], X[:, fam]) == regions)
                                  & (new[:, split] != X[:, split]))
            hit[rows, which[rows]] = True
        return np.where(hit, new, X)


class _Canonical(Repair):
    def __init__(self, space):
        super().__init__()
        self.space = space

    def _do(self, problem, X, **kwargs):
        return np.array([self.space.repair(np.rint(x).astype(np.int64)) for x in X])


class _Problem(Problem):
    def __init__(self, space, evaluate_genomes, n_obj, n_constr):
        super().__init__(n_var=space.n_var, n_obj=len(n_obj), n_ieq_constr=n_constr, xl=np.zeros(space.n_var),
                         xu=space.upper.astype(float), vtype=int)
        self.evaluate_genomes = evaluate_genomes

    def _evaluate(self, X, out, *args, **kwargs):
        recs = self.evaluate_genomes(np.rint(X).astype(np.int64))
        out["F"] = np.array([_objectives(r, self.n_obj) for r in recs])
        out["G"] = np.array([_constraint_vector(r) for r in recs])


#: Record column each serving objective (Constraints.inference_objective) minimizes.
_INFERENCE_OBJECTIVE_COLUMNS = {"ttft_p99": "serving_ttft_p99_s", "tpot_p99": "serving_tpot_p99_s",
                                "slo_attainment": "serving_slo_miss"}


def _objective_keys(constraints: Constraints) -> tuple[str, ...]:
    """The record columns the search minimizes, in order: cost, p99 step, [power], [a serving latency]."""
    keys = ["cost_usd", "p99_s"] + (["power_w"] if constraints.optimize_power else [])
    if constraints.inference_objective is not None:
        keys.append(_INFERENCE_OBJECTIVE_COLUMNS[constraints.inference_objective])
    return tuple(keys)


def _objectives(rec: dict, n_obj) -> list[float]:
    return record_objectives(rec, n_obj)


def _constraint_vector(rec: dict) -> list[float]:
    v = rec["violations"]
    return [v.get(k, -1.0) for k in _CONSTRAINT_ORDER]


def _judged(rec: dict, constraints) -> dict:
    """A copy of a record with its violations and feasibility under ``constraints``."""
    from fabric.search.records import violations

    from fabric.search.records import objective_cost, objective_p99

    v = violations(rec, constraints)
    out = {**rec, "violations": v, "feasible": all(x <= 0 for x in v.values())}
    out["objective_cost"] = objective_cost(out, constraints)
    out["objective_p99"] = objective_p99(out, constraints)
    return out


class _Session:
    """Evaluation bookkeeping shared by the search modes."""

    def __init__(self, space, workload, scenario, seed, samples, runner, catalog, constraints, overrides=None):
        self.space, self.workload, self.scenario = space, workload, scenario
        self.overrides = dict(overrides or {})
        self.seed, self.samples, self.runner = seed, samples, runner
        self.catalog, self.constraints = catalog, constraints
        self.wl_key = workload_key(workload)
        # what the cache key adds to the design: the same for every evaluation of this search
        self._context_key = (self.wl_key, json.dumps(scenario.to_dict(), sort_keys=True), seed, samples, id(catalog),
                             json.dumps(self.overrides, sort_keys=True),
                             json.dumps(constraints.economics().to_dict(), sort_keys=True),
                             constraints.needs_failure_p99)
        self.records: dict[str, dict] = {}
        self.outside: set[str] = set()      # keys of designs the constraints do not allow (the human baselines)
        self.cache_hits = 0

    @property
    def evaluations(self) -> int:
        """Distinct designs this search has looked at (a cache hit still counts: results must not depend on
        what an earlier search left in the cache; the cache only saves the compute)."""
        return len(self.records)


    def evaluate_designs(self, designs_meta: list) -> list[dict]:
        out: list = [None] * len(designs_meta)
        todo, todo_keys, where = [], [], {}
        for i, (d, g, r) in enumerate(designs_meta):
            dkey = design_key(d)
            seen = self.records.get(dkey)             # this search has it (or its saved state had it)
            if seen is not None:
                out[i] = seen
                self.cache_hits += 1
                continue
            ck = (dkey,) + self._context_key
            rec = GLOBAL_CACHE.get(ck)
            if rec is not None:
                rec = _judged(rec, self.constraints)    # feasibility is this search's, not the cached one's
                out[i] = rec
                self.records.setdefault(rec["key"], rec)
                self.cache_hits += 1
                continue
            if ck in where:
                where[ck].append(i)
                continue
            where[ck] = [i]
            todo.append((d, g, r))
            todo_keys.append(ck)
        if todo:
            for rec, ck in zip(self._map_by_cabling(todo), todo_keys):
                GLOBAL_CACHE.put(ck, rec)
                self.records.setdefault(rec["key"], rec)
                for i in where[ck]:
                    out[i] = rec
        return out

    def _map_by_cabling(self, todo: list) -> list[dict]:
        """The runner's records of ``todo``, evaluated grouped by cabling (designs of one cabling one after the
        other, so the fabric, its model and its bill of materials built for the first serve the rest before the
        caches, a few fabrics at 100K+ GPUs, drop them); returned in ``todo``'s order. Records are pure functions
        of the design, so the order changes nothing but the time."""
        from fabric.topology.build import cabling_key

        order = sorted(range(len(todo)), key=lambda i: cabling_key(todo[i][0]))
        done = self.runner.map([todo[i] for i in order])
        out: list = [None] * len(todo)
        for i, rec in zip(order, done):
            out[i] = rec
        return out

    def evaluate_genomes(self, X) -> list[dict]:
        metas = []
        for x in X:
            d, repairs = self.space.decode(x)
            metas.append((d, self.space.encode(d), repairs))
        return self.evaluate_designs(metas)


def open_session(workload, constraints: Constraints, *, seed: int, samples: int, scenario=None, runner=None,
                 catalog=None, overrides: dict | None = None) -> _Session:
    """The evaluation session of one search over ``constraints``' space: checks the serving limits, fixes the
    robust references and starts ``runner`` (an in-process one by default); close it with ``session.runner``."""
    check_inference_limits(workload, constraints)
    space = _space_for(workload, constraints, catalog)
    scenario = scenario or Scenario()
    runner = runner or InProcessRunner()
    workload = _with_robust_references(workload, space, seed, samples, overrides, scenario)
    session = _Session(space, workload, scenario, seed, samples, runner, space.catalog, constraints, overrides)
    runner.start(workload, scenario, seed, samples, space.catalog, constraints, overrides)
    return session


def _space_for(workload, constraints: Constraints, catalog):
    """The design space of ``constraints``, or the space an objective brings (fabric.search.prepare.space_for)."""
    from fabric.search.prepare import space_for

    return space_for(workload, constraints, catalog)


def _baseline_records(session, space, bases) -> list[dict]:
    """Evaluate the human baselines; those the constraints do not allow are reported but kept off the front."""
    recs = session.evaluate_designs([(d, space.encode(d), ()) for d in bases])
    out = []
    for r, d in zip(recs, bases):
        inside = space.encode(d) is not None
        if not inside:
            session.outside.add(r["key"])
        out.append(dict(r, design=d.name, in_space=inside))
    return out


def _feasible_front(records: list[dict], n_obj: int, outside=frozenset()) -> list[dict]:
    feas = [r for r in records if r["feasible"] and r["key"] not in outside]
    if not feas:
        return []
    feas = front_order(feas, n_obj)       # ties: the plainest first, whatever the order of evaluation
    F = np.array([_objectives(r, n_obj) for r in feas])
    return [r for r, k in zip(feas, pareto_mask(F)) if k]


def _infeasible_reason(records: list[dict], constraints: Constraints) -> str:
    if not records:
        return "nothing was evaluated"
    built = [r for r in records if r["buildable"]]
    if not built:
        errors = sorted({r["error"] for r in records})
        return f"no design in the space can be built ({errors[0]})"
    parts = []
    c = constraints
    if c.budget_usd is not None:
        cheapest = min(r["cost_usd"] for r in built)
        if cheapest > c.budget_usd:
            parts.append(f"the cheapest buildable design costs ${cheapest:,.0f}, above the budget ${c.budget_usd:,.0f}")
    if c.power_w is not None:
        low = min(r["power_w"] for r in built)
        if low > c.power_w:
            parts.append(f"the lowest network power is {low / 1e3:,.1f} kW, above the limit {c.power_w / 1e3:,.1f} kW")
    if c.cable_count is not None:
        low = min(r["cable_count"] for r in built)
        if low > c.cable_count:
            parts.append(f"the fewest cables any design needs is {low:,}, above the limit {c.cable_count:,}")
    if c.max_radix is not None:
        low = min(r["radix"] for r in built)
        if low > c.max_radix:
            parts.append(f"every allowed switch has radix {low} or more at its link speed, above the maximum "
                         f"{c.max_radix}")
    if c.p99_target_s is not None:
        best = min(r["p99_s"] for r in built)
        if best > c.p99_target_s:
            parts.append(f"the fastest design's p99 is {best * 1e3:,.1f} ms, above the target "
                         f"{c.p99_target_s * 1e3:,.1f} ms")
    if c.survive_single_failure and not any(r.get("survives_single_failure", not r.get("partitions_on_single_failure"))
                                          for r in built):
        parts.append("no buildable design survives every single switch or cable failure (a failure partitions it, "
                     "or takes more than half of the servers out: a single spine, one switch per rail, one switch "
                     "for the whole cluster); allow more switches, two NICs or two planes per GPU, or set "
                     "survive_single_failure false")
    if c.rack_power_w is not None:
        low = min(r.get("max_rack_power_w", float("inf")) for r in built)
        if low > c.rack_power_w:
            parts.append(f"every buildable design has a rack drawing {low / 1e3:,.1f} kW or more, above the rack "
                         f"limit {c.rack_power_w / 1e3:,.1f} kW")
    if c.facility_power_w is not None:
        low = min(r.get("facility_power_w", float("inf")) for r in built)
        if low > c.facility_power_w:
            parts.append(f"the lowest facility power is {low / 1e6:,.2f} MW, above the limit "
                         f"{c.facility_power_w / 1e6:,.2f} MW")
    if c.max_p99_under_failure_s is not None:
        best = min(r.get("p99_failure_s", float("inf")) for r in built)
        if best > c.max_p99_under_failure_s:
            parts.append(f"the best p99 under the worst single failure is {best * 1e3:,.1f} ms, above the limit "
                         f"{c.max_p99_under_failure_s * 1e3:,.1f} ms")
    limit = c.gpus_lost_limit()
    if limit is not None:
        low = min(r.get("gpus_lost_on_worst_switch_failure", c.gpus) for r in built)
        if low > limit:
            parts.append(f"every buildable design loses {low:,} GPUs or more to its worst single switch failure, above "
                         f"the limit of {limit:,.0f} (a top-of-rack leaf takes its servers out: allow rail-optimized "
                         f"or multi-plane designs, or smaller leaves)")
    if c.max_p99_slowdown_under_failure is not None:
        best = min(r.get("p99_failure_s", float("inf")) / r["p99_s"] - 1.0 for r in built)
        if best > c.max_p99_slowdown_under_failure:
            parts.append(f"the least slowdown under the worst single failure is {best:+.1%}, above the limit "
                         f"+{c.max_p99_slowdown_under_failure:.1%}")
    for key, col, what in (("inference_ttft_p99_s", "serving_ttft_p99_s", "p99 time to first token"),
                           ("inference_tpot_p99_s", "serving_tpot_p99_s", "p99 time per output token")):
        limit = getattr(c, key)
        if limit is not None:
            best = min(r.get(col, float("inf")) for r in built)
            if best > limit:
                parts.append(f"the best serving {what} is {best * 1e3:,.1f} ms, above the limit {limit * 1e3:,.1f} ms"
                             + (" (or the service is overloaded)" if best >= 1e8 else ""))
    if c.inference_slo_attainment is not None:
        best = max(r.get("serving_slo_attainment", 0.0) for r in built)
        if best < c.inference_slo_attainment:
            parts.append(f"the best serving SLO attainment is {best:.1%}, below the required "
                         f"{c.inference_slo_attainment:.1%}")
    if not parts:
        parts.append("no single design meets all limits at once (each limit alone can be met); relax one of them")
    return "; ".join(parts)


class _HV:
    def __init__(self, n_obj: int, reference=None, normalisation=None):
        self.n_obj = n_obj
        self.ref = None if reference is None else np.asarray(reference, float)
        self.scale = None if normalisation is None else np.asarray(normalisation, float)

    def fix(self, baselines: list[dict], first_gen: list[dict]):
        if self.scale is None:
            src = [r for r in baselines if r["buildable"]] or [r for r in first_gen if r["buildable"]]
            width = len(self.n_obj) if isinstance(self.n_obj, tuple) else self.n_obj
            self.scale = np.array(_objectives(src[0], self.n_obj)) if src else np.ones(width)
            self.scale = np.where(self.scale > 0, self.scale, 1.0)     # e.g. a baseline missing no serving SLO
        if self.ref is None:
            feas = [r for r in first_gen + baselines if r["feasible"]]
            if feas:
                F = np.array([_objectives(r, self.n_obj) for r in feas]) / self.scale
                self.ref = 1.1 * F.max(axis=0)

    def __call__(self, front: list[dict]) -> float:
        if not front or self.ref is None:
            return 0.0
        F = np.array([_objectives(r, self.n_obj) for r in front]) / self.scale
        return hypervolume(F, self.ref)


def _with_robust_references(workload, space, seed, samples, overrides, scenario=None):
    """The objective prepared for ``space`` (fabric.search.prepare.prepare_objective: a robust objective's
    references, a plan objective's shortlist; other workloads unchanged)."""
    from fabric.search.prepare import prepare_objective

    return prepare_objective(workload, space, seed=seed, samples=samples, overrides=overrides, scenario=scenario)


def _check_budget(budget_evals, budget_seconds):
    limits = current_limits()
    if budget_evals is None and budget_seconds is None:
        raise FabricError("give an evaluation budget (--budget-evals) or a time budget (--budget-seconds)")
    if budget_evals is not None and (isinstance(budget_evals, bool) or not isinstance(budget_evals, int)
                                     or budget_evals < 1):
        raise FabricError(f"the evaluation budget must be a positive whole number, got {budget_evals!r}")
    if budget_evals is not None and budget_evals > limits.max_search_evaluations:
        raise FabricError(f"an evaluation budget of {budget_evals:,} exceeds the limit max_search_evaluations = "
                          f"{limits.max_search_evaluations:,} (set FABRIC_LIMIT_MAX_SEARCH_EVALUATIONS to raise it)")
    if budget_seconds is not None and not (0 < budget_seconds <= 7 * 24 * 3600):
        raise FabricError(f"the time budget must be between 0 and one week, got {budget_seconds!r} s")


def check_inference_limits(workload, constraints: Constraints) -> None:
    """A clear error when the constraints limit a serving job's latency that the workload does not have."""
    if not constraints.has_inference_limits:
        return
    if not has_serving_jobs(workload):
        raise FabricError("constraints inference_*: the workload has no serving job (an inference job with a "
                          "request structure, e.g. fabric synth --preset llama3-70b-online); drop the inference "
                          "limits or add one")


def run_search(workload, constraints: Constraints, *, budget_evals: int | None = 3000,
               budget_seconds: float | None = None, seed: int = 0, pop_size: int = 40, runner=None,
               scenario: Scenario | None = None, samples: int = 256, catalog=None, callback=None, cancel=None,
               state_path: str | Path | None = None, reference_point=None, normalisation=None,
               seed_baselines: bool = True, transport_overrides: dict | None = None,
               eval_seed: int | None = None, convergence: ConvergenceRule = DEFAULT_RULE,
               stop_on_convergence: bool = True, check_neighbourhood: bool = True) -> SearchResult:
    """NSGA-II search for the Pareto front of cost vs p99 step time (see the module docstring).

    ``seed`` drives the genetic operators and, unless ``eval_seed`` is given, the evaluations' Monte Carlo too
    (a fixed ``eval_seed`` compares searches of different seeds on identical evaluations).

    The search stops when ``convergence`` holds (fabric.search.convergence; ``stop_on_convergence=False`` runs to
    the budget and only reports it), when 10 generations bring no new design, or on a budget; the result says
    whether it converged. At the end (not cancelled) the recommended design's one-gene neighbourhood is evaluated
    until no neighbour dominates it, after making a converged search's whole front 1-opt with at most as many new
    evaluations again as the search spent (at least 200) (fabric.search.neighbourhood; ``check_neighbourhood=False``
    leaves both out, for comparisons at an equal budget).
    """
    ev_seed = seed if eval_seed is None else eval_seed
    _check_budget(budget_evals, budget_seconds)
    state = _load_state(state_path)
    t0 = time.perf_counter()
    session = open_session(workload, constraints, seed=ev_seed, samples=samples, scenario=scenario, runner=runner,
                           catalog=catalog, overrides=transport_overrides)
    space, runner, n_obj = session.space, session.runner, _objective_keys(constraints)
    try:
        bases = baseline_designs(space)
        base_recs = _baseline_records(session, space, bases)
        hv = _HV(n_obj, reference_point, normalisation)
        hv_history: list = []
        generation = 0
        if state:
            for rec in state["records"]:
                if rec.get("placement") in LEGACY_PLACEMENTS:
                    continue        # measured on a fragmented cluster: a scenario now, not a design of the space
                session.records[rec["key"]] = rec
            hv_history = state["hv_history"]
            generation = state["generation"]
            hv.ref = np.asarray(state["reference_point"], float)
            hv.scale = np.asarray(state["normalisation"], float)
            initial = _saved_population(state, space, state_path)
        else:
            rng = np.random.default_rng(seed)
            seeds = [space.encode(d) for d in bases] if seed_baselines else []
            seeds = [s for s in seeds if s is not None]
            rand = [space.repair(rng.integers(0, space.upper + 1)) for _ in range(max(0, pop_size - len(seeds)))]
            initial = np.array(seeds + rand, dtype=np.int64)
        problem = _Problem(space, session.evaluate_genomes, n_obj, len(_CONSTRAINT_ORDER))
        niches = shape_niches_for(space)    # designs of regions: every region split keeps a foothold
        algorithm = NSGA2(pop_size=pop_size, sampling=Population.new(X=initial), crossover=UX(prob=0.9),
                          mutation=_ChoiceMutation(space, prob=1.0), repair=_Canonical(space), eliminate_duplicates=True,
                          **({"survival": niches} if niches is not None else {}))
        # the loop below decides when to stop; pymoo's own convergence test is state a resume could not restore
        algorithm.setup(problem, termination=NoTermination(), seed=seed, verbose=False)
        if state:
            _restore_population(algorithm, problem, initial, state)
        stopped, converged = "budget reached", False
        stale = int(state.get("stale_generations", 0)) if state else 0
        while True:
            if stop_on_convergence and convergence.met(hv_history):    # (also a resumed state that had converged)
                stopped, converged = f"converged ({convergence.where(hv_history)})", True
                break
            if cancel is not None and cancel.is_set():
                stopped = "cancelled"
                break
            if budget_evals is not None and session.evaluations >= budget_evals:
                break
            if budget_seconds is not None and time.perf_counter() - t0 >= budget_seconds:
                stopped = "time budget reached"
                break
            before = session.evaluations
            pop = algorithm.ask()
            algorithm.evaluator.eval(problem, pop)
            algorithm.tell(infills=pop)
            generation += 1
            stale = stale + 1 if session.evaluations == before else 0
            all_recs = list(session.records.values())
            if hv.ref is None:
                hv.fix(base_recs, all_recs)
            front = _feasible_front(all_recs, n_obj, session.outside)
            hv_history.append({"generation": generation, "evaluations": session.evaluations,
                               "hypervolume": hv(front), "elapsed_s": time.perf_counter() - t0})
            _save_state(state_path, algorithm, generation, session, hv, hv_history, seed, stale)
            if callback is not None:
                callback(SearchProgress(generation, session.evaluations, budget_evals, time.perf_counter() - t0,
                                        hv_history[-1]["hypervolume"], front, base_recs))
            if stale >= STALE_GENERATIONS:
                stopped, converged = f"converged (no new designs in {STALE_GENERATIONS} generations)", True
                break
        if not converged and convergence.met(hv_history):
            converged = True        # (met on the last generation a budget ended, or not stopped on)
        if stopped != "cancelled" and not converged:
            stopped += f", not converged ({convergence.where(hv_history)})"
        check = None
        if stopped != "cancelled":      # the tie rule's choice evaluated, so identical searches recommend alike
            _evaluate_plain_variants(session, n_obj)
            base_recs = _tuned(session, space, bases, base_recs)
            if check_neighbourhood:     # a converged search's whole front is made 1-opt first, within a cap
                check = _check_recommendation(session, base_recs, n_obj, constraints,
                                              front_evaluations=max(200, session.evaluations) if converged else 0)
                if check.evaluated:     # the front the check left, as one more point of the history
                    front = _feasible_front(list(session.records.values()), n_obj, session.outside)
                    hv_history = hv_history + [{"generation": generation, "evaluations": session.evaluations,
                                                "hypervolume": hv(front), "elapsed_s": time.perf_counter() - t0,
                                                "neighbourhood_check": True}]
            # the front's and baselines' failure figures, on the workers while they are up (see _result)
            _prefetch_failure_figures(session, _feasible_front(list(session.records.values()), n_obj,
                                                               session.outside) + base_recs, bases)
    finally:
        runner.close()
    return _result(session, base_recs, hv, hv_history, generation, stopped, seed, n_obj, constraints, t0, bases,
                   converged=converged, rule=convergence.words, neighbourhood=check)


def _evaluate_plain_variants(session, n_obj) -> None:
    """Evaluate the plainest free policy of every front design's hardware not yet evaluated (fabric.search.ties)."""
    front = _feasible_front(list(session.records.values()), n_obj, session.outside)
    extra = plain_variants(front, session.space, set(session.records))
    if extra:
        session.evaluate_designs(extra)


def _check_recommendation(session, base_recs, n_obj, constraints, *, front_evaluations: int = 0):
    """The recommendation's one-gene neighbourhood evaluated until none dominates it, after making the front 1-opt
    with about ``front_evaluations`` new designs at most (fabric.search.neighbourhood); the plain variants of new
    front designs are evaluated after each round, so the tie rule sees them."""
    from fabric.search.recommend import recommend

    def front_of():
        return _feasible_front(list(session.records.values()), n_obj, session.outside)

    def pick(front):
        return recommend(front, base_recs, p99_target_s=constraints.p99_target_s).record

    return check_recommendation(session, front_of, pick, front_evaluations=front_evaluations,
                                after_round=lambda: _evaluate_plain_variants(session, n_obj))


def _tuned(session, space, bases, base_recs):
    """The baselines' records with their best free policy (fabric.search.tuned), the designs tried kept as records
    of the search; a baseline outside the space stays off the front, its tuned design too."""
    from fabric.search.tuned import tune_baselines

    before = session.evaluations
    out = tune_baselines(session, space, bases, base_recs)
    session.tuning_evaluations = session.evaluations - before
    for r in out:
        if r["key"] in session.outside and r.get("tuned_key"):
            session.outside.add(r["tuned_key"])
    return out


def _result(session, base_recs, hv, hv_history, generation, stopped, seed, n_obj, constraints, t0, bases=(), *,
            converged: bool = False, rule: str = "", neighbourhood=None):
    records = list(session.records.values())
    front = _feasible_front(records, n_obj, session.outside)
    records, front = _annotated(session, records, front)
    if stopped != "cancelled":
        records, front, base_recs = _with_failure_figures(session, records, front, base_recs, bases)
    objectives = n_obj if isinstance(n_obj, tuple) else ("cost_usd", "p99_s", "power_w")[:n_obj]
    res = SearchResult(
        records=records, baselines=base_recs, front=front, hv_history=hv_history,
        reference_point=[] if hv.ref is None else hv.ref.tolist(),
        normalisation=[] if hv.scale is None else hv.scale.tolist(), evaluations=session.evaluations,
        elapsed_s=time.perf_counter() - t0, generations=generation, stopped_because=stopped, seed=seed,
        objectives=objectives, cache_hits=session.cache_hits, constraints=constraints.to_dict(),
        converged=converged, convergence_rule=rule,
        neighbourhood={} if neighbourhood is None else neighbourhood.to_dict(),
        tuning_evaluations=getattr(session, "tuning_evaluations", 0))
    if not front:
        res.infeasible_reason = _infeasible_reason(records + base_recs, constraints)
    return res


def _with_failure_figures(session, records, front, base_recs, bases=()):
    """``records``, ``front`` and ``base_recs`` with the blast radius under the worst single failure
    (:data:`fabric.search.records.BLAST_COLUMNS`: the p99, its slowdown and the failure that sets it) on the front
    designs and the baselines, on copies, when the search did not evaluate it for every design
    (``Constraints.needs_failure_p99``). Each is the design's record made again with the failure figures through the
    search's own objective (a robust or plan objective combines them as it combines the p99), in this process:
    a front of ten designs costs about ten evaluations and their failures (docs/constraints.md)."""
    todo = [r for r in front + base_recs if r.get("buildable") and "p99_failure_s" not in r]
    if not todo:
        return records, front, base_recs
    done = dict(getattr(session, "failure_figures", None) or {})
    for key, args in _failure_tasks(session, todo, bases, skip=done):
        fields = failure_record_fields(*args)
        if fields is not None:
            done[key] = fields
    upd = lambda rows: [dict(r, **done[r.get("key")]) if r.get("key") in done else r for r in rows]  # noqa: E731
    return upd(records), upd(front), upd(base_recs)


def _failure_tasks(session, rows, bases, *, skip=()) -> list:
    """``(key, args of failure_record_fields)`` for each distinct buildable design of ``rows`` without its failure
    figures (and not in ``skip``)."""
    from dataclasses import replace

    every = replace(session.constraints, failure_p99_for_every_design=True)
    by_key = {design_key(d): d for d in bases}
    out, seen = [], set(skip)
    for r in rows:
        key = r.get("key")
        if key in seen or not r.get("buildable") or "p99_failure_s" in r:
            continue
        seen.add(key)
        design = by_key.get(key)
        if design is None and r.get("genome") is not None:
            design, _ = session.space.decode(np.asarray(r["genome"], dtype=np.int64))
        if design is None:
            continue
        out.append((key, (design, session.workload, session.scenario, session.seed, session.samples,
                          session.catalog, every, r.get("genome"), session.overrides, r.get("p99_s"))))
    return out


def failure_record_fields(design, workload, scenario, seed, samples, catalog, constraints, genome, overrides,
                          healthy_p99_s=None):
    """The failure figures of ``design``'s record (BLAST_COLUMNS' p99 under failure, its slowdown, the failure that
    sets it), made by the search's own record function with ``constraints`` asking for them; None when the design
    cannot be evaluated. Module-level: the workers run it. ``healthy_p99_s``: the record's p99 step; for a plain
    workload the failure figures are then made from it without evaluating the healthy design again (the same
    figures: the record function passes the same p99 on); a robust or plan objective makes its record itself."""
    from fabric.search.records import evaluate_record, failure_fields

    if healthy_p99_s is not None and not hasattr(workload, "evaluate_record"):
        try:
            return failure_fields(design, workload, scenario, seed, samples, catalog, overrides,
                                  float(healthy_p99_s))
        except FabricError:
            return None
    try:
        full = evaluate_record(design, workload, scenario, seed, samples, catalog, constraints, genome=genome,
                               transport_overrides=overrides)
    except FabricError:
        return None
    return {k: full[k] for k in ("p99_failure_s", "p99_failure_slowdown", "worst_failure") if k in full}


def _prefetch_failure_figures(session, rows, bases) -> None:
    """The failure figures :func:`_with_failure_figures` will add to ``rows``, computed now on the runner's
    worker processes when it has them (one design per task; the same figures as in this process), kept on the
    session. Nothing when the search evaluates them for every design or the runner has no workers."""
    runner = session.runner
    if not hasattr(runner, "share_map") or getattr(runner, "workers", 1) < 2:
        return
    tasks = _failure_tasks(session, rows, bases)
    if len(tasks) < 2:
        return
    # the largest fabrics first (their failures take longest: up to 5x a small design's), so that the workers end
    # together instead of one waiting on a large baseline handed out last; the figures are kept by design key
    size = {r.get("key"): int(r.get("cable_count") or 0) for r in rows}
    tasks = sorted(tasks, key=lambda t: -size.get(t[0], 0))
    results = runner.share_map(failure_record_fields, [args for _, args in tasks], share=runner.share)
    session.failure_figures = {key: r for (key, _), r in zip(tasks, results) if r is not None}


def _annotated(session, records, front):
    """``records`` and ``front`` with what an objective adds to the front records after a search (joint mode: the
    given plan's p99, fabric.search.plan_space.joint), on copies: the cached records stay as evaluated."""
    if not front or not hasattr(session.workload, "annotate_front"):
        return records, front
    front = [dict(r) for r in front]
    session.workload.annotate_front(front, session.space, scenario=session.scenario, seed=session.seed,
                                    samples=session.samples, catalog=session.catalog, overrides=session.overrides)
    done = {r["key"]: r for r in front}
    return [done.get(r["key"], r) for r in records], front


def exhaustive_search(workload, constraints: Constraints, *, seed: int = 0, runner=None, scenario=None,
                      samples: int = 256, catalog=None, callback=None, max_designs: int = 200_000,
                      transport_overrides: dict | None = None) -> SearchResult:
    """Evaluate every distinct design of the space (the ground truth for small spaces)."""
    check_inference_limits(workload, constraints)
    space = _space_for(workload, constraints, catalog)
    if space.size > 20 * max_designs:
        raise FabricError(f"the space has {space.size:,} genomes; exhaustive search is limited to about "
                          f"{max_designs:,} designs: narrow the constraints")
    scenario = scenario or Scenario()
    runner = runner or InProcessRunner()
    n_obj = _objective_keys(constraints)
    workload = _with_robust_references(workload, space, seed, samples, transport_overrides, scenario)
    session = _Session(space, workload, scenario, seed, samples, runner, space.catalog, constraints,
                       transport_overrides)
    t0 = time.perf_counter()
    runner.start(workload, scenario, seed, samples, space.catalog, constraints, transport_overrides)
    try:
        bases = baseline_designs(space)
        base_recs = _baseline_records(session, space, bases)
        genomes = list(space.enumerate())
        if len(genomes) > max_designs:
            raise FabricError(f"{len(genomes):,} distinct designs exceed the exhaustive limit {max_designs:,}")
        step = 256
        for i in range(0, len(genomes), step):
            session.evaluate_genomes(genomes[i:i + step])
            if callback is not None:
                callback(SearchProgress(0, session.evaluations, len(genomes), time.perf_counter() - t0, 0.0, [],
                                        base_recs))
        base_recs = _tuned(session, space, bases, base_recs)
    finally:
        runner.close()
    hv = _HV(n_obj)
    hv.fix(base_recs, list(session.records.values()))
    front = _feasible_front(list(session.records.values()), n_obj, session.outside)
    hv_history = [{"generation": 0, "evaluations": session.evaluations, "hypervolume": hv(front),
                   "elapsed_s": time.perf_counter() - t0}]
    return _result(session, base_recs, hv, hv_history, 0, "exhaustive", seed, n_obj, constraints, t0, bases,
                   converged=True, rule="exhaustive: every design of the space evaluated")


def random_search(workload, constraints: Constraints, *, budget_evals: int, seed: int = 0, runner=None,
                  scenario=None, samples: int = 256, catalog=None, eval_seed: int | None = None) -> SearchResult:
    """Uniformly random distinct designs up to the budget (the baseline a genetic search must beat)."""
    ev_seed = seed if eval_seed is None else eval_seed
    t0 = time.perf_counter()
    session = open_session(workload, constraints, seed=ev_seed, samples=samples, scenario=scenario, runner=runner,
                           catalog=catalog)
    space, runner, n_obj = session.space, session.runner, _objective_keys(constraints)
    rng = np.random.default_rng(seed)
    try:
        tries = 0
        while session.evaluations < budget_evals and tries < 50 * budget_evals:
            x = space.repair(rng.integers(0, space.upper + 1))
            session.evaluate_genomes([x])
            tries += 1
    finally:
        runner.close()
    hv = _HV(n_obj)
    return _result(session, [], hv, [], 0, "budget reached", seed, n_obj, constraints, t0)


def _restore_population(algorithm, problem, X, state) -> None:
    """Put the algorithm where the saved generation left it: the population in its order with the ranks and
    crowding distances survival gave it, and the random generator's state, so that the resumed search makes the
    same choices as one that never stopped. (Letting pymoo initialise from the saved population instead would run
    a survival step the undisturbed search never ran, which draws random numbers and changes the crowding of the
    last front, so the fronts would part.)"""
    if "pop_rank" in state and "pop_crowding" in state:
        pop = Population.new(X=X)
        algorithm.evaluator.eval(problem, pop)      # the records are restored: nothing is evaluated again
        pop.set("rank", np.array([None if v is None else int(v) for v in state["pop_rank"]], dtype=object),
                "crowding", np.array([None if v is None else float(v) for v in state["pop_crowding"]], dtype=object))
        algorithm.pop, algorithm.off = pop, None
        algorithm.n_iter = int(state["generation"]) + 1
        algorithm.start_time = time.time()
        algorithm.is_initialized = True
    # else: a state saved before ranks were kept; pymoo initialises from the saved population (and re-ranks it)
    algorithm.random_state.bit_generator.state = state["rng"]


def _save_state(path, algorithm, generation, session, hv, hv_history, seed, stale):
    if path is None:
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    state = {"version": 1, "seed": seed, "generation": generation,
             "pop_X": algorithm.pop.get("X").astype(int).tolist(),
             "pop_rank": [None if v is None else int(v) for v in algorithm.pop.get("rank")],
             "pop_crowding": [None if v is None else float(v) for v in algorithm.pop.get("crowding")],
             "rng": algorithm.random_state.bit_generator.state,
             "records": list(session.records.values()), "hv_history": hv_history,
             "reference_point": None if hv.ref is None else hv.ref.tolist(),
             "normalisation": None if hv.scale is None else hv.scale.tolist(),
             "evaluations": session.evaluations, "stale_generations": stale}
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(state, default=_json_default))
    tmp.replace(p)


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o).__name__)


#: Genes added after the first release, in order, with the value their designs had before: a saved state
#: without them resumes with that value (uplinks at the NIC speed; the constraints' one GPU system).
_LATER_GENES = (("uplink_speed_factor", lambda space: 1.0),
                ("gpu_model", lambda space: space.systems[0]),
                ("serving_class", lambda space: False),
                ("serving_priority", lambda space: "strict"),
                ("serving_routing", lambda space: None),
                ("storage_routing", lambda space: None))


def _saved_population(state: dict, space, path) -> np.ndarray:
    """The saved population's genomes in ``space``; a state saved before later genes (:data:`_LATER_GENES`, the
    last genes of the genome) gets the values its designs had."""
    pop = np.asarray(state["pop_X"], dtype=np.int64)
    if pop.ndim == 2 and pop.shape[1] < space.n_var:
        missing = space.names[pop.shape[1]:]
        later = dict(_LATER_GENES)
        in_space = tuple(n for n, _ in _LATER_GENES if n in space.names)
        if tuple(missing) != in_space[-len(missing):] or any(m not in later for m in missing):
            raise FabricError(f"cannot resume from {path}: its genomes have {pop.shape[1]} genes, this search space "
                              f"has {space.n_var}")
        cols = []
        for name in missing:
            value = later[name](space)
            choices = space.gene(name).choices
            if value not in choices:
                what = {"uplink_speed_factor": "uplinks at the NIC speed",
                        "serving_class": "serving traffic without a class of its own",
                        "serving_priority": "strict priority", "serving_routing": "serving routed as the rest",
                        "storage_routing": "storage routed as the rest"}.get(name, f"GPU system {value}")
                raise FabricError(f"cannot resume from {path}: it was saved before gene {name} was searched, and "
                                  f"these constraints leave out the value its designs use ({what}); allow it")
            cols.append(np.full((pop.shape[0], 1), choices.index(value), np.int64))
        pop = np.concatenate([pop] + cols, axis=1)
    if pop.ndim != 2 or pop.shape[1] != space.n_var:
        raise FabricError(f"cannot resume from {path}: its genomes have {pop.shape[-1]} genes, this search space has "
                          f"{space.n_var}")
    i = space.names.index("placement")
    rules = space.genes[i].choices
    # a state saved while "scattered" was a placement gene: its last choice is gone; those genomes take a rule
    pop[pop[:, i] > space.upper[i], i] = rules.index("packed") if "packed" in rules else 0
    if (pop > space.upper).any() or (pop < 0).any():
        raise FabricError(f"cannot resume from {path}: its genomes choose values this search space does not have "
                          f"(were the constraints changed?)")
    return pop


def _load_state(path):
    if path is None or not Path(path).exists():
        return None
    try:
        state = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise FabricError(f"cannot resume from {path}: not a readable search state ({err})") from err
    if not isinstance(state, dict) or state.get("version") != 1 or "pop_X" not in state:
        raise FabricError(f"cannot resume from {path}: not a fabric search state")
    return state


def continue_search(workload, constraints, state_path, *, extra_evals: int, **kw):
    """Continue the search saved at ``state_path`` with ``extra_evals`` more evaluations than it had spent
    (``workload``, ``constraints`` and the keywords of :func:`fabric.search.run_search`, ``seed`` and ``samples``
    included, must be the ones it ran with); returns its :class:`~fabric.search.SearchResult`."""
    from fabric.search.convergence import saved_evaluations

    if isinstance(extra_evals, bool) or not isinstance(extra_evals, int) or extra_evals < 1:
        raise FabricError(f"continue with a positive whole number of evaluations, got {extra_evals!r}")
    if "budget_evals" in kw:
        raise FabricError("continue_search takes extra_evals, the evaluations to add, not budget_evals")
    return run_search(workload, constraints, budget_evals=saved_evaluations(state_path) + extra_evals,
                      state_path=state_path, **kw)

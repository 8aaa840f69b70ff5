"""Robust design across workloads and scenarios: one objective over a job mix that shifts.

A brittle design wins on one mix and loses when it shifts. :class:`RobustObjective` bundles several workloads
(with weights) and several scenarios; the search treats it as one workload: each design is evaluated on every
(workload, scenario) case with the same seed.

Jobs of a mix run at different paces (a 25 s dense step, a 5 s MoE step), so cases are compared relative to a
reference design, the first buildable human baseline (the fat tree 1:1), evaluated once per case before the
search: ``r_c = p99_c / ref_c``. The robust slowdown is the **worst** ``r_c`` or the **weighted mean** of ``r_c``
(a workload's weight is shared equally by its scenarios), and the record's ``p99_s`` is that slowdown times the
weighted mean of the references, so it stays in seconds, orders designs exactly as the slowdown does, and equals
the plain p99 for one workload. p50, p95, mean and the lower bound are combined the same way. The record keeps every
case's p99 (``p99_by_case``) and the slowdown (``robust_slowdown``) so the front can be read per case.

Serving jobs' figures (p99 TTFT, p99 TPOT, SLO attainment: what the ``inference_*`` constraints limit) are combined
over the cases whose workload has a serving job, in seconds and not normalised (a serving limit is absolute): the
worst case's (``worst``: the largest p99, the smallest attainment) or their mean weighted like the cases
(``mean``); every case's are kept in ``serving_by_case``.

After the search, :func:`case_front` is the front of one case among the evaluated designs, and
:func:`brittle_designs` flags front designs that are the best buy for some case at their price but far from it for
another: for a design ``d`` and a case ``c``, ``excess_c(d) = p99_c(d) / min{p99_c(e) : e feasible, cost(e) <=
cost(d)} - 1`` (how much slower than the best design costing no more); ``d`` is brittle when some case has
``excess`` <= 1 % (it is that case's answer) and another has ``excess`` >= ``tolerance`` (default 10 %).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from fabric.errors import FabricError

__all__ = ["RobustObjective", "ROBUST_MODES", "job_mix_objective", "evaluate_robust_record", "robust_key", "robust_combine", "robust_failure_p99", "on_front_for_case", "case_front",
           "brittle_designs", "robust_lines"]

ROBUST_MODES = ("worst", "mean")
#: Record columns that are kept per case only (``<name>_by_case``): a robust combination of them means nothing.
_PER_CASE = ("p50_s", "p95_s", "mean_s", "lower_bound_s", "gpu_idle_fraction_network")


@dataclass(frozen=True)
class RobustObjective:
    """Workloads ``(name, workload, weight)`` and scenarios a design must do well on; ``mode`` "worst" or
    "mean"."""

    workloads: tuple
    scenarios: tuple = field(default_factory=tuple)
    mode: str = "worst"
    #: reference p99 per case name (seconds), set by :meth:`with_references`; None: not yet set (raw p99s)
    references: dict | None = None

    def __post_init__(self):
        from fabric.evaluate import Scenario

        if self.mode not in ROBUST_MODES:
            raise FabricError(f"robust mode {self.mode!r}: choose {' or '.join(ROBUST_MODES)}")
        if not self.workloads:
            raise FabricError("a robust objective needs at least one workload")
        names = [n for n, _, _ in self.workloads]
        if len(set(names)) != len(names):
            raise FabricError(f"robust objective: workload names must differ, got {', '.join(names)}")
        for n, _, w in self.workloads:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not np.isfinite(w) or w <= 0:
                raise FabricError(f"robust objective: the weight of workload {n!r} must be a positive number, got "
                                  f"{w!r}")
        if not self.scenarios:
            object.__setattr__(self, "scenarios", (Scenario(),))
        snames = [s.name for s in self.scenarios]
        if len(set(snames)) != len(snames):
            raise FabricError(f"robust objective: scenario names must differ, got {', '.join(snames)}")

    @property
    def cases(self) -> list[tuple[str, object, object, float]]:
        """``(case name, workload, scenario, weight)``, weights summing to 1."""
        total = sum(w for _, _, w in self.workloads)
        k = len(self.scenarios)
        return [(f"{n}|{s.name}", wl, s, w / total / k) for n, wl, w in self.workloads for s in self.scenarios]

    @property
    def jobs(self):
        """All jobs of all workloads (what sizes the cluster: the largest need of any workload)."""
        return tuple(j for _, wl, _ in self.workloads for j in wl.jobs)

    def with_references(self, design, *, seed: int = 0, samples: int = 64, catalog=None,
                        transport_overrides=None) -> "RobustObjective":
        """A copy whose cases are normalised by ``design``'s p99 on each (see the module docstring)."""
        from dataclasses import replace

        from fabric.evaluate import evaluate

        refs = {}
        for name, wl, sc, _ in self.cases:
            ev = evaluate(design, wl, sc, seed=seed, samples=samples, catalog=catalog,
                          transport_overrides=transport_overrides)
            refs[name] = float(ev.step_time_s["p99"])
        return replace(self, references=refs)

    @property
    def name(self) -> str:
        return f"robust ({self.mode}) over {', '.join(n for n, _, _ in self.workloads)}"

    def key(self) -> str:
        """A stable key of the objective's content (:func:`robust_key`)."""
        return robust_key(self)

    def evaluate_record(self, design, scenario, seed: int, samples: int, catalog, constraints, genome=None,
                        repairs=(), transport_overrides=None) -> dict:
        """One record of ``design`` over every case (:func:`evaluate_robust_record`): the search's records ask an
        objective for its record as they ask a plan objective (:func:`fabric.search.records.evaluate_record`)."""
        return evaluate_robust_record(design, self, scenario, seed, samples, catalog, constraints, genome=genome,
                                      repairs=repairs, transport_overrides=transport_overrides)


def job_mix_objective(workload, weights: dict | None = None, *, mode: str = "mean",
                      scenarios=()) -> RobustObjective:
    """The jobs of one workload sharing one cluster, judged job by job: a case per compute job (the whole workload
    evaluated, that job's p99 reported: ``Workload.primary``), weighted by ``weights`` (job name -> weight; default
    equal), combined by the robust rule ``mode``. Where a mix of separate workloads asks how a design copes when the
    mix shifts, this asks how every job of a shared cluster fares at once (placement and contention included)."""
    from dataclasses import replace

    jobs = [j.name for j in workload.jobs if j.kind != "storage"]
    weights = dict(weights or {n: 1.0 for n in jobs})
    unknown = sorted(set(weights) - set(jobs))
    if unknown:
        raise FabricError(f"job mix: no job called {', '.join(unknown)} (jobs: {', '.join(jobs)})")
    cases = tuple((n, replace(workload, primary=n), float(weights[n])) for n in jobs if n in weights)
    return RobustObjective(workloads=cases, scenarios=tuple(scenarios), mode=mode)


def robust_combine(obj: RobustObjective, p99_by_case: dict) -> tuple[float, float]:
    """``(robust p99 in seconds, robust slowdown)`` of one design's p99 on every case of ``obj`` (the rule of the
    module docstring: the worst or weighted-mean slowdown against the references, times their weighted mean)."""
    cases = obj.cases
    if set(p99_by_case) != {name for name, _, _, _ in cases}:
        raise FabricError(f"robust objective: p99s given for {', '.join(sorted(p99_by_case))}, its cases are "
                          f"{', '.join(name for name, _, _, _ in cases)}")
    refs = obj.references or {name: 1.0 for name, _, _, _ in cases}
    ratios = np.array([p99_by_case[name] / refs[name] for name, _, _, _ in cases])
    weights = np.array([w for _, _, _, w in cases])
    slowdown = float(ratios.max()) if obj.mode == "worst" else float(weights @ ratios)
    scale = sum(w * refs[name] for name, _, _, w in cases)          # weighted mean reference, seconds
    return slowdown * scale, slowdown


def robust_failure_p99(obj: RobustObjective, failure_p99_by_case: dict) -> float:
    """The robust p99 under the worst single failure: the worst case's slowdown against the (healthy) references,
    in seconds of their weighted mean, whatever the robust rule (a failure is judged at its worst)."""
    refs = obj.references or {name: 1.0 for name, _, _, _ in obj.cases}
    scale = sum(w * refs[name] for name, _, _, w in obj.cases)
    return max(p / refs[name] for name, p in failure_p99_by_case.items()) * scale


def robust_key(obj: RobustObjective) -> str:
    """A stable key of the objective's content."""
    from fabric.search.records import workload_key

    parts = [obj.mode, [(n, workload_key(wl), float(w)) for n, wl, w in obj.workloads],
             [s.to_dict() for s in obj.scenarios], obj.references]
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def evaluate_robust_record(design, obj: RobustObjective, scenario, seed: int, samples: int, catalog, constraints,
                           genome=None, repairs=(), transport_overrides=None) -> dict:
    """One record for ``design`` over every case of ``obj`` (see the module docstring)."""
    from fabric.search.records import evaluate_record, objective_cost, objective_p99, set_failure_slowdown, violations

    if scenario is not None and scenario.to_dict() != type(scenario)().to_dict():
        raise FabricError("a robust search takes its scenarios in the robust objective, not as a separate scenario")
    recs = []
    reuse: dict = {}      # the fabric, network models and traffic loads of this design, shared by its cases
    for name, wl, sc, weight in obj.cases:
        r = evaluate_record(design, wl, sc, seed, samples, catalog, constraints, genome=genome, repairs=repairs,
                            transport_overrides=transport_overrides, reuse=reuse)
        if not r["buildable"]:
            r = dict(r, error=f"{name}: {r['error']}", p99_by_case={})
            return r
        recs.append((name, weight, r))
    out = dict(recs[0][2])
    by_case = {name: r["p99_s"] for name, _, r in recs}
    out["p99_s"], out["robust_slowdown"] = robust_combine(obj, by_case)
    # p50, p95, the mean and the lower bound have no robust counterpart (a combined p50 would be a figure of no
    # case): the record keeps each case's instead
    for key in _PER_CASE:
        out.pop(key, None)
        out[f"{key.removesuffix('_s')}_by_case"] = {name: r[key] for name, _, r in recs}
    out["p99_by_case"] = by_case
    worst = max(by_case.values())
    best = min(by_case.values())
    out["p99_spread"] = worst / best if best > 0 else float("inf")
    _combine_serving(out, recs, obj.mode)
    # cost per step follows the combined step the same way (it is proportional to the p99 step)
    out["usd_per_step"] = float(recs[0][2]["usd_per_step"]) * out["p99_s"] / recs[0][2]["p99_s"]
    if "p99_failure_s" in out:   # under failure too: the worst case's slowdown (the same references)
        out["p99_failure_s"] = robust_failure_p99(obj, {name: r["p99_failure_s"] for name, _, r in recs})
        set_failure_slowdown(out)
    v = violations(out, constraints)
    out["violations"] = v
    out["feasible"] = all(x <= 0 for x in v.values())
    out["objective_cost"] = objective_cost(out, constraints)
    out["objective_p99"] = objective_p99(out, constraints)
    return out


#: Serving record columns (fabric.search.records.serving_fields) and their worse end: latencies the largest,
#: SLO attainment the smallest.
_SERVING = (("serving_ttft_p99_s", max), ("serving_tpot_p99_s", max), ("serving_slo_attainment", min))


def _combine_serving(out: dict, recs: list, mode: str) -> None:
    """The serving figures over the cases whose workload has a serving job, in seconds (not normalised: a serving
    limit is absolute): ``worst``, the worst case's; ``mean``, the mean weighted by the cases' weights. Each case's
    figures go to ``serving_by_case``."""
    srv = [(name, w, r) for name, w, r in recs if "serving_tpot_p99_s" in r]
    for key, _ in _SERVING:
        out.pop(key, None)
    if not srv:
        return
    weights = np.array([w for _, w, _ in srv], float)
    weights = weights / weights.sum()
    for key, worse in _SERVING:
        vals = [float(r[key]) for _, _, r in srv]
        out[key] = worse(vals) if mode == "worst" else float(weights @ np.array(vals))
    out["serving_by_case"] = {name: {key: r[key] for key, _ in _SERVING} for name, _, r in srv}


def case_front(records: list[dict], case: str) -> list[dict]:
    """The Pareto front (cost vs the p99 of ``case``) among the feasible evaluated records."""
    rows = [r for r in records if r.get("feasible") and case in (r.get("p99_by_case") or {})]
    rows.sort(key=lambda r: (r["cost_usd"], r["p99_by_case"][case]))
    front, best = [], float("inf")
    for r in rows:
        p = r["p99_by_case"][case]
        if p < best:
            front.append(r)
            best = p
    return front


def brittle_designs(front: list[dict], records: list[dict], *, tolerance: float = 0.10) -> list[dict]:
    """Front designs that are some case's best buy but far from another's (see the module docstring).

    Returns ``[{"design", "key", "best_for": [cases], "worse_for": {case: excess}, "excess": {case: excess}}]``.
    """
    feas = [r for r in records if r.get("feasible") and r.get("p99_by_case")]
    if not feas:
        return []
    cases = sorted({c for r in feas for c in r["p99_by_case"]})
    costs = np.array([r["cost_usd"] for r in feas])
    out = []
    for d in front:
        pc = d.get("p99_by_case") or {}
        if not pc:
            continue
        cheaper = costs <= d["cost_usd"] + 1e-6
        excess = {}
        for c in cases:
            best = min(r["p99_by_case"][c] for r, ok in zip(feas, cheaper) if ok)
            excess[c] = pc[c] / best - 1.0 if best > 0 else 0.0
        best_for = [c for c, e in excess.items() if e <= 0.01]
        worse = {c: e for c, e in excess.items() if e >= tolerance}
        if best_for and worse:
            out.append({"design": d["design"], "key": d.get("key"), "best_for": best_for, "worse_for": worse,
                        "excess": excess})
    return out


def on_front_for_case(rec: dict, front: list[dict], case: str) -> bool:
    """True when ``rec`` (a design on ``case``'s own front) is on the robust ``front`` or ties there with a design
    of it: the same cost and the same p99 on ``case`` (a tie keeps one of its designs on each front, by the tie
    rule, and they need not be the same one)."""
    p = (rec.get("p99_by_case") or {}).get(case)
    return any(r.get("key") == rec.get("key") or
               (r["cost_usd"] == rec["cost_usd"] and (r.get("p99_by_case") or {}).get(case) == p) for r in front)


def robust_lines(result, *, tolerance: float = 0.10) -> list[str]:
    """Sentences for a review: the brittle front designs, and how the robust front compares with each case's."""
    records = result.records
    cases = sorted({c for r in records if r.get("feasible") for c in (r.get("p99_by_case") or {})})
    if not cases:
        return []
    lines = []
    brittle = brittle_designs(result.front, records, tolerance=tolerance)
    for b in brittle:
        worst_case, worst = max(b["worse_for"].items(), key=lambda kv: kv[1])
        lines.append(f"brittle: '{b['design']}' is the best buy at its price for {', '.join(b['best_for'])} but "
                     f"{worst:.0%} slower than the best at its price for {worst_case}.")
    if not brittle:
        lines.append(f"no front design is brittle: each is within {tolerance:.0%} of the best at its price for every "
                     f"case, or the best for none.")
    for c in cases:
        cf = case_front(records, c)
        both = sum(1 for r in cf if on_front_for_case(r, result.front, c))
        lines.append(f"case {c}: its own front among the evaluated designs has {len(cf)} design(s), {both} of them on "
                     f"the robust front of {len(result.front)}.")
    return lines

"""One record per design in context: every figure any view shows of a design, computed once.

:func:`design_record` evaluates a design in a :class:`~fabric.review.context.Context` and returns a
:class:`DesignRecord`: the search's flat record of the design (``row``: the same function and arguments the search
used, so the front's hover and CSV show the same numbers), each case's evaluation (a workload of the mix under its
scenario, at the plan the context gives it) with its figures (:func:`fabric.review.figures.design_figures`), and the
headline figures. A robust context's headline p99 is the robust p99 (labelled so); p50, p95, the lower bound and
the share of GPU time waiting on the network exist per case only. The single-failure analysis
(:attr:`DesignRecord.failures`), the cheapest fixes and best free policy judged in the context
(:attr:`DesignRecord.fixes`) and the what-ifs (:meth:`DesignRecord.what_if`) are parts of the same record, computed
when first asked for and kept with it.

The Design page, Compare, the brief, the reports, Upgrade and ``fabric evaluate --json`` render these records;
none evaluates a design on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from fabric.errors import FabricError

__all__ = ["CaseResult", "DesignRecord", "design_record", "context_judge", "record_figures"]


@dataclass(frozen=True)
class CaseResult:
    """One case of a record: ``name`` (the robust case name, or the workload's), the workload evaluated (at
    ``plan`` when the context chooses plans), the scenario, the case's weight and its evaluation and figures."""

    name: str
    workload_name: str
    workload: object
    scenario: object
    weight: float
    evaluation: object
    figures: dict
    plan: str = ""


class DesignRecord:
    """Everything shown of ``design`` in ``context`` (see the module docstring). Build it with
    :func:`design_record`."""

    def __init__(self, design, context, row: dict, cases: tuple, racks: dict, reuse: dict | None = None):
        self.design = design
        self.context = context
        self.row = row
        self.cases = cases
        self.racks = racks
        #: the dict the cases' evaluations were made with (:func:`fabric.evaluate.evaluate`'s ``reuse``: the fabric,
        #: the network models and each op's traffic pattern), which the failures take up; dropped once they are made
        self._reuse = reuse

    # ------------------------------------------------------------------ the figures

    @property
    def robust(self) -> bool:
        """True when the context is a robust mix (the headline p99 is the robust one)."""
        return self.context.kind == "robust"

    @property
    def primary(self) -> CaseResult:
        """The first case (the mix's first workload on its first scenario; the only one otherwise)."""
        return self.cases[0]

    @property
    def evaluation(self):
        """The primary case's evaluation (what the topology's hot links, the histogram and the p99 split draw)."""
        return self.primary.evaluation

    @cached_property
    def figures(self) -> dict:
        """The headline figures (:data:`fabric.review.figures.FIGURES` names, SI): design figures and, in a robust
        context, ``robust_p99_s`` instead of the step percentiles (those are per case: :attr:`case_figures`)."""
        return record_figures(self)

    @property
    def case_figures(self) -> dict:
        """``{case name: figures}`` of every case."""
        return {c.name: c.figures for c in self.cases}

    @property
    def p99_s(self) -> float:
        """The p99 the context judges by (robust or plain), the search's objective."""
        return float(self.row["p99_s"])

    @property
    def plan(self) -> dict | None:
        """The plan a plan context evaluates the design at, with every shortlisted plan's p99 (best first):
        ``{"plan", "tried": [{"plan", "p99_s"}], "given_plan", "given_plan_p99_s", "given_plan_slowdown",
        "provenance"}``; None in other contexts."""
        if self.context.kind not in ("plans", "joint") or not self.row.get("plan"):
            return None
        r = self.row
        return {"plan": r["plan"], "tried": list(r.get("plan_tried") or []), "given_plan": r.get("given_plan"),
                "given_plan_p99_s": r.get("given_plan_p99_s"), "given_plan_slowdown": r.get("given_plan_slowdown"),
                "provenance": r.get("plan_provenance")}

    @property
    def serving(self) -> dict:
        """Each serving job's latency metrics (fabric.evaluate.serving) by name; in a robust context every case's,
        named ``case: job``."""
        out = {}
        for c in self.cases:
            for job, m in c.evaluation.serving.items():
                out[f"{c.name}: {job}" if self.robust else job] = m
        return out

    # ------------------------------------------------------------------ parts computed when asked for

    @cached_property
    def failures(self) -> dict:
        """Single failures (:func:`fabric.failures.resilience.resilience`) of every case at its plan, with the worst p99
        under a single failure combined like the record's p99 (``p99_failure_s``, the search's figure):
        ``{"primary": <resilience of the first case>, "cases": {case: resilience}, "p99_failure_s",
        "survives_single_failure", "gpus_lost_on_worst_switch_failure"}``."""
        from fabric.failures.resilience import failure_p99, resilience
        from fabric.search.records import INFEASIBLE_P99

        ctx = self.context
        # the cases' evaluations and the failures share one reuse dict (identical results with or without it); the
        # record lets it go afterwards, so a kept record does not hold the traffic of a large fabric
        reuse = {} if self._reuse is None else self._reuse
        per = {}
        for c in self.cases:
            per[c.name] = resilience(self.design, c.workload, catalog=ctx.catalog, seed=ctx.seed,
                                     samples=ctx.samples, transport_overrides=ctx.transport_overrides,
                                     scenario=c.scenario, healthy_p99_s=float(c.evaluation.step_time_s["p99"]),
                                     reuse=reuse)
        self._reuse = None
        worst = {}
        for name, r in per.items():      # the search's figure (fabric.failures.resilience.failure_p99)
            p = failure_p99(r)
            worst[name] = INFEASIBLE_P99 if p is None else p
        if self.robust:
            from fabric.search.robust import robust_failure_p99

            p99_failure = robust_failure_p99(ctx.search_objective(), worst)
        else:
            p99_failure = next(iter(worst.values()))
        first = per[self.primary.name]
        return {"primary": first, "cases": per, "p99_failure_s": p99_failure,
                "survives_single_failure": all(r["survives_single_failure"] for r in per.values()),
                "gpus_lost_on_worst_switch_failure": int(first["gpus_lost_on_worst_switch_failure"])}

    @cached_property
    def fixes(self) -> dict:
        """The advisor's single changes of the design judged in this context (:func:`fabric.review.advisor.advise` with
        :func:`context_judge`): the best free policy, then hardware by dollars per millisecond. In a robust context
        "p99" is the robust p99; in a plan context each changed design at its own best shortlisted plan."""
        from fabric.review.advisor import advise

        ctx = self.context
        if ctx.kind == "single":     # the plain evaluation, as `fabric advise` makes it
            c = self.primary
            return advise(self.design, c.workload, c.scenario, catalog=ctx.catalog, seed=ctx.seed,
                          samples=ctx.samples, transport_overrides=ctx.transport_overrides)
        return advise(self.design, None, catalog=ctx.catalog, seed=ctx.seed, samples=ctx.samples,
                      transport_overrides=ctx.transport_overrides, evaluator=context_judge(ctx, self))

    @property
    def best_free_fix(self) -> dict:
        """The best free policy on this design's hardware, judged in the context (one sentence and its numbers)."""
        return self.fixes["best_free_policy"]

    def what_if(self, scenario) -> dict:
        """The design under ``scenario`` laid over every case, each case at the plan of this record:
        ``{"scenario", "p99_s", "change", "cases": {case: p99}, "serving": {job: metrics}, "not_applicable"}``,
        the p99 combined like the record's (robust: the same rule and references). Kept with the record."""
        memo = self.__dict__.setdefault("_what_ifs", {})
        key = scenario.name
        if key not in memo:
            memo[key] = _what_if(self, scenario)
        return memo[key]

    def scaling(self) -> list[dict]:
        """Weak scaling of the first case (:func:`fabric.evaluate.scaling_efficiency`: the job and the fabric grown
        2x and 4x) with the context's seed, samples, catalog and calibration; kept with the record."""
        if "_scaling" not in self.__dict__:
            from fabric.evaluate import scaling_efficiency

            ctx, c = self.context, self.primary
            self.__dict__["_scaling"] = scaling_efficiency(
                self.design, c.workload, seed=ctx.seed, samples=ctx.samples, catalog=ctx.catalog,
                scenario=c.scenario, transport_overrides=ctx.transport_overrides)
        return self.__dict__["_scaling"]

    # ------------------------------------------------------------------ output

    def to_dict(self) -> dict:
        """The record as JSON: context (key and line), design, row, headline and per-case figures, plan, serving;
        the failures and fixes when they were computed."""
        from fabric.design import design_to_dict

        out = {"context": {"key": self.context.key, "line": self.context.describe()},
               "design": design_to_dict(self.design), "row": _jsonable(self.row), "figures": dict(self.figures),
               "robust": self.robust,
               "cases": {c.name: {"workload": c.workload_name, "scenario": c.scenario.name, "weight": c.weight,
                                  "plan": c.plan, "figures": dict(c.figures)} for c in self.cases},
               "plan": self.plan, "serving": _jsonable(self.serving)}
        if "failures" in self.__dict__:
            out["failures"] = _jsonable(self.failures)
        if "fixes" in self.__dict__:
            out["fixes"] = _jsonable(self.fixes)
        return out


def _jsonable(x):
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if hasattr(x, "to_dict"):
        return _jsonable(x.to_dict())
    return x


def design_record(design, context, *, row: dict | None = None) -> DesignRecord:
    """The record of ``design`` in ``context`` (see the module docstring). ``row``: the search's record of this
    design in this context when the caller has it (the same function would make it again). Raises FabricError
    (naming why) when the design cannot be built or evaluated."""
    from fabric.search.records import evaluate_record, record_racks

    ctx = context
    c = ctx.constraints
    first = None
    reuse: dict = {}            # the cases' evaluations and later the failures (DesignRecord.failures) share it
    if row is None and ctx.kind == "single":     # one evaluation serves the row and the case (the same call)
        (name, wl, sc, _), = ctx.cases()
        first = _evaluate_case(design, ctx, wl, sc, reuse)
        row = evaluate_record(design, wl, sc, ctx.seed, ctx.samples, ctx.catalog, c,
                              transport_overrides=ctx.transport_overrides, reuse=reuse, evaluation=first)
    elif row is None:
        row = evaluate_record(design, ctx.search_objective(), ctx.search_scenario(), ctx.seed, ctx.samples,
                              ctx.catalog, c, transport_overrides=ctx.transport_overrides)
    if not row.get("buildable", True):
        raise FabricError(row.get("error") or "the design cannot be built")
    racks = record_racks(design, ctx.catalog, c, reuse)          # the row's, when it made them
    cases = tuple(_case(design, ctx, racks, name, wl, sc, w, plan, first, reuse)
                  for name, wl, sc, w, plan in _cases_of(design, ctx, row))
    return DesignRecord(design, ctx, row, cases, racks, reuse)


def _cases_of(design, ctx, row: dict) -> list[tuple]:
    """``(case, workload, scenario, weight, plan label)`` of ``design`` in ``ctx`` (a plan context: the workload
    at the plan the row was judged at)."""
    if ctx.kind in ("single", "robust"):
        return [(n, wl, sc, w, "") for n, wl, sc, w in ctx.cases()]
    if ctx.kind == "plans":
        from fabric.plans.workloads import plan_workload

        obj = ctx.objective
        cand = next((c for c in obj.candidates_for(design.gpu_model) if c.label == row.get("plan")), None)
        if cand is None:
            raise FabricError(f"the record of {design.name} names plan {row.get('plan')!r}, which is not in the "
                              f"context's shortlist")
        return [(obj.basis.job_name or "workload", plan_workload(obj.basis, cand.plan),
                 ctx.search_scenario(), 1.0, cand.label)]
    raise FabricError("a design of a joint plan search is a design and a plan together: open it from the search's "
                      "records (its plan genes), not as a design alone")


def _evaluate_case(design, ctx, workload, scenario, reuse: dict | None = None):
    """One case's evaluation (with the serving jobs' latency-versus-load curve, which changes no other figure);
    ``reuse``: the record's (:func:`fabric.evaluate.evaluate`'s ``reuse``: the result is the same without it)."""
    from fabric.evaluate import evaluate

    return evaluate(design, workload, scenario, seed=ctx.seed, samples=ctx.samples, catalog=ctx.catalog,
                    transport_overrides=ctx.transport_overrides, serving_curve=True, reuse=reuse)


def _case(design, ctx, racks, name, workload, scenario, weight, plan, evaluation=None,
          reuse: dict | None = None) -> CaseResult:
    from fabric.review.figures import design_figures

    ev = evaluation if evaluation is not None else _evaluate_case(design, ctx, workload, scenario, reuse)
    figs = design_figures(ev, design, catalog=ctx.catalog, economics_params=ctx.constraints.economics(),
                          racks=racks)
    return CaseResult(name, getattr(workload, "name", name), workload, scenario, float(weight), ev, figs, plan)


#: Figures a robust record has per case only (their robust combination would be a figure of no case).
PER_CASE_FIGURES = ("p50_s", "p95_s", "p99_s", "lower_bound_s", "compute_s", "stragglers_s", "nvlink_s",
                    "network_s", "interference_s", "gpu_idle_fraction_network")


def record_figures(record: DesignRecord) -> dict:
    """The headline figures of ``record``: the primary case's design figures; in a robust context the step
    figures are taken out (per case) and ``robust_p99_s`` and the cost per robust p99 step come from the row."""
    out = dict(record.primary.figures)
    if record.robust:
        for k in PER_CASE_FIGURES:
            out[k] = None
        out["robust_p99_s"] = float(record.row["p99_s"])
        out["usd_per_step"] = float(record.row["usd_per_step"])
    return out


# ------------------------------------------------------------------ judging other designs in the context


class _Judged:
    """What the advisor reads of an evaluation (p99 step, cost, serving), from a record row in a context."""

    def __init__(self, row: dict):
        if not row.get("buildable", True):
            raise FabricError(row.get("error") or "cannot be built")
        self.step_time_s = {"p99": float(row["p99_s"])}
        self.cost_usd = float(row["cost_usd"])
        self.serving = {}
        if "serving_tpot_p99_s" in row:
            from fabric.search.records import INFEASIBLE_P99

            stable = row["serving_tpot_p99_s"] < INFEASIBLE_P99
            self.serving = {"serving": {"stable": stable, "ttft_s": {"p99": row["serving_ttft_p99_s"]},
                                        "tpot_s": {"p99": row["serving_tpot_p99_s"]}}}


def context_judge(context, record: DesignRecord | None = None):
    """``judge(design)``: the design's p99 and cost in ``context`` (its search row), as the advisor and the money
    split read an evaluation; rows are made once per design (``record``'s own row is reused)."""
    from fabric.search.records import design_key, evaluate_record

    memo: dict = {}
    if record is not None:
        memo[design_key(record.design)] = record.row

    def judge(design):
        k = design_key(design)
        if k not in memo:
            memo[k] = evaluate_record(design, context.search_objective(), context.search_scenario(), context.seed,
                                      context.samples, context.catalog, context.constraints,
                                      transport_overrides=context.transport_overrides)
        return _Judged(memo[k])

    return judge


# ------------------------------------------------------------------ what-ifs


def _what_if(record: DesignRecord, scenario) -> dict:
    from fabric.evaluate import evaluate
    from fabric.evaluate.whatif import not_applicable
    from fabric.review.context import compose_scenarios
    from fabric.topology import build_fabric

    ctx = record.context
    fab = build_fabric(record.design, ctx.catalog)
    why = not_applicable(scenario, fab, record.primary.workload)
    out = {"scenario": scenario.name, "p99_s": None, "change": None, "cases": {}, "serving": {},
           "not_applicable": why}
    if why:
        out["error"] = f"not applicable: {why}"
        return out
    try:
        for c in record.cases:
            ev = evaluate(record.design, c.workload, compose_scenarios(c.scenario, scenario), seed=ctx.seed,
                          samples=ctx.samples, catalog=ctx.catalog, transport_overrides=ctx.transport_overrides)
            out["cases"][c.name] = float(ev.step_time_s["p99"])
            for job, m in ev.serving.items():
                out["serving"][f"{c.name}: {job}" if record.robust else job] = m
            out.setdefault("p50_by_case", {})[c.name] = float(ev.step_time_s["p50"])
    except FabricError as err:
        out["error"] = " ".join(str(err).split())
        return out
    if record.robust:
        from fabric.search.robust import robust_combine

        out["p99_s"] = robust_combine(ctx.search_objective(), out["cases"])[0]
    else:
        out["p99_s"] = next(iter(out["cases"].values()))
        out["p50_s"] = next(iter(out["p50_by_case"].values()))
    out["change"] = out["p99_s"] / record.p99_s - 1.0
    return out

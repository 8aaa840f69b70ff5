"""The context a design's figures are computed in, as one value.

A figure is only true together with its context: which workloads (with their weights and the robust rule), which
parallelism plans (each workload's own, or each design's best of a shortlist), which scenario, catalog, calibration,
GPU system, seed and number of Monte Carlo samples. :class:`Context` holds all of it, prepared for the search space
of the constraints (a robust mix's references, a plan shortlist: :mod:`fabric.search.prepare`), has a stable
:attr:`~Context.key`, and says itself in one line (:meth:`Context.describe`). The search evaluates every design in
one context; the pages, the brief, the reports, Upgrade and the CLI show records made in that context
(:mod:`fabric.review.record`), never figures of their own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property

from fabric.errors import FabricError

__all__ = ["Context", "prepare_context", "compose_scenarios", "objective_kind"]


def objective_kind(objective) -> str:
    """"robust" (a job mix), "plans" (each design at its best plan), "joint" (the plan in the genome) or "single"."""
    from fabric.search.robust import RobustObjective

    if isinstance(objective, RobustObjective):
        return "robust"
    mode = getattr(objective, "mode", None)
    if hasattr(objective, "evaluate_record") and mode in ("inner", "joint"):
        return "plans" if mode == "inner" else "joint"
    return "single"


def compose_scenarios(base, overlay):
    """``base`` with every field ``overlay`` sets (fields at their healthy default in ``overlay`` keep ``base``'s
    value); named ``base+overlay`` unless one of them is the healthy baseline."""
    from fabric.evaluate import Scenario

    default = Scenario().to_dict()
    over = {k: v for k, v in overlay.to_dict().items() if k != "name" and v != default[k]}
    if not over:
        return base
    name = overlay.name if base.to_dict() == default else f"{base.name}+{overlay.name}"
    merged = {**base.to_dict(), **over, "name": name}
    return Scenario(**merged)


@dataclass(frozen=True, eq=False)
class Context:
    """Everything a design's figures depend on besides the design (see the module docstring).

    ``objective``: a workload, or an objective prepared for the constraints' space (a robust objective with its
    references, a plan objective with its shortlist); ``label``: what the user calls the (first) workload;
    ``what_if``: a scenario laid over every case (a what-if of this context; None for the context itself).
    """

    objective: object
    constraints: object
    catalog: object
    scenario: object = None
    seed: int = 0
    samples: int = 256
    transport_overrides: dict | None = None
    label: str = ""
    what_if: object = None
    #: the catalog's content key (the dashboard's edited tables), "default" for the built-in catalog
    catalog_key: str = "default"
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        from fabric.evaluate import Scenario

        if self.scenario is None:
            object.__setattr__(self, "scenario", Scenario())
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise FabricError(f"a context needs a positive whole number of samples, got {self.samples!r}")

    # ------------------------------------------------------------------ identity

    @property
    def kind(self) -> str:
        """:func:`objective_kind` of the objective."""
        return objective_kind(self.objective)

    @cached_property
    def key(self) -> str:
        """A stable key of everything the figures depend on (two contexts with equal keys give equal records)."""
        from fabric.search.records import workload_key

        c = self.constraints
        parts = [workload_key(self.objective), self.scenario.to_dict(), int(self.seed), int(self.samples),
                 self.catalog_key, self.transport_overrides, c.to_dict(),
                 None if self.what_if is None else self.what_if.to_dict()]
        return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """The context in one line: "robust worst case over 2 workloads (a, b), each at its own plan; baseline
        scenario; H100 catalog; seed 0, 256 samples"."""
        obj, kind = self.objective, self.kind
        if kind == "robust":
            names = [n for n, _, _ in obj.workloads]
            rule = "worst case" if obj.mode == "worst" else "weighted mean"
            what = (f"robust {rule} over {len(names)} workload{'s' if len(names) != 1 else ''} "
                    f"({', '.join(names)}), each at its own plan")
            scen = [s.name for s in obj.scenarios]
            scen_text = f"scenario{'s' if len(scen) != 1 else ''} {', '.join(scen)}"
        elif kind == "plans":
            n = max((len(cs) for _, cs in obj.shortlist or ()), default=0)
            what = (f"{self.label or obj.basis.job_name}, each design at its best of {n} shortlisted plans" if n else
                    f"{self.label or obj.basis.job_name}, each design at its best plan of the shortlist the search "
                    f"ranks")
            scen_text = f"scenario {self.scenario.name}"
        elif kind == "joint":
            what = f"{self.label or obj.basis.job_name}, the plan searched with the design"
            scen_text = f"scenario {self.scenario.name}"
        else:
            what = f"{self.label or getattr(obj, 'name', 'workload')} at its own plan"
            scen_text = f"scenario {self.scenario.name}"
        if self.what_if is not None:
            scen_text += f" with what-if {self.what_if.name}"
        c = self.constraints
        gpu = ", ".join(c.gpu_models) if c.gpu_models else c.gpu_model
        cat = "built-in catalog" if self.catalog_key == "default" else "edited catalog"
        cal = "; calibrated" if self.transport_overrides else ""
        return (f"{what}; {scen_text}; {c.gpus:,} {gpu} GPUs; {cat}{cal}; seed {self.seed}, "
                f"{self.samples} samples")

    # ------------------------------------------------------------------ derived contexts

    def under(self, scenario) -> "Context":
        """This context with ``scenario`` laid over every case (a what-if): a new context with its own key."""
        if scenario is None or scenario.to_dict() == type(scenario)().to_dict():
            return self
        return replace(self, what_if=scenario, _memo={})

    # ------------------------------------------------------------------ evaluation

    def cases(self) -> list[tuple[str, object, object, float]]:
        """``(case name, workload, scenario, weight)`` of a context with fixed workloads (single or robust), what-if
        included; a plan context's workload depends on the design (:func:`fabric.review.record.design_record`)."""
        if self.kind == "robust":
            return [(n, wl, self._scenario(sc), w) for n, wl, sc, w in self.objective.cases]
        if self.kind == "single":
            return [(self.objective.name, self.objective, self._scenario(self.scenario), 1.0)]
        raise FabricError("the cases of a plan context depend on the design's plan")

    def _scenario(self, base):
        return base if self.what_if is None else compose_scenarios(base, self.what_if)

    def search_objective(self):
        """The objective the search's records are made with (robust: with the what-if laid over its scenarios)."""
        if self.what_if is None or self.kind != "robust":
            return self.objective
        obj = self.objective
        return replace(obj, scenarios=tuple(compose_scenarios(s, self.what_if) for s in obj.scenarios),
                       references=_renamed_references(obj, self.what_if))

    def search_scenario(self):
        """The scenario the search's records are made under (robust: the default, its scenarios are inside)."""
        if self.kind == "robust":
            return self.scenario
        return self._scenario(self.scenario)


def _renamed_references(obj, what_if) -> dict | None:
    """The robust references keyed by the case names of the objective with ``what_if`` laid over its scenarios
    (the references stay the healthy ones: a what-if is measured against the same yardstick)."""
    if obj.references is None:
        return None
    out = {}
    for n, _, _ in obj.workloads:
        for s in obj.scenarios:
            out[f"{n}|{compose_scenarios(s, what_if).name}"] = obj.references[f"{n}|{s.name}"]
    return out


def prepare_context(workload, constraints, *, catalog=None, scenario=None, seed: int = 0, samples: int = 256,
                    transport_overrides: dict | None = None, label: str = "", catalog_key: str = "default") -> Context:
    """The context of a search of ``workload`` (a workload, a robust objective or a plan objective) under
    ``constraints``: the objective prepared for the constraints' space (:mod:`fabric.search.prepare`), exactly as
    :func:`fabric.search.run_search` prepares it, so records made in it equal the search's."""
    from fabric.catalog import default_catalog
    from fabric.evaluate import Scenario
    from fabric.search.prepare import prepare_objective, space_for

    catalog = catalog if catalog is not None else default_catalog()
    scenario = scenario or Scenario()
    space = space_for(workload, constraints, catalog)
    objective = prepare_objective(workload, space, seed=seed, samples=samples, overrides=transport_overrides,
                                  scenario=scenario)
    return Context(objective, constraints, space.catalog, scenario, int(seed), int(samples), transport_overrides,
                   label, catalog_key=catalog_key)

"""What the user allows and requires of a design: hardware, families, limits and targets."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import yaml

from fabric.design.schema import (
    DEFAULT_SEARCH_ROUTINGS, FAMILIES, LEGACY_PLACEMENTS, LEGACY_TRANSPORTS, PLACEMENTS, ROUTING_POLICIES, TRANSPORTS,
)
from fabric.errors import FabricError

#: Families a search may be allowed: the topology families, and ``regions`` (two regions shaped by the workload,
#: each with its own cabling and leaf ratio: fabric.search.region_genes), which is offered only when asked for.
SEARCH_FAMILIES = FAMILIES + ("regions",)

#: Transports searched unless the constraints say otherwise: kernel TCP (``tcp``) is left out because at the same
#: hardware cost it is never better than RoCE (ECMP) or reorder-tolerant Ethernet (spraying); allow it explicitly.
DEFAULT_TRANSPORTS = ("infiniband", "roce", "uec")
#: Routing policies searched unless the constraints list others (fabric.design.schema.DEFAULT_SEARCH_ROUTINGS:
#: computed paths only when asked for)
DEFAULT_ROUTINGS = DEFAULT_SEARCH_ROUTINGS

__all__ = ["Constraints", "ConstraintError", "constraints_from_dict", "load_constraints", "COST_OBJECTIVES",
           "P99_OBJECTIVES", "DEFAULT_TRANSPORTS", "DEFAULT_ROUTINGS", "INFERENCE_OBJECTIVES"]

#: What a search may minimize beside the p99 step.
COST_OBJECTIVES = ("network_capex", "cost_per_step")
#: Serving latencies a search may minimize as an extra objective.
INFERENCE_OBJECTIVES = ("ttft_p99", "tpot_p99", "slo_attainment")
#: Which p99 a search minimizes: the healthy fabric's, or the one under the worst single failure.
P99_OBJECTIVES = ("healthy", "worst_single_failure")


class ConstraintError(FabricError):
    """Search constraints are invalid or contradictory."""


@dataclass(frozen=True)
class Constraints:
    """Search constraints. ``None`` for a limit means "no limit"; ``None`` for a list means "everything".

    Units: dollars (``budget_usd``), watts (``power_w``), seconds (``p99_target_s``).
    """

    gpus: int = 1024
    gpus_per_node: int = 8
    gpu_model: str = "h100-sxm"
    #: GPU systems the search chooses among (gene ``gpu_model``: the scale-up domain), each with its catalog host
    #: size and NVLink domain (8-GPU HGX nodes, 72-GPU NVL72 racks); None: ``gpu_model`` with ``gpus_per_node``
    gpu_models: tuple[str, ...] | None = None
    switch_models: tuple[str, ...] | None = None
    nic_models: tuple[str, ...] | None = None
    nics_per_gpu: tuple[float, ...] = (0.5, 1.0, 2.0)
    families: tuple[str, ...] = FAMILIES
    routings: tuple[str, ...] = DEFAULT_ROUTINGS
    transports: tuple[str, ...] = DEFAULT_TRANSPORTS
    placements: tuple[str, ...] = PLACEMENTS
    oversubscriptions: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 4.0)
    #: uplink speeds the search may choose, as multiples of the NIC port speed (1: the NIC speed; 2: 800G uplinks
    #: over 400G NICs where the switch's ports run 800G)
    uplink_speed_factors: tuple[float, ...] = (1.0, 2.0)
    qps: tuple[int, ...] = (1, 2, 4, 8)
    planes: tuple[int, ...] = (1, 2)
    max_radix: int | None = None
    max_oversubscription: float = 4.0
    budget_usd: float | None = None
    power_w: float | None = None
    #: the most power one rack may draw (W): compute racks (servers and a top-of-rack switch) and network racks
    rack_power_w: float | None = None
    #: the most power the facility may draw (W): servers and network x PUE (fabric.facility.rackpower)
    facility_power_w: float | None = None
    cable_count: int | None = None
    p99_target_s: float | None = None
    optimize_power: bool = False
    #: what the search minimizes beside p99: "network_capex" (USD), or "cost_per_step" (servers and network
    #: amortized over ``life_years`` plus power x PUE x electricity price, times the p99 step: fabric.cost.economics)
    #: designs that do not survive every single switch or cable failure are infeasible (fabric.failures.rule:
    #: a failure that partitions the GPUs still in the job or takes more than half of the servers out)
    survive_single_failure: bool = True
    #: the p99 step under the worst single switch or link failure may not exceed this (seconds; None: no limit)
    max_p99_under_failure_s: float | None = None
    #: blast radius (issue 34): the most GPUs the worst single switch failure may take out of the job
    #: (``gpus_lost_on_worst_switch_failure``: whole servers left without a network path); a whole number >= 1 is a
    #: count of GPUs, a number in [0, 1) a share of the cluster (0.125: an eighth); None: no limit (the default:
    #: the front and the recommendation show the figure; docs/constraints.md says why no default share)
    max_gpus_lost_on_single_failure: float | None = None
    #: the p99 step under the worst single failure may be at most this much slower than the healthy p99 (a share:
    #: 0.25 = +25 %); None: no limit (the default, shown on the front and the recommendation)
    max_p99_slowdown_under_failure: float | None = None
    #: evaluate the p99 under the worst single failure for every design the search looks at, not only for the front
    #: and the baselines after the search (about 2-4x the cost of an evaluation: docs/constraints.md); on by itself
    #: when a failure limit or the failure objective needs it
    failure_p99_for_every_design: bool = False
    #: the p99 the search minimizes: "healthy", or "worst_single_failure" (fabric.failures.resilience)
    p99_objective: str = "healthy"
    cost_objective: str = "network_capex"
    life_years: float = 4.0
    electricity_usd_per_kwh: float = 0.08
    pue: float = 1.3
    #: serving jobs (fabric.evaluate.serving): the worst serving job's p99 time to first token and p99 time per
    #: output token may not exceed these (seconds), and its share of requests within its TTFT and TPOT budgets may
    #: not fall below ``inference_slo_attainment`` (0..1); None: no limit
    inference_ttft_p99_s: float | None = None
    inference_tpot_p99_s: float | None = None
    inference_slo_attainment: float | None = None
    #: a serving latency the search minimizes as one more objective beside cost and the p99 step (None: none):
    #: "ttft_p99", "tpot_p99" (the worst serving job's), or "slo_attainment" (maximized)
    inference_objective: str | None = None
    #: whether the search may put a serving job's traffic in a traffic class of its own (design field
    #: serving_class, free policy; a gene only for workloads with a serving job): (False, True) lets it choose;
    #: (False,) when the fabric's traffic classes have no room for one more (every priority class taken)
    serving_classes: tuple[bool, ...] = (False, True)

    def __post_init__(self):
        def bad(f, msg):
            raise ConstraintError(f"constraint '{f}': {msg}")

        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 1:
            bad("gpus", f"expected a positive whole number, got {self.gpus!r}")
        if isinstance(self.gpus_per_node, bool) or not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 1:
            bad("gpus_per_node", f"expected a positive whole number, got {self.gpus_per_node!r}")
        if self.gpus % self.gpus_per_node:
            bad("gpus", f"{self.gpus:,} GPUs is not a whole number of {self.gpus_per_node}-GPU nodes")
        if isinstance(self.transports, (tuple, list)) and any(t in LEGACY_TRANSPORTS for t in self.transports):
            # old names (spray_ethernet) keep working: the same profile under its current name
            renamed = tuple(dict.fromkeys(LEGACY_TRANSPORTS.get(t, t) for t in self.transports))
            object.__setattr__(self, "transports", renamed)
        if isinstance(self.placements, (tuple, list)) and any(p in LEGACY_PLACEMENTS for p in self.placements):
            # "scattered" was a fragmented cluster: a condition, which a search chooses no more than a failure
            old = [p for p in self.placements if p in LEGACY_PLACEMENTS]
            kept = tuple(p for p in self.placements if p not in LEGACY_PLACEMENTS)
            if not kept:
                bad("placements", f"{old[0]!r} is a fragmented cluster, a condition the search cannot choose: allow "
                                  f"{' or '.join(PLACEMENTS)} and search under the scenario 'fragmented' "
                                  f"(fabric search --scenario fragmented)")
            import warnings

            warnings.warn(f"constraint 'placements': {', '.join(map(repr, old))} left out: it is a fragmented "
                          f"cluster, a condition the search cannot choose; the search chooses among "
                          f"{', '.join(kept)} (search under the scenario 'fragmented' to judge designs on a "
                          f"fragmented cluster)", FutureWarning, stacklevel=4)
            object.__setattr__(self, "placements", kept)
        for f, allowed in (("families", SEARCH_FAMILIES), ("routings", ROUTING_POLICIES), ("transports", TRANSPORTS),
                           ("placements", PLACEMENTS)):
            v = getattr(self, f)
            if not v:
                bad(f, "allow at least one value")
            unknown = [x for x in v if x not in allowed]
            if unknown:
                bad(f, f"unknown value(s) {', '.join(map(str, unknown))}; choose from {', '.join(allowed)}")
        for f in ("switch_models", "nic_models", "gpu_models"):
            v = getattr(self, f)
            if v is not None and not v:
                bad(f, "allow at least one model (or leave it out for all)")
        if self.gpu_models is not None and any(not isinstance(m, str) or not m for m in self.gpu_models):
            bad("gpu_models", f"give catalog GPU model ids, got {list(self.gpu_models)!r}")
        if not self.oversubscriptions or any(o < 1 for o in self.oversubscriptions):
            bad("oversubscriptions", "give ratios >= 1")
        if not isinstance(self.max_oversubscription, (int, float)) or self.max_oversubscription < 1:
            bad("max_oversubscription", f"must be >= 1, got {self.max_oversubscription!r}")
        if not any(o <= self.max_oversubscription for o in self.oversubscriptions):
            bad("max_oversubscription", f"{self.max_oversubscription:g} excludes every allowed ratio "
                                        f"({', '.join(f'{o:g}' for o in self.oversubscriptions)})")
        for f in ("budget_usd", "power_w", "p99_target_s", "inference_ttft_p99_s", "inference_tpot_p99_s",
                  "rack_power_w", "facility_power_w"):
            v = getattr(self, f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                                  or v <= 0):
                bad(f, f"must be a positive number, got {v!r}")
        for f in ("max_radix", "cable_count"):
            v = getattr(self, f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 2):
                bad(f, f"must be a whole number >= 2, got {v!r}")
        f = self.uplink_speed_factors
        if not f or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
                        or not 1 / 8 <= x <= 8 for x in f):
            bad("uplink_speed_factors", f"give multiples of the NIC speed between 1/8 and 8, got {f!r}")
        v = self.serving_classes
        if not isinstance(v, (tuple, list)) or not v or any(not isinstance(x, bool) for x in v) or len(set(v)) < len(v):
            bad("serving_classes", f"give [false, true] (the search may choose) or [false] (no class free for serving "
                                   f"traffic), got {v!r}")
        object.__setattr__(self, "serving_classes", tuple(v))
        if not self.qps or any(q < 1 for q in self.qps):
            bad("qps", "give queue-pair counts >= 1")
        if not self.planes or any(isinstance(p, bool) or p not in (1, 2, 4, 8) for p in self.planes):
            bad("planes", f"allowed values are 1, 2, 4 and 8 (each NIC port on its own plane), got {list(self.planes)!r}")
        if not self.nics_per_gpu or any(n <= 0 for n in self.nics_per_gpu):
            bad("nics_per_gpu", "give positive NIC-per-GPU counts")
        if not isinstance(self.survive_single_failure, bool):
            bad("survive_single_failure", f"expected true or false, got {self.survive_single_failure!r}")
        v = self.max_p99_under_failure_s
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0):
            bad("max_p99_under_failure_s", f"must be a positive number of seconds, got {v!r}")
        v = self.max_gpus_lost_on_single_failure
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0
                              or (v >= 1 and v != int(v))):
            bad("max_gpus_lost_on_single_failure", f"give a whole number of GPUs (e.g. 64) or a share of the cluster "
                                                   f"in [0, 1) (e.g. 0.125), got {v!r}")
        v = self.max_p99_slowdown_under_failure
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0):
            bad("max_p99_slowdown_under_failure", f"give the largest slowdown allowed as a share (0.25 = +25 %), got "
                                                  f"{v!r}")
        if not isinstance(self.failure_p99_for_every_design, bool):
            bad("failure_p99_for_every_design", f"expected true or false, got {self.failure_p99_for_every_design!r}")
        v = self.inference_slo_attainment
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1):
            bad("inference_slo_attainment", f"must be a share of requests in (0, 1], e.g. 0.99, got {v!r}")
        if self.inference_objective is not None and self.inference_objective not in INFERENCE_OBJECTIVES:
            bad("inference_objective", f"choose one of {', '.join(INFERENCE_OBJECTIVES)} (or leave it out), got "
                                       f"{self.inference_objective!r}")
        if self.p99_objective not in P99_OBJECTIVES:
            bad("p99_objective", f"choose one of {', '.join(P99_OBJECTIVES)}, got {self.p99_objective!r}")
        if self.cost_objective not in COST_OBJECTIVES:
            bad("cost_objective", f"choose one of {', '.join(COST_OBJECTIVES)}, got {self.cost_objective!r}")
        try:
            self.economics()
        except FabricError as err:
            raise ConstraintError(f"constraint {str(err).replace('economics parameter ', '')}") from None

    @property
    def has_inference_limits(self) -> bool:
        """True when a serving job's request latency is constrained."""
        return any(v is not None for v in (self.inference_ttft_p99_s, self.inference_tpot_p99_s,
                                            self.inference_slo_attainment, self.inference_objective))

    @property
    def rack_budget_w(self) -> float | None:
        """The rack power designs are packed to (``Design.rack_power_w``): the smaller of the rack limit and the
        40.8 kW of an air-cooled HGX rack (a rack-scale system above it is still a rack of its own); None without a
        rack limit (the builder's default)."""
        from fabric.topology.racks import RACK_POWER_BUDGET_W

        return None if self.rack_power_w is None else float(min(self.rack_power_w, RACK_POWER_BUDGET_W))

    @property
    def needs_failure_p99(self) -> bool:
        """True when a search under these constraints must evaluate the p99 under the worst single failure for
        every design (without it the search evaluates it for the front and the baselines only, after the search)."""
        return (self.max_p99_under_failure_s is not None or self.max_p99_slowdown_under_failure is not None
                or self.p99_objective == "worst_single_failure" or self.failure_p99_for_every_design)

    def gpus_lost_limit(self, gpus: int | None = None) -> float | None:
        """``max_gpus_lost_on_single_failure`` as a count of GPUs of a ``gpus``-GPU cluster (default: these
        constraints' ``gpus``): a share in [0, 1) times the cluster; None without the limit."""
        v = self.max_gpus_lost_on_single_failure
        if v is None:
            return None
        return float(v) if v >= 1 else float(v) * (self.gpus if gpus is None else gpus)

    def economics(self):
        """The :class:`fabric.cost.economics.EconomicsParams` these constraints value GPU time with."""
        from fabric.cost.economics import EconomicsParams

        return EconomicsParams(life_years=self.life_years, electricity_usd_per_kwh=self.electricity_usd_per_kwh,
                               pue=self.pue)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


_TUPLE_FIELDS = {"switch_models", "nic_models", "gpu_models", "nics_per_gpu", "families", "routings", "transports",
                 "placements", "oversubscriptions", "uplink_speed_factors", "qps", "planes", "serving_classes"}


def constraints_from_dict(d: dict) -> Constraints:
    """Validated constraints from a JSON/YAML dict; unknown fields are errors."""
    if not isinstance(d, dict):
        raise ConstraintError(f"constraints must be an object of fields, got {type(d).__name__}")
    known = {f.name for f in fields(Constraints)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ConstraintError(f"unknown constraint(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    kw = {}
    for k, v in d.items():
        if k in _TUPLE_FIELDS and v is not None:
            if isinstance(v, (str, int, float)):
                v = [v]
            if not isinstance(v, (list, tuple)):
                raise ConstraintError(f"constraint '{k}': expected a list, got {v!r}")
            v = tuple(v)
        kw[k] = v
    try:
        return Constraints(**kw)
    except TypeError as err:
        raise ConstraintError(f"invalid constraints: {err}") from err


def load_constraints(path: str | Path) -> Constraints:
    """Read constraints from a JSON or YAML file (safe loader)."""
    p = Path(path)
    if not p.exists():
        raise ConstraintError(f"constraints file {p} not found")
    if p.stat().st_size > 1_000_000:
        raise ConstraintError(f"constraints file {p} is larger than 1 MB")
    text = p.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConstraintError(f"{p}: not valid JSON/YAML ({' '.join(str(err).split())})") from err
    try:
        return constraints_from_dict(data)
    except ConstraintError as err:
        raise ConstraintError(f"{p}: {err}") from err

"""One search evaluation as a flat record, with constraint violations, and the evaluation cache.

Records are plain dicts (CSV/JSON friendly, picklable). ``evaluate_record`` is a pure function of (design,
workload, scenario, seed, samples, catalog, constraints), so records cache and distribute cleanly.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import asdict

from fabric.design.regions import highest_ratio, regions_json
from fabric.errors import FabricError
from fabric.limits import current_limits
from fabric.workload.model import workload_key

__all__ = ["evaluate_record", "design_key", "workload_key", "EvaluationCache", "violations", "serving_fields",
           "failure_fields", "set_failure_slowdown", "BLAST_COLUMNS", "INFEASIBLE_COST", "INFEASIBLE_P99"]

#: Objective values given to designs that cannot be built (dominated by everything buildable).
INFEASIBLE_COST = 1e15
INFEASIBLE_P99 = 1e9
_CATEGORIES = ("switch", "nic", "transceiver", "cable")
#: Rack and facility power fields of a record (W; fabric.facility.rackpower).
_RACK_FIELDS = ("max_rack_power_w", "it_power_w", "facility_power_w")
#: The blast radius of a record (issue 34): GPUs out of the job after the worst single switch failure, GPUs that
#: ride a failure out through another GPU's NIC (NVLink detour), and, where evaluated (the front and the baselines
#: after every search; every record when ``Constraints.needs_failure_p99``), the p99 under the worst single
#: failure, its slowdown over the healthy p99 and the failure that sets it.
BLAST_COLUMNS = ("gpus_lost_on_worst_switch_failure", "gpus_detoured_on_single_failure", "p99_failure_s",
                 "p99_failure_slowdown", "worst_failure")


def design_key(design) -> str:
    """A stable key of a design's content (its name excluded; a field added later is left out while it has its
    default, so designs keep the keys of earlier releases)."""
    d = asdict(design)
    d.pop("name", None)
    for later in ("uplink_gbps", "rack_power_w"):
        if d.get(later) is None:
            d.pop(later, None)
    if not d.get("serving_class"):
        d.pop("serving_class", None)
    for later, default in (("serving_priority", "strict"), ("serving_weight", 0.8), ("serving_routing", None),
                           ("rails_per_leaf", 1), ("regions", None)):
        if d.get(later) == default:
            d.pop(later, None)
    return hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def violations(rec: dict, constraints) -> dict:
    """Normalised violations (<= 0 satisfied) of each user constraint."""
    c = constraints
    v = {"buildable": 0.0 if rec["buildable"] else 1.0}
    if c.budget_usd is not None:
        v["budget"] = rec["cost_usd"] / c.budget_usd - 1.0
    if c.power_w is not None:
        v["power"] = rec["power_w"] / c.power_w - 1.0
    if c.cable_count is not None:
        v["cables"] = rec["cable_count"] / c.cable_count - 1.0
    if c.max_radix is not None:
        v["radix"] = rec["radix"] / c.max_radix - 1.0
    if c.p99_target_s is not None:
        v["p99_target"] = rec["p99_s"] / c.p99_target_s - 1.0
    if c.survive_single_failure:
        # records saved before the rule had its own field carry only whether a failure partitions them
        survives = rec.get("survives_single_failure", not rec.get("partitions_on_single_failure", False))
        v["partition"] = 0.0 if survives else 1.0
    if c.max_p99_under_failure_s is not None:
        v["p99_failure"] = rec.get("p99_failure_s", INFEASIBLE_P99) / c.max_p99_under_failure_s - 1.0
    limit = c.gpus_lost_limit(int(rec.get("gpus") or c.gpus)) if hasattr(c, "gpus_lost_limit") else None
    if limit is not None:
        # GPUs over the limit as a share of the cluster (> 0 violated; the text says how many: violation_text)
        gpus = max(1, int(rec.get("gpus") or c.gpus))
        v["gpus_lost"] = (float(rec.get("gpus_lost_on_worst_switch_failure", gpus)) - limit) / gpus
    if getattr(c, "max_p99_slowdown_under_failure", None) is not None:
        allowed = rec["p99_s"] * (1.0 + c.max_p99_slowdown_under_failure)
        v["p99_failure_slowdown"] = rec.get("p99_failure_s", INFEASIBLE_P99) / max(allowed, 1e-300) - 1.0
    if c.inference_ttft_p99_s is not None:
        v["inference_ttft"] = rec.get("serving_ttft_p99_s", INFEASIBLE_P99) / c.inference_ttft_p99_s - 1.0
    if c.inference_tpot_p99_s is not None:
        v["inference_tpot"] = rec.get("serving_tpot_p99_s", INFEASIBLE_P99) / c.inference_tpot_p99_s - 1.0
    if c.inference_slo_attainment is not None:
        v["inference_slo"] = 1.0 - rec.get("serving_slo_attainment", 0.0) / c.inference_slo_attainment
    if getattr(c, "rack_power_w", None) is not None:
        v["rack_power"] = rec.get("max_rack_power_w", INFEASIBLE_COST) / c.rack_power_w - 1.0
    if getattr(c, "facility_power_w", None) is not None:
        v["facility_power"] = rec.get("facility_power_w", INFEASIBLE_COST) / c.facility_power_w - 1.0
    if not rec["buildable"]:
        v = {k: (1.0 if k == "buildable" else 0.0) for k in v}
    return v


def serving_fields(ev) -> dict:
    """The record columns of an evaluation's serving jobs (the worst job for each): p99 TTFT and TPOT, SLO
    attainment; a service whose load exceeds its capacity counts as infinitely slow and meeting no SLO."""
    if not ev.serving:
        return {}
    ttft, tpot, att = [], [], []
    for m in ev.serving.values():
        stable = m["stable"]
        ttft.append(m["ttft_s"]["p99"] if stable else INFEASIBLE_P99)
        tpot.append(m["tpot_s"]["p99"] if stable else INFEASIBLE_P99)
        a = m.get("slo_attainment")
        att.append((1.0 if a is None else a) if stable else 0.0)
    return {"serving_ttft_p99_s": max(ttft), "serving_tpot_p99_s": max(tpot), "serving_slo_attainment": min(att)}


def evaluate_record(design, workload, scenario, seed: int, samples: int, catalog, constraints,
                    genome=None, repairs=(), transport_overrides=None, reuse: dict | None = None,
                    evaluation=None) -> dict:
    """Evaluate ``design`` and flatten the result; an unbuildable design gives a record saying why. A
    :class:`~fabric.search.robust.RobustObjective` as ``workload`` gives one record over all its cases, a plan
    objective (:mod:`fabric.search.plan_space.inner`) the record of the design's best plan: each makes the record
    itself (its ``evaluate_record``).
    ``reuse``: passed to :func:`fabric.evaluate.evaluate` (intermediate results shared by evaluations of one
    design; the record is the same without it). ``evaluation``: the evaluation of ``design`` on ``workload`` with
    these arguments when the caller already has it (inner mode's best plan), used instead of evaluating again."""
    from fabric.evaluate import evaluate

    if hasattr(workload, "evaluate_record"):       # a robust or plan objective makes its record itself
        return workload.evaluate_record(design, scenario, seed, samples, catalog, constraints, genome=genome,
                                        repairs=repairs, transport_overrides=transport_overrides)

    rec = {"key": _reused(reuse, ("design_key", design), lambda: design_key(design)), "design": design.name, "family": design.family,
           "switch_model": design.switch_model, "nic_model": design.nic_model, "nics_per_gpu": design.nics_per_gpu,
           "oversub_leaf": highest_ratio(design, 0), "oversub_spine": highest_ratio(design, 1),
           "planes": design.planes,
           "routing": design.routing, "qps_per_connection": design.qps_per_connection,
           "transport": design.transport, "placement": design.placement, "pxn": design.pxn,
           "storage_isolation": design.storage_isolation, "in_network_reduction": design.in_network_reduction,
           "serving_class": bool(design.serving_class), "serving_priority": design.serving_priority,
           "serving_weight": float(design.serving_weight), "serving_routing": design.serving_routing or "",
           "storage_routing": design.storage_routing or "",
           "uplink_leaf_gbps": design.uplink_speed_gbps(0) or 0.0,
           "uplink_spine_gbps": design.uplink_speed_gbps(1) or 0.0,
           "genome": None if genome is None else [int(g) for g in genome], "repairs": "; ".join(repairs),
           "design_tiers": int(design.tiers or 0), "design_nodes_per_su": int(design.nodes_per_su or 0),
           "design_reserved_slots": int(design.reserved_node_slots),
           "design_rails_per_leaf": int(design.rails_per_leaf),
           "design_regions": regions_json(design.regions), "gpu_model": design.gpu_model,
           "gpus": int(design.gpus),
           "gpus_per_node": int(design.gpus_per_node), "scale_up_size": int(design.domain_size),
           "rack_power_budget_w": float(design.rack_power_w or 0.0)}
    try:
        ev = evaluation if evaluation is not None else evaluate(
            design, workload, scenario, seed=seed, samples=samples, catalog=catalog,
            transport_overrides=transport_overrides, reuse=reuse)
    except FabricError as err:
        rec.update({"usd_per_step": INFEASIBLE_COST, "gpu_idle_fraction_network": 1.0})
        rec.update({"buildable": False, "error": " ".join(str(err).split()), "cost_usd": INFEASIBLE_COST,
                    "power_w": INFEASIBLE_COST, "p50_s": INFEASIBLE_P99, "p95_s": INFEASIBLE_P99,
                    "p99_s": INFEASIBLE_P99, "mean_s": INFEASIBLE_P99, "lower_bound_s": 0.0, "lower_bound_by": "",
                    "cable_count": 0,
                    "radix": 0, "tiers": 0, **{f"{c}_usd": 0.0 for c in _CATEGORIES},
                    **dict.fromkeys(_RACK_FIELDS, INFEASIBLE_COST), "compute_racks": 0, "network_racks": 0,
                    "spare_gpus": 0})
    else:
        st = ev.step_time_s
        from fabric.cost.economics import economics

        eco = economics(ev, design, catalog=catalog, params=constraints.economics())
        rec.update({"usd_per_step": eco["usd_per_step"],
                    "gpu_idle_fraction_network": eco["gpu_idle_fraction_network"]})
        from fabric.failures.resilience import resilience, structural_failures

        sf = _reused(reuse, ("structural", design, id(catalog)), lambda: structural_failures(design, catalog))
        rec.update({"survives_single_failure": bool(sf["survives_single_failure"]),
                    "partitions_on_single_failure": bool(sf["partitions_on_single_failure"]),
                    "gpus_lost_on_worst_switch_failure": int(sf["gpus_lost_on_worst_switch_failure"]),
                    "gpus_detoured_on_single_failure": int(sf.get("gpus_detoured_on_single_failure", 0)),
                    "min_uplink_switches": sf["min_uplink_switches"]})
        if constraints.needs_failure_p99:
            rec.update(failure_fields(design, workload, scenario, seed, samples, catalog, transport_overrides,
                                      float(st["p99"])))
        racks = record_racks(design, catalog, constraints, reuse)
        rec.update({k: float(racks[k]) for k in _RACK_FIELDS})
        rec.update({"compute_racks": int(racks["compute_racks"]), "network_racks": int(racks["network_racks"]),
                    "spare_gpus": int(design.gpus - sum(j["gpus"] for j in ev.jobs.values()))})
        rec.update({"buildable": True, "error": "", "cost_usd": ev.cost_usd, "power_w": ev.power_w,
                    "p50_s": st["p50"], "p95_s": st["p95"], "p99_s": st["p99"], "mean_s": st["mean"],
                    "lower_bound_s": ev.lower_bound_s, "lower_bound_by": ev.lower_bound_by,
                    "cable_count": ev.cable_count, "radix": ev.radix,
                    "tiers": ev.tiers, **serving_fields(ev),
                    **{f"{c}_usd": ev.cost_by_category.get(c, {}).get("cost_usd", 0.0) for c in _CATEGORIES}})
    v = violations(rec, constraints)
    rec["violations"] = v
    rec["feasible"] = all(x <= 0 for x in v.values())
    rec["objective_cost"] = objective_cost(rec, constraints)
    rec["objective_p99"] = objective_p99(rec, constraints)
    return rec


def failure_fields(design, workload, scenario, seed: int, samples: int, catalog, transport_overrides,
                   healthy_p99_s: float) -> dict:
    """The record's figures under the worst single failure (:func:`fabric.failures.resilience.resilience`, whose failures
    are evaluated with the same seed and samples): ``p99_failure_s`` (INFEASIBLE_P99 when the design does not
    survive a single failure), ``p99_failure_slowdown`` (over ``healthy_p99_s``) and ``worst_failure`` (the failed
    switch or cable that sets it; "" when none slows the step)."""
    from fabric.failures.resilience import failure_p99, resilience, worst_failure

    r = resilience(design, workload, catalog=catalog, seed=seed, samples=samples,
                   transport_overrides=transport_overrides, scenario=scenario, healthy_p99_s=healthy_p99_s)
    p = failure_p99(r, healthy_p99_s)
    out = {"p99_failure_s": INFEASIBLE_P99 if p is None else p, "worst_failure": worst_failure(r) or ""}
    out["p99_failure_slowdown"] = out["p99_failure_s"] / healthy_p99_s - 1.0 if healthy_p99_s > 0 else 0.0
    return out


def set_failure_slowdown(rec: dict) -> None:
    """``p99_failure_slowdown`` of ``rec`` from its ``p99_failure_s`` and ``p99_s`` (a robust record combines both
    first); nothing when the record has no failure p99."""
    if "p99_failure_s" in rec and rec.get("p99_s"):
        rec["p99_failure_slowdown"] = float(rec["p99_failure_s"]) / float(rec["p99_s"]) - 1.0


def record_racks(design, catalog, constraints, reuse: dict | None = None) -> dict:
    """:func:`fabric.facility.rackpower.rack_report` of ``design`` under the constraints' rack power limit and PUE (what a
    record's rack fields and a record's figures read), kept in ``reuse`` when given."""
    from fabric.facility.rackpower import rack_report

    limit = getattr(constraints, "rack_power_w", None)
    return _reused(reuse, ("racks", design, id(catalog), limit, constraints.pue),
                   lambda: rack_report(design, catalog=catalog, rack_limit_w=limit, pue=constraints.pue))


def _reused(reuse: dict | None, key, compute):
    """``compute()``, kept in ``reuse`` under ``key`` (a result of the design that other cases share)."""
    if reuse is None:
        return compute()
    if key not in reuse:
        reuse[key] = compute()
    return reuse[key]


def objective_p99(rec: dict, constraints) -> float:
    """The p99 the search minimizes for ``rec``: the healthy one, or under the worst single failure."""
    if constraints.p99_objective == "worst_single_failure":
        return float(rec.get("p99_failure_s", INFEASIBLE_P99))
    return float(rec["p99_s"])


def objective_cost(rec: dict, constraints) -> float:
    """The cost the search minimizes for ``rec`` under ``constraints`` (network capex or cost per step)."""
    return float(rec["usd_per_step"] if constraints.cost_objective == "cost_per_step" else rec["cost_usd"])


class EvaluationCache:
    """An LRU of records keyed by (design, workload, scenario, seed, samples)."""

    def __init__(self, max_entries: int | None = None):
        #: None: the limit max_cached_evaluations (read when first needed, so the server's setting applies)
        self.max_entries = max_entries
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()       # the dashboard runs several searches at once, one thread each
        self.hits = 0
        self.misses = 0

    def get(self, key):
        with self._lock:
            rec = self._d.get(key)
            if rec is None:
                self.misses += 1
                return None
            self.hits += 1
            self._d.move_to_end(key)
            return rec

    def put(self, key, rec) -> None:
        with self._lock:
            self._d[key] = rec
            self._d.move_to_end(key)
            if self.max_entries is None:
                self.max_entries = current_limits().max_cached_evaluations
            while len(self._d) > self.max_entries:
                self._d.popitem(last=False)

    def clear(self) -> None:
        """Forget every record (tests, and a server that wants its memory back)."""
        with self._lock:
            self._d.clear()

    def __len__(self) -> int:
        return len(self._d)


def record_objectives(rec: dict, keys) -> list[float]:
    """A record's objective values in the search's order: ``keys`` the objective columns (a tuple) or their count
    (cost, p99, power); the cost and p99 are ``objective_cost`` / ``objective_p99`` when the search minimises
    cost per step (records.objective_cost)."""
    keys = keys if isinstance(keys, tuple) else ("cost_usd", "p99_s", "power_w")[:keys]
    f = [rec.get("objective_cost", rec["cost_usd"]), rec.get("objective_p99", rec["p99_s"])]
    for k in keys[2:]:
        if k == "power_w":
            f.append(rec["power_w"])
        elif k == "serving_slo_miss":
            f.append(1.0 - rec.get("serving_slo_attainment", 0.0))
        else:
            f.append(rec.get(k, INFEASIBLE_P99))
    return f


def policy_text_of_record(rec: dict) -> str:
    """A record's free policy in a few words: ``ecmp/4qp packed``, ``adaptive rail_aligned +PXN``."""
    routing = rec.get("routing")
    parts = [f"{routing}/{int(rec.get('qps_per_connection') or 1)}qp" if routing == "ecmp" else str(routing),
             str(rec.get("placement"))]
    if rec.get("pxn") in (True, 1, "True", "true"):
        parts.append("+PXN")
    if rec.get("serving_class") in (True, 1, "True", "true"):
        parts.append("+serving class")
    return " ".join(parts)

"""What a search (and every view of its designs) evaluates against: the design space of the constraints and the
objective prepared for it.

A robust objective is normalised by the first buildable human baseline (its references, fabric.search.robust); a
plan objective gets its plan shortlist for the space (fabric.search.plan_space.inner); a plain workload stays as it is. The
preparation is a pure function of (objective, constraints, catalog, seed, samples, calibration, scenario), so the
search and a page that shows its designs prepare the same objective; :func:`prepare_objective` keeps the last
few in this process, since a plan shortlist takes about a second to rank.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from fabric.errors import FabricError

__all__ = ["space_for", "prepare_objective", "has_serving_jobs"]

_PREPARED: "OrderedDict[tuple, tuple]" = OrderedDict()
_LOCK = threading.Lock()
_KEEP = 16


def space_for(workload, constraints, catalog):
    """The design space of ``constraints``, or the space an objective brings (plan genes, fabric.search.plan_space.joint)."""
    from fabric.search.space import DesignSpace

    if hasattr(workload, "design_space"):
        return workload.design_space(constraints, catalog, serving=has_serving_jobs(workload))
    return DesignSpace(constraints, catalog, workload, serving=has_serving_jobs(workload))


def _needs_preparing(workload) -> bool:
    from fabric.search.robust import RobustObjective

    if hasattr(workload, "prepared_for"):
        return getattr(workload, "shortlist", None) is None
    return isinstance(workload, RobustObjective) and workload.references is None


def prepare_objective(workload, space, *, seed: int, samples: int, overrides=None, scenario=None):
    """``workload`` prepared for ``space`` (see the module docstring): the same object when there is nothing to
    prepare; kept in this process while ``space.catalog`` is alive, keyed by everything the preparation reads."""
    if not _needs_preparing(workload):
        return workload
    from fabric.search.records import workload_key

    key = (workload_key(workload), json.dumps(space.constraints.to_dict(), sort_keys=True, default=str),
           id(space.catalog), int(seed), int(samples), json.dumps(overrides, sort_keys=True, default=str),
           json.dumps(None if scenario is None else scenario.to_dict(), sort_keys=True))
    with _LOCK:
        hit = _PREPARED.get(key)
        if hit is not None and hit[0] is space.catalog:
            _PREPARED.move_to_end(key)
            return hit[1]
    ready = _prepare(workload, space, seed, samples, overrides, scenario)
    with _LOCK:
        _PREPARED[key] = (space.catalog, ready)     # keeps the catalog alive, so its id is not reused while listed
        while len(_PREPARED) > _KEEP:
            _PREPARED.popitem(last=False)
    return ready


def _prepare(workload, space, seed, samples, overrides, scenario):
    from fabric.search.baselines import baseline_designs

    if hasattr(workload, "prepared_for"):
        return workload.prepared_for(space, seed=seed, samples=samples, overrides=overrides, scenario=scenario)
    for d in baseline_designs(space):
        try:
            return workload.with_references(d, seed=seed, samples=samples, catalog=space.catalog,
                                            transport_overrides=overrides)
        except FabricError:
            continue
    return workload


def has_serving_jobs(workload) -> bool:
    """True when the workload (or any workload of a robust objective) has a serving job: the search then also
    chooses whether its traffic gets a class of its own (gene serving_class)."""
    wls = [w for _, w, _ in workload.workloads] if hasattr(workload, "workloads") else [workload]
    return any(j.serving is not None for w in wls for j in w.jobs)

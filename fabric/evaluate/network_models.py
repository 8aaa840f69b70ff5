"""The network model a job runs on (stage 1 of :mod:`fabric.evaluate.engine`, after placement): the fabric's
:class:`~fabric.evaluate.network.NetworkModel` under a scenario's failed and slow switches and links (the healthy
one kept per cabling, like the fabric), the switches by name and the failures a scenario names.
"""

from __future__ import annotations

import re

import numpy as np

from fabric.evaluate.network import NetworkModel
from fabric.evaluate.scenario import Scenario
from fabric.topology.fabric import LINK_KINDS

__all__ = ["network_model", "healthy_model", "is_healthy", "reuse_slot", "switch_labels", "resolve_failures"]


_HEALTHY_MODELS: dict = {}


def healthy_model(fabric) -> NetworkModel:
    """The network model of ``fabric`` without failures or slow switches (what the trees of a healthy fabric are
    placed on: :mod:`fabric.evaluate.innetwork` compares a scenario's trees with them)."""
    return network_model(fabric, Scenario(), np.random.default_rng(0), 16)[0]


def is_healthy(scenario: Scenario) -> bool:
    return not (scenario.failed_links or scenario.failed_spines or scenario.slow_switches or scenario.fail_switches
                or scenario.fail_links or scenario.link_failure_prob > 0)


def reuse_slot(reuse: dict | None, design, catalog, transport_overrides, samples: int) -> dict | None:
    """The part of ``reuse`` (see :func:`evaluate`) for this design, catalog, calibration and sample count."""
    if reuse is None:
        return None
    import json

    key = (design, id(catalog), json.dumps(transport_overrides, sort_keys=True, default=str), samples)
    slot = reuse.get(key)
    if slot is None:
        # the catalog is kept so that its id, part of the key, cannot be reused by another catalog
        slot = reuse[key] = {"catalog": catalog, "models": {}, "plans": {}, "memo": {}}
    return slot


def network_model(fabric, scenario: Scenario, rng: np.random.Generator, samples: int, slot: dict | None = None):
    """``(model, key)``: the network model under ``scenario``'s failures and slow switches, and a key of what it
    depends on (None when it is not shared: random component faults per sample); from ``slot`` when there. The
    healthy fabric's model depends on the cabling only: kept per cabling, like the fabric itself."""
    if fabric.cache_key and is_healthy(scenario):
        hit = _HEALTHY_MODELS.get(fabric.cache_key)
        if hit is None:
            hit = NetworkModel.build(fabric)
            if len(_HEALTHY_MODELS) >= 4:
                _HEALTHY_MODELS.pop(next(iter(_HEALTHY_MODELS)))
            _HEALTHY_MODELS[fabric.cache_key] = hit
        return hit, ((), (), (), 1.0)
    ls = np.flatnonzero(fabric.link_kind == LINK_KINDS.index("leaf-spine"))
    spines = np.flatnonzero((fabric.node_kind == 2) & (fabric.node_tier == 1))
    failed = rng.choice(ls, size=min(scenario.failed_links, ls.size), replace=False) if scenario.failed_links else []
    pick = rng.permutation(spines) if spines.size else spines
    failed_sw = pick[: scenario.failed_spines].tolist()
    slow_sw = pick[scenario.failed_spines: scenario.failed_spines + scenario.slow_switches].tolist()
    if scenario.fail_switches or scenario.fail_links:
        named_sw, named_links = resolve_failures(fabric, scenario.fail_switches, scenario.fail_links)
        failed_sw = sorted(set(failed_sw) | set(named_sw))
        failed = np.union1d(np.asarray(failed, np.int64), np.asarray(named_links, np.int64))
    slow_factor = scenario.slow_factor if slow_sw else 1.0
    key = None
    if not (scenario.link_failure_prob > 0 and ls.size):
        key = (tuple(sorted(int(x) for x in np.asarray(failed, np.int64).ravel())), tuple(int(x) for x in failed_sw),
               tuple(int(x) for x in slow_sw), float(slow_factor))
    if slot is not None and key is not None and key in slot["models"]:
        return slot["models"][key], key
    # the healthy model of this cabling gives the pods and cuts (they do not depend on failures): made once and
    # kept, so that a design's many failure scenarios (fabric.failures.resilience) do not each find them again
    healthy = healthy_model(fabric) if fabric.cache_key else None
    model = NetworkModel.build(fabric, failed_links=failed, failed_switches=failed_sw, slow_switches=slow_sw,
                               slow_factor=slow_factor, healthy=healthy)
    if slot is not None and key is not None:
        slot["models"][key] = model
    if scenario.link_failure_prob > 0 and ls.size:
        # component faults per sampled launch: each leaf-spine link down with the given probability
        counts = rng.binomial(ls.size, scenario.link_failure_prob, size=samples)
        faults = []
        for c in counts:
            down = rng.choice(ls, size=int(c), replace=False) if c else np.zeros(0, np.int64)
            leaves, per_leaf = np.unique(fabric.link_a[down], return_counts=True)
            faults.append(dict(zip(leaves.tolist(), per_leaf.tolist())))
        model.sample_faults = faults
    return model, key


def switch_labels(fabric) -> dict[str, int]:
    """Every switch's label (``fabric.node_label``: ``leaf3``, ``spine0@p1``, ...) -> its node id."""
    out = {}
    sw = np.arange(fabric.switch_base, fabric.switch_base + fabric.n_switches)
    tiers, planes = fabric.node_tier[sw], fabric.node_plane[sw]
    for t in np.unique(tiers):
        for p in np.unique(planes):
            ids = sw[(tiers == t) & (planes == p)]
            suffix = f"@p{int(p)}" if fabric.planes > 1 else ""
            for i, node in enumerate(ids.tolist()):
                out[f"{fabric.tier_names[int(t)]}{i}{suffix}"] = node
    return out


def resolve_failures(fabric, switches, links) -> tuple[list[int], list[int]]:
    """Node ids of the named switches and link ids of the named links (one cable each); DesignError naming any
    name the fabric does not have, or a leaf/router holding every NIC port of its servers (whose failure takes
    them out of the job: :func:`fabric.evaluate.dualtor.check_leaf_failure`)."""
    from fabric.errors import DesignError

    labels = switch_labels(fabric)

    def node(name: str) -> int:
        if name not in labels:
            tiers = ", ".join(sorted({re.sub(r"\d+(@p\d+)?$", "", k) for k in labels}))
            raise DesignError(f"scenario: this fabric has no switch {name!r} (its switches are named {tiers} "
                              f"followed by a number, e.g. {next(iter(labels), 'none')})")
        return labels[name]

    sw_ids = []
    for name in switches:
        n = node(name)
        if int(fabric.node_tier[n]) == 0:       # only where every NIC on it has another leaf (dualtor.py)
            from fabric.evaluate.dualtor import check_leaf_failure

            check_leaf_failure(fabric, n, name)
        sw_ids.append(n)
    link_ids = []
    for text in links:
        a, sep, b = str(text).partition("-")
        if not sep:
            raise DesignError(f"scenario: link {text!r}: name it by its two switches, e.g. leaf0-spine1")
        na, nb = node(a.strip()), node(b.strip())
        hit = np.flatnonzero(((fabric.link_a == na) & (fabric.link_b == nb)) |
                             ((fabric.link_a == nb) & (fabric.link_b == na)))
        if hit.size == 0:
            raise DesignError(f"scenario: no cable joins {a.strip()} and {b.strip()}")
        link_ids.append(int(hit[0]))
    return sw_ids, link_ids

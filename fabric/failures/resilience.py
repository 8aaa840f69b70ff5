"""Resilience of a built fabric: what one switch or cable failure does to the job.

The rule (which failures count, what surviving one means) is :mod:`fabric.failures.rule`;
:func:`failure_analysis` applies it to a built fabric, :func:`structural_failures` to a design (cached, for the
search), and :func:`resilience` adds the evaluated p99 step under the worst failures above the leaves and under the
worst leaf failure the servers ride out (a rail leaf: its GPUs detour over NVLink through their servers' other
NICs). :func:`failure_p99` is the one figure a record, the review and an upgrade take from it.
"""

from __future__ import annotations

import copy

import numpy as np

from fabric.failures.rule import _switch_graph, _up_pairs, single_failure_analysis
from fabric.topology.fabric import LINK_KINDS

_LEAF_SPINE = LINK_KINDS.index("leaf-spine")

__all__ = ["failure_analysis", "resilience", "structural_failures", "failure_p99", "worst_failure", "detour_leaves"]


def failure_analysis(fabric, *, max_listed: int = 10, detour: bool | None = None) -> dict:
    """:func:`fabric.failures.rule.single_failure_analysis` of ``fabric`` (its fields are documented there;
    ``detour=False``: the rule without the NVLink detour, as before issue 34)."""
    return single_failure_analysis(fabric, max_listed=max_listed, detour=detour)


def _switch_classes(fabric, pairs, mult, per_tier: int = 3) -> list[int]:
    """A few switches above the leaves standing for all of them (local switch ids): one per distinct pattern of
    cabling (the multiset of cable counts of its switch-to-switch pairs: switches cabled alike fail alike), at most
    ``per_tier`` per tier, the most-cabled pattern first, each pattern by its lowest-numbered switch.

    Vectorized: a pattern is a row of counts per distinct cable count, grouped with one ``np.unique`` per tier.
    """
    ns = fabric.n_switches
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + ns].astype(np.int64)
    ends = np.concatenate([pairs[:, 0], pairs[:, 1]]) if len(pairs) else np.zeros(0, np.int64)
    m = np.concatenate([mult, mult]).astype(np.int64) if len(pairs) else np.zeros(0, np.int64)
    values, col = np.unique(m, return_inverse=True)
    hist = np.zeros((ns, max(values.size, 1)), np.int64)             # switch x distinct cable count -> pairs
    np.add.at(hist, (ends, col.ravel()), 1)
    weight = hist @ np.r_[values, np.zeros(max(values.size, 1) - values.size, np.int64)]   # cables at the switch
    out: list[int] = []
    for t in np.unique(sw_tier[sw_tier > 0]).tolist():
        ids = np.flatnonzero(sw_tier == t)                          # ascending: a pattern's first is its lowest
        rows, first = np.unique(hist[ids], axis=0, return_index=True)
        rep = ids[first]
        order = np.lexsort((rep, -weight[rep]))                    # most cables first, then the lowest id
        out += rep[order[:per_tier]].tolist()
    return out


def detour_leaves(fabric, per_pattern: int = 3) -> list[int]:
    """Leaves (local switch ids) whose failure keeps every server in the job, a few standing for all: a rail leaf
    (its NICs' GPUs detour over NVLink through their servers' other NICs: :mod:`fabric.failures.rule`) or a leaf of
    dual-homed NICs. One per pattern (NIC ports on it, uplink cables), at most ``per_pattern``, the most NIC ports
    first, each pattern by its lowest-numbered leaf. Empty for top-of-rack leaves (they take their servers out)."""
    from fabric.evaluate.detour import nvlink_detour
    from fabric.failures.rule import _wholly_on

    ns, sb = fabric.n_switches, fabric.switch_base
    if not ns or not fabric.n_nics:
        return []
    ports = fabric.nic_ports.astype(np.int64) - sb
    cabled = (ports >= 0) & (ports < ns)
    on = np.bincount(ports[cabled], minlength=ns)                   # NIC ports per switch
    tier = fabric.node_tier[sb:sb + ns].astype(np.int64)
    if nvlink_detour(fabric):
        ok = _wholly_on(fabric) == 0                                # no server hangs wholly off it
    else:                                                           # every NIC on it has a port elsewhere
        lo = np.where(cabled, ports, ns).min(axis=1)
        hi = np.where(cabled, ports, -1).max(axis=1)
        single = lo == hi
        ok = np.bincount(lo[single & (lo < ns)], minlength=ns) == 0
    cand = np.flatnonzero((tier == 0) & (on > 0) & ok)
    if not cand.size:
        return []
    up = np.bincount(fabric.link_a[fabric.link_kind == _LEAF_SPINE] - sb, minlength=ns)
    pattern = np.stack([on[cand], up[cand]], axis=1)
    rows, first = np.unique(pattern, axis=0, return_index=True)
    rep = cand[first]
    order = np.lexsort((rep, -on[rep]))
    return rep[order[:per_pattern]].tolist()


def failure_p99(r: dict, healthy_p99_s: float | None = None) -> float | None:
    """The p99 step under the worst single failure that :func:`resilience` evaluated (switches above the leaves,
    cables between switches, leaves the servers ride out), never below the healthy p99; None when the design does
    not survive a single failure (it has no such p99: the search counts it as infinitely slow)."""
    if not r["survives_single_failure"]:
        return None
    base = float(r["healthy_p99_s"] if healthy_p99_s is None else healthy_p99_s)
    vals = [r.get(k) for k in ("worst_switch_failure_p99_s", "worst_link_failure_p99_s", "worst_leaf_failure_p99_s")]
    return max([float(v) for v in vals if v is not None] + [base])


def worst_failure(r: dict) -> str | None:
    """The failure (a switch label, or a cable ``a-b``) that sets :func:`failure_p99`: the slowest evaluated one,
    switches before cables before leaves on a tie; None when the design does not survive or none was evaluated."""
    if not r["survives_single_failure"]:
        return None
    best, which = None, None
    for name, key in (("worst_switch", "worst_switch_failure_p99_s"), ("worst_link", "worst_link_failure_p99_s"),
                      ("worst_leaf", "worst_leaf_failure_p99_s")):
        v = r.get(key)
        if v is not None and (best is None or v > best):
            best, which = v, r.get(name)
    return which


def _critical_links(fabric, pairs, mult) -> list[tuple[int, int]]:
    """Per switch tier above the leaves, the cable whose loss removes the largest share of one lower switch's
    uplink capacity: the thinnest bundle of the switch with the fewest uplinks (local switch ids)."""
    ns = fabric.n_switches
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + ns].astype(np.int64)
    lo, hi = _up_pairs(pairs, sw_tier)
    if lo.size == 0:
        return []
    out = []
    codes = pairs[:, 0] * ns + pairs[:, 1]
    for t in sorted(set(sw_tier[hi].tolist())):
        sel = sw_tier[hi] == t
        l, h = lo[sel], hi[sel]
        a, b = np.minimum(l, h), np.maximum(l, h)
        bundles = mult[np.searchsorted(codes, a * ns + b)]
        ups = np.bincount(l, weights=bundles, minlength=ns)
        score = bundles / ups[l]                     # share of the lower switch's uplinks one cable carries
        i = int(np.argmax(score / bundles))
        out.append((int(l[i]), int(h[i])))
    return out


def resilience(design, workload, *, catalog=None, seed: int = 0, samples: int | None = None, transport_overrides=None,
               scenario=None, healthy_p99_s: float | None = None, reuse: dict | None = None) -> dict:
    """Evaluated resilience of ``design`` for ``workload``: :func:`failure_analysis` plus the p99 step under the
    worst single switch failure above the leaves, the worst single link failure between switches and the worst
    leaf failure whose servers stay in the job.

    Candidates (evaluated, not guessed): one switch per cabling pattern of each tier above the leaves, per tier the
    cable carrying the largest share of one switch's uplinks, and the leaves of :func:`detour_leaves` (rail leaves
    and rail switches: their GPUs detour over NVLink through their servers' other NICs, which carry the failed
    NIC's traffic). A failure that partitions the fabric gives no finite p99 (None, with ``..._partitions``).
    Top-of-rack leaves and routers take servers out of the job rather than slowing it: :mod:`fabric.failures.rule`
    counts them (``gpus_lost_on_worst_switch_failure``) and decides ``survives_single_failure``. ``worst_switch`` /
    ``worst_link`` / ``worst_leaf`` are None when the fabric has no switch above the leaves / no switch-to-switch
    cable / no leaf its servers ride out to fail. ``reuse``: the dict given to the evaluation that gave
    ``healthy_p99_s`` (:func:`fabric.evaluate.evaluate`'s ``reuse``), so that the failures take its fabric and
    traffic patterns (the results are the same without it).
    """
    from dataclasses import replace as _replace

    from fabric.errors import DesignError
    from fabric.evaluate import DEFAULT_SAMPLES, Scenario, evaluate
    from fabric.topology import build_fabric

    samples = DEFAULT_SAMPLES if samples is None else samples   # the same samples as every page's evaluation

    fab = build_fabric(design, catalog)
    # the rule on this cabling: the search's cached analysis (failure_analysis of this fabric), copied, as the
    # evaluated failures are added to it
    out = copy.deepcopy(structural_failures(design, catalog))
    pairs, mult = _switch_graph(fab)
    base = scenario or Scenario()
    # one design under several failures: the fabric, its bill of materials and each op's traffic pattern are made
    # once (fabric.evaluate.evaluate's ``reuse``: the results are identical with or without it)
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides,
              reuse={} if reuse is None else reuse)
    if healthy_p99_s is None:
        healthy_p99_s = float(evaluate(design, workload, base, **kw).step_time_s["p99"])
    labels = {v: k for k, v in _labels(fab).items()}

    def worst(failures, field):
        best, which, cut = None, None, False
        for f in failures:
            sc = _replace(base, name=f"{base.name}+{field}", **{field: (f,)})
            try:
                p = float(evaluate(design, workload, sc, **kw).step_time_s["p99"])
            except DesignError:
                cut, which = True, f
                continue
            if best is None or p > best:
                best, which = p, (which if cut else f)
        return best, which, cut

    sw = [labels[u + fab.switch_base] for u in _switch_classes(fab, pairs, mult)]
    ln = [f"{labels[a + fab.switch_base]}-{labels[b + fab.switch_base]}" for a, b in _critical_links(fab, pairs, mult)]
    lv = [labels[u + fab.switch_base] for u in detour_leaves(fab)]
    ps, which_s, cut_s = worst(sw, "fail_switches")
    pl, which_l, cut_l = worst(ln, "fail_links")
    pv, which_v, cut_v = worst(lv, "fail_switches")
    # a failure never makes the step faster: a failure p99 a hair under the healthy one is Monte Carlo noise
    ps = None if ps is None else max(ps, healthy_p99_s)
    pl = None if pl is None else max(pl, healthy_p99_s)
    pv = None if pv is None else max(pv, healthy_p99_s)
    out.update({
        "healthy_p99_s": healthy_p99_s,
        "worst_switch_failure_p99_s": None if cut_s else ps, "worst_switch": which_s,
        "worst_switch_failure_partitions": cut_s,
        "worst_link_failure_p99_s": None if cut_l else pl, "worst_link": which_l,
        "worst_link_failure_partitions": cut_l,
        "worst_leaf_failure_p99_s": None if cut_v else pv, "worst_leaf": which_v,
        "worst_leaf_failure_partitions": cut_v,
        "switches_tried": sw, "links_tried": ln, "leaves_tried": lv,
    })
    if cut_s or cut_l or cut_v:      # the evaluator found no path: never looser than the rule (tests check they agree)
        out["partitions_on_single_failure"] = True
        out["survives_single_failure"] = False
    return out


def _labels(fabric) -> dict[str, int]:
    from fabric.evaluate.network_models import switch_labels

    return switch_labels(fabric)


_STRUCTURE_CACHE: dict = {}


def structural_failures(design, catalog=None) -> dict:
    """:func:`failure_analysis` of ``design``'s fabric, cached by what the cabling and PXN depend on (not routing,
    transport or placement), for the search, which evaluates many designs of one cabling."""
    import json
    from dataclasses import asdict

    from fabric.catalog import default_catalog
    from fabric.topology import build_fabric

    d = asdict(design)
    for k in ("name", "routing", "qps_per_connection", "storage_routing", "transport", "in_network_reduction",
              "placement", "storage_isolation", "nccl_algo"):
        d.pop(k, None)
    # the catalog by content, not by object: an id can be reused by another catalog once the first is gone
    key = (json.dumps(d, sort_keys=True, default=str), (catalog or default_catalog()).fingerprint())
    hit = _STRUCTURE_CACHE.get(key)
    if hit is None:
        hit = failure_analysis(build_fabric(design, catalog))
        if len(_STRUCTURE_CACHE) > 4096:
            _STRUCTURE_CACHE.clear()
        _STRUCTURE_CACHE[key] = hit
    return hit

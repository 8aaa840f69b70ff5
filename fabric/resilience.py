"""Resilience of a built fabric: can one switch or one link failure cut the GPUs apart?

facts.md section 8: a fabric in which one switch failure disconnects GPUs from each other is not deployable. The
check works on the fabric's actual cabling. GPUs of one scale-up domain reach each other over NVLink, so each
domain is one node of a graph whose other nodes are the switches; a domain is joined to every switch one of its
NIC ports is cabled to, and switches to each other by their links. Removing one switch (or one link) can

- **lose** the domains whose every network attachment goes through it (the servers under a top-of-rack leaf when
  it fails: their GPUs are gone from the job, which is a failure domain of servers, not a partition), or
- **partition** the fabric: the surviving domains fall into two or more groups that cannot reach each other (a
  single spine above several leaves; a pod whose only path to the others is one core).

:func:`failure_analysis` finds both exactly: articulation points and bridges of the graph (networkx) are the only
candidates, and each is checked by removing it and counting connected components (scipy). It also reports, per
leaf, how many distinct switches its uplinks reach (the N of N+1 redundancy).
"""

from __future__ import annotations

import numpy as np

from fabric.topology.fabric import LINK_KINDS

__all__ = ["failure_analysis", "resilience", "structural_failures"]

_NETWORK = {LINK_KINDS.index(k) for k in LINK_KINDS if k not in ("nvlink", "pcie")}
#: link kind -> whether it is a network link (a lookup instead of ``np.isin`` over a million links)
_NETWORK_KIND = np.isin(np.arange(len(LINK_KINDS)), sorted(_NETWORK))


def _graph(fabric):
    """(node count, domain count, edge arrays a, b, multiplicity) of the collapsed graph: domains first, then
    switches (switch node id - switch_base + domains)."""
    n_dom = int(fabric.gpu_domain.max()) + 1 if fabric.n_gpus else 0
    # a NIC's domain: the domain of a GPU it serves
    nic_dom = np.zeros(fabric.n_nics, np.int64)
    nic_dom[fabric.gpu_nics.ravel() - fabric.nic_base] = np.repeat(fabric.gpu_domain, fabric.gpu_nics.shape[1])
    a, b, kind = fabric.link_a, fabric.link_b, fabric.link_kind
    net = _NETWORK_KIND[kind]
    # node id -> collapsed node (a NIC's domain, a switch's index after the domains, -1 for anything else): one
    # gather per link end instead of masks over every link
    size = max(fabric.nic_base + fabric.n_nics, fabric.switch_base + fabric.n_switches)
    node = np.full(size, -1, np.int64)
    node[fabric.nic_base:fabric.nic_base + fabric.n_nics] = nic_dom
    node[fabric.switch_base:fabric.switch_base + fabric.n_switches] = np.arange(fabric.n_switches) + n_dom
    u, v = node[a[net]], node[b[net]]
    keep = (u >= 0) & (v >= 0) & (u != v)
    u, v = np.minimum(u[keep], v[keep]), np.maximum(u[keep], v[keep])
    n = n_dom + fabric.n_switches
    codes, mult = np.unique(u * n + v, return_counts=True)     # one 1-D sort: far faster than unique rows
    pairs = np.stack([codes // n, codes % n], axis=1)
    return n, n_dom, pairs, mult


def _components(n: int, pairs: np.ndarray, removed_node: int | None = None, removed_pair: int | None = None):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    keep = np.ones(len(pairs), bool)
    if removed_node is not None:
        keep &= (pairs[:, 0] != removed_node) & (pairs[:, 1] != removed_node)
    if removed_pair is not None:
        keep[removed_pair] = False
    p = pairs[keep]
    m = coo_matrix((np.ones(len(p)), (p[:, 0], p[:, 1])), shape=(n, n))
    return connected_components(m, directed=False)[1]


def _verdict(labels: np.ndarray, n_dom: int, lost: np.ndarray) -> bool:
    """True when the surviving (not lost) domains fall into more than one component."""
    alive = np.ones(n_dom, bool)
    alive[lost] = False
    return np.unique(labels[:n_dom][alive]).size > 1


def failure_analysis(fabric, *, max_listed: int = 10) -> dict:
    """Single points of failure of ``fabric`` (see the module docstring).

    Returns ``partitions_on_single_failure`` (bool), ``partitioning_switches`` and ``partitioning_links`` (labels,
    at most ``max_listed`` each, with their counts), ``gpus_lost_on_worst_switch_failure`` (GPUs whose every
    network port goes through one switch: a top-of-rack leaf's servers), and ``min_uplink_switches`` (the fewest
    distinct switches any leaf's uplinks reach; 0 for a one-switch fabric).
    """
    n, n_dom, pairs, mult = _graph(fabric)
    st = fabric.structure
    # a dragonfly of 2+ groups of 2+ routers: a group's routers are all-to-all, every pair of groups is joined
    # directly, and a group's global links are dealt round-robin over its routers, so they leave from at least two
    # routers (3+ groups: one link to each of 2+ others; 2 groups: a h // 1 >= 2 links). Any single router or link
    # failure then leaves the rest connected (a lost local link of a 2-router group, or a lost global link, is
    # routed around through another group or a parallel global link); only the servers of a failed router are
    # lost, which the structural check counts. One group (no global links) keeps the exact check.
    groups, per_pair = int(st.get("groups", 0)), int(st.get("global_links_per_group_pair", 0))
    big_dragonfly = fabric.family == "dragonfly" and groups >= 2 and int(st.get("routers_per_group", 0)) >= 2 \
        and per_pair >= (2 if groups == 2 else 1)
    if len(pairs) > EXACT_MAX_PAIRS and (fabric.family != "dragonfly" or big_dragonfly):
        return _structural(fabric, n, n_dom, pairs, mult, max_listed)
    import networkx as nx

    gpus_per_dom = np.bincount(fabric.gpu_domain, minlength=n_dom)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(map(tuple, pairs.tolist()))
    nbrs_of_dom = [set() for _ in range(n_dom)]
    for u, v in pairs.tolist():
        if u < n_dom <= v:
            nbrs_of_dom[u].add(v)
    only_on: dict[int, list] = {}           # switch -> the domains whose every attachment goes through it
    for d, nb in enumerate(nbrs_of_dom):
        if len(nb) == 1:
            only_on.setdefault(next(iter(nb)), []).append(d)
    cut_switches, lost_worst = [], 0
    # blocks at each cut vertex: a block {s, d} with domain d attached only to s is a lost server, not a split;
    # a cut switch with at most one other block cannot partition the surviving domains (no component check)
    other_blocks: dict[int, int] = {}
    for block in nx.biconnected_components(g):
        lone = len(block) == 2 and any(x < n_dom and len(nbrs_of_dom[x]) == 1 for x in block)
        if lone:
            continue
        for x in block:
            if x >= n_dom:
                other_blocks[x] = other_blocks.get(x, 0) + 1
    for s in nx.articulation_points(g):
        if s < n_dom:
            continue
        lost = np.array(only_on.get(s, []), np.int64)
        lost_worst = max(lost_worst, int(gpus_per_dom[lost].sum()) if lost.size else 0)
        if other_blocks.get(s, 0) >= 2 and _verdict(_components(n, pairs, removed_node=s), n_dom, lost):
            cut_switches.append(s)
    if fabric.n_switches == 1 and n_dom > 1:                # a one-switch fabric: its failure cuts every domain off
        cut_switches.append(n_dom)
    single = {tuple(p): i for i, (p, m) in enumerate(zip(pairs.tolist(), mult)) if m == 1}
    cut_links = []
    for u, v in nx.bridges(g):
        key = (min(u, v), max(u, v))
        if key not in single:
            continue                                      # parallel cables: one of them failing cuts nothing
        lost = np.array([d for d, other in ((u, v), (v, u)) if d < n_dom and nbrs_of_dom[d] == {other}], np.int64)
        if _verdict(_components(n, pairs, removed_pair=single[key]), n_dom, lost):
            cut_links.append(key)
    return _report(fabric, n_dom, pairs, cut_switches, cut_links, lost_worst, max_listed, "exact")


#: Above this many distinct cabled pairs the check is structural (layered fabrics; see :func:`_structural`).
EXACT_MAX_PAIRS = 5_000


def _up_sets(fabric, n_dom, pairs):
    """Per switch node: (its tier, the distinct switches of the next tier up it is cabled to)."""
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches].astype(np.int64)
    ss = pairs[(pairs[:, 0] >= n_dom) & (pairs[:, 1] >= n_dom)]
    t0, t1 = sw_tier[ss[:, 0] - n_dom], sw_tier[ss[:, 1] - n_dom]
    lo = np.where(t0 <= t1, ss[:, 0], ss[:, 1])
    hi = np.where(t0 <= t1, ss[:, 1], ss[:, 0])
    up = sw_tier[hi - n_dom] > sw_tier[lo - n_dom]
    return sw_tier, lo[up], hi[up]


def _unique_pairs(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """The distinct (lo, hi) node pairs, sorted, as rows (one 1-D sort of ``lo x n + hi``: far faster than
    ``np.unique(axis=0)``)."""
    codes = np.sort(lo.astype(np.int64) * n + hi)          # sort and drop repeats: numpy 2's hashing unique is
    codes = codes[np.r_[True, codes[1:] != codes[:-1]]] if codes.size else codes    # slower on 10^6 codes
    return np.stack([codes // n, codes % n], axis=1)


def _report(fabric, n_dom, pairs, cut_switches, cut_links, lost_worst, max_listed, method, ups=None) -> dict:
    sw_tier, lo, hi = ups if ups is not None else _up_sets(fabric, n_dom, pairs)
    leaves = np.flatnonzero(sw_tier == 0) + n_dom
    if fabric.tiers > 1 and leaves.size:
        uniq = _unique_pairs(lo, hi, n_dom + fabric.n_switches)
        per_leaf = np.bincount(uniq[:, 0], minlength=n_dom + fabric.n_switches)[leaves]
        min_up = int(per_leaf.min())
    else:
        min_up = 0

    def label(x):
        return fabric.node_label(int(x - n_dom + fabric.switch_base)) if x >= n_dom else f"domain{x}"

    return {
        "partitions_on_single_failure": bool(cut_switches or cut_links),
        "partitioning_switches": [label(s) for s in cut_switches[:max_listed]],
        "partitioning_switch_count": len(cut_switches),
        "partitioning_links": [f"{label(u)}-{label(v)}" for u, v in cut_links[:max_listed]],
        "partitioning_link_count": len(cut_links),
        "gpus_lost_on_worst_switch_failure": int(lost_worst if fabric.n_switches > 1 else fabric.n_gpus),
        "min_uplink_switches": min_up,
        "method": method,
    }


def _structural(fabric, n, n_dom, pairs, mult, max_listed) -> dict:
    """Large layered fabrics: a switch can split the others only as the sole upper neighbour of some lower
    switch, a link only as a lower switch's sole uplink; each such candidate is checked with a component count.
    (Exact for the up-down fabrics fabric builds; the property test compares it with the exact check.)"""
    ups = sw_tier, lo, hi = _up_sets(fabric, n_dom, pairs)
    uniq = _unique_pairs(lo, hi, n)
    count = np.bincount(uniq[:, 0], minlength=n)
    sole = uniq[count[uniq[:, 0]] == 1]
    dom_pairs = pairs[(pairs[:, 0] < n_dom) & (pairs[:, 1] >= n_dom)]
    dom_deg = np.bincount(dom_pairs[:, 0], minlength=n_dom)
    only = dom_pairs[dom_deg[dom_pairs[:, 0]] == 1]          # domains with one switch: lost with it
    gpus_per_dom = np.bincount(fabric.gpu_domain, minlength=n_dom)
    lost_by = np.bincount(only[:, 1], weights=gpus_per_dom[only[:, 0]], minlength=n)
    cut_switches = []
    for s in np.unique(sole[:, 1]).tolist():
        lost = only[only[:, 1] == s, 0]
        if _verdict(_components(n, pairs, removed_node=s), n_dom, lost):
            cut_switches.append(s)
    if fabric.n_switches == 1 and n_dom > 1:
        cut_switches.append(n_dom)
    cut_links = []
    codes = pairs[:, 0] * n + pairs[:, 1]
    for u, v in sole.tolist():
        i = int(np.searchsorted(codes, min(u, v) * n + max(u, v)))
        if mult[i] == 1 and _verdict(_components(n, pairs, removed_pair=i), n_dom, np.zeros(0, np.int64)):
            cut_links.append((u, v))
    return _report(fabric, n_dom, pairs, cut_switches, cut_links, int(lost_by.max()) if lost_by.size else 0,
                   max_listed, "structural", ups)


def _switch_classes(fabric, n_dom, pairs, mult, per_tier: int = 3) -> list[int]:
    """A few switches above the leaves standing for all of them: one per distinct pattern of cables to the tier
    below (switches cabled alike fail alike), at most ``per_tier`` per tier, the most-cabled pattern first."""
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches].astype(np.int64)
    out = []
    ss = (pairs[:, 0] >= n_dom) & (pairs[:, 1] >= n_dom)
    p, m = pairs[ss], mult[ss]
    for t in sorted(set(sw_tier.tolist()) - {0}):
        ids = np.flatnonzero(sw_tier == t) + n_dom
        sig = {}
        for u in ids.tolist():
            below = m[((p[:, 0] == u) | (p[:, 1] == u))]
            key = tuple(sorted(below.tolist()))
            sig.setdefault(key, u)
        ranked = sorted(sig.items(), key=lambda kv: (-sum(kv[0]), kv[1]))
        out += [u for _, u in ranked[:per_tier]]
    return out


def _critical_links(fabric, n_dom, pairs, mult) -> list[tuple[int, int]]:
    """Per switch tier above the leaves, the cable whose loss removes the largest share of one lower switch's
    uplink capacity: the thinnest bundle of the switch with the fewest uplinks."""
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches].astype(np.int64)
    _, lo, hi = _up_sets(fabric, n_dom, pairs)
    if lo.size == 0:
        return []
    out = []
    codes = pairs[:, 0] * (n_dom + fabric.n_switches) + pairs[:, 1]
    for t in sorted(set(sw_tier[hi - n_dom].tolist())):
        sel = sw_tier[hi - n_dom] == t
        l, h = lo[sel], hi[sel]
        a, b = np.minimum(l, h), np.maximum(l, h)
        idx = np.searchsorted(codes, a * (n_dom + fabric.n_switches) + b)
        bundles = mult[idx]
        ups = np.bincount(l, weights=bundles, minlength=n_dom + fabric.n_switches)
        score = bundles / ups[l]                     # share of the lower switch's uplinks one cable carries
        i = int(np.argmax(score / bundles))
        out.append((int(l[i]), int(h[i])))
    return out


def resilience(design, workload, *, catalog=None, seed: int = 0, samples: int | None = None, transport_overrides=None,
               scenario=None, healthy_p99_s: float | None = None) -> dict:
    """Evaluated resilience of ``design`` for ``workload``: :func:`failure_analysis` plus the p99 step under the
    worst single switch failure above the leaves and the worst single link failure between switches.

    Candidates (evaluated, not guessed): one switch per cabling pattern of each tier above the leaves, and per
    tier the cable carrying the largest share of one switch's uplinks. A failure that partitions the fabric gives
    no finite p99 (None, with ``..._partitions``). Leaf and router failures take their servers out of the job and
    are reported as ``gpus_lost_on_worst_switch_failure``.
    """
    from dataclasses import replace as _replace

    from fabric.errors import DesignError
    from fabric.evaluate import DEFAULT_SAMPLES, Scenario, evaluate
    from fabric.topology import build_fabric

    samples = DEFAULT_SAMPLES if samples is None else samples   # the same samples as every page's evaluation

    fab = build_fabric(design, catalog)
    out = failure_analysis(fab)
    n, n_dom, pairs, mult = _graph(fab)
    base = scenario or Scenario()
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides)
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

    sw = [labels[u - n_dom + fab.switch_base] for u in _switch_classes(fab, n_dom, pairs, mult)]
    ln = [f"{labels[a - n_dom + fab.switch_base]}-{labels[b - n_dom + fab.switch_base]}"
          for a, b in _critical_links(fab, n_dom, pairs, mult)]
    ps, which_s, cut_s = worst(sw, "fail_switches")
    pl, which_l, cut_l = worst(ln, "fail_links")
    # a failure never makes the step faster: a failure p99 a hair under the healthy one is Monte Carlo noise
    ps = None if ps is None else max(ps, healthy_p99_s)
    pl = None if pl is None else max(pl, healthy_p99_s)
    out.update({
        "healthy_p99_s": healthy_p99_s,
        "worst_switch_failure_p99_s": None if cut_s else ps, "worst_switch": which_s,
        "worst_switch_failure_partitions": cut_s,
        "worst_link_failure_p99_s": None if cut_l else pl, "worst_link": which_l,
        "worst_link_failure_partitions": cut_l,
        "switches_tried": sw, "links_tried": ln,
    })
    if cut_s or cut_l:
        out["partitions_on_single_failure"] = True
    return out


def _labels(fabric) -> dict[str, int]:
    from fabric.evaluate.engine import switch_labels

    return switch_labels(fabric)


_STRUCTURE_CACHE: dict = {}


def structural_failures(design, catalog=None) -> dict:
    """:func:`failure_analysis` of ``design``'s fabric, cached by what the cabling depends on (not routing,
    transport or placement), for the search, which evaluates many designs of one cabling."""
    import json
    from dataclasses import asdict

    from fabric.topology import build_fabric

    d = asdict(design)
    for k in ("name", "routing", "qps_per_connection", "storage_routing", "transport", "in_network_reduction", "pxn",
              "placement", "storage_isolation", "nccl_algo"):
        d.pop(k, None)
    key = (json.dumps(d, sort_keys=True, default=str), id(catalog))
    hit = _STRUCTURE_CACHE.get(key)
    if hit is None:
        hit = failure_analysis(build_fabric(design, catalog))
        if len(_STRUCTURE_CACHE) > 4096:
            _STRUCTURE_CACHE.clear()
        _STRUCTURE_CACHE[key] = hit
    return hit

"""The single-failure rule: which failures fabric counts, and what surviving one means.

One definition, used by the search constraint ``survive_single_failure``, :func:`fabric.failures.resilience.failure_analysis`
(and through it the Design page, the brief, the HTML reports and ``fabric evaluate``).

**Failures counted**: every switch (leaves, rail switches and routers included), every cable between two switches,
and every cable between a NIC port and its switch; one at a time.

**What a failure does** (over the paths the evaluator models: a GPU's traffic leaves through the NICs of its
server; PXN, on rail-only fabrics and on rail-optimized ones with ``pxn``, moves a flow over NVLink to a GPU of the
*same* server to change rails; no path crosses a third server and nothing fails over to another server's NIC):

- **the detour** (issue 34): a GPU whose own NICs lost every port keeps working through the live NICs of the other
  GPUs of its server, over NVLink. This is NCCL's behaviour, not a design option: NCCL builds its rings and trees
  over the NICs that are up, and reaches a NIC through another GPU of the same node when that GPU sits on the NIC's
  PCI switch, is joined to it by NVLink and it has no PCI path of its own to the NIC (PXN, "PCI x NVLink":
  NVIDIA/nccl src/graph/paths.cc, ``ncclTopoComputePaths``; ``NCCL_PXN_DISABLE`` defaults to 0, i.e. on). So it
  applies to every server whose GPUs share NVLink (every GPU system of the catalog), whatever the design's ``pxn``
  field, which is the healthy step's forwarding policy (cross-rail traffic through NVLink or through the spines).
  The server stays in the job at reduced bandwidth: its surviving NICs carry the failed NIC's traffic
  (:mod:`fabric.evaluate.detour` evaluates it); ``gpus_detoured_on_single_failure`` counts such GPUs.
  ``detour=False`` gives the rule without it (the figures before issue 34);
- a GPU is **cut off** when it has no network path left: every port of every NIC of its server hangs off the failed
  switch (or the failed cable); without the detour, every port of every NIC it uses itself;
- a server with a cut-off GPU **leaves the job**: its tensor/expert-parallel group lost a member, so the scheduler
  drains it and the job restarts on the others. *GPUs out of the job* counts whole servers; a top-of-rack leaf
  takes its servers out. (Without the detour a rail switch holding rail r of every server would cut GPU r of every
  server off and take every server out; with it, every server runs on its other rails);
- the GPUs still in the job must reach each other: for each *endpoint class* (the NIC port index: a flow leaves
  and arrives on the same port index, i.e. the same plane; with PXN the rail, i.e. the NIC's index in its server
  and the port) the live ports of the servers still in the job must lie in one connected piece of the surviving
  switches and switch-to-switch cables. (A single failure leaves every server of two or more NICs all but at most
  the NICs of one switch, so two servers always share a live rail.)

A server out of the job either hangs **wholly** off the failed switch (every port of every NIC: the servers of a
top-of-rack leaf, whose leaf is part of their own failure domain like their NICs and cables), or is **collateral**
damage: it keeps live ports on other switches but lost a GPU's only ones (only without the detour: a rail leaf
holds one NIC of each server it serves).

**Not survived** (in a cluster of two or more servers) when some single failure

- **partitions** the GPUs still in the job (last point above), or
- takes **every server** out of the job (the one switch of a one-switch cluster), or
- takes **more than half of the servers** out as collateral damage: the cluster would stop for a part that every
  server only partly depends on (without the detour: a rail switch of a rail-only fabric holds rail r of every
  server; so does a rail leaf of a rail-optimized fabric of one scalable unit).

A top-of-rack leaf, a rail leaf (its servers detour: none leaves the job) and a switch of one plane of a
multi-plane fabric (its servers keep their other planes' ports: nobody is cut off) are survived. A NIC-to-switch
cable takes at most the one server of that NIC out (with the detour only a server of one cable); it is counted in
the GPUs-out figures only.

Candidates are checked exactly: a failure can split the endpoints only if it splits the switch graph, so small
fabrics check its articulation points and bridges (networkx) and large layered fabrics the sole upper neighbour
of some switch and the sole uplink cable of some switch (each checked with a component count, scipy); who is cut
off by which switch is computed for every switch at once (numpy).
"""

from __future__ import annotations

import numpy as np

from fabric.arrays import unique
from fabric.evaluate.detour import nvlink_detour
from fabric.topology.fabric import LINK_KINDS, kind_index

__all__ = ["single_failure_analysis", "EXACT_MAX_PAIRS"]

#: Above this many distinct switch-to-switch pairs the candidates are structural (see the module docstring).
EXACT_MAX_PAIRS = 5_000
_ENDPOINT_KINDS = {LINK_KINDS.index(k) for k in ("nvlink", "pcie", "nic-leaf")}
_SWITCH_KINDS = [i for i in range(len(LINK_KINDS)) if i not in _ENDPOINT_KINDS]
_LEAF_SPINE = LINK_KINDS.index("leaf-spine")


_GRAPHS: dict = {}


def _switch_graph(fabric):
    """Distinct switch-to-switch pairs (local switch ids, lo < hi) and their cable counts; kept for the last few
    cablings (by ``fabric.cache_key``), as :func:`fabric.failures.resilience.resilience` asks for it twice."""
    key = fabric.cache_key
    if key and key in _GRAPHS:
        return _GRAPHS[key]
    out = _switch_graph_of(fabric)
    if key:
        if len(_GRAPHS) >= 4:
            _GRAPHS.pop(next(iter(_GRAPHS)))
        _GRAPHS[key] = out
    return out


def _switch_graph_of(fabric):
    ns, sb = fabric.n_switches, fabric.switch_base
    # the switch-to-switch links by the builder's per-kind link ids (a mask over every link, NIC and NVLink ones
    # included, cost as much as the rest); their order does not matter, the codes are sorted below
    ids = [kind_index(fabric.link_kind, k) for k in _SWITCH_KINDS]
    sel = np.concatenate(ids) if len(ids) != 1 else ids[0]
    u = np.take(fabric.link_a, sel) - sb
    v = np.take(fabric.link_b, sel) - sb
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    # (lo, hi) packed with a power-of-two stride: the same order as lo x ns + hi, unpacked by shifts, not divisions
    shift = max(1, int(ns).bit_length())
    codes = (lo << shift) | hi
    # the builder emits links switch by switch, so the codes are nearly sorted: a merge sort then takes about a
    # third of the time of numpy's default sort (which is faster on shuffled codes)
    nearly = codes.size > 1 and np.count_nonzero(codes[1:] < codes[:-1]) * 20 < codes.size
    codes = np.sort(codes, kind="stable" if nearly else None)
    if codes.size:
        first = np.r_[True, codes[1:] != codes[:-1]]
        starts = np.flatnonzero(first)
        mult = np.diff(starts, append=codes.size)
        codes = codes[first]
    else:
        mult = np.zeros(0, np.int64)
    ends = np.empty((2, codes.size), np.int64)           # each end's column contiguous (what the passes read)
    np.right_shift(codes, shift, out=ends[0])
    np.bitwise_and(codes, (1 << shift) - 1, out=ends[1])
    return ends.T, mult


def _labels(n: int, pairs: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """Connected-component label of each of ``n`` nodes (the smallest node id of its component) under the edges
    ``pairs[keep]``: union by hooking roots onto the smaller root, then pointer jumping (numpy only; a handful of
    rounds on a layered fabric, no scipy import on the CLI's path)."""
    p = pairs if keep is None else pairs[keep]
    lab = np.arange(n)
    u, v = p[:, 0], p[:, 1]
    first = True
    while u.size:
        if first:                                # every node its own root: the roots are the ends themselves
            lu, lv, first = u, v, False
        else:
            lu, lv = np.take(lab, u), np.take(lab, v)    # roots: ``lab`` is kept fully compressed
        diff = lu != lv
        if not diff.any():
            break
        if not diff.all():
            u, v, lu, lv = u[diff], v[diff], lu[diff], lv[diff]
        np.minimum.at(lab, np.maximum(lu, lv), np.minimum(lu, lv))
        while True:
            nxt = lab[lab]
            if np.array_equal(nxt, lab):
                break
            lab = nxt
    return lab


def _per_row(op, m: np.ndarray) -> np.ndarray:
    """``op`` reduced over each row of ``m`` (few columns: NIC ports), column by column: numpy's reduction over a
    short inner axis is several times slower on 100,000s of rows."""
    out = m[:, 0].copy() if m.shape[1] else np.zeros(m.shape[0], m.dtype)
    for j in range(1, m.shape[1]):
        op(out, m[:, j], out=out)
    return out


class _Endpoints:
    """Every cabled NIC port: its switch (local id), its endpoint class and its server; and per GPU the one
    switch all the ports it can use hang off (-1 when they reach two or more): its own NICs' ports, or with the
    detour every NIC port of its server (``own_home``: its own NICs' switch either way)."""

    def __init__(self, fabric, per_rail: bool, detour: bool = False):
        sb = fabric.switch_base
        ports = np.asarray(fabric.nic_ports, np.int64)                  # (NICs, ports): switch node ids
        n_nics, n_ports = ports.shape
        npn = max(1, int(fabric.design.nics_per_node))
        nic = np.repeat(np.arange(n_nics), n_ports)
        port = np.tile(np.arange(n_ports), n_nics)
        sw = ports.ravel() - sb
        cabled = (sw >= 0) & (sw < fabric.n_switches)
        every = bool(cabled.all())
        pick = (lambda a: a) if every else (lambda a: a[cabled])   # noqa: E731  (every port cabled: no copy)
        self.switch = pick(sw)
        self.port = pick(port)
        self.nic = pick(nic)
        self.node = pick(nic // npn)
        self.cls = pick((nic % npn) * n_ports + port) if per_rail else self.port
        self.n_classes = (npn * n_ports) if per_rail else n_ports
        # per GPU: the switches of every port of every NIC it uses
        g_sw = np.take(ports, fabric.gpu_nics - fabric.nic_base, axis=0).reshape(fabric.n_gpus, -1)
        if every:
            # every port on a switch: each GPU's lowest and highest switch, made local on the reduced columns
            lo, hi = _per_row(np.minimum, g_sw) - sb, _per_row(np.maximum, g_sw) - sb
            self.gpu_cables = np.full(fabric.n_gpus, g_sw.shape[1], np.int64)   # NIC-to-switch cables a GPU can use
        else:
            g_sw = g_sw - sb
            g_sw = np.where((g_sw >= 0) & (g_sw < fabric.n_switches), g_sw, -1)
            lo, hi = _per_row(np.minimum, g_sw), _per_row(np.maximum, g_sw)
            self.gpu_cables = _per_row(np.add, (g_sw >= 0).astype(np.int64))
        self.own_home = np.where((lo == hi) & (lo >= 0), lo, -1)       # single-homed: the one switch
        self.gpu_home = self.own_home
        if detour and fabric.n_gpus:
            # the GPU reaches every NIC of its server over NVLink: the server's ports are its ports
            node = fabric.gpu_node.astype(np.int64)
            n_nodes = int(node.max()) + 1
            s_lo = np.full(n_nodes, np.iinfo(np.int64).max)
            s_hi = np.full(n_nodes, -1)
            np.minimum.at(s_lo, node, lo)
            np.maximum.at(s_hi, node, hi)
            home = np.where((s_lo == s_hi) & (s_lo >= 0), s_lo, -1)
            self.gpu_home = home[node]
            self.gpu_cables = np.bincount(self.node, minlength=n_nodes)[node]


def _wholly_on(fabric) -> np.ndarray:
    """Per switch: the servers whose every NIC port is cabled to it."""
    npn = max(1, int(fabric.design.nics_per_node))
    ports = np.asarray(fabric.nic_ports, np.int64).reshape(-1, npn * fabric.nic_ports.shape[1])
    # each server's lowest and highest port node, made local to the switches on the reduced columns
    lo = _per_row(np.minimum, ports) - fabric.switch_base
    hi = _per_row(np.maximum, ports) - fabric.switch_base
    home = lo[(lo == hi) & (lo >= 0) & (lo < fabric.n_switches)]
    return np.bincount(home, minlength=fabric.n_switches)


def _out_per_switch(fabric, ep: _Endpoints):
    """Per switch: GPUs it cuts off, servers it takes out of the job, and the GPUs of those servers."""
    ns = fabric.n_switches
    node = fabric.gpu_node.astype(np.int64)
    n_nodes = int(node.max()) + 1 if node.size else 0
    gpus_of_node = np.bincount(node, minlength=n_nodes)
    single = ep.gpu_home >= 0
    home, nd = ep.gpu_home[single], node[single]
    cut = np.bincount(home, minlength=ns)
    codes = unique(home * max(n_nodes, 1) + nd)
    s_of, n_of = codes // max(n_nodes, 1), codes % max(n_nodes, 1)
    servers = np.bincount(s_of, minlength=ns)
    gpus = np.bincount(s_of, weights=gpus_of_node[n_of], minlength=ns).astype(np.int64)
    return cut, servers, gpus, n_nodes, gpus_of_node, (s_of, n_of)


def single_failure_analysis(fabric, *, max_listed: int = 10, pxn: bool | None = None,
                            detour: bool | None = None) -> dict:
    """The single-failure rule (module docstring) applied to ``fabric``.

    Returns ``survives_single_failure``; ``partitions_on_single_failure`` with ``partitioning_switches`` /
    ``partitioning_links`` (labels, at most ``max_listed``) and their counts; ``server_loss_switches`` (the
    switches whose failure takes every server, or more than half of them as collateral damage, out of the job)
    and its count, and for the first of them ``server_loss`` (its label, GPUs cut off, servers out, collateral
    servers, GPUs out; None when there is none); for the worst switch failure (most GPUs out of
    the job) ``worst_switch_out`` (its label), ``gpus_cut_off_on_worst_switch_failure`` (GPUs with no network
    path left), ``servers_out_on_worst_switch_failure`` and ``gpus_lost_on_worst_switch_failure`` (the GPUs of
    those servers); ``gpus_lost_on_worst_nic_cable_failure``; ``servers``, ``gpus``; ``tiers``;
    ``min_uplink_switches`` (the fewest distinct upper switches any leaf's uplinks reach; None when no switch has
    uplinks: a single tier of switches or a dragonfly); ``method`` ("exact" or "structural"); ``detour`` (whether
    the NVLink detour applied: :func:`nvlink_detour` unless ``detour`` says otherwise), and for the switch that
    sends the most GPUs through another GPU's NIC ``detour_switch`` (its label, None when none does),
    ``gpus_detoured_on_single_failure`` and ``servers_detoured_on_single_failure`` (their servers, which stay in
    the job at reduced bandwidth).
    """
    d = fabric.design
    if pxn is None:
        pxn = bool(getattr(d, "pxn", False))
    if detour is None:
        detour = nvlink_detour(fabric)
    per_rail = fabric.family == "rail_only" or (fabric.family == "rail_optimized" and pxn)
    ns = fabric.n_switches
    pairs, mult = _switch_graph(fabric)
    ep = _Endpoints(fabric, per_rail, detour)
    cut, servers, gpus_out, n_nodes, gpus_of_node, (s_of, n_of) = _out_per_switch(fabric, ep)
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + ns]          # 8-bit tiers: compared only
    lo_up, hi_up = _up_pairs(pairs, sw_tier)

    def splits(labels: np.ndarray, dead_switch: int = -1, out_nodes: np.ndarray | None = None) -> bool:
        alive = ep.switch != dead_switch
        if out_nodes is not None and out_nodes.size:
            gone = np.zeros(max(n_nodes, 1), bool)
            gone[out_nodes] = True
            alive &= ~gone[ep.node]
        if not alive.any():
            return False
        n_lab = int(labels.max()) + 1
        key = unique(ep.cls[alive] * n_lab + labels[ep.switch[alive]])
        cls = key // n_lab
        return bool(cls.size and (cls[1:] == cls[:-1]).any())

    def out_nodes_of(s: int) -> np.ndarray:
        return n_of[s_of == s]

    healthy_split = splits(_labels(ns, pairs)) if ns else False
    st = fabric.structure
    groups, per_pair = int(st.get("groups", 0)), int(st.get("global_links_per_group_pair", 0))
    # a dragonfly of 2+ groups of 2+ routers: every pair of groups is joined directly and a group's global links
    # leave from 2+ routers, so no single router or link splits the others (docs/review.md); one group keeps the
    # exact check
    big_dragonfly = fabric.family == "dragonfly" and groups >= 2 and int(st.get("routers_per_group", 0)) >= 2 \
        and per_pair >= (2 if groups == 2 else 1)
    structural = len(pairs) > EXACT_MAX_PAIRS and (fabric.family != "dragonfly" or big_dragonfly)
    if structural:
        sw_cands, link_cands = _structural_candidates(pairs, mult, lo_up, hi_up, ns)
        if big_dragonfly:
            sw_cands, link_cands = [], []
    else:
        sw_cands, link_cands = _exact_candidates(pairs, mult, ns)
    cut_switches = [s for s in sw_cands
                    if splits(_labels(ns, pairs, (pairs[:, 0] != s) & (pairs[:, 1] != s)), s, out_nodes_of(s))]
    cut_links = []
    for i in link_cands:
        keep = np.ones(len(pairs), bool)
        keep[i] = False
        if splits(_labels(ns, pairs, keep)):
            cut_links.append(i)
    collateral = servers - _wholly_on(fabric)
    if n_nodes >= 2:
        loss = np.flatnonzero((servers == n_nodes) | (2 * collateral > n_nodes))
    else:
        loss = np.zeros(0, np.int64)
    first = int(loss[np.argmax(servers[loss])]) if loss.size else None
    worst = int(np.argmax(gpus_out)) if ns and gpus_out.max() > 0 else None
    one_cable = (ep.gpu_cables == 1).any() if fabric.n_gpus else False
    # GPUs whose own NICs hang off one switch but whose server keeps a port elsewhere: they detour over NVLink
    moved = (ep.own_home >= 0) & (ep.gpu_home != ep.own_home)
    det_gpus = np.bincount(ep.own_home[moved], minlength=ns)
    det_servers = np.bincount(unique(ep.own_home[moved] * max(n_nodes, 1) + fabric.gpu_node[moved])
                              // max(n_nodes, 1), minlength=ns) if moved.any() else np.zeros(ns, np.int64)
    det = int(np.argmax(det_gpus)) if ns and det_gpus.max() > 0 else None
    gpn = int(gpus_of_node.max()) if gpus_of_node.size else 0

    def label(s: int) -> str:
        return fabric.node_label(int(s) + fabric.switch_base)

    min_up = None
    leaves = np.flatnonzero(sw_tier == 0)
    if lo_up.size and leaves.size:
        per_sw = np.bincount(lo_up, minlength=ns)           # distinct upper switches (pairs are distinct)
        has_up = per_sw[leaves] > 0
        if has_up.any():
            min_up = int(per_sw[leaves].min())
    partitions = bool(healthy_split or cut_switches or cut_links)
    return {
        "survives_single_failure": not (partitions or loss.size),
        "partitions_on_single_failure": partitions,
        "partitioned_without_failure": bool(healthy_split),
        "partitioning_switches": [label(s) for s in cut_switches[:max_listed]],
        "partitioning_switch_count": len(cut_switches),
        "partitioning_links": [f"{label(pairs[i, 0])}-{label(pairs[i, 1])}" for i in cut_links[:max_listed]],
        "partitioning_link_count": len(cut_links),
        "server_loss_switches": [label(s) for s in loss[:max_listed].tolist()],
        "server_loss_switch_count": int(loss.size),
        "server_loss": None if first is None else {
            "switch": label(first), "gpus_cut_off": int(cut[first]), "servers_out": int(servers[first]),
            "collateral_servers": int(collateral[first]), "gpus_out": int(gpus_out[first])},
        "worst_switch_out": None if worst is None else label(worst),
        "gpus_cut_off_on_worst_switch_failure": 0 if worst is None else int(cut[worst]),
        "servers_out_on_worst_switch_failure": 0 if worst is None else int(servers[worst]),
        "gpus_lost_on_worst_switch_failure": 0 if worst is None else int(gpus_out[worst]),
        "gpus_lost_on_worst_nic_cable_failure": gpn if one_cable else 0,
        "servers": int(n_nodes), "gpus": int(fabric.n_gpus), "tiers": int(fabric.tiers),
        "family": fabric.family,
        "min_uplink_switches": min_up,
        "method": "structural" if structural else "exact",
        "detour": bool(detour),
        "detour_switch": None if det is None else label(det),
        "gpus_detoured_on_single_failure": 0 if det is None else int(det_gpus[det]),
        "servers_detoured_on_single_failure": 0 if det is None else int(det_servers[det]),
    }


def _up_pairs(pairs: np.ndarray, sw_tier: np.ndarray):
    """(lower, upper) switch of every distinct pair that joins two tiers (a leaf and its spine, ...)."""
    if not len(pairs):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    a, b = pairs[:, 0], pairs[:, 1]
    t0, t1 = np.take(sw_tier, a), np.take(sw_tier, b)
    if not (t0 > t1).any():
        # the builder numbers a plane's leaves before its spines before its cores: the lower id is the lower end
        up = np.flatnonzero(t1 > t0)
        return np.take(a, up), np.take(b, up)
    lo = np.where(t0 <= t1, a, b)
    hi = np.where(t0 <= t1, b, a)
    up = sw_tier[hi] > sw_tier[lo]
    return lo[up], hi[up]


def _exact_candidates(pairs, mult, ns):
    """Articulation points of the switch graph, and its bridges made of one cable (indices into ``pairs``)."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(ns))
    g.add_edges_from(map(tuple, pairs.tolist()))
    index = {tuple(p): i for i, p in enumerate(pairs.tolist())}
    sw = sorted(nx.articulation_points(g))
    links = sorted(i for u, v in nx.bridges(g) for i in [index[(min(u, v), max(u, v))]] if mult[i] == 1)
    return sw, links


def _structural_candidates(pairs, mult, lo_up, hi_up, ns):
    """Large layered fabrics: a switch can split the switch graph only as the sole upper neighbour of some lower
    switch, a cable only as a lower switch's sole uplink (exact for the up-down fabrics fabric builds; a property
    test compares it with the exact candidates)."""
    count = np.bincount(lo_up, minlength=ns)
    sole = count[lo_up] == 1
    sw = unique(hi_up[sole]).tolist()
    codes = pairs[:, 0] * ns + pairs[:, 1]
    a, b = np.minimum(lo_up[sole], hi_up[sole]), np.maximum(lo_up[sole], hi_up[sole])
    idx = np.searchsorted(codes, a * ns + b)
    links = sorted(int(i) for i in idx[mult[idx] == 1])
    return sw, links

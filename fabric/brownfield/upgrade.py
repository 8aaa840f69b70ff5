"""Upgrade an installed fabric within an upgrade budget: the front of upgrade cost versus p99 step time.

An installed fabric (:class:`~fabric.brownfield.inventory.Installed`) is a design whose items are on the floor.
An **upgrade** is another design of the same cluster (GPUs, family, switch model, cabling rule) reached by these
moves, each a plain design edit (so every upgrade can be built, priced, evaluated and opened like any design):

==================  =====================================================================================
move                what changes, and what happens to the installed items
==================  =====================================================================================
``leaf_uplinks``    lower leaf oversubscription: more uplinks per leaf and more spines. While the leaves'
                    free ports take the new uplinks, every server stays cabled where it is (the leaves keep
                    their nodes; only uplinks and spines are added). Below that ratio a leaf holds fewer
                    nodes: more leaves, and the servers that move are re-cabled (counted as
                    ``recabled_server_links``); their cables are reused where the model fits.
``spine_uplinks``   (3 tiers) lower spine oversubscription: more spine uplinks and cores.
``tier``            a switch tier on top (2 -> 3 tiers): the spines become the spines of pods, cores are added.
``plane``           a second plane: each NIC's ports split over two copies of the network (needs NICs with
                    an even number of ports: with ``nic``, NICs are replaced).
``uplink_speed``    faster uplinks (a breakout of the switch's ports): the uplink optics and fibres are
                    replaced by ones of the new speed.
``nic``             other NICs (the same switch fabric, ones the GPU's host can feed, at least as fast):
                    the NICs and the server links' cables or optics of their speed are replaced.
``storage_network`` a separate storage/checkpoint network.
``policy``          free policy (routing, queue pairs, placement rule, PXN): a configuration push, no cost.
==================  =====================================================================================

**Installed items: reused, replaced or added.** Every installed switch stays in service in its tier: an option
that needs fewer switches in a tier than are installed (e.g. 21 uplinks per leaf spread over 9 spines where 10
are installed) is not an upgrade and is left out (``counts["takes_out_switches"]``); after a ``tier`` move the
installed spines serve as the spines of the pods. Other items are matched model by model: an installed item of a
model the upgrade needs is **reused** (kept, free, re-plugged where the cabling changes), one it no longer needs
is **replaced** (taken out, credited at its resale value: NICs after ``nic``, uplink optics after
``uplink_speed``, active copper cables that servers moved into their leaf's rack no longer need), and what is
missing is **added** at the catalog price.

What each upgrade buys is the bill-of-materials difference, model by model (:func:`fabric.brownfield.inventory.
bom_delta`): installed items are free, added ones cost the catalog price, removed ones bring their resale value
(default 0). The limits (:class:`UpgradeLimits`): the budget bounds the capex of what is added; rack power and the
facility's power, free rack units, the cable count, how many server links may be re-cabled, a p99 target.

**The search is exhaustive**, not NSGA-II: from one installed fabric the family, switch model, cluster and cabling
rule are fixed and each move has a handful of values, so the hardware options number tens to a few hundred
(typically 10-60). Every one is built and priced (about 1-5 ms each); those over a limit are dropped before any
evaluation. Policies (12-24 per hardware) are tried in two rounds: every policy on the installed hardware (the
free changes), then each hardware with the installed policy and the best free one, then every policy on the
hardware that round leaves on the front or cheaper than the cheapest one meeting the target (the exhaustive
``policies="all"`` tries every policy on every hardware: tests/test_brownfield.py checks the two agree on the
hand-checked cases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fabric.brownfield.inventory import Delta, Installed, Inventory, bom_delta, resale_fractions
from fabric.brownfield.site import SitePower, site_power, switch_rack_units
from fabric.design.policy import POLICY_FIELDS, policy_changes, policy_options, policy_text, same_hardware, \
    with_policy
from fabric.errors import DesignError, FabricError

__all__ = ["MOVES", "UpgradeLimits", "HardwareOption", "Upgrade", "UpgradeResult", "hardware_options",
           "upgrade_front", "recabled_server_links", "free_ports", "describe_hardware", "keeps_switches",
           "step_time_text"]

#: Upgrade moves and what each means (see the module docstring).
MOVES = {
    "leaf_uplinks": "lower leaf oversubscription (more uplinks and spines)",
    "spine_uplinks": "lower spine oversubscription (more spine uplinks and cores)",
    "tier": "a switch tier on top",
    "plane": "a second plane",
    "uplink_speed": "faster uplinks",
    "nic": "other NICs",
    "storage_network": "a separate storage network",
    "policy": "free policy",
}
#: Standard oversubscription ratios tried below the ratio the installed leaves' free ports allow.
STANDARD_RATIOS = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
#: Most leaf uplink counts tried on the installed leaves' free ports (evenly spaced, the most always included).
MAX_UPLINK_STEPS = 6
#: Upgrade kinds.
NONE, FREE, HARDWARE = "none", "free", "hardware"


def _positive(name, v, *, allow_zero=False):
    if v is None:
        return
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if allow_zero
                                                                                       else v > 0)
    if not ok:
        raise FabricError(f"upgrade limit {name!r}: expected a number {'>= 0' if allow_zero else '> 0'}, got {v!r}")


@dataclass(frozen=True)
class UpgradeLimits:
    """What an upgrade must respect (``None``: no limit).

    ``budget_usd`` capex of what is added (before any resale credit); ``rack_power_w`` most power of any compute
    rack after the upgrade and ``facility_power_w`` the facility's power after it: IT power (servers plus network,
    :mod:`fabric.brownfield.site`) x ``pue``, as the search's facility limit counts it;
    ``free_rack_units`` rack units free for new switches (those added minus those taken out); ``cable_count``
    most cables after the upgrade; ``max_recabled_server_links`` most server links moved to another leaf (0: only
    the installed switches' free ports are used for new links); ``p99_target_s`` the p99 step to reach and
    ``max_p99_under_failure_s`` the p99 under the worst single failure to stay within; ``min_free_ports`` the
    physical ports every switch keeps free after the upgrade (a reserve for storage, management or later
    growth; the installed fabric is held to it too). ``resale`` is the share of
    the price paid that a removed item brings back (one number, or one per category); ``switch_rack_units``
    overrides rack units per switch model.
    """

    budget_usd: float | None = None
    rack_power_w: float | None = None
    facility_power_w: float | None = None
    free_rack_units: float | None = None
    cable_count: int | None = None
    max_recabled_server_links: int | None = None
    p99_target_s: float | None = None
    max_p99_under_failure_s: float | None = None
    min_free_ports: int | None = None
    resale: float | dict = 0.0
    switch_rack_units: dict | None = None
    pue: float = 1.3

    def __post_init__(self):
        for name in ("budget_usd", "free_rack_units", "cable_count", "max_recabled_server_links",
                     "min_free_ports"):
            _positive(name, getattr(self, name), allow_zero=True)
        if self.min_free_ports is not None and self.min_free_ports != int(self.min_free_ports):
            raise FabricError(f"upgrade limit 'min_free_ports': expected a whole number of ports, got "
                              f"{self.min_free_ports!r}")
        for name in ("rack_power_w", "facility_power_w", "p99_target_s", "max_p99_under_failure_s"):
            _positive(name, getattr(self, name))
        resale_fractions(self.resale)
        if isinstance(self.pue, bool) or not isinstance(self.pue, (int, float)) or not 1.0 <= self.pue <= 3.0:
            raise FabricError(f"upgrade limit 'pue': expected a number between 1 and 3 (facility power / IT "
                              f"power), got {self.pue!r}")
        for model, ru in (self.switch_rack_units or {}).items():
            switch_rack_units(model, self.switch_rack_units)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class HardwareOption:
    """One hardware configuration reachable from the installed fabric, with the installed policy, and the moves
    that reach it."""

    design: object
    moves: tuple[str, ...]


@dataclass
class Upgrade:
    """One upgrade: a design, what it buys and takes out, its limits and (when evaluated) its p99."""

    design: object
    kind: str                       # none | free | hardware
    moves: tuple[str, ...]
    changes: list[str]
    delta: Delta
    switches: dict
    site: SitePower
    cables: int
    new_cables: int
    rack_units_added: float
    recabled_server_links: int
    violations: dict = field(default_factory=dict)
    free_ports: dict = field(default_factory=dict)      # per tier, as :func:`free_ports`
    p99_s: float | None = None
    p99_under_failure_s: float | None = None
    failure: dict | None = None

    @property
    def added_usd(self) -> float:
        return self.delta.added_usd

    @property
    def net_usd(self) -> float:
        return self.delta.net_usd

    @property
    def fewest_free_ports(self) -> int | None:
        """Fewest free physical ports on any one switch after the upgrade (``None`` if not counted)."""
        return min((v["fewest_free"] for v in self.free_ports.values()), default=None)

    @property
    def within_limits(self) -> bool:
        return not self.violations

    def meets(self, limits: UpgradeLimits) -> bool:
        """Within every limit and at or under the p99 targets (a failure that partitions misses its target)."""
        if self.violations or self.p99_s is None:
            return False
        if limits.p99_target_s is not None and self.p99_s > limits.p99_target_s * (1 + 1e-9):
            return False
        if limits.max_p99_under_failure_s is not None:
            f = self.p99_under_failure_s
            if f is None or f > limits.max_p99_under_failure_s * (1 + 1e-9):
                return False
        return True

    def label(self) -> str:
        return "; ".join(self.changes) if self.changes else "no change"

    def to_dict(self, pue: float = 1.3) -> dict:
        """The upgrade as JSON; ``facility_power_w`` is its IT power x ``pue``."""
        from fabric.design import design_to_dict

        return {"changes": list(self.changes), "kind": self.kind, "moves": list(self.moves),
                "policy": policy_text(self.design), "added_usd": self.added_usd, "resale_usd": self.delta.resale_usd,
                "net_usd": self.net_usd, "p99_s": self.p99_s, "p99_under_failure_s": self.p99_under_failure_s,
                "switches": dict(self.switches), "it_power_w": self.site.total_w,
                "facility_power_w": self.site.facility_w(pue),
                "max_compute_rack_w": self.site.max_rack_w, "rack_units_added": self.rack_units_added,
                "cables": self.cables, "new_cables": self.new_cables,
                "recabled_server_links": self.recabled_server_links, "violations": dict(self.violations),
                "free_ports": dict(self.free_ports), "fewest_free_ports": self.fewest_free_ports,
                "items": self.delta.to_dict()["lines"], "design": design_to_dict(self.design)}


@dataclass
class UpgradeResult:
    """The upgrades of one installed fabric for one workload: every option priced, the evaluated ones, the fronts
    (net cost vs p99, and vs p99 under the worst single failure when failures were evaluated) and the answer."""

    installed: Installed
    baseline: Upgrade
    upgrades: list
    front: list
    failure_front: list
    best: Upgrade | None
    answer: str
    limits: UpgradeLimits
    counts: dict
    free_ports: dict
    over_limits: list = field(default_factory=list)     # priced hardware options left out for a limit

    def offers(self) -> list:
        """Upgrades meeting every limit and target, free ones first, then by net cost (then p99)."""
        ok = [u for u in self.upgrades if u.meets(self.limits)]
        return sorted(ok, key=lambda u: (u.kind != NONE, u.kind != FREE, u.net_usd, u.p99_s))

    def to_dict(self) -> dict:
        from fabric.design import design_to_dict

        pue = self.limits.pue
        return {"installed": {"design": design_to_dict(self.installed.design), "source": self.installed.source,
                              "items": self.installed.inventory.to_items(),
                              "value_usd": self.installed.inventory.cost_usd, "p99_s": self.baseline.p99_s,
                              "p99_under_failure_s": self.baseline.p99_under_failure_s,
                              "switches": self.baseline.switches, "free_ports": self.free_ports,
                              "it_power_w": self.baseline.site.total_w,
                              "facility_power_w": self.baseline.site.facility_w(self.limits.pue),
                              "max_compute_rack_w": self.baseline.site.max_rack_w},
                "limits": self.limits.to_dict(), "answer": self.answer,
                "best": self.best.to_dict(pue) if self.best else None,
                "front": [u.to_dict(pue) for u in self.front],
                "failure_front": [u.to_dict(pue) for u in self.failure_front],
                "offers": [u.to_dict(pue) for u in self.offers()[:20]],
                "counts": dict(self.counts)}


# ----------------------------------------------------------------------------------------------- structure


def _leaf_ids(fabric) -> np.ndarray:
    """For every switch node (index = node - switch_base): ``plane * 2**20 + index among its plane's leaves`` for
    leaves (tier 0), -1 for other switches."""
    n = fabric.n_switches
    tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + n]
    plane = fabric.node_plane[fabric.switch_base:fabric.switch_base + n].astype(np.int64)
    out = np.full(n, -1, np.int64)
    for p in np.unique(plane).tolist():
        ids = np.flatnonzero((plane == p) & (tier == 0))
        out[ids] = p * 2 ** 20 + np.arange(ids.size)
    return out


def recabled_server_links(before, after) -> int:
    """Server links (NIC ports of ``before``'s fabric) that ``after`` cables to another leaf: a leaf is named by
    its plane and its index among that plane's leaves, which builds keep (leaf i holds the same nodes while the
    nodes per leaf stay). Ports a NIC change or a new plane adds are new links, not moved ones."""
    la, lb = _leaf_ids(before), _leaf_ids(after)
    a = before.nic_ports - before.switch_base
    b = after.nic_ports - after.switch_base
    nics = min(a.shape[0], b.shape[0])
    ports = min(a.shape[1], b.shape[1])
    a, b = a[:nics, :ports], b[:nics, :ports]
    pa = np.arange(ports) // max(1, before.nic_ports.shape[1] // before.planes)
    pb = np.arange(ports) // max(1, after.nic_ports.shape[1] // after.planes)
    same_plane = pa == pb
    moved = (la[a] != lb[b]) | ~same_plane[None, :]
    return int(moved.sum())


def free_ports(fabric, catalog=None) -> dict:
    """Free physical ports per switch tier: ``{tier: {"switches", "ports", "free", "fewest_free"}}``. A port
    runs one speed, whole or broken out (docs/design-schema.md), so a switch's used ports are its links of each
    speed over that speed's lanes per port, rounded up."""
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    sw = cat.switch(fabric.design.switch_model)
    n = fabric.n_switches
    net = (fabric.link_kind >= 2)
    ends = np.concatenate([fabric.link_a[net], fabric.link_b[net]])
    speed = np.concatenate([fabric.link_capacity_bps[net]] * 2)
    on = (ends >= fabric.switch_base) & (ends < fabric.switch_base + n)
    ends, speed = ends[on] - fabric.switch_base, speed[on]
    used = np.zeros(n)
    for s in np.unique(speed).tolist():
        lanes = max(1, sw.lanes_at(s) or 1)
        used += -(-np.bincount(ends[speed == s], minlength=n) // lanes)
    extra = fabric.reserved_links.get("ports_per_switch")
    if extra is not None:
        used += -(-extra // max(1, sw.lanes_at(fabric.link_speed_bps) or 1))
    tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + n]
    out = {}
    for t in np.unique(tier).tolist():
        u = used[tier == t]
        free = np.maximum(sw.ports - u, 0)
        out[fabric.tier_names[t]] = {"switches": int(u.size), "ports": int(sw.ports * u.size),
                                     "free": int(free.sum()), "fewest_free": int(free.min())}
    return out


def keeps_switches(before_fabric, after_switches: dict) -> bool:
    """Whether a fabric with ``after_switches`` (switches per tier) keeps every switch of ``before_fabric`` in
    its tier (as many leaves, spines, cores or more)."""
    return all(after_switches.get(t, 0) >= n for t, n in before_fabric.switch_counts().items())


def describe_hardware(before_fabric, after_fabric) -> list[str]:
    """What changed in the cabling, in words: ``leaf uplinks 20 -> 24 (40 down)``, ``spine 10 -> 12``."""
    a, b = before_fabric.structure, after_fabric.structure
    da, db = before_fabric.design, after_fabric.design
    out = []
    if a.get("tiers") != b.get("tiers"):
        out.append(f"tiers {a.get('tiers')} -> {b.get('tiers')}")
    if da.planes != db.planes:
        out.append(f"planes {da.planes} -> {db.planes}")
    if da.nic_model != db.nic_model:
        out.append(f"NICs {da.nic_model} -> {db.nic_model}")
    if a.get("nodes_per_leaf") != b.get("nodes_per_leaf") and b.get("nodes_per_leaf"):
        out.append(f"servers per leaf {a.get('nodes_per_leaf')} -> {b.get('nodes_per_leaf')} (servers re-cabled)")
    if a.get("leaf_up") != b.get("leaf_up") or a.get("leaf_down") != b.get("leaf_down"):
        out.append(f"leaf uplinks {a.get('leaf_up')} -> {b.get('leaf_up')} ({b.get('leaf_down')} down)")
    if a.get("spine_uplinks") != b.get("spine_uplinks") and b.get("spine_uplinks"):
        out.append(f"spine uplinks {a.get('spine_uplinks')} -> {b.get('spine_uplinks')}")
    ua, ub = a.get("uplink_speed_gbps"), b.get("uplink_speed_gbps")
    if ua != ub:
        out.append(f"uplinks {'/'.join(f'{x:g}' for x in ua)}G -> {'/'.join(f'{x:g}' for x in ub)}G")
    ca, cb = before_fabric.switch_counts(), after_fabric.switch_counts()
    for tier in after_fabric.tier_names:
        if ca.get(tier, 0) != cb.get(tier, 0):
            out.append(f"{tier} switches {ca.get(tier, 0)} -> {cb.get(tier, 0)}")
    if da.storage_isolation != db.storage_isolation:
        out.append("a separate storage network" if db.storage_isolation else "no separate storage network")
    return out


# ----------------------------------------------------------------------------------------------- options


def _build(design, catalog):
    from fabric.cost import bill_of_materials
    from fabric.topology import build_fabric

    fab = build_fabric(design, catalog)
    return fab, bill_of_materials(fab, catalog)


def _region_variants(design, moves, tiers: int) -> list:
    """A design of regions with one region's leaf ratio (move ``leaf_uplinks``) or spine ratio (``spine_uplinks``,
    3 tiers) lowered to a standard ratio: ``[(design, moves)]``, the design itself first."""
    from dataclasses import replace

    out = [(design, [])]
    for i, r in enumerate(design.regions):
        for tier, move in ((0, "leaf_uplinks"), (1, "spine_uplinks")):
            if move not in moves or (tier == 1 and tiers != 3):
                continue
            for ratio in (x for x in STANDARD_RATIOS if 1.0 <= x < r.oversub(tier) - 1e-9):
                o = list(r.oversubscription)
                o[tier] = ratio
                regions = list(design.regions)
                regions[i] = replace(r, oversubscription=tuple(o))
                out.append((design.replace(regions=tuple(regions)), [move]))
    return out


def _leaf_ratios(design, catalog) -> list[float]:
    """Leaf oversubscription values to try for ``design``'s hardware: every uplink count (at most
    :data:`MAX_UPLINK_STEPS`, evenly spaced) from the current one to what the leaves' free ports take with their
    nodes kept, and the standard ratios below that (leaves then hold fewer nodes)."""
    from fabric.topology import sizing

    try:
        fab, _ = _build(design, catalog)
    except FabricError:
        return []
    s = fab.structure
    if fab.tiers < 2 or "leaf_up" not in s:
        return []
    cat = catalog or _default_catalog()
    sw = cat.switch(design.switch_model)
    up_bps = s["uplink_speed_gbps"][0] * 1e9
    tp = sizing.TierPorts.of(sw, fab.link_speed_bps, up_bps)
    down, u0 = int(s["leaf_down"]), int(s["leaf_up"])
    umax = tp.max_up(down)
    ratios = []
    if umax > u0:
        steps = list(range(u0 + 1, umax + 1))
        if len(steps) > MAX_UPLINK_STEPS:
            idx = np.unique(np.round(np.linspace(0, len(steps) - 1, MAX_UPLINK_STEPS)).astype(int))
            steps = [steps[i] for i in idx]
        ratios = [down * fab.link_speed_bps / (u * up_bps) for u in steps]
    floor = min(ratios) if ratios else design.oversub(0)
    ratios += [r for r in STANDARD_RATIOS if r < floor - 1e-9]
    return [max(1.0, r) for r in ratios]


def _default_catalog():
    from fabric.catalog import default_catalog

    return default_catalog()


def hardware_options(design, catalog=None, *, moves=None) -> list[HardwareOption]:
    """Every hardware configuration the ``moves`` (default all of :data:`MOVES`) reach from ``design``, with
    ``design``'s policy, the installed hardware first; configurations that do not build are left out, and two
    that build the same fabric are one."""
    from fabric.catalog import compatible_nics

    cat = catalog or _default_catalog()
    moves = set(MOVES if moves is None else moves)
    bad = sorted(moves - set(MOVES))
    if bad:
        raise FabricError(f"unknown upgrade move(s) {', '.join(bad)}; choose from {', '.join(MOVES)}")
    fab0, _ = _build(design, catalog)
    t0 = fab0.tiers
    base = design.replace(tiers=t0)
    sw = cat.switch(design.switch_model)
    nic0 = cat.nic(design.nic_model)
    nics = [design.nic_model]
    if "nic" in moves:
        for m in compatible_nics(cat, design.gpu_model, design.nics_per_gpu):
            n = cat.nic(m)
            if m != design.nic_model and n.fabric in (sw.fabric, "vpi", "any") \
                    and n.port_speed_bps >= nic0.port_speed_bps and n.ports * n.port_speed_bps >= \
                    nic0.ports * nic0.port_speed_bps:
                nics.append(m)
    tiers = [t0] + ([t0 + 1] if "tier" in moves and 2 <= t0 < 3 and design.family != "dragonfly" else [])
    speeds = [design.uplink_gbps]
    if "uplink_speed" in moves and design.family != "dragonfly" and t0 >= 2:
        cur = fab0.structure.get("uplink_speed_gbps", [fab0.link_speed_bps / 1e9] * 2)
        for s in sw.breakout_speeds_bps():
            g = s / 1e9
            if g > cur[0] + 1e-9:
                speeds.append((g, max(g, cur[1])))
    storage = [design.storage_isolation] + ([True] if "storage_network" in moves and not design.storage_isolation
                                            else [])
    out, seen = [], set()

    def add(d, mv):
        try:
            fab, bom = _build(d, catalog)
        except FabricError:
            return
        key = (tuple((i.category, i.model, i.where, i.count) for i in bom.items),
               repr(sorted(fab.structure.items(), key=str)), d.tiers, d.planes, d.nic_model, d.storage_isolation)
        if key in seen:
            return
        seen.add(key)
        out.append(HardwareOption(d, tuple(mv)))

    add(base, ())
    for nic in nics:
        planes = [design.planes]
        if "plane" in moves and design.family != "dragonfly" and cat.nic(nic).ports % (2 * design.planes) == 0:
            planes.append(2 * design.planes)
        for p in planes:
            for sp in speeds:
                for t in tiers:
                    for iso in storage:
                        mv = [m for m, on in (("nic", nic != design.nic_model), ("plane", p != design.planes),
                                              ("uplink_speed", sp != design.uplink_gbps), ("tier", t != t0),
                                              ("storage_network", iso != design.storage_isolation)) if on]
                        v = base.replace(nic_model=nic, planes=p, uplink_gbps=sp, tiers=t, storage_isolation=iso)
                        if mv and (design.spines is not None and (t != t0 or p != design.planes)):
                            v = v.replace(spines=None)
                        if design.regions:      # a design of regions: one region's ratios at a time
                            for d, mm in _region_variants(v, moves, t):
                                add(d, list(mv) + mm)
                            continue
                        o1s = [design.oversub(0)]
                        if "leaf_uplinks" in moves:
                            o1s += _leaf_ratios(v, catalog)
                        o2s = [design.oversub(1)]
                        if "spine_uplinks" in moves and t == 3:
                            o2s += [r for r in STANDARD_RATIOS if r < design.oversub(1) - 1e-9]
                        for o1 in o1s:
                            for o2 in o2s:
                                mm = list(mv) + (["leaf_uplinks"] if o1 != design.oversub(0) else []) + \
                                    (["spine_uplinks"] if o2 != design.oversub(1) else [])
                                d = v.replace(oversubscription=(o1, o2))
                                if mm and d.spines is not None and o1 != design.oversub(0):
                                    d = d.replace(spines=None)
                                add(d, mm)
    return out


# ----------------------------------------------------------------------------------------------- pricing


def _price(opt: HardwareOption, installed: Installed, fab0, limits: UpgradeLimits, catalog) -> Upgrade:
    fab, bom = _build(opt.design, catalog)
    need = Inventory.from_bom(bom)
    delta = bom_delta(installed.inventory, need, resale=limits.resale)
    site = site_power(fab, bom, catalog)
    ru = sum(n * switch_rack_units(m, limits.switch_rack_units) for m, n in delta.added("switch").items()) - \
        sum(n * switch_rack_units(m, limits.switch_rack_units) for m, n in delta.removed("switch").items())
    new_cables = sum(x.added for x in delta.lines if x.category == "cable")
    changes = describe_hardware(fab0, fab)
    up = Upgrade(opt.design, NONE if not opt.moves else HARDWARE, opt.moves, changes, delta, fab.switch_counts(),
                 site, bom.cable_count, int(new_cables), float(ru), recabled_server_links(fab0, fab),
                 free_ports=free_ports(fab, catalog))
    up.violations = _violations(up, limits)
    return up


def _violations(up: Upgrade, limits: UpgradeLimits) -> dict:
    v = {}
    if limits.budget_usd is not None and up.added_usd > limits.budget_usd * (1 + 1e-12):
        v["budget_usd"] = f"buys ${up.added_usd:,.0f}, over the ${limits.budget_usd:,.0f} budget"
    if limits.rack_power_w is not None and up.site.max_rack_w > limits.rack_power_w * (1 + 1e-12):
        v["rack_power_w"] = (f"{up.site.racks_over(limits.rack_power_w)} compute rack(s) over "
                             f"{limits.rack_power_w / 1e3:,.1f} kW (up to {up.site.max_rack_w / 1e3:,.1f} kW)")
    facility = up.site.facility_w(limits.pue)
    if limits.facility_power_w is not None and facility > limits.facility_power_w * (1 + 1e-12):
        v["facility_power_w"] = (f"facility power {facility / 1e3:,.1f} kW (IT {up.site.total_w / 1e3:,.1f} kW x PUE "
                                 f"{limits.pue:g}), over the facility's {limits.facility_power_w / 1e3:,.1f} kW")
    if limits.free_rack_units is not None and up.rack_units_added > limits.free_rack_units + 1e-9:
        v["free_rack_units"] = f"needs {up.rack_units_added:g} U for new switches, {limits.free_rack_units:g} U free"
    if limits.cable_count is not None and up.cables > limits.cable_count:
        v["cable_count"] = f"{up.cables:,} cables, over {limits.cable_count:,}"
    if limits.max_recabled_server_links is not None and up.recabled_server_links > limits.max_recabled_server_links:
        v["max_recabled_server_links"] = (f"moves {up.recabled_server_links:,} server links to other leaves, over "
                                          f"{limits.max_recabled_server_links:,}")
    if limits.min_free_ports is not None and up.free_ports:
        tier, v_ = min(up.free_ports.items(), key=lambda kv: kv[1]["fewest_free"])
        if v_["fewest_free"] < limits.min_free_ports:
            v["min_free_ports"] = (f"leaves {v_['fewest_free']} free port(s) on a {tier} switch, under the "
                                   f"{int(limits.min_free_ports)} to keep free on every switch")
    return v


# ----------------------------------------------------------------------------------------------- search


def _pareto(items: list, p99) -> list:
    """Non-dominated items by (net cost, ``p99(item)``), cheapest first; ties keep the first."""
    pts = [(u.net_usd, p99(u), i) for i, u in enumerate(items) if p99(u) is not None and math.isfinite(p99(u))]
    pts.sort(key=lambda t: (t[0], t[1], t[2]))
    out, best = [], math.inf
    for c, p, i in pts:
        if p < best - 1e-12:
            out.append(items[i])
            best = p
    return out


def _with_policy(hw_design, policy_design):
    return with_policy(hw_design, policy_design, name=hw_design.name)


def upgrade_front(installed: Installed, workload, limits: UpgradeLimits | None = None, *, scenario=None,
                  catalog=None, seed: int = 0, samples: int = 128, moves=None, policies: str = "auto",
                  failures: bool = False, transport_overrides: dict | None = None, qps=(1, 2, 4, 8),
                  progress=None, judge=None, failure_judge=None) -> UpgradeResult:
    """Search the upgrades of ``installed`` for ``workload`` within ``limits`` (see the module docstring).

    ``policies``: ``"auto"`` (two rounds) or ``"all"`` (every policy on every hardware). ``failures``: also
    evaluate each upgrade within the limits under its worst single switch and link failure
    (:func:`fabric.failures.resilience.resilience`) for the second front (always on when ``limits`` bound the p99 under
    failure). ``progress(done, total)`` is told after each evaluation.

    ``judge(design)``: the p99 of a design in a context of the caller's instead of evaluating it on ``workload``
    (the dashboard's records: the robust p99 of a job mix, each design at its best plan; FabricError when it cannot
    be built), and ``failure_judge(design)`` its resilience dict (:func:`fabric.failures.resilience.resilience`'s fields)
    in that context, so the installed fabric's p99 is the figure every other page shows of it.
    """
    from fabric.evaluate import Scenario, evaluate

    limits = limits or UpgradeLimits()
    if policies not in ("auto", "all"):
        raise FabricError(f"policies: expected 'auto' or 'all', got {policies!r}")
    failures = failures or limits.max_p99_under_failure_s is not None
    moves_set = set(MOVES if moves is None else moves)
    d0 = installed.design
    scenario = scenario or Scenario()
    fab0, _ = _build(d0, catalog)
    options = hardware_options(d0, catalog, moves=moves_set)
    priced = [_price(o, installed, fab0, limits, catalog) for o in options]
    base_hw = priced[0]
    keeps = [base_hw] + [h for h in priced[1:] if keeps_switches(fab0, h.switches)]
    takes_out = len(priced) - len(keeps)
    priced = keeps
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides)
    cache: dict = {}
    evaluated = 0

    def p99_of(design):
        nonlocal evaluated
        from fabric.search.records import design_key

        k = design_key(design)
        if k not in cache:
            try:
                cache[k] = (float(judge(design)) if judge is not None else
                            float(evaluate(design, workload, scenario, **kw).step_time_s["p99"]))
            except DesignError:
                cache[k] = None
            except FabricError:
                if judge is None:
                    raise
                cache[k] = None
            evaluated += 1
            if progress is not None:
                progress(evaluated, None)
        return cache[k]

    pols = policy_options(d0, qps=qps) if "policy" in moves_set else [d0]
    upgrades: list[Upgrade] = []

    def variant(hw: Upgrade, pol) -> Upgrade | None:
        d = _with_policy(hw.design, pol)
        p = p99_of(d)
        if p is None:
            return None
        pc = policy_changes(d0, d)
        kind = hw.kind if not pc else (FREE if hw.kind == NONE else HARDWARE)
        moves_ = hw.moves + (("policy",) if pc else ())
        u = Upgrade(d, kind, moves_, list(hw.changes) + pc, hw.delta, hw.switches, hw.site, hw.cables,
                    hw.new_cables, hw.rack_units_added, hw.recabled_server_links, dict(hw.violations),
                    dict(hw.free_ports), p)
        upgrades.append(u)
        return u

    # round 0: the installed hardware under every policy (the free changes)
    baseline = variant(base_hw, d0)
    if baseline is None:
        raise DesignError("the installed fabric cannot run this workload (see `fabric evaluate`)")
    free = [u for u in (variant(base_hw, p) for p in pols if p != d0) if u is not None]
    best_free = min([baseline] + free, key=lambda u: u.p99_s).design
    hardware = [h for h in priced[1:] if not h.violations]
    tried: dict[int, set] = {}

    def run(h, pol_list):
        seen = tried.setdefault(id(h), set())
        for pol in pol_list:
            from fabric.search.records import design_key

            k = design_key(_with_policy(h.design, pol))
            if k not in seen:
                seen.add(k)
                variant(h, pol)

    if policies == "all":
        for h in hardware:
            run(h, pols)
    else:
        for h in hardware:
            run(h, [d0, best_free])
        within = [u for u in upgrades if not u.violations]
        on_front = {id(u.design) for u in _pareto(within, lambda u: u.p99_s)}
        meeting = [u for u in within if u.meets(limits)]
        cap = min((u.net_usd for u in meeting), default=math.inf) if limits.p99_target_s is not None else -math.inf
        for h in hardware:
            hw_variants = [u for u in upgrades if u.delta is h.delta]
            if any(id(u.design) in on_front for u in hw_variants) or h.delta.net_usd < cap - 1e-9:
                run(h, pols)
    within = [u for u in upgrades if not u.violations]
    if failures:
        from fabric.failures.resilience import failure_p99, resilience

        for u in within:
            r = (failure_judge(u.design) if failure_judge is not None else
                 resilience(u.design, workload, scenario=scenario, healthy_p99_s=u.p99_s, **kw))
            u.failure = {k: r.get(k) for k in ("worst_switch", "worst_switch_failure_p99_s", "worst_link",
                                               "worst_link_failure_p99_s", "worst_leaf", "worst_leaf_failure_p99_s",
                                               "partitions_on_single_failure", "survives_single_failure")}
            u.p99_under_failure_s = failure_p99(r, u.p99_s)
    front = _pareto(within, lambda u: u.p99_s)
    failure_front = _pareto(within, lambda u: u.p99_under_failure_s) if failures else []
    meeting = sorted((u for u in within if u.meets(limits)),
                     key=lambda u: (u.net_usd, u.kind != NONE, u.kind != FREE, u.p99_s))
    target_set = limits.p99_target_s is not None or limits.max_p99_under_failure_s is not None
    best = meeting[0] if meeting and target_set else None
    answer = _answer(baseline, best, front, within, limits, target_set)
    counts = {"hardware_options": len(priced) + takes_out, "takes_out_switches": takes_out,
              "hardware_within_limits": 1 + len(hardware),
              "over_limits": len(priced) - 1 - len(hardware), "policies": len(pols), "evaluations": evaluated,
              "upgrades_evaluated": len(upgrades), "exhaustive_policies": policies == "all"}
    return UpgradeResult(installed, baseline, upgrades, front, failure_front, best, answer, limits, counts,
                         free_ports(fab0, catalog), [h for h in priced[1:] if h.violations])


def step_time_text(seconds: float) -> str:
    """A step time in words: ``5.243 s``, ``812.3 ms`` (:func:`fabric.units.time_text`)."""
    from fabric.units import time_text

    return time_text(seconds)


#: A p99 gain below this share of the p99 is called negligible in the answer (the advisor's default min_gain)
NEGLIGIBLE_GAIN = 0.005


def _answer(baseline, best, front, within, limits, target_set) -> str:
    p0 = baseline.p99_s
    if target_set:
        what = []
        if limits.p99_target_s is not None:
            what.append(f"p99 {step_time_text(limits.p99_target_s)}")
        if limits.max_p99_under_failure_s is not None:
            what.append(f"p99 under the worst single failure {step_time_text(limits.max_p99_under_failure_s)}")
        target = " and ".join(what)
        if best is None and not within:
            return (f"no upgrade is within the limits (the installed fabric itself breaks "
                    f"{', '.join(sorted(baseline.violations)) or 'none'}); loosen the limits")
        if best is None:
            fastest = min(within, key=lambda u: u.p99_s)
            return (f"no upgrade within the limits reaches {target}; the fastest within them: {fastest.label()} "
                    f"(p99 {step_time_text(fastest.p99_s)}, ${fastest.net_usd:,.0f})")
        if best.kind == NONE:
            return f"the installed fabric already meets {target} (p99 {step_time_text(p0)}): nothing to buy"
        if best.kind == FREE:
            return (f"a free policy change meets {target}: {best.label()} (p99 {step_time_text(p0)} -> {step_time_text(best.p99_s)}, "
                    f"no hardware)")
        return (f"cheapest upgrade meeting {target}: {best.label()} (p99 {step_time_text(p0)} -> {step_time_text(best.p99_s)}; buys "
                f"${best.added_usd:,.0f}" + (f", resale ${best.delta.resale_usd:,.0f}" if best.delta.resale_usd
                                             else "") + ")")
    if not front:
        return "no upgrade is within the limits; loosen the budget or the power limits"
    if len(front) <= 1 and front[0].kind == NONE:
        return (f"no upgrade within the limits shortens the p99 step ({step_time_text(p0)}): the installed fabric is the front")
    first, top = front[0], front[-1]
    start = "the installed fabric" if first.kind == NONE else f"{first.label()} ({first.kind}, ${first.net_usd:,.0f})"
    if len(front) == 1:
        return f"one upgrade on the front: {start}, p99 {step_time_text(p0)} -> {step_time_text(first.p99_s)}"
    text = (f"{len(front)} upgrades on the front (installed p99 {step_time_text(p0)}), from {start} at p99 {step_time_text(first.p99_s)} "
            f"to {top.label()} (p99 {step_time_text(top.p99_s)}, ${top.net_usd:,.0f})")
    gain_s = first.p99_s - top.p99_s
    if gain_s < NEGLIGIBLE_GAIN * first.p99_s:
        # the dearer end of the front is on it by a hair: say so, or it reads like advice to buy it
        text += (f"; the dearest gains only {gain_s * 1e3:,.1f} ms ({gain_s / first.p99_s:.2%}) over the cheapest for "
                 f"${top.net_usd - first.net_usd:,.0f} more")
    return text

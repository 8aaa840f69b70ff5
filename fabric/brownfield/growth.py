"""Staged growth: what to buy at each stage of a growing cluster so that nothing bought earlier is thrown away,
against designing each stage from scratch.

Given stages (GPU counts, e.g. 1,024 -> 4,096 -> 16,384, each with its workload and p99 target) and a base design
(family, GPU, NIC; default the full-bisection fat tree), every stage has a handful of **candidate fabrics**
(:func:`stage_candidates`): the base design at that size on each switch model of the same switch fabric that can
serve its NICs, with the tiers the size needs or one more, and leaf (and, with three tiers, spine)
oversubscription 1:1, 1.5:1 or 2:1. Each is built, priced and evaluated on the stage's workload; those at or under
the stage's p99 target qualify.

- **From scratch** each stage takes its cheapest qualifying candidate, bought new: the total is the sum of the three
  (or N) bills of materials. Moving from one from-scratch design to the next keeps only the items the next one
  needs of the same model (:func:`fabric.brownfield.inventory.bom_delta`); the rest is thrown away, and the plan
  says what and what it cost.
- **The plan** picks one qualifying candidate per stage so that the sum of the purchases, stage after stage (what
  each stage needs beyond what is installed, model by model), is least (then: spending later rather than sooner),
  among the sequences that never take out a switch (by default; ``allow_discard=True`` drops that rule). It is a shortest path over the stages (dynamic
  programming over candidate pairs), so it is exact for the candidates. Optics and cables a later stage no longer
  needs (a longer fibre class, active copper once leaves sit in their servers' racks) are listed with their value.

Switches are interchangeable within a model (:mod:`fabric.brownfield.inventory`); the plan also checks that each
stage has at least as many switches of a model in every tier as the stage before (leaves stay leaves, spines
stay spines: ``roles_kept``).

**From an installed fabric** (``installed=``, an :class:`~fabric.brownfield.inventory.Installed`: the Upgrade
page's installed fabric, ``fabric plan-growth --existing FILE``): what is on the floor is stage 0. The base design
is the installed one (its oversubscription kept), the first stage has at least its GPUs, at its own size the
installed fabric is a candidate itself (buying nothing), the first stage buys only what it needs beyond the
installed items (spares included), and, by default, no installed switch is taken out. Designing from scratch
still buys every stage new; growing the from-scratch designs into each other starts from the installed items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fabric.brownfield.inventory import Delta, Inventory, bom_delta
from fabric.errors import DesignError, FabricError

__all__ = ["GrowthStage", "Candidate", "GrowthPlan", "stage_candidates", "candidate", "plan_growth",
           "parse_stages", "full_bisection",
           "LEAF_RATIOS", "SPINE_RATIOS", "MAX_STAGES"]

#: Leaf and spine oversubscription tried per stage: non-blocking and the two common oversubscribed ratios.
LEAF_RATIOS = (1.0, 1.5, 2.0)
SPINE_RATIOS = (1.0, 2.0)
#: Most stages in one plan (each adds a factor to the dynamic programme's work; a dozen is beyond any roadmap).
MAX_STAGES = 12


def parse_stages(text: str) -> list[int]:
    """``"1024,4096,16384"`` -> ``[1024, 4096, 16384]``: at least two growing whole GPU counts."""
    parts = [p.strip().replace("_", "") for p in str(text).split(",") if p.strip()]
    try:
        gpus = [int(p) for p in parts]
    except ValueError as err:
        raise FabricError(f"--stages: expected GPU counts separated by commas (e.g. 1024,4096,16384), got "
                          f"{text!r}") from err
    if len(gpus) < 2 or len(gpus) > MAX_STAGES:
        raise FabricError(f"--stages: give 2 to {MAX_STAGES} stages, got {len(gpus)}")
    for a, b in zip(gpus, gpus[1:]):
        if b <= a:
            raise FabricError(f"--stages: each stage must have more GPUs than the one before ({a:,} then {b:,})")
    if gpus[0] < 1:
        raise FabricError(f"--stages: GPU counts must be >= 1, got {gpus[0]}")
    return gpus


@dataclass(frozen=True)
class GrowthStage:
    """One stage: its GPU count, its workload and its p99 target (``None``: the p99 of the base design's
    full-bisection version at that size, plus the plan's tolerance: :func:`plan_growth`)."""

    gpus: int
    workload: object
    p99_target_s: float | None = None


@dataclass
class Candidate:
    """One fabric considered at one stage: built, priced, evaluated."""

    design: object
    inventory: Inventory
    switches: dict
    switch_tiers: dict            # {(tier, model): count}
    cost_usd: float
    p99_s: float | None
    meets: bool = False
    key: tuple = ()               # the items and places it builds (two candidates with one key are one fabric)

    def label(self) -> str:
        d = self.design
        o = d.oversubscription
        tiers = self.switches
        ratio = f"{o[0]:g}:1" if len(tiers) <= 2 else f"{o[0]:g}:1 / {o[1]:g}:1"
        sw = ", ".join(f"{n:,} {t}" for t, n in tiers.items())
        return f"{d.switch_model}, {len(tiers)} tiers, {ratio} ({sw})"

    def to_dict(self) -> dict:
        from fabric.design import design_to_dict

        return {"label": self.label(), "switch_model": self.design.switch_model, "switches": dict(self.switches),
                "cost_usd": self.cost_usd, "p99_s": self.p99_s, "meets_target": self.meets,
                "design": design_to_dict(self.design)}


@dataclass
class GrowthPlan:
    """A growth plan against from-scratch designs (see the module docstring)."""

    stages: list                  # GrowthStage
    targets_s: list
    candidates: list              # per stage: [Candidate] meeting its target (the fastest when none does)
    plan: list                    # per stage: Candidate
    purchases: list               # per stage: Delta from the stage before (stage 1: from nothing)
    scratch: list                 # per stage: Candidate (cheapest meeting the target, bought new)
    scratch_moves: list           # per stage after the first: Delta from the previous from-scratch design
    answer: str
    discard_allowed: bool = False
    notes: list = field(default_factory=list)
    target_from: list = field(default_factory=list)     # per stage: where its p99 target comes from, in words
    considered: list = field(default_factory=list)      # per stage: candidates built and evaluated
    installed: object = None                            # the Installed fabric the plan starts from, or None

    @property
    def total_usd(self) -> float:
        """What the plan buys over all stages."""
        return float(sum(d.added_usd for d in self.purchases))

    @property
    def scratch_total_usd(self) -> float:
        """What the from-scratch designs cost, each bought new."""
        return float(sum(c.cost_usd for c in self.scratch))

    @property
    def scratch_grown_usd(self) -> float:
        """What the from-scratch designs cost when each stage reuses what it can of the one before (model by
        model) and buys the rest."""
        return float(sum(d.added_usd for d in self.scratch_moves))

    @property
    def discarded(self) -> list:
        """Per stage: ``{model: count}`` the plan takes out."""
        return [d.removed() for d in self.purchases]

    @property
    def discarded_usd(self) -> float:
        """What the items the plan takes out had cost."""
        return float(sum(_removed_value(d) for d in self.purchases))

    def first_stage_switches_in_use(self) -> dict:
        """``{model: [bought at stage 1, still in use at the last stage]}``."""
        first, last = self.plan[0].inventory.by_category("switch"), self.plan[-1].inventory.by_category("switch")
        return {m: [n, min(n, last.get(m, 0))] for m, n in first.items()}

    def installed_switches_in_use(self) -> dict:
        """``{model: [installed, still in use at the last stage]}`` (empty without an installed fabric)."""
        if self.installed is None:
            return {}
        have, last = self.installed.inventory.by_category("switch"), self.plan[-1].inventory.by_category("switch")
        return {m: [n, min(n, last.get(m, 0))] for m, n in have.items()}

    def roles_kept(self) -> bool:
        """Each stage has at least as many switches of each model in each tier as the stage before."""
        return all(b.switch_tiers.get(k, 0) >= n for a, b in zip(self.plan, self.plan[1:])
                   for k, n in a.switch_tiers.items())

    def to_dict(self) -> dict:
        rows = []
        for i, st in enumerate(self.stages):
            p, s = self.plan[i], self.scratch[i]
            rows.append({"gpus": st.gpus, "p99_target_s": self.targets_s[i],
                         "p99_target_from": self.target_from[i] if i < len(self.target_from) else None,
                         "plan": p.to_dict(),
                         "buy_usd": self.purchases[i].added_usd, "buy": self.purchases[i].added(),
                         "take_out": self.purchases[i].removed(),
                         "take_out_value_usd": _removed_value(self.purchases[i]),
                         "scratch": s.to_dict(),
                         "scratch_throws_away": self.scratch_moves[i].removed() if i else {},
                         "scratch_throws_away_usd": _removed_value(self.scratch_moves[i]) if i else 0.0,
                         "candidates": self.considered[i] if i < len(self.considered) else len(self.candidates[i]),
                         "candidates_meeting_target": sum(c.meets for c in self.candidates[i])})
        inst = None
        if self.installed is not None:
            inst = {"design": self.installed.design.name, "gpus": self.installed.design.gpus,
                    "source": self.installed.source, "switches": self.installed.inventory.by_category("switch"),
                    "switches_in_use_at_last_stage": self.installed_switches_in_use()}
        return {"answer": self.answer, "installed": inst, "total_usd": self.total_usd,
                "scratch_total_usd": self.scratch_total_usd,
                "scratch_grown_usd": self.scratch_grown_usd,
                "saving_usd": self.scratch_total_usd - self.total_usd, "discarded_usd": self.discarded_usd,
                "discard_allowed": self.discard_allowed, "roles_kept": self.roles_kept(),
                "first_stage_switches_in_use": self.first_stage_switches_in_use(), "stages": rows,
                "notes": list(self.notes)}


def _removed_value(delta: Delta) -> float:
    """What the removed items had cost (the price paid), whatever their resale."""
    return float(sum(x.removed * x.unit_price_usd for x in delta.lines))


def _switch_tiers(bom) -> dict:
    out = {}
    for i in bom.items:
        if i.category == "switch":
            out[(i.where, i.model)] = out.get((i.where, i.model), 0) + i.count
    return out


def stage_candidates(base, gpus: int, catalog=None, *, switch_models=None) -> list:
    """Designs considered at ``gpus`` GPUs (see the module docstring): ``base`` resized, on each switch model of
    its switch fabric that builds (or ``switch_models``), with the tiers the size needs and one more, and the
    leaf and spine ratios of :data:`LEAF_RATIOS` and :data:`SPINE_RATIOS`. Two that build the same fabric are
    one."""
    from fabric.catalog import default_catalog
    from fabric.topology import build_fabric

    cat = catalog or default_catalog()
    sw0 = cat.switch(base.switch_model)
    models = list(switch_models) if switch_models else \
        [base.switch_model] + [m for m in cat.switches if m != base.switch_model and cat.switch(m).fabric == sw0.fabric]
    out, seen = [], set()
    for model in models:
        d0 = base.replace(gpus=gpus, switch_model=model, tiers=None, spines=None, uplink_gbps=None,
                          name=f"{base.name.split(' (')[0]} ({gpus:,} GPUs)")
        try:
            auto = build_fabric(d0, cat).tiers
        except FabricError:
            continue
        for tiers in sorted({auto, max(auto, 3) if auto < 3 and base.family != "dragonfly" else auto}):
            for o1 in LEAF_RATIOS:
                for o2 in (SPINE_RATIOS if tiers >= 3 else (1.0,)):
                    try:
                        c = candidate(d0.replace(tiers=tiers, oversubscription=(o1, o2)), cat)
                    except FabricError:
                        continue
                    if c.key in seen:
                        continue
                    seen.add(c.key)
                    out.append(c)
    if not out:
        raise DesignError(f"no fabric of {base.family} on {base.switch_model} (or another switch of its kind) "
                          f"builds for {gpus:,} GPUs")
    return out


def candidate(design, catalog=None) -> Candidate:
    """One design as a candidate: built and priced, not yet evaluated. FabricError when it does not build."""
    from fabric.cost import bill_of_materials
    from fabric.topology import build_fabric

    fab = build_fabric(design, catalog)
    bom = bill_of_materials(fab, catalog)
    key = (tuple((i.category, i.model, i.where, i.count) for i in bom.items), fab.tiers)
    return Candidate(design, Inventory.from_bom(bom), fab.switch_counts(), _switch_tiers(bom), float(bom.cost_usd),
                     None, key=key)


def plan_growth(stages, base=None, *, installed=None, catalog=None, scenario=None, seed: int = 0, samples: int = 128,
                tolerance: float = 0.02, allow_discard: bool = False, switch_models=None,
                transport_overrides: dict | None = None, progress=None) -> GrowthPlan:
    """Plan the purchases of ``stages`` (:class:`GrowthStage`, growing GPU counts) from ``base`` (a design; its
    size is ignored; default the full-bisection fat tree) and compare with designing each stage from scratch.

    A stage without a p99 target gets the p99 of the base design's **full-bisection version** at that size (the
    same family, GPU, NIC and switch model with 1:1 leaves and spines, the tiers the size needs) times ``1 +
    tolerance``: a non-blocking fabric is the reference whatever the base's oversubscription, so oversubscribed
    candidates qualify only where the workload does not feel it. The plan says so (``target_from`` and a note).
    ``installed`` (an :class:`~fabric.brownfield.inventory.Installed`): the plan starts from that fabric (see the
    module docstring); ``base`` then defaults to its design. ``progress(done, total)`` is told after each stage's
    evaluations.
    """
    from fabric.reference.presets import preset_design
    from fabric.evaluate import Scenario, evaluate

    stages = list(stages)
    if len(stages) < 2:
        raise FabricError("a growth plan needs at least two stages")
    for a, b in zip(stages, stages[1:]):
        if b.gpus <= a.gpus:
            raise FabricError(f"growth stages must grow: {a.gpus:,} GPUs then {b.gpus:,}")
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance <= 1):
        raise FabricError(f"tolerance: expected a share in [0, 1], got {tolerance!r}")
    for d in (base, getattr(installed, "design", None)):
        if getattr(d, "regions", None):
            raise FabricError("plan-growth grows one cabling stage by stage (more servers wired the same way); a "
                              "design of regions is sized by the jobs each region holds: search each stage's "
                              "design with the family 'regions' allowed (fabric search --constraints FILE with "
                              "families: [clos, rail_optimized, regions]) and compare them with fabric upgrade")
    start, in_service = Inventory(), Inventory()
    if installed is not None:
        if stages[0].gpus < installed.design.gpus:
            raise FabricError(f"stage 1 ({stages[0].gpus:,} GPUs) is smaller than the installed fabric "
                              f"({installed.design.gpus:,} GPUs): growth starts from what is installed")
        base = base or installed.design
        start = installed.inventory
        own = candidate(installed.design, catalog)
        in_service = own.inventory                  # the switches the installed design uses (spares aside)
    base = base or preset_design("fat-tree", stages[0].gpus)
    scenario = scenario or Scenario()
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides)

    def p99(design, workload):
        try:
            return float(evaluate(design, workload, scenario, **kw).step_time_s["p99"])
        except DesignError:
            return None

    cands, targets, notes, target_from, considered = [], [], [], [], []
    for k, st in enumerate(stages):
        cs = stage_candidates(base, st.gpus, catalog, switch_models=switch_models)
        if installed is not None and st.gpus == installed.design.gpus:     # what is installed, as it is
            cs = [own] + [c for c in cs if c.key != own.key]
        for c in cs:
            c.p99_s = p99(c.design, st.workload)
        target = st.p99_target_s
        if target is None:
            ref = p99(full_bisection(base, st.gpus), st.workload)
            if ref is None:
                raise DesignError(f"stage {k + 1} ({st.gpus:,} GPUs): the base design's full-bisection version "
                                  f"cannot run this workload; give a p99 target")
            target = ref * (1 + tolerance)
            target_from.append(f"full-bisection {base.family} on {base.switch_model} "
                               f"({ref * 1e3:,.1f} ms) + {tolerance * 100:g} %")
        else:
            target_from.append("given")
        targets.append(target)
        for c in cs:
            c.meets = c.p99_s is not None and c.p99_s <= target * (1 + 1e-9)
        if not any(c.meets for c in cs):
            fastest = min((c for c in cs if c.p99_s is not None), key=lambda c: c.p99_s, default=None)
            notes.append(f"stage {k + 1} ({st.gpus:,} GPUs): no candidate meets the p99 target "
                         f"{target * 1e3:,.1f} ms; the plan uses the fastest" +
                         (f" ({fastest.p99_s * 1e3:,.1f} ms)" if fastest else ""))
            if fastest is not None:
                fastest.meets = True
        cands.append([c for c in cs if c.meets])
        considered.append(len(cs))
        if progress is not None:
            progress(k + 1, len(stages))
    # from scratch: the cheapest qualifying design of each stage, bought new
    scratch = [min(cs, key=lambda c: (c.cost_usd, c.p99_s)) for cs in cands]
    scratch_moves = [bom_delta(start, scratch[0].inventory)] + \
        [bom_delta(a.inventory, b.inventory) for a, b in zip(scratch, scratch[1:])]
    plan, discard_allowed = _shortest(cands, allow_discard, start, in_service)
    if plan is None:
        notes.append("every sequence of qualifying fabrics takes out a switch somewhere"
                     + (" (of the installed fabric or bought later)" if installed is not None else "")
                     + ": the plan below is the cheapest allowing it")
        plan, discard_allowed = _shortest(cands, True, start, in_service)
    purchases = [bom_delta(start, plan[0].inventory)] + \
        [bom_delta(a.inventory, b.inventory) for a, b in zip(plan, plan[1:])]
    defaulted = [i + 1 for i, t in enumerate(target_from) if t != "given"]
    if defaulted:
        notes.insert(0, f"no p99 target given for stage(s) {', '.join(map(str, defaulted))}: each is the p99 of "
                        f"the base design's full-bisection version ({base.family} on {base.switch_model}, 1:1) at "
                        f"that size + {tolerance * 100:g} %; give targets to plan for another step time")
    result = GrowthPlan(stages, targets, cands, plan, purchases, scratch, scratch_moves, "", discard_allowed, notes,
                        target_from, considered, installed)
    result.answer = _answer(result)
    return result


def full_bisection(base, gpus: int):
    """``base`` at ``gpus`` GPUs with 1:1 leaves and spines and the tiers the size needs: the reference of the
    default p99 targets."""
    return base.replace(gpus=gpus, tiers=None, spines=None, oversubscription=(1.0, 1.0),
                        name=f"{base.name.split(' (')[0]} full bisection ({gpus:,} GPUs)")


def _shortest(cands, allow_discard: bool, start=None, in_service=None):
    """The cheapest sequence (one candidate per stage) by total purchases, then by spending later rather than
    sooner (each stage's purchases weighted by the stages left: among sequences that all end buying the last
    stage's fabric, the one that defers capex); without ``allow_discard`` only transitions that take out no
    switch. ``start``: the inventory installed before stage 1 (default nothing), ``in_service`` the part of it
    whose switches must stay. ``(plan or None, allow_discard)``."""
    n = len(cands)
    start, in_service = start or Inventory(), in_service or Inventory()
    best = []
    for c in cands[0]:
        if not allow_discard and bom_delta(in_service, c.inventory).removed("switch"):
            continue
        buy = bom_delta(start, c.inventory).added_usd
        best.append(((buy, buy * n), [c]))
    for k in range(1, n):
        nxt = []
        for c in cands[k]:
            opts = []
            for key, path in best:
                if key is None:
                    continue
                d = bom_delta(path[-1].inventory, c.inventory)
                if not allow_discard and d.removed("switch"):
                    continue
                opts.append(((key[0] + d.added_usd, key[1] + d.added_usd * (n - k)), path + [c]))
            nxt.append(min(opts, key=lambda t: t[0]) if opts else (None, None))
        best = nxt
    done = [(key, path) for key, path in best if key is not None]
    if not done:
        return None, allow_discard
    return min(done, key=lambda t: t[0])[1], allow_discard


def _answer(r: GrowthPlan) -> str:
    save = r.scratch_total_usd - r.total_usd
    start = ""
    if r.installed is not None:
        sw = ", ".join(f"{n:,} {m}" for m, n in r.installed.inventory.by_category("switch").items())
        start = f" from the installed fabric ({r.installed.design.gpus:,} GPUs: {sw})"
    head = (f"plan: ${r.total_usd:,.0f} over {len(r.stages)} stages ("
            + " -> ".join(f"{s.gpus:,}" for s in r.stages)
            + f" GPUs){start} against ${r.scratch_total_usd:,.0f} for {len(r.stages)} designs from scratch "
              f"({'saves' if save >= 0 else 'costs'} ${abs(save):,.0f})")
    sw = r.installed_switches_in_use() if r.installed is not None else r.first_stage_switches_in_use()
    used = sum(v[1] for v in sw.values())
    bought = sum(v[0] for v in sw.values())
    which = "installed" if r.installed is not None else "stage-1"
    tail = f"; {used:,} of the {bought:,} {which} switches are in use at the last stage"
    if r.discarded_usd:
        tail += f"; it takes out items that cost ${r.discarded_usd:,.0f}"
    else:
        tail += "; nothing bought is taken out"
    thrown = sum(_removed_value(d) for d in r.scratch_moves[1:])
    tail += (f"; growing the from-scratch designs into each other instead would cost ${r.scratch_grown_usd:,.0f}"
             + (f" and throw away items that cost ${thrown:,.0f}" if thrown else " and throw nothing away"))
    return head + tail

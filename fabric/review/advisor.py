"""Cheapest-fix advisor: which single change of a design buys the most p99 per dollar, free policy changes first.

A design review asks whether spending money is the right fix at all. :func:`advise` tries every single change of
a design, evaluates each on the same workload, scenario and seed (so differences are the change's, not noise) and
ranks those that shorten the p99 step:

1. free policy changes (no hardware bought: routing policy, queue pairs per connection under ECMP, the
   scheduler's placement rule, PXN), by p99 gained;
2. hardware changes (lower oversubscription at a tier, i.e. more uplinks and spines; a second plane; a faster NIC
   the host can feed; a separate storage network), by dollars per millisecond of p99 saved.

When the workload has serving jobs (docs/serving.md), the same changes, and a traffic class of their own, are also
ranked by what they do to the serving jobs' p99 TTFT and TPOT (``serving_advice``, ``serving_answer``).

A change that does not shorten the p99 by at least ``min_gain`` (share of the p99, default 0.5 %) is not advice;
when none does, the answer is that no single change helps. Each change is a plain design edit, so every answer can
be opened, priced and evaluated like any design. Whether a change is free or hardware is not decided here: it is
:func:`fabric.design.policy.edit_kind` of the fields it edits, the one definition the search and the comparison of
designs use too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabric.design.policy import POLICY, best_free_policy, edit_kind
from fabric.design.schema import PLACEMENTS as PLACEMENT_RULES
from fabric.errors import FabricError
from fabric.search.tradeoff import usd_per_ms
from fabric.units import time_text

__all__ = ["Advice", "advise", "candidate_changes", "free_policy_summary", "FREE", "HARDWARE"]

#: The advice's ``kind`` values (JSON): a free policy change, or hardware (fabric.design.policy decides which).
FREE, HARDWARE = "free", "hardware"


def _kind(edit: dict) -> str:
    return FREE if edit_kind(edit) == POLICY else HARDWARE


@dataclass(frozen=True)
class Advice:
    """One single change: ``change`` (a sentence), ``kind`` (free or hardware), the edited design's fields
    (``edit``), its p99 and cost against the design's (negative ``delta_p99_s`` is faster), and the dollars per
    millisecond of p99 saved (:func:`fabric.search.tradeoff.usd_per_ms`: None when it saves under 0.5 % of the p99 or
    costs nothing more; :func:`fabric.search.tradeoff.usd_per_ms_text` says what it is then)."""

    change: str
    kind: str
    edit: dict
    delta_p99_s: float
    delta_cost_usd: float
    usd_per_ms_saved: float | None
    p99_s: float
    cost_usd: float

    def to_dict(self) -> dict:
        from fabric.design.regions import region_to_dict

        edit = {k: ([region_to_dict(r) for r in v] if k == "regions" else v) for k, v in self.edit.items()}
        return {"change": self.change, "kind": self.kind, "edit": edit, "delta_p99_s": self.delta_p99_s,
                "delta_cost_usd": self.delta_cost_usd, "usd_per_ms_saved": self.usd_per_ms_saved,
                "p99_s": self.p99_s, "cost_usd": self.cost_usd}


def candidate_changes(design, catalog=None, *, serving: bool = False) -> list[tuple[str, str, dict]]:
    """Every single change worth trying: ``(sentence, kind, fields to replace)``; invalid ones are filtered later
    by building them. ``serving``: the workload has serving jobs, so a traffic class of their own is tried too."""
    from fabric.catalog import compatible_nics, default_catalog
    from fabric.design.schema import ROUTING_POLICIES

    cat = catalog or default_catalog()
    out: list[tuple[str, dict]] = []
    for r in ROUTING_POLICIES:
        if r != design.routing:
            out.append((f"routing {design.routing} -> {r}", {"routing": r}))
    if design.routing == "ecmp":
        for q in (2, 4, 8, 16):
            if q > design.qps_per_connection:
                out.append((f"queue pairs per connection {design.qps_per_connection} -> {q} (more ECMP entropy)",
                            {"qps_per_connection": q}))
    for p in PLACEMENT_RULES:
        if p != design.placement:
            out.append((f"placement rule {design.placement} -> {p}", {"placement": p}))
    if design.family == "rail_optimized" and not design.pxn:
        out.append(("PXN on (cross-rail traffic over NVLink to the destination's rail)", {"pxn": True}))
    over = list(design.oversubscription) + [1.0] * (2 - len(design.oversubscription))
    for tier, name in ((0, "leaf"), (1, "spine")):
        o = over[tier]
        if o > 1.0:
            lower = max(1.0, o / 2.0 if o >= 2.0 else 1.0)
            new = list(over)
            new[tier] = lower
            out.append((f"{name} oversubscription {o:g}:1 -> {lower:g}:1 (more uplinks and spines)",
                        {"oversubscription": tuple(new)}))
    for i, r in enumerate(design.regions or ()):       # a design of regions: each region's ratios
        from dataclasses import replace as _replace

        for tier, name in ((0, "leaf"), (1, "spine")):
            o = r.oversub(tier)
            if o > 1.0:
                lower = max(1.0, o / 2.0 if o >= 2.0 else 1.0)
                ratios = list(r.oversubscription)
                ratios[tier] = lower
                regions = list(design.regions)
                regions[i] = _replace(r, oversubscription=tuple(ratios))
                out.append((f"region {r.name} {name} oversubscription {o:g}:1 -> {lower:g}:1 (more uplinks)",
                            {"regions": tuple(regions)}))
    nic = cat.nic(design.nic_model)
    if design.planes == 1 and nic.ports >= 2 and nic.ports % 2 == 0 and design.family != "dragonfly":
        out.append(("a second plane (each NIC's ports split over two planes)", {"planes": 2}))
    faster = [m for m in compatible_nics(cat, design.gpu_model, design.nics_per_gpu)
              if cat.nic(m).fabric in (nic.fabric, "vpi", "any")
              and cat.nic(m).ports * cat.nic(m).port_speed_bps > nic.ports * nic.port_speed_bps]
    if faster:
        best = min(faster, key=lambda m: (cat.nic(m).ports * cat.nic(m).port_speed_bps, cat.nic(m).price_usd))
        out.append((f"faster NICs {design.nic_model} -> {best}", {"nic_model": best}))
    if not design.storage_isolation:
        out.append(("a separate storage network (checkpoint traffic off the training fabric)",
                    {"storage_isolation": True}))
    if serving and not design.serving_class:
        out.append(("serving traffic in a class of its own (a priority queue on the shared links)",
                    {"serving_class": True}))
    return [(sentence, _kind(edit), edit) for sentence, edit in out]


def _worst_serving(ev) -> tuple[float, float]:
    """The worst serving job's p99 TTFT and p99 TPOT (infinite when a service is overloaded)."""
    inf = float("inf")
    ttft = max((m["ttft_s"]["p99"] if m["stable"] else inf) for m in ev.serving.values())
    tpot = max((m["tpot_s"]["p99"] if m["stable"] else inf) for m in ev.serving.values())
    return ttft, tpot


def advise(design, workload, scenario=None, *, catalog=None, seed: int = 0, samples: int | None = None,
           min_gain: float = 0.005, transport_overrides: dict | None = None, evaluator=None) -> dict:
    """Rank single changes of ``design`` (see the module docstring).

    ``evaluator``: ``evaluator(design)`` instead of evaluating on ``workload`` (anything with ``step_time_s["p99"]``,
    ``cost_usd`` and ``serving``): the design judged in a context of its own, e.g. the robust p99 over a job mix or
    each design at its best plan (:func:`fabric.review.record.context_judge`).

    Returns ``{"design", "p99_s", "cost_usd", "advice": [Advice.to_dict()...], "not_helping": [...],
    "not_possible": [{"change", "reason"}...], "answer": sentence}``.
    """
    from fabric.evaluate import DEFAULT_SAMPLES, evaluate

    samples = DEFAULT_SAMPLES if samples is None else samples   # the same samples as every page's evaluation
    if not 0 <= min_gain < 1:
        raise FabricError(f"advisor: min_gain must be a share in [0, 1), got {min_gain!r}")
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides)
    seen: dict = {}

    def run(d):          # each design evaluated once, for the single changes and the best free policy alike
        if d not in seen:
            seen[d] = evaluator(d) if evaluator is not None else evaluate(d, workload, scenario, **kw)
        return seen[d]

    base = run(design)
    p0, c0 = base.step_time_s["p99"], base.cost_usd
    helping, others, impossible = [], [], []
    serving = []
    s0 = _worst_serving(base) if base.serving else None
    for sentence, kind, edit in candidate_changes(design, catalog, serving=s0 is not None):
        try:
            d = design.replace(**edit)
            ev = run(d)
        except FabricError as err:
            impossible.append({"change": sentence, "reason": " ".join(str(err).split())})
            continue
        dp, dc = ev.step_time_s["p99"] - p0, ev.cost_usd - c0
        per_ms = usd_per_ms(dc, dp, p0)           # None unless it saves over 0.5 % of the p99 and costs more
        a = Advice(sentence, kind, edit, dp, dc, per_ms, ev.step_time_s["p99"], ev.cost_usd)
        (helping if -dp >= min_gain * p0 else others).append(a)
        if s0 is not None:
            t, p = _worst_serving(ev)
            if any(new < old * (1 - min_gain) for new, old in ((t, s0[0]), (p, s0[1]))):
                serving.append({"change": sentence, "kind": kind, "edit": dict(edit), "delta_cost_usd": dc,
                                "ttft_p99_s": t, "tpot_p99_s": p, "delta_ttft_p99_s": t - s0[0],
                                "delta_tpot_p99_s": p - s0[1]})
    free = sorted((a for a in helping if a.kind == FREE or a.delta_cost_usd <= 0),
                  key=lambda a: (a.delta_p99_s, a.delta_cost_usd))
    paid = sorted((a for a in helping if a not in free),
                  key=lambda a: (math.inf if a.usd_per_ms_saved is None else a.usd_per_ms_saved, a.delta_p99_s))
    ranked = free + paid
    if ranked:
        top = ranked[0]
        answer = (f"best single change: {top.change} (p99 {time_text(p0)} -> {time_text(top.p99_s)}, "
                  + ("no hardware" if top.kind == FREE else f"${top.delta_cost_usd:+,.0f}") + ")")
    else:
        answer = (f"no single change shortens the p99 step ({time_text(p0)}) by {min_gain:.1%} or more: the "
                  f"network is not what sets this step's pace, or it needs more than one change")
    out = {"design": design.name, "p99_s": p0, "cost_usd": c0, "advice": [a.to_dict() for a in ranked],
           "not_helping": [a.to_dict() for a in others], "not_possible": impossible, "answer": answer,
           "best_free_policy": free_policy_summary(best_free_policy(design, run))}
    if s0 is not None:
        # the serving jobs' tail: free changes first, then by the p99 TPOT (then TTFT) they reach
        serving.sort(key=lambda r: (r["kind"] != FREE and r["delta_cost_usd"] > 0, r["tpot_p99_s"], r["ttft_p99_s"]))
        out.update({"serving_p99_s": {"ttft": s0[0], "tpot": s0[1]}, "serving_advice": serving})
        if serving:
            top = serving[0]
            out["serving_answer"] = (
                f"for the serving tail: {top['change']} (p99 TTFT {top['delta_ttft_p99_s'] * 1e3:+,.1f} ms, p99 TPOT "
                f"{top['delta_tpot_p99_s'] * 1e3:+,.2f} ms, "
                + ("no hardware" if top["kind"] == FREE else f"${top['delta_cost_usd']:+,.0f}") + ")")
        else:
            out["serving_answer"] = "no single change shortens the serving jobs' p99 TTFT or TPOT"
    return out


def free_policy_summary(best: dict) -> dict:
    """:func:`fabric.design.policy.best_free_policy`'s answer as plain numbers and one sentence (JSON-ready): the
    one wording of "the best free fix" on the Design page, Compare, the brief and ``fabric advise``."""
    from fabric.design.policy import TIE_RULE
    from fabric.units import time_text

    gain = -best["delta_p99_s"]
    if best["changes"] and gain > 0:
        sentence = (f"best free policy on this hardware: {', '.join(best['changes'])} (p99 {time_text(best['own_p99_s'])}"
                    f" -> {time_text(best['p99_s'])}, {gain / best['own_p99_s']:.1%} shorter, at no cost)")
    else:
        sentence = f"best free policy on this hardware: its own ({best['policy']}); no free policy shortens the p99"
    if best["ties"]:
        shown = ", ".join(best["ties"][:3]) + (f" and {len(best['ties']) - 3} more" if len(best["ties"]) > 3 else "")
        sentence += (f"; {len(best['ties'])} other polic{'y' if len(best['ties']) == 1 else 'ies'} tie at the same "
                     f"p99 ({shown}), so by the tie rule ({TIE_RULE.split(':')[0]}) '{best['policy']}'")
    return {"policy": best["policy"], "changes": list(best["changes"]), "p99_s": best["p99_s"],
            "own_p99_s": best["own_p99_s"], "delta_p99_s": best["delta_p99_s"], "ties": list(best["ties"]),
            "tried": best["tried"], "sentence": sentence}

"""Side-by-side comparison of designs: metrics, gene-by-gene differences, and what the extra money buys, split into
what free policy gives and what hardware buys (:mod:`fabric.design.policy` says which decisions are which)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from fabric.design.policy import (
    HARDWARE, POLICY, best_free_policy, gene_kind, hardware_changes, policy_changes, with_policy,
)
from fabric.errors import FabricError
from fabric.search.tradeoff import SAME_COST_USD, SAME_P99_SHARE, same_p99, usd_per_ms
from fabric.search.designs import GENE_COLUMNS, GENE_LABELS, design_genes, gene_value_text

__all__ = ["metrics_frame", "gene_frame", "money_deltas", "money_split", "best_free_policy"]


def metrics_frame(rows: Sequence[Mapping]) -> pd.DataFrame:
    """One column per design: network capex, power, p50/p95/p99 and the lower bound (rows are the metrics).

    Each row of ``rows`` has ``name``, ``cost_usd``, ``power_w`` and ``step_time_s`` (p50/p95/p99) and
    ``lower_bound_s``; with ``serving`` (``Evaluation.serving``) each serving job's p99 TTFT, p99 TPOT and SLO
    attainment follow (:func:`fabric.ui_support.serving_front.serving_rows`), and ``serving_only`` calls the step
    what it is for a serving-only workload: one unloaded request. ``compute_s`` (``Evaluation.compute_s``: on the
    design's GPU, :mod:`fabric.evaluate.gpu_compute`) adds a row of the compute per step; ``plan`` (the label of
    the parallelism plan the design is evaluated at, plan space auto) a row naming it.
    """
    from fabric.review.figures import figure_text
    from fabric.ui_support.serving_front import serving_rows

    data = {}
    for r in rows:
        st = r["step_time_s"]
        what = "unloaded request" if r.get("serving_only") else "step time"
        # written as every page and the brief write them (fabric.review.figures)
        data[r["name"]] = {"network capex": figure_text(r["cost_usd"], "usd"),
                           "network power": figure_text(r["power_w"], "power"),
                           **serving_rows(r.get("serving") or {})}
        if r.get("robust"):      # a job mix: the robust p99 (the search's objective), then each case's p99
            data[r["name"]][f"robust p99 {what}"] = figure_text(st["p99"], "time")
            for case, p in (r.get("p99_by_case") or {}).items():
                data[r["name"]][f"p99 {what}, {case}"] = figure_text(p, "time")
        else:
            data[r["name"]].update({f"p50 {what}": figure_text(st["p50"], "time"),
                                    f"p95 {what}": figure_text(st["p95"], "time"),
                                    f"p99 {what}": figure_text(st["p99"], "time"),
                                    "lower bound": figure_text(r["lower_bound_s"], "time")})
        if r.get("plan"):                         # plan space auto: the design's own best plan
            data[r["name"]]["parallelism plan"] = r["plan"]
        if r.get("compute_s") is not None:        # on the design's GPU (fabric.evaluate.gpu_compute)
            data[r["name"]][f"compute per {'request' if r.get('serving_only') else 'step'}"] = \
                figure_text(r["compute_s"], "time")
    return pd.DataFrame(data)


def gene_frame(designs: Mapping[str, object], *, only_differences: bool = False) -> pd.DataFrame:
    """Genes (rows) of each design (columns), hardware first then free policy (the ``kind`` column), with a
    ``differs`` column; ``designs`` maps name -> Design."""
    genes = {name: design_genes(d) for name, d in designs.items()}
    # the serving traffic class is a row only when a design turns it on (it matters to serving workloads only)
    extra = ("serving_class",) if any(g.get("serving_class") for g in genes.values()) else ()
    rows = []
    for kind in (HARDWARE, POLICY):
        for g in GENE_COLUMNS + extra:
            if gene_kind(g) != kind:
                continue
            vals = {name: gene_value_text(g, genes[name].get(g, False)) for name in genes}
            differs = len(set(vals.values())) > 1
            if only_differences and not differs:
                continue
            rows.append({"gene": GENE_LABELS[g], "kind": kind, **vals, "differs": "yes" if differs else ""})
        if kind == HARDWARE and any(d.regions for d in designs.values()):     # designs of regions: the regions
            from fabric.design.regions import regions_text

            vals = {name: regions_text(d.regions, jobs=False) if d.regions else "(uniform)"
                    for name, d in designs.items()}
            differs = len(set(vals.values())) > 1
            if differs or not only_differences:
                rows.append({"gene": "regions", "kind": kind, **vals, "differs": "yes" if differs else ""})
    return pd.DataFrame(rows, columns=["gene", "kind", *genes, "differs"])


def money_deltas(rows: Sequence[Mapping]) -> list[dict]:
    """What each design buys relative to the first: capex and power change, p99 and p50 change, and the price
    of each millisecond of p99 saved (:func:`fabric.search.tradeoff.usd_per_ms`: only when it is faster by more than
    0.5 % and costs more) or what it is instead (the same p99, a saving, worse on both).

    Returns one dict per design after the first with the numbers and a ``sentence``.
    """
    if len(rows) < 2:
        return []
    ref = rows[0]
    ref_p99 = ref["step_time_s"]["p99"]
    out = []
    for r in rows[1:]:
        d_cost = r["cost_usd"] - ref["cost_usd"]
        d_power = r["power_w"] - ref["power_w"]
        d_p99 = r["step_time_s"]["p99"] - ref_p99
        d_p50 = (r["step_time_s"]["p50"] - ref["step_time_s"]["p50"]
                 if r["step_time_s"].get("p50") is not None and ref["step_time_s"].get("p50") is not None else None)
        rel_p99 = d_p99 / ref_p99 if ref_p99 else 0.0
        pct = _pct(abs(rel_p99))
        per_ms = usd_per_ms(d_cost, d_p99, ref_p99)
        same_cost, same_p = abs(d_cost) < SAME_COST_USD, same_p99(d_p99, ref_p99)
        faster, slower = d_p99 < 0 and not same_p, d_p99 > 0 and not same_p
        cost = ("costs the same as" if same_cost else
                f"costs ${abs(d_cost):,.0f} {'more' if d_cost > 0 else 'less'} than") + f" '{ref['name']}'"
        which = "robust p99" if r.get("robust") else "p99"
        if not same_p:
            speed = f"is {abs(d_p99) * 1e3:,.1f} ms ({pct}) {'faster' if faster else 'slower'} at {which}"
        elif abs(d_p99) <= 1e-12 * max(1.0, abs(ref_p99)):
            speed = f"has the same {which} step"
        else:
            speed = (f"has the same {which} step within {SAME_P99_SHARE:.1%} ({abs(d_p99) * 1e3:,.1f} ms "
                     f"{'faster' if d_p99 < 0 else 'slower'})")
        if same_cost and same_p:
            verdict = ": the same on both"
        elif per_ms is not None:
            verdict = f": ${per_ms:,.0f} per ms of {which}"
        elif not slower and d_cost <= 0:
            verdict = ": better on both" if faster and not same_cost else ": better"
        elif not faster and d_cost >= 0:
            verdict = ": worse on both (slower and dearer, no saving)" if slower and not same_cost else ": worse"
        else:
            verdict = ": cheaper but slower"
        sentence = f"'{r['name']}' {cost} and {speed}{verdict}."
        out.append({"design": r["name"], "reference": ref["name"], "delta_cost_usd": d_cost,
                    "delta_power_w": d_power, "delta_p99_s": d_p99, "delta_p50_s": d_p50,
                    "relative_p99": rel_p99, "usd_per_ms_p99": per_ms, "sentence": sentence})
    return out


def money_split(designs: Mapping[str, object], evaluate: Callable) -> list[dict]:
    """What each design after the first buys against the first (the reference), in two steps that add up:

    1. **free policy**: the reference's hardware run with the design's free policy (routing, queue pairs, placement
       rule, PXN, ...): the same bill of materials, so whatever it gains costs nothing;
    2. **hardware**: from there to the design: the same policy on the design's hardware, so the whole capex
       difference buys this step's p99 change (and the price per millisecond is the hardware's alone).

    ``designs`` maps name -> Design (the reference first); ``evaluate(design)`` returns an evaluation (the
    dashboard's cached one). Returns one dict per design after the first: ``free_delta_p99_s``,
    ``hardware_delta_p99_s`` (they add up to the whole p99 change), ``delta_cost_usd``, ``usd_per_ms_hardware``,
    ``policy_changes``, ``hardware_changes`` and the two ``sentences``. When the reference's hardware cannot run
    the design's policy, ``split`` is False and the sentence says why.
    """
    items = list(designs.items())
    if len(items) < 2:
        return []
    ref_name, ref = items[0]
    ref_ev = evaluate(ref)
    ref_p99, ref_cost = ref_ev.step_time_s["p99"], ref_ev.cost_usd
    out = []
    for name, d in items[1:]:
        ev = evaluate(d)
        p99, cost = ev.step_time_s["p99"], ev.cost_usd
        mid = with_policy(ref, d, name=f"{ref.name} with the policy of {d.name}")
        pol, hw = policy_changes(ref, mid), hardware_changes(ref, d)
        row = {"design": name, "reference": ref_name, "policy_changes": pol, "hardware_changes": hw,
               "delta_p99_s": p99 - ref_p99, "delta_cost_usd": cost - ref_cost, "split": True}
        try:
            mid_ev = evaluate(mid) if pol else ref_ev
        except FabricError as err:
            row.update(split=False, free_delta_p99_s=None, hardware_delta_p99_s=None, usd_per_ms_hardware=None,
                       sentences=[f"the hardware of '{ref_name}' cannot run the free policy of '{name}' "
                                  f"({' '.join(str(err).split())}), so the difference is not split."])
            out.append(row)
            continue
        mid_p99 = mid_ev.step_time_s["p99"]
        free, hard = mid_p99 - ref_p99, p99 - mid_p99
        # a price per ms only where the money buys p99: the hardware step saves it and the design as a whole is
        # faster than the reference (a slower design has no price per millisecond)
        per_ms = usd_per_ms(cost - ref_cost, hard, mid_p99)
        buys_nothing = per_ms is not None and (p99 >= ref_p99 or same_p99(p99 - ref_p99, ref_p99))
        if buys_nothing:
            per_ms = None
        row.update(free_delta_p99_s=free, hardware_delta_p99_s=hard, usd_per_ms_hardware=per_ms,
                   mid_p99_s=mid_p99, mid_cost_usd=mid_ev.cost_usd)
        rest = policy_changes(mid, d)          # policy only the design's hardware can use (PXN needs rails)
        row["sentences"] = [_free_sentence(ref_name, name, pol, free, ref_p99),
                            _hardware_sentence(ref_name, name, hw, hard, cost - ref_cost, per_ms, mid_p99, rest,
                                               whole=(p99 - ref_p99, ref_p99) if buys_nothing else None)]
        out.append(row)
    return out


def _delta_text(dp: float, base: float) -> str:
    if abs(dp) <= 1e-12 * max(1.0, abs(base)):
        return "no change of the p99"
    rel = _pct(abs(dp) / base) if base else ""
    return f"{abs(dp) * 1e3:,.1f} ms ({rel}) {'faster' if dp < 0 else 'slower'} at p99"


def _free_sentence(ref_name: str, name: str, changes: list, dp: float, ref_p99: float) -> str:
    if not changes:
        return f"free policy: '{name}' runs the policy of '{ref_name}' (nothing free to count)."
    return (f"free policy ({', '.join(changes)}) on the hardware of '{ref_name}': {_delta_text(dp, ref_p99)}, "
            f"at no cost.")


def _hardware_sentence(ref_name: str, name: str, changes: list, dp: float, d_cost: float, per_ms, base: float,
                       rest: list = (), *, whole: tuple | None = None) -> str:
    """The hardware step in words; ``whole`` (the whole design's p99 change against the reference, the reference's
    p99): said instead of a price when the hardware saves p99 for money but the design as a whole is no faster."""
    if not changes:
        return f"hardware: the same as '{ref_name}' ($0): all of the difference is free policy."
    shown = ", ".join(changes[:4]) + (f" and {len(changes) - 4} more" if len(changes) > 4 else "")
    cost = "$0" if abs(d_cost) < SAME_COST_USD else f"${abs(d_cost):,.0f} {'more' if d_cost > 0 else 'less'}"
    tail = f": ${per_ms:,.0f} per ms of p99" if per_ms is not None else ""
    if whole is not None:
        dp_all, ref_p99 = whole
        how = (f"within {SAME_P99_SHARE:.1%} of the p99 of '{ref_name}'" if same_p99(dp_all, ref_p99) else
               f"{dp_all * 1e3:,.1f} ms ({_pct(dp_all / ref_p99)}) slower at p99 than '{ref_name}'")
        tail = f"; but '{name}' as a whole is {how}, so the money buys no p99 (no price per ms)"
    same = (f"with {', '.join(rest)}, which only this hardware can use" if rest else "on the same policy")
    return f"hardware ({shown}): {cost}, {_delta_text(dp, base)} {same}{tail}."


def _pct(x: float) -> str:
    """A share as a percentage with the digits a small difference needs (``0.04%``, ``3.1%``)."""
    return f"{x:.2%}" if x < 0.01 else f"{x:.1%}"

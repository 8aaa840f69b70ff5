"""The one-page brief a design review signs: the design to buy and why, against the baselines as drawn and as a team
would tune them, the runner-up and what it gives up, the constraints, and the design's record (each case of a mix,
bill of materials, serving latency, resilience, what-ifs, cheapest fixes, cost per step).

:func:`review_brief` reads a search's front and baselines (records made in one context,
:class:`fabric.review.Context`) and the chosen design's record in that same context
(:func:`fabric.review.design_record`): :func:`fabric.search.recommend.recommend` picks the design and says by which
rule; the runner-up is the front design next to it in cost (the cheaper neighbour when there is one: what saving
money gives up; else the faster one: what more money buys); every baseline is compared as drawn (its search record)
and as tuned (its best free policy judged in the same context: :attr:`fabric.review.DesignRecord.best_free_fix`).
Nothing here evaluates a figure of its own, so the brief, the Search page, Design, Compare and the CLI agree.
:func:`brief_sections` turns the returned numbers into the sentences the page and the HTML file show.
"""

from __future__ import annotations

from fabric.review.document import WHAT_IFS, design_sections, record_facts

__all__ = ["review_brief", "brief_sections", "constraint_lines", "WHAT_IFS", "design_of_row"]


def design_of_row(rec: dict, constraints, catalog=None):
    """The design a search record stands for, at the constraints' cluster (its own GPU system when the search chose
    among several)."""
    from fabric.search.designs import design_from_record

    return design_from_record(rec, gpus=constraints.gpus, gpus_per_node=constraints.gpus_per_node,
                              gpu_model=constraints.gpu_model, rack_power_w=constraints.rack_budget_w,
                              **({"catalog": catalog} if catalog is not None else {}))


def _runner_up(front: list[dict], chosen: dict, beyond: list[dict] = ()) -> tuple[dict | None, str]:
    """The front design next to ``chosen`` in cost: the cheaper neighbour (what saving money gives up), else the
    faster one; when the front holds no other design, the neighbour on the trade-off beyond the p99 target
    (``beyond``: designs meeting every limit but the target), named as missing it."""
    others = sorted((r for r in front if r.get("key") != chosen.get("key")), key=lambda r: r["cost_usd"])
    cheaper = [r for r in others if r["cost_usd"] < chosen["cost_usd"]]
    if cheaper:
        return cheaper[-1], "cheaper"
    dearer = [r for r in others if r["cost_usd"] >= chosen["cost_usd"]]
    if dearer:
        return dearer[0], "faster"
    misses = sorted((r for r in beyond if r.get("key") != chosen.get("key") and r["cost_usd"] < chosen["cost_usd"]),
                    key=lambda r: r["cost_usd"])
    return (misses[-1], "misses the target") if misses else (None, "")


def _baseline_rows(baselines, chosen, record_of, constraints, catalog) -> list[dict]:
    """Every buildable baseline as drawn (its search record) and as tuned (its best free policy in the same
    context), with the chosen design's saving and p99 change against each."""
    from fabric.errors import FabricError
    from fabric.search.recommend import violation_text

    rows = []
    for b in baselines:
        if not b.get("buildable", True):
            continue
        row = {"design": b["design"], "feasible": bool(b.get("feasible", True)), "key": b.get("key"),
               "cost_usd": float(b["cost_usd"]), "p99_s": float(b["p99_s"]),
               "saving_usd": float(b["cost_usd"]) - float(chosen["cost_usd"]),
               "p99_change": float(chosen["p99_s"]) / float(b["p99_s"]) - 1}
        try:
            best = ({"p99_s": b["tuned_p99_s"], "policy": b["tuned_policy"], "changes": b["tuned_changes"]}
                    if b.get("tuned_p99_s") is not None else      # the search tuned it (fabric.search.tuned)
                    record_of(design_of_row(b, constraints, catalog), b).best_free_fix)
        except FabricError as err:
            row["tuned_error"] = " ".join(str(err).split())
        else:
            row.update(tuned_p99_s=float(best["p99_s"]), tuned_policy=best["policy"],
                       tuned_changes=list(best["changes"]),
                       tuned_p99_change=float(chosen["p99_s"]) / float(best["p99_s"]) - 1)
        if not row["feasible"]:
            row["why_not"] = violation_text(b) or "it does not meet the constraints"
        if b.get("p99_by_case"):
            row["p99_by_case"] = dict(b["p99_by_case"])
        rows.append(row)
    return rows


def _robust_notes(rows: list[dict], context) -> list[str]:
    """Why baselines share one robust p99: the case that sets it (the largest slowdown against the references) has
    the same p99 on each of them, so the network does not change that case."""
    refs = getattr(context.objective, "references", None) or {}
    groups: dict = {}
    for r in rows:
        cases = r.get("p99_by_case") or {}
        if not cases or not refs:
            continue
        ratio = {c: cases[c] / refs.get(c, 1.0) for c in cases}
        top = max(ratio.values())
        worst = [c for c in cases if ratio[c] >= top * (1 - 1e-9)]        # every case at the largest slowdown
        r["robust_set_by"] = ("every case (it is the reference each case is measured against)"
                              if len(worst) == len(cases) and len(cases) > 1 else worst[0])
        for c in worst:
            groups.setdefault((c, round(cases[c], 12)), []).append(r)
    out = []
    for (case, p99), same in groups.items():
        if len(same) > 1:
            names = ", ".join(f"'{r['design'].removeprefix('baseline: ')}'" for r in same)
            out.append(f"{names} have the same robust p99 because the case that sets it, {case}, runs at the same "
                       f"p99 on each ({_t(p99)}): the network does not change that case, so the robust figure cannot "
                       f"tell these baselines apart; their other cases differ (the Design page lists each).")
    return out


def _inversions(rows: list[dict], baselines, record_of, constraints, catalog) -> list[str]:
    """A dearer baseline slower than a cheaper one (as drawn, by more than 0.5 %) is said with its cause: the op of
    the first case whose exposed time differs most between the two, and how the two compare as tuned."""
    from fabric.errors import FabricError
    from fabric.search.tradeoff import same_p99

    by_name = {b["design"]: b for b in baselines}
    out = []
    for hi in rows:
        for lo in rows:
            if not (hi["cost_usd"] > lo["cost_usd"] and hi["p99_s"] > lo["p99_s"]
                    and not same_p99(hi["p99_s"] - lo["p99_s"], lo["p99_s"])):
                continue
            try:
                eh = record_of(design_of_row(by_name[hi["design"]], constraints, catalog), by_name[hi["design"]])
                el = record_of(design_of_row(by_name[lo["design"]], constraints, catalog), by_name[lo["design"]])
            except FabricError:
                continue
            oh, ol = eh.evaluation.p99_breakdown.get("ops", {}), el.evaluation.p99_breakdown.get("ops", {})
            op = max(set(oh) | set(ol), key=lambda k: oh.get(k, 0.0) - ol.get(k, 0.0), default=None)
            if op is None:
                continue
            name = op.split("@")[0]
            tuned = ""
            if hi.get("tuned_p99_s") is not None and lo.get("tuned_p99_s") is not None:
                tuned = (f"; as a team would tune them, '{_short(hi)}' {_t(hi['tuned_p99_s'])} against "
                         f"'{_short(lo)}' {_t(lo['tuned_p99_s'])}")
            out.append(f"'{_short(hi)}' costs more than '{_short(lo)}' and is slower as drawn "
                       f"({_t(hi['p99_s'])} against {_t(lo['p99_s'])}): in {eh.primary.name}'s p99 step its {name} "
                       f"is exposed {_t(oh.get(op, 0.0))} against {_t(ol.get(op, 0.0))} (with one queue pair, "
                       f"ECMP hashes its flows onto uplinks unevenly; more uplinks are no cure for collisions){tuned}.")
    return out


def _short(row: dict) -> str:
    return row["design"].removeprefix("baseline: ")


#: Limits of the constraints the brief names: (field, words with {} for the value, figure kind).
_LIMITS = (("budget_usd", "network budget {}", "usd"), ("p99_target_s", "p99 target {}", "time"),
           ("power_w", "network power {}", "power"), ("rack_power_w", "{} per rack", "power"),
           ("facility_power_w", "facility power {}", "power"),
           ("max_p99_under_failure_s", "p99 under the worst single failure {}", "time"),
           ("max_p99_slowdown_under_failure", "p99 under the worst single failure at most {} over the healthy p99",
            "share"),
           ("inference_ttft_p99_s", "serving p99 TTFT {}", "time"), ("inference_tpot_p99_s", "serving p99 TPOT {}", "time"),
           ("inference_slo_attainment", "serving SLO attainment {}", "share"))


def constraint_lines(constraints) -> list[str]:
    """The limits the search held every design to, in words (the brief's "Constraints" section)."""
    from fabric.review.figures import figure_text
    from fabric.failures.text import RULE_TEXT

    c = constraints
    out = [f"Cluster: {c.gpus:,} {c.gpu_model} GPUs, {c.gpus_per_node} per server"
           + (f"; GPU systems compared: {', '.join(c.gpu_models)}" if c.gpu_models else "") + "."]
    limits = [words.format(figure_text(getattr(c, key), kind)) for key, words, kind in _LIMITS
              if getattr(c, key, None) is not None]
    lost = getattr(c, "max_gpus_lost_on_single_failure", None)
    if lost is not None:
        limits.append(f"at most {int(lost):,} GPUs out of the job on the worst single switch failure" if lost >= 1
                      else f"at most {lost:.1%} of the GPUs ({c.gpus_lost_limit():,.0f}) out of the job on the worst "
                           f"single switch failure")
    if c.cable_count is not None:
        limits.append(f"{c.cable_count:,} cables")
    if c.max_radix is not None:
        limits.append(f"radix {c.max_radix}")
    out.append("Limits: " + (", ".join(limits) if limits else "none beyond the hardware allowed") + ".")
    out.append("Survive any single failure: " + (f"on. {RULE_TEXT}" if c.survive_single_failure
                                                 else "off: designs one failure takes down were allowed."))
    out.append(f"Allowed: families {', '.join(c.families)}; oversubscription up to {c.max_oversubscription:g}:1; "
               + (f"switches {', '.join(c.switch_models)}; " if c.switch_models else "every catalog switch; ")
               + (f"NICs {', '.join(c.nic_models)}." if c.nic_models else "every catalog NIC the GPU host can feed."))
    return out


def review_brief(front: list[dict], baselines: list[dict], context, *, beyond_target: list[dict] = (),
                 ties: list[dict] = (), record_of=None) -> dict:
    """Everything the brief says (see the module docstring), as numbers and sentences' parts. ``front`` and
    ``baselines``: a search's records in ``context``; ``beyond_target``: designs meeting every limit but the p99
    target (the runner-up when the front holds one design); ``ties``: designs tying with the recommended one
    (:func:`fabric.search.ties.front_ties`); ``record_of(design, row)``: the record of a design in ``context``
    (a cache of the caller's; default :func:`fabric.review.design_record`). Raises FabricError when the front is
    empty."""
    from fabric.errors import FabricError
    from fabric.review import design_record
    from fabric.search.recommend import recommend

    record_of = record_of or (lambda design, row: design_record(design, context, row=row))
    c = context.constraints
    advice = recommend(front, baselines, p99_target_s=c.p99_target_s)
    if advice.record is None:
        raise FabricError("no brief: the search found no design that meets every constraint")
    rec = advice.record
    R = record_of(design_of_row(rec, c, context.catalog), rec)
    out = record_facts(R)
    out.update({"design": rec["design"], "key": rec.get("key"), "rule": advice.rule, "cost_usd": float(rec["cost_usd"]),
                "ties": [t["design"] for t in ties], "constraints": constraint_lines(c),
                "p99_target_s": c.p99_target_s, "budget_usd": c.budget_usd,
                "p50_s": R.primary.figures["p50_s"], "p95_s": R.primary.figures["p95_s"],
                "first_p99_s": R.primary.figures["p99_s"]})
    rows = _baseline_rows(baselines, rec, record_of, c, context.catalog)
    out["baselines"] = rows
    out["baseline_notes"] = _robust_notes(rows, context) + _inversions(rows, baselines, record_of, c, context.catalog)
    ref = advice.reference
    out["reference"] = None if ref is None else next((dict(r) for r in rows if r.get("key") == ref.get("key")), None)
    ru, how = _runner_up(front, rec, list(beyond_target))
    if ru is not None:
        out["runner_up"] = {"design": ru["design"], "relation": how, "cost_usd": ru["cost_usd"], "p99_s": ru["p99_s"],
                            "delta_cost_usd": ru["cost_usd"] - rec["cost_usd"], "delta_p99_s": ru["p99_s"] - rec["p99_s"],
                            "relative_p99": ru["p99_s"] / rec["p99_s"] - 1}
    out["front"] = [{"design": r["design"], "key": r.get("key"), "cost_usd": float(r["cost_usd"]),
                     "p99_s": float(r["p99_s"]), "family": r.get("family")} for r in front]
    out["beyond_target"] = [{"design": r["design"], "cost_usd": float(r["cost_usd"]), "p99_s": float(r["p99_s"])}
                            for r in beyond_target]
    out["baseline_points"] = [{"design": b["design"], "cost_usd": float(b["cost_usd"]), "p99_s": float(b["p99_s"])}
                              for b in baselines if b.get("buildable", True)]
    design = design_of_row(rec, c, context.catalog)
    if design.regions:           # a design of regions: why its shape pays (fabric.review.regions)
        from fabric.cost import bill_of_materials
        from fabric.cost.regions import region_rows
        from fabric.review.regions import region_lines
        from fabric.topology import build_fabric

        fab = build_fabric(design, context.catalog)
        rows = region_rows(fab, bill_of_materials(fab, context.catalog), context.catalog)
        out["regions"] = region_lines(design, R.primary.workload, rows, front, rec, R.primary.evaluation)
    return out


def _t(s: float) -> str:
    from fabric.units import time_text

    return time_text(s)


def _pct(x: float) -> str:
    from fabric.search.tradeoff import same_p99

    return "the same (within 0.5 %)" if same_p99(x, 1.0) else f"{x:+.1%}"


def _buy_lines(b: dict) -> list[str]:
    lines = design_sections(b, first="The design to buy")[0][1]
    buy = [f"Buy {lines[0]}", lines[1], f"Why: {b['rule']}."]
    if b.get("ties"):
        from fabric.design.policy import TIE_RULE

        n = len(b["ties"])
        buy.append(f"{n} other evaluated design{'s tie' if n != 1 else ' ties'} with it at the same cost and p99 (e.g. "
                   f"'{b['ties'][0]}'): the network does not set the pace there; the tie rule keeps {TIE_RULE}.")
    return buy + lines[2:]


def _baseline_lines(b: dict) -> list[str]:
    which = "robust p99" if b.get("robust") else "p99"
    out = []
    for r in b["baselines"]:
        d = r["saving_usd"]
        money = ("costs the same" if abs(d) < 0.5 else
                 f"{'saves' if d > 0 else 'costs'} ${abs(d):,.0f} ({abs(d) / r['cost_usd']:.1%})")
        line = (f"Against '{r['design']}' as drawn (${r['cost_usd']:,.0f}; {which} {_t(r['p99_s'])}): {money}; "
                f"{which} {_pct(r['p99_change'])}")
        if "tuned_p99_s" in r:
            if r["tuned_changes"]:
                line += (f"; as a team would tune it ({', '.join(r['tuned_changes'])}, no hardware): {which} "
                         f"{_t(r['tuned_p99_s'])}, so {_pct(r['tuned_p99_change'])} against the tuned baseline")
            else:
                line += "; no free policy makes it faster, so as tuned it is as drawn"
        elif r.get("tuned_error"):
            line += f"; its best free policy could not be evaluated ({r['tuned_error']})"
        if r.get("robust_set_by"):
            line += f"; its robust p99 is set by {r['robust_set_by']}"
        if not r["feasible"]:
            line += f" (this baseline does not meet the constraints: {r.get('why_not')})"
        out.append(line + ".")
    return (out + list(b.get("baseline_notes", ()))) or ["No baseline could be built with the allowed hardware."]


def _runner_up_lines(b: dict) -> list[str]:
    ru = b.get("runner_up")
    which = "robust p99" if b.get("robust") else "p99"
    if not ru:
        return ["The search evaluated no other design that meets every limit but the p99 target: the front holds "
                "this one only."]
    from fabric.search.tradeoff import same_p99

    if ru["relation"] == "cheaper":
        gives = ("the same " + which + " (within 0.5 %)" if same_p99(ru["relative_p99"], 1.0)
                 else f"{ru['relative_p99']:+.1%} of {which}")
        return [f"'{ru['design']}' costs ${-ru['delta_cost_usd']:,.0f} less and gives up {gives} "
                f"({_t(ru['p99_s'])})."]
    if ru["relation"] == "faster":
        if same_p99(ru["relative_p99"], 1.0):
            return [f"'{ru['design']}' has the same {which} within 0.5 % ({_t(ru['p99_s'])}) for "
                    f"${ru['delta_cost_usd']:,.0f} more: no reason to pay for it."]
        return [f"'{ru['design']}' is {-ru['relative_p99']:.1%} faster at {which} ({_t(ru['p99_s'])}) "
                f"for ${ru['delta_cost_usd']:,.0f} more."]
    target = b.get("p99_target_s")
    return [f"No other design meets the p99 target; the next on the cost-vs-p99 trade-off is "
            f"'{ru['design']}': ${-ru['delta_cost_usd']:,.0f} less, {which} {_t(ru['p99_s'])} "
            f"({ru['relative_p99']:+.1%})"
            + (f", {ru['p99_s'] / target - 1:+.1%} over the target {_t(target)}" if target else "") + "."]


def brief_sections(b: dict) -> list[tuple[str, list[str]]]:
    """The brief as (heading, sentences) pairs, in reading order."""
    record = design_sections(b, first="The design to buy")
    sections = [("The design to buy", _buy_lines(b))] + ([("Why this shape", list(b["regions"]))]
                                                         if b.get("regions") else []) + [
                ("Against the baselines", _baseline_lines(b)),
                ("Constraints", list(b["constraints"]))]
    rest = dict(record[1:])
    order = [h for h, _ in record[1:]]
    for h in order:
        sections.append((h, rest[h]))
        if h in ("Serving latency",) or (h == "Bill of materials" and "Serving latency" not in rest):
            sections.append(("The runner-up", _runner_up_lines(b)))
    return sections

"""The one-page brief a design review signs: the design to buy and why, the runner-up and what it gives up,
resilience, the what-ifs, the cheapest fixes and the cost per step.

:func:`review_brief` gathers it from a search result (the front and the baselines) with the same evaluations the
rest of fabric uses: :func:`fabric.search.recommend.recommend` picks the design (and says by which rule), the
runner-up is the front design next to it in cost (the cheaper neighbour when there is one: what would be given up
by saving money; else the faster one: what more money buys), :func:`fabric.resilience.resilience` fails switches
and links, the what-ifs are evaluations under scenario presets, :func:`fabric.advisor.advise` ranks single
changes, :func:`fabric.economics.economics` prices the step and :func:`fabric.evaluate.explain.explain_step` says
whether the network sets the pace. Every figure is a plain number in the returned dict; :func:`brief_sections`
turns it into the sentences and tables the dashboard and the HTML report show.
"""

from __future__ import annotations

__all__ = ["review_brief", "brief_sections", "WHAT_IFS"]

#: Scenario presets the brief runs the recommended design under.
WHAT_IFS = ("fail-spine", "slow-switch", "checkpoint-burst", "job-mix-shift")


def _design(rec: dict, constraints):
    from fabric.ui_support.designs import design_from_record

    return design_from_record(rec, gpus=constraints.gpus, gpus_per_node=constraints.gpus_per_node,
                              gpu_model=constraints.gpu_model, rack_power_w=constraints.rack_budget_w)


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


def _is_robust(records) -> bool:
    return any(r.get("p99_by_case") for r in records)


def _baseline_rows(baselines, workload, constraints, rec_cost: float, p99: float, robust_rec, kw) -> list[dict]:
    """Every buildable baseline evaluated on ``workload`` like the design (same seed, samples, catalog): its cost and
    p99, the design's saving and p99 change against it; with its robust p99 (the search's record) in robust mode."""
    from fabric.errors import FabricError
    from fabric.evaluate import evaluate

    rows = []
    for b in baselines:
        if not b.get("buildable", True):
            continue
        row = {"design": b["design"], "feasible": bool(b.get("feasible", True)), "key": b.get("key")}
        try:
            ev = evaluate(_design(b, constraints), workload, **kw)
        except FabricError as err:
            row["error"] = " ".join(str(err).split())
            rows.append(row)
            continue
        row.update(cost_usd=float(ev.cost_usd), p99_s=float(ev.step_time_s["p99"]),
                   saving_usd=float(ev.cost_usd) - rec_cost, p99_change=p99 / float(ev.step_time_s["p99"]) - 1)
        if robust_rec is not None and b.get("p99_s") is not None:
            row.update(robust_p99_s=float(b["p99_s"]),
                       robust_p99_change=float(robust_rec["p99_s"]) / float(b["p99_s"]) - 1)
        if not row["feasible"]:
            from fabric.search.recommend import violation_text

            row["why_not"] = violation_text(b) or "it does not meet the constraints"
        rows.append(row)
    return rows


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
    from fabric.figures import figure_text
    from fabric.resilience_text import RULE_TEXT

    c = constraints
    out = [f"Cluster: {c.gpus:,} {c.gpu_model} GPUs, {c.gpus_per_node} per server"
           + (f"; GPU systems compared: {', '.join(c.gpu_models)}" if c.gpu_models else "") + "."]
    limits = [words.format(figure_text(getattr(c, key), kind)) for key, words, kind in _LIMITS
              if getattr(c, key) is not None]
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


def review_brief(front: list[dict], baselines: list[dict], workload, constraints, *, catalog=None, samples: int | None = None,
                 seed: int = 0, transport_overrides=None, beyond_target: list[dict] = (), ties: list[dict] = (),
                 workload_label: str | None = None) -> dict:
    """Everything the brief says, as numbers and sentences (see the module docstring). Raises FabricError when the
    front is empty.

    ``beyond_target``: designs meeting every limit but the p99 target (the trade-off a target hides; the runner-up
    when the front holds one design); ``ties``: designs tying with the recommended one on every objective
    (:func:`fabric.search.ties.front_ties`). In robust mode (front records with ``p99_by_case``) the design is
    evaluated on ``workload`` (the first of the mix) and every comparison is made twice, each labelled: robust p99
    against robust p99 (the search's records), and p99 on the workload against p99 on the workload."""
    from fabric.advisor import advise
    from fabric.cost import bill_of_materials
    from fabric.economics import economics
    from fabric.errors import FabricError
    from fabric.evaluate import DEFAULT_SAMPLES, SCENARIO_PRESETS, evaluate
    from fabric.evaluate.explain import explain_step
    from fabric.evaluate.gpu_compute import basis_notes
    from fabric.figures import design_figures
    from fabric.rackpower import rack_report
    from fabric.resilience import resilience
    from fabric.search.recommend import recommend
    from fabric.topology import build_fabric

    advice = recommend(front, baselines, p99_target_s=constraints.p99_target_s)
    if advice.record is None:
        raise FabricError("no brief: the search found no design that meets every constraint")
    rec = advice.record
    samples = DEFAULT_SAMPLES if samples is None else samples   # the Design page's and the search's samples
    design = _design(rec, constraints)
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides)
    ev = evaluate(design, workload, **kw)
    p99 = float(ev.step_time_s["p99"])
    robust = _is_robust(list(front) + list(baselines))
    has_training = any(j.kind == "training" for j in workload.jobs)
    out = {"serving": _serving(ev), "serving_only": bool(ev.serving) and not has_training,
           "design": rec["design"], "key": rec.get("key"), "rule": advice.rule, "cost_usd": float(ev.cost_usd),
           "p99_s": p99, "p50_s": float(ev.step_time_s["p50"]), "p95_s": float(ev.step_time_s["p95"]),
           "power_w": float(ev.power_w), "lower_bound_s": float(ev.lower_bound_s), "samples": int(ev.samples),
           "seed": int(ev.seed), "step_samples_s": [float(x) for x in ev.step_samples_s],
           "workload": workload_label or workload.name, "constraints": constraint_lines(constraints),
           "gpus": int(design.gpus), "gpu_model": design.gpu_model, "gpus_per_node": int(design.gpus_per_node),
           "ties": [t["design"] for t in ties], "p99_kind": "on the workload"}
    if robust:
        out["robust"] = {"p99_s": float(rec["p99_s"]), "cases": len(rec.get("p99_by_case") or {}),
                         "p99_by_case": dict(rec.get("p99_by_case") or {})}
    rows = _baseline_rows(baselines, workload, constraints, float(ev.cost_usd), p99, rec if robust else None, kw)
    out["baselines"] = rows
    ref = advice.reference
    out["reference"] = None if ref is None else next((dict(r) for r in rows if r.get("key") == ref.get("key")
                                                      and "p99_s" in r), None)
    ru, how = _runner_up(front, rec, list(beyond_target))
    if ru is not None:
        out["runner_up"] = {"design": ru["design"], "relation": how, "cost_usd": ru["cost_usd"], "p99_s": ru["p99_s"],
                            "p99_kind": "robust" if robust else "on the workload",
                            "delta_cost_usd": ru["cost_usd"] - rec["cost_usd"], "delta_p99_s": ru["p99_s"] - rec["p99_s"],
                            "relative_p99": ru["p99_s"] / rec["p99_s"] - 1}
    out["front"] = [{"design": r["design"], "key": r.get("key"), "cost_usd": float(r["cost_usd"]),
                     "p99_s": float(r["p99_s"]), "family": r.get("family")} for r in front]
    out["beyond_target"] = [{"design": r["design"], "cost_usd": float(r["cost_usd"]), "p99_s": float(r["p99_s"])}
                            for r in beyond_target]
    out["baseline_points"] = [{"design": b["design"], "cost_usd": float(b["cost_usd"]), "p99_s": float(b["p99_s"])}
                              for b in baselines if b.get("buildable", True)]
    out["p99_target_s"] = constraints.p99_target_s
    out["budget_usd"] = constraints.budget_usd
    fab = build_fabric(design, catalog)
    bom = bill_of_materials(fab, catalog).to_dict()
    out["bom"] = {k: bom[k] for k in ("switches", "links", "cables", "transceivers", "nics", "cost_usd", "power_w",
                                      "cost_per_gpu_usd", "by_category")}
    eco_params = constraints.economics()
    out["racks"] = rack_report(design, catalog=catalog, rack_limit_w=constraints.rack_power_w, pue=eco_params.pue)
    out["resilience"] = resilience(design, workload, healthy_p99_s=p99, **kw)
    whatifs = []
    from fabric.evaluate.whatif import not_applicable

    for name in WHAT_IFS:
        why = not_applicable(SCENARIO_PRESETS[name], fab, workload)
        if why:
            whatifs.append({"scenario": name, "p99_s": None, "change": None, "not_applicable": why,
                            "error": f"not applicable: {why}"})
            continue
        try:
            e2 = evaluate(design, workload, SCENARIO_PRESETS[name], **kw)
            whatifs.append({"scenario": name, "p99_s": float(e2.step_time_s["p99"]),
                            "change": float(e2.step_time_s["p99"]) / p99 - 1, "serving": _serving(e2)})
        except FabricError as err:
            whatifs.append({"scenario": name, "p99_s": None, "change": None, "error": " ".join(str(err).split())})
    out["what_ifs"] = whatifs
    adv = advise(design, workload, **kw)
    out["fixes"] = {"answer": adv["answer"], "top": adv["advice"][:3], "best_free_policy": adv["best_free_policy"]}
    out["economics"] = economics(ev, design, catalog=catalog, params=eco_params)
    out["explanation"] = explain_step(ev)
    out["compute_notes"] = [note for _, note in basis_notes(ev)]
    out["figures"] = design_figures(ev, design, catalog=catalog, economics_params=eco_params, racks=out["racks"])
    return out


def _serving(ev) -> dict:
    """Each serving job's p99 TTFT, p99 TPOT (None when its load exceeds its capacity), SLO attainment, load."""
    out = {}
    for name, m in ev.serving.items():
        ok = bool(m["stable"])
        out[name] = {"stable": ok, "ttft_p99_s": float(m["ttft_s"]["p99"]) if ok else None,
                     "tpot_p99_s": float(m["tpot_s"]["p99"]) if ok else None,
                     "slo_attainment": m.get("slo_attainment") if ok else 0.0, "load": float(m["load"])}
    return out


def _serving_text(m: dict) -> str:
    if not m["stable"]:
        return f"load {m['load']:.0%} of capacity: queues grow without bound"
    att = "" if m["slo_attainment"] is None else f", SLO attainment {m['slo_attainment']:.1%}"
    return f"p99 TTFT {_t(m['ttft_p99_s'])}, p99 TPOT {_t(m['tpot_p99_s'])}{att}"


def _t(s: float) -> str:
    from fabric.units import time_text

    return time_text(s)


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _buy_lines(b: dict) -> list[str]:
    from fabric.figures import figure_texts

    kind = "robust" if b.get("robust") else None
    f = figure_texts(b["figures"])          # the one definition and format of each figure (fabric.figures)
    buy = [f"Buy '{b['design']}': network capex {f['network_capex_usd']} ({f['capex_per_gpu_usd']} per GPU), "
           f"p99 step {f['p99_s']} on {b['workload']} (p50 {f['p50_s']}), network power {f['network_power_w']}.",
           f"Cluster: {b['gpus']:,} {b['gpu_model']} GPUs, {b['gpus_per_node']} per server; figures from {b['samples']} "
           f"Monte Carlo samples, seed {b['seed']}, as on every page.",
           f"Why: {b['rule']}."]
    if kind:
        r = b["robust"]
        buy.append(f"Robust p99 across the job mix ({r['cases']} cases, the search's objective): {_t(r['p99_s'])}; "
                   f"the step figures above are on {b['workload']} alone, the first workload of the mix.")
    if b.get("ties"):
        from fabric.design.policy import TIE_RULE

        n = len(b["ties"])
        buy.append(f"{n} other evaluated design{'s tie' if n != 1 else ' ties'} with it at the same cost and p99 (e.g. "
                   f"'{b['ties'][0]}'): the network does not set the pace there; the tie rule keeps {TIE_RULE}.")
    buy.append(b["explanation"]["sentence"])
    buy += list(b.get("compute_notes", ()))     # compute scaled to the cluster's GPU, or kept (gpu_compute)
    return buy


def _baseline_lines(b: dict) -> list[str]:
    out = []
    for r in b["baselines"]:
        if "p99_s" not in r:
            out.append(f"'{r['design']}' could not be evaluated: {r.get('error', 'unknown reason')}.")
            continue
        d = r["saving_usd"]
        money = ("costs the same" if abs(d) < 0.5 else
                 f"{'saves' if d > 0 else 'costs'} ${abs(d):,.0f} ({abs(d) / r['cost_usd']:.1%})")
        line = (f"Against '{r['design']}' (${r['cost_usd']:,.0f}; p99 {_t(r['p99_s'])} on {b['workload']}): {money}; "
                f"p99 on {b['workload']} {_pct(r['p99_change'])}")
        if "robust_p99_s" in r:
            line += (f"; robust p99 {_t(b['robust']['p99_s'])} against its {_t(r['robust_p99_s'])}: "
                     f"{_pct(r['robust_p99_change'])}")
        if not r["feasible"]:
            line += f" (this baseline does not meet the constraints: {r.get('why_not')})"
        out.append(line + ".")
    return out or ["No baseline could be built with the allowed hardware."]


def _bom_lines(b: dict) -> list[str]:
    m = b["bom"]
    sw = ", ".join(f"{n:,} {tier}" for tier, n in m["switches"].items())
    cab = sum(m["cables"].values())
    opt = sum(m["transceivers"].values())
    cats = ", ".join(f"{c} ${v['cost_usd']:,.0f}" for c, v in m["by_category"].items())
    r = b["racks"]
    from fabric.figures import figure_texts

    f = figure_texts(b["figures"])
    return [f"Switches: {sw}; {m['nics']:,} NICs; {opt:,} transceivers; {cab:,} cables "
            f"({', '.join(f'{n:,} {k}' for k, n in m['cables'].items())}).",
            f"Network capex {f['network_capex_usd']}: {cats}; network power {f['network_power_w']}.",
            f"Racks and power: {r['compute_racks']:,} compute racks, busiest rack {f['max_rack_power_w']}"
            + (f" (limit {r['rack_power_limit_w'] / 1e3:,.1f} kW)" if r.get("rack_power_limit_w") else "")
            + f"; IT power {f['it_power_w']}, facility power {f['facility_power_w']} (IT x PUE {r['pue']:g})."]


def brief_sections(b: dict) -> list[tuple[str, list[str]]]:
    """The brief as (heading, sentences) pairs, in reading order."""
    sections = [("The design to buy", _buy_lines(b)), ("Against the baselines", _baseline_lines(b)),
                ("Constraints", list(b["constraints"])), ("Bill of materials", _bom_lines(b))]
    if b.get("serving"):
        sections.append(("Serving latency", [
            f"Serving job '{name}' at its offered load ({m['load']:.0%} of capacity): {_serving_text(m)}."
            for name, m in b["serving"].items()]))
    ru = b.get("runner_up")
    which = "robust p99" if ru and ru.get("p99_kind") == "robust" else "p99"
    if ru:
        if ru["relation"] == "cheaper":
            line = (f"'{ru['design']}' costs ${-ru['delta_cost_usd']:,.0f} less and gives up "
                    f"{ru['relative_p99']:+.1%} of {which} ({_t(ru['p99_s'])}).")
        elif ru["relation"] == "faster":
            line = (f"'{ru['design']}' is {-ru['relative_p99']:.1%} faster at {which} ({_t(ru['p99_s'])}) "
                    f"for ${ru['delta_cost_usd']:,.0f} more.")
        else:
            target = b.get("p99_target_s")
            line = (f"No other design meets the p99 target; the next on the cost-vs-p99 trade-off is "
                    f"'{ru['design']}': ${-ru['delta_cost_usd']:,.0f} less, {which} {_t(ru['p99_s'])} "
                    f"({ru['relative_p99']:+.1%})"
                    + (f", {ru['p99_s'] / target - 1:+.1%} over the target {_t(target)}" if target else "") + ".")
        sections.append(("The runner-up", [line]))
    else:
        sections.append(("The runner-up", ["The search evaluated no other design that meets every limit but the "
                                           "p99 target: the front holds this one only."]))
    from fabric.resilience_text import resilience_lines

    sections.append(("Resilience", resilience_lines(b["resilience"], _t, b["p99_s"])))
    sections.append(("What if", [f"{w['scenario']}: " + (f"p99 step {_t(w['p99_s'])} ({w['change']:+.1%})"
                                                        + "".join(f"; '{n}' {_serving_text(m)}"
                                                                  for n, m in (w.get("serving") or {}).items())
                                                        if w["p99_s"] is not None else w.get("error", "n/a"))
                                 for w in b["what_ifs"]]))
    fixes = [b["fixes"]["answer"][0].upper() + b["fixes"]["answer"][1:] + "."]
    free = (b["fixes"].get("best_free_policy") or {}).get("sentence")
    if free:
        fixes.append(free[0].upper() + free[1:] + ".")
    for a in b["fixes"]["top"]:
        cost = "no hardware" if a["kind"] == "free" else f"${a['delta_cost_usd']:+,.0f}"
        fixes.append(f"{a['change']}: {_t(a['delta_p99_s']) if a['delta_p99_s'] >= 0 else '-' + _t(-a['delta_p99_s'])}"
                     f" p99, {cost}.")
    sections.append(("Cheapest fixes", fixes))
    e = b["economics"]
    from fabric.figures import figure_texts

    f = figure_texts(b["figures"])
    sections.append(("Cost per step", [
        f"{f['usd_per_step']} per p99 step ({f['usd_per_hour']} per hour for the cluster over "
        f"{e['params']['life_years']:g} years, PUE {e['params']['pue']:g}, ${e['params']['electricity_usd_per_kwh']:g}"
        f"/kWh); the network is {e['network_usd_per_step'] / e['usd_per_step']:.1%} of it; GPUs wait on the network "
        f"{f['gpu_idle_fraction_network']} of the step (${e['idle_usd_per_step']:,.2f} per step)."]))
    if b.get("serving_only"):      # a serving-only workload has no step: its "step" is one unloaded request
        sections = [(h, [_unloaded(x) for x in lines]) for h, lines in sections]
        sections = [("Cost per unloaded request" if h == "Cost per step" else h, lines) for h, lines in sections]
    return sections


def _unloaded(line: str) -> str:
    for a, z in (("p99 step", "p99 unloaded request"), ("of the step", "of the unloaded request"),
                 ("per step", "per unloaded request")):
        line = line.replace(a, z)
    return line

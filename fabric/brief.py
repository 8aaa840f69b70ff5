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


def _runner_up(front: list[dict], chosen: dict) -> tuple[dict | None, str]:
    others = sorted((r for r in front if r.get("key") != chosen.get("key")), key=lambda r: r["cost_usd"])
    cheaper = [r for r in others if r["cost_usd"] < chosen["cost_usd"]]
    if cheaper:
        return cheaper[-1], "cheaper"
    dearer = [r for r in others if r["cost_usd"] >= chosen["cost_usd"]]
    return (dearer[0], "faster") if dearer else (None, "")


def review_brief(front: list[dict], baselines: list[dict], workload, constraints, *, catalog=None, samples: int = 128,
                 seed: int = 0, transport_overrides=None) -> dict:
    """Everything the brief says, as numbers and sentences (see the module docstring). Raises FabricError when the
    front is empty."""
    from fabric.advisor import advise
    from fabric.economics import economics
    from fabric.errors import FabricError
    from fabric.evaluate import SCENARIO_PRESETS, evaluate
    from fabric.evaluate.explain import explain_step
    from fabric.evaluate.gpu_compute import basis_notes
    from fabric.resilience import resilience
    from fabric.search.recommend import recommend

    advice = recommend(front, baselines, p99_target_s=constraints.p99_target_s)
    if advice.record is None:
        raise FabricError("no brief: the search found no design that meets every constraint")
    rec = advice.record
    design = _design(rec, constraints)
    kw = dict(catalog=catalog, seed=seed, samples=samples, transport_overrides=transport_overrides)
    ev = evaluate(design, workload, **kw)
    p99 = float(ev.step_time_s["p99"])
    has_training = any(j.kind == "training" for j in workload.jobs)
    out = {"serving": _serving(ev), "serving_only": bool(ev.serving) and not has_training,
           "design": rec["design"], "rule": advice.rule, "cost_usd": float(ev.cost_usd), "p99_s": p99,
           "p50_s": float(ev.step_time_s["p50"]), "power_w": float(ev.power_w),
           "reference": None if advice.reference is None else
           {"design": advice.reference["design"], "cost_usd": advice.reference["cost_usd"],
            "p99_s": advice.reference["p99_s"]}}
    ru, how = _runner_up(front, rec)
    if ru is not None:
        out["runner_up"] = {"design": ru["design"], "relation": how, "cost_usd": ru["cost_usd"], "p99_s": ru["p99_s"],
                            "delta_cost_usd": ru["cost_usd"] - rec["cost_usd"], "delta_p99_s": ru["p99_s"] - rec["p99_s"]}
    out["resilience"] = resilience(design, workload, healthy_p99_s=p99, **kw)
    whatifs = []
    for name in WHAT_IFS:
        try:
            e2 = evaluate(design, workload, SCENARIO_PRESETS[name], **kw)
            whatifs.append({"scenario": name, "p99_s": float(e2.step_time_s["p99"]),
                            "change": float(e2.step_time_s["p99"]) / p99 - 1, "serving": _serving(e2)})
        except FabricError as err:
            whatifs.append({"scenario": name, "p99_s": None, "change": None, "error": " ".join(str(err).split())})
    out["what_ifs"] = whatifs
    adv = advise(design, workload, **kw)
    out["fixes"] = {"answer": adv["answer"], "top": adv["advice"][:3]}
    out["economics"] = economics(ev, design, catalog=catalog, params=constraints.economics())
    out["explanation"] = explain_step(ev)
    out["compute_notes"] = [note for _, note in basis_notes(ev)]
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
    a = abs(s)
    return f"{s:,.3g} s" if a >= 1 else f"{s * 1e3:,.3g} ms" if a >= 1e-3 else f"{s * 1e6:,.3g} us"


def brief_sections(b: dict) -> list[tuple[str, list[str]]]:
    """The brief as (heading, sentences) pairs, in reading order."""
    buy = [f"Buy '{b['design']}': network capex ${b['cost_usd']:,.0f}, p99 step {_t(b['p99_s'])} "
           f"(p50 {_t(b['p50_s'])}), network power {b['power_w'] / 1e3:,.1f} kW.",
           f"Why: {b['rule']}.", b["explanation"]["sentence"], *b.get("compute_notes", ())]
    if b.get("reference"):
        r = b["reference"]
        d = r["cost_usd"] - b["cost_usd"]
        buy.append(f"Against the baseline '{r['design']}' (${r['cost_usd']:,.0f}, p99 {_t(r['p99_s'])}): "
                   f"{'saves' if d >= 0 else 'costs'} ${abs(d):,.0f}, p99 {b['p99_s'] / r['p99_s'] - 1:+.1%}.")
    sections = [("The design to buy", buy)]
    if b.get("serving"):
        sections.append(("Serving latency", [
            f"Serving job '{name}' at its offered load ({m['load']:.0%} of capacity): {_serving_text(m)}."
            for name, m in b["serving"].items()]))
    ru = b.get("runner_up")
    if ru:
        if ru["relation"] == "cheaper":
            line = (f"'{ru['design']}' costs ${-ru['delta_cost_usd']:,.0f} less and gives up "
                    f"{ru['delta_p99_s'] / b['p99_s']:+.1%} of p99 ({_t(ru['p99_s'])}).")
        else:
            line = (f"'{ru['design']}' is {-ru['delta_p99_s'] / b['p99_s']:.1%} faster at p99 ({_t(ru['p99_s'])}) "
                    f"for ${ru['delta_cost_usd']:,.0f} more.")
        sections.append(("The runner-up", [line]))
    else:
        sections.append(("The runner-up", ["The front holds no other design."]))
    r = b["resilience"]
    res = []
    if r["partitions_on_single_failure"]:
        res.append("One switch or link failure partitions this fabric: not deployable as it is.")
    else:
        res.append(f"No single switch or link failure partitions it; every leaf reaches {r['min_uplink_switches']} "
                   f"upper switches.")
    for what, key, name in (("switch", "worst_switch_failure_p99_s", "worst_switch"),
                            ("link", "worst_link_failure_p99_s", "worst_link")):
        if r.get(name):
            v = r[key]
            res.append(f"Worst single {what} failure ({r[name]}): "
                       + ("partitions the fabric." if v is None else f"p99 {_t(v)} ({v / b['p99_s'] - 1:+.1%})."))
    if r["gpus_lost_on_worst_switch_failure"]:
        res.append(f"A leaf failure takes {r['gpus_lost_on_worst_switch_failure']:,} GPUs out of the job.")
    sections.append(("Resilience", res))
    sections.append(("What if", [f"{w['scenario']}: " + (f"p99 step {_t(w['p99_s'])} ({w['change']:+.1%})"
                                                        + "".join(f"; '{n}' {_serving_text(m)}"
                                                                  for n, m in (w.get("serving") or {}).items())
                                                        if w["p99_s"] is not None else w.get("error", "n/a"))
                                 for w in b["what_ifs"]]))
    fixes = [b["fixes"]["answer"][0].upper() + b["fixes"]["answer"][1:] + "."]
    for a in b["fixes"]["top"]:
        cost = "no hardware" if a["kind"] == "free" else f"${a['delta_cost_usd']:+,.0f}"
        fixes.append(f"{a['change']}: {a['delta_p99_s'] * 1e3:+,.1f} ms p99, {cost}.")
    sections.append(("Cheapest fixes", fixes))
    e = b["economics"]
    sections.append(("Cost per step", [
        f"${e['usd_per_step']:,.2f} per p99 step (${e['usd_per_hour']:,.0f} per hour for the cluster over "
        f"{e['params']['life_years']:g} years, PUE {e['params']['pue']:g}, ${e['params']['electricity_usd_per_kwh']:g}"
        f"/kWh); the network is {e['network_usd_per_step'] / e['usd_per_step']:.1%} of it; GPUs wait on the network "
        f"{e['gpu_idle_fraction_network']:.1%} of the step (${e['idle_usd_per_step']:,.2f} per step)."]))
    if b.get("serving_only"):      # a serving-only workload has no step: its "step" is one unloaded request
        sections = [(h, [_unloaded(x) for x in lines]) for h, lines in sections]
        sections = [("Cost per unloaded request" if h == "Cost per step" else h, lines) for h, lines in sections]
    return sections


def _unloaded(line: str) -> str:
    for a, z in (("p99 step", "p99 unloaded request"), ("of the step", "of the unloaded request"),
                 ("per step", "per unloaded request")):
        line = line.replace(a, z)
    return line

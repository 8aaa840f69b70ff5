"""A design's record as the sentences a review reads: the facts (plain numbers) and the sections (heading and
lines) that the Design report, the brief and ``fabric evaluate --json`` share.

:func:`record_facts` takes everything from one :class:`~fabric.review.record.DesignRecord` (its context, headline and
per-case figures, plan, serving latency, bill of materials, racks, single failures, what-ifs, cheapest fixes with the
best free policy, cost per step); :func:`design_sections` writes it. The brief (:mod:`fabric.review.brief`) adds what a
search says around it (the rule that chose the design, the baselines, the runner-up, the constraints); nothing here
evaluates anything the record did not.
"""

from __future__ import annotations

from fabric.units import change_text

__all__ = ["record_facts", "design_sections", "WHAT_IFS", "serving_facts", "serving_text", "case_rows"]

#: Scenario presets a record is shown under in the brief and the Design report.
WHAT_IFS = ("fail-spine", "slow-switch", "checkpoint-burst", "job-mix-shift")


def _t(s: float) -> str:
    from fabric.units import time_text

    return time_text(s)


def serving_facts(serving: dict) -> dict:
    """Each serving job's p99 TTFT, p99 TPOT (None when its load exceeds its capacity), SLO attainment and load."""
    out = {}
    for name, m in serving.items():
        ok = bool(m["stable"])
        out[name] = {"stable": ok, "ttft_p99_s": float(m["ttft_s"]["p99"]) if ok else None,
                     "tpot_p99_s": float(m["tpot_s"]["p99"]) if ok else None,
                     "slo_attainment": m.get("slo_attainment") if ok else 0.0, "load": float(m["load"])}
    return out


def serving_text(m: dict) -> str:
    """One serving job's figures in words."""
    if not m["stable"]:
        return f"load {m['load']:.0%} of capacity: queues grow without bound"
    att = "" if m["slo_attainment"] is None else f", SLO attainment {m['slo_attainment']:.1%}"
    return f"p99 TTFT {_t(m['ttft_p99_s'])}, p99 TPOT {_t(m['tpot_p99_s'])}{att}"


def case_rows(record) -> list[dict]:
    """Per case of a record: case, workload, plan, weight, p50/p95/p99 step, lower bound (seconds)."""
    rows = []
    for c in record.cases:
        f = c.figures
        rows.append({"case": c.name, "workload": c.workload_name, "plan": c.plan, "weight": c.weight,
                     "p50_s": f["p50_s"], "p95_s": f["p95_s"], "p99_s": f["p99_s"], "lower_bound_s": f["lower_bound_s"]})
    return rows


def record_facts(record, *, what_ifs=WHAT_IFS, fixes: bool = True) -> dict:
    """Everything :func:`design_sections` says of ``record``, as plain numbers (JSON-ready): the what-ifs named
    and, with ``fixes``, the cheapest fixes (both computed with the record and kept with it)."""
    from fabric.cost import bill_of_materials
    from fabric.cost.economics import economics
    from fabric.evaluate import SCENARIO_PRESETS
    from fabric.evaluate.explain import explain_step
    from fabric.evaluate.gpu_compute import basis_notes
    from fabric.topology import build_fabric

    R, ctx = record, record.context
    ev = R.evaluation
    has_training = any(j.kind == "training" for c in R.cases for j in c.workload.jobs)
    d = {"context": ctx.describe(), "context_key": ctx.key, "design": R.design.name, "key": R.row.get("key"),
         "robust": R.robust, "robust_rule": getattr(ctx.objective, "mode", None) if R.robust else None,
         "figures": dict(R.figures), "p99_s": R.p99_s, "cases": case_rows(R), "plan": R.plan,
         "serving": serving_facts(R.serving), "serving_only": bool(R.serving) and not has_training,
         "samples": int(ctx.samples), "seed": int(ctx.seed), "workload": ctx.label or R.primary.workload_name,
         "first_case": R.primary.name, "step_samples_s": [float(x) for x in ev.step_samples_s],
         "gpus": int(R.design.gpus), "gpu_model": R.design.gpu_model, "gpus_per_node": int(R.design.gpus_per_node)}
    bom = bill_of_materials(build_fabric(R.design, ctx.catalog), ctx.catalog).to_dict()
    d["bom"] = {k: bom[k] for k in ("switches", "links", "cables", "transceivers", "nics", "cost_usd", "power_w",
                                     "cost_per_gpu_usd", "by_category", "partial_pod", "floor", "single_mode")}
    d["racks"] = dict(R.racks)
    fl = R.failures
    d["resilience"] = fl["primary"]
    d["failures"] = {"p99_failure_s": fl["p99_failure_s"], "survives_single_failure": fl["survives_single_failure"],
                     "gpus_lost_on_worst_switch_failure": fl["gpus_lost_on_worst_switch_failure"],
                     "cases": {n: {k: r.get(k) for k in ("worst_switch_failure_p99_s", "worst_link_failure_p99_s",
                                                          "survives_single_failure")}
                               for n, r in fl["cases"].items()}}
    d["what_ifs"] = [_what_if_fact(R.what_if(SCENARIO_PRESETS[n])) for n in what_ifs]
    if fixes:
        adv = R.fixes
        d["fixes"] = {"answer": adv["answer"], "top": adv["advice"][:3], "best_free_policy": adv["best_free_policy"],
                      "judged": "robust p99" if R.robust else "p99"}
    eco = economics(ev, R.design, catalog=ctx.catalog, params=ctx.constraints.economics())
    d["economics"] = {k: v for k, v in eco.items()}
    d["explanation"] = explain_step(ev)
    d["compute_notes"] = [note for _, note in basis_notes(ev)]
    from fabric.evaluate.innetwork import in_network_lines

    d["in_network"] = in_network_lines(ev.ops)
    return d


def _what_if_fact(w: dict) -> dict:
    out = {"scenario": w["scenario"], "p99_s": w["p99_s"], "change": w["change"], "cases": dict(w["cases"]),
           "serving": serving_facts(w.get("serving") or {})}
    if w.get("error"):
        out["error"] = w["error"]
    return out


def _which(d: dict) -> str:
    return "robust p99" if d.get("robust") else "p99"


def design_lines(d: dict) -> list[str]:
    """The design's headline in sentences (the first section of the report; the brief's "design to buy")."""
    from fabric.review.figures import figure_texts

    f = figure_texts({k: v for k, v in d["figures"].items() if v is not None})
    step = "unloaded request" if d.get("serving_only") else "step"
    if d.get("robust"):
        rule = "worst case" if d.get("robust_rule") == "worst" else "weighted mean"
        times = (f"robust p99 {step} {f['robust_p99_s']} ({rule} of the cases' slowdowns against the reference, in "
                 f"seconds of their weighted mean; each case below)")
    else:
        times = f"p99 {step} {f['p99_s']} (p50 {f['p50_s']}, lower bound {f['lower_bound_s']})"
    lines = [f"'{d['design']}': network capex {f['network_capex_usd']} ({f['capex_per_gpu_usd']} per GPU), {times}, "
             f"network power {f['network_power_w']}.",
             f"Context: {d['context']}."]
    if d.get("plan"):
        p = d["plan"]
        given = ""
        if p.get("given_plan") and p.get("given_plan") != p["plan"] and p.get("given_plan_slowdown") is not None:
            given = f"; with the workload's own plan ({p['given_plan']}) it is {p['given_plan_slowdown']:+.1%}"
        lines.append(f"Parallelism plan: {p['plan']}, the best of the {len(p['tried'])} shortlisted plans on this "
                     f"design{given}.")
    if not d.get("robust"):
        lines.append(d["explanation"]["sentence"])
    lines += list(d.get("compute_notes", ()))
    return lines


def _case_lines(d: dict) -> list[str]:
    out = []
    for c in d["cases"]:
        plan = f" at {c['plan']}" if c.get("plan") else ""
        out.append(f"{c['case']} (weight {c['weight']:.3g}){plan}: p99 {_t(c['p99_s'])}, p50 {_t(c['p50_s'])}, p95 "
                   f"{_t(c['p95_s'])}, lower bound {_t(c['lower_bound_s'])}.")
    return out


def _bom_lines(d: dict) -> list[str]:
    from fabric.review.figures import figure_texts

    m = d["bom"]
    sw = ", ".join(f"{n:,} {tier}" for tier, n in m["switches"].items())
    cab = sum(m["cables"].values())
    opt = sum(m["transceivers"].values())
    cats = ", ".join(f"{c} ${v['cost_usd']:,.0f}" for c, v in m["by_category"].items())
    r = d["racks"]
    f = figure_texts({k: v for k, v in d["figures"].items() if v is not None})
    return [f"Switches: {sw}; {m['nics']:,} NICs; {opt:,} transceivers; {cab:,} cables "
            f"({', '.join(f'{n:,} {k}' for k, n in m['cables'].items())}).",
            f"Network capex {f['network_capex_usd']}: {cats}; network power {f['network_power_w']}.",
            f"Racks and power: {r['compute_racks']:,} compute racks, busiest rack {f['max_rack_power_w']}"
            + (f" (limit {r['rack_power_limit_w'] / 1e3:,.1f} kW)" if r.get("rack_power_limit_w") else "")
            + f"; IT power {f['it_power_w']}, facility power {f['facility_power_w']} (IT x PUE {r['pue']:g})."] \
        + ([m["partial_pod"]["text"]] if m.get("partial_pod") else []) + _floor_lines(m)


def _floor_lines(m: dict) -> list[str]:
    """The floor the bill was priced on, with its single-mode share (fabric.cost.bom)."""
    from fabric.cost.bom import floor_sentence

    text = floor_sentence(m)
    return [text] if text else []


def _resilience_lines(d: dict) -> list[str]:
    from fabric.failures.text import resilience_lines

    healthy = d["cases"][0]["p99_s"]
    lines = resilience_lines(d["resilience"], _t, healthy)
    if d.get("robust"):
        fl = d["failures"]
        lines = [f"On {d['first_case']}: {lines[0][0].lower() + lines[0][1:]}"] + lines[1:] if lines else []
        p = fl["p99_failure_s"]
        lines.append(("Robust p99 under the worst single failure of any case: " + _t(p) + f" ({p / d['p99_s'] - 1:+.1%})."
                      ) if p < 1e8 else "A single failure partitions the fabric for some case of the mix.")
    return lines


def _what_if_lines(d: dict) -> list[str]:
    which = _which(d)
    out = []
    for w in d["what_ifs"]:
        if w["p99_s"] is None:
            out.append(f"{w['scenario']}: {w.get('error', 'n/a')}.")
            continue
        out.append(f"{w['scenario']}: {which} step {_t(w['p99_s'])} ({change_text(w['change'])})"
                   + "".join(f"; '{n}' {serving_text(m)}" for n, m in (w.get("serving") or {}).items()) + ".")
    return out


def _fix_lines(d: dict) -> list[str]:
    fx = d["fixes"]
    out = [fx["answer"][0].upper() + fx["answer"][1:] + "."]
    free = (fx.get("best_free_policy") or {}).get("sentence")
    if free:
        out.append(free[0].upper() + free[1:] + ".")
    for a in fx["top"]:
        cost = "no hardware" if a["kind"] == "free" else f"${a['delta_cost_usd']:+,.0f}"
        delta = _t(a["delta_p99_s"]) if a["delta_p99_s"] >= 0 else "-" + _t(-a["delta_p99_s"])
        out.append(f"{a['change']}: {delta} {fx.get('judged', 'p99')}, {cost}.")
    if d.get("robust"):
        out.append("Every change is judged by the robust p99 over the whole mix (the search's objective).")
    return out


def _cost_lines(d: dict) -> list[str]:
    from fabric.review.figures import figure_texts

    e = d["economics"]
    f = figure_texts({k: v for k, v in d["figures"].items() if v is not None})
    p = e["params"]
    head = (f"{f['usd_per_step']} per {_which(d)} step ({f['usd_per_hour']} per hour for the cluster over "
            f"{p['life_years']:g} years, PUE {p['pue']:g}, ${p['electricity_usd_per_kwh']:g}/kWh)")
    if d.get("robust"):
        return [head + f"; on {d['first_case']} the network is {e['network_usd_per_step'] / e['usd_per_step']:.1%} "
                f"of the cost per step and GPUs wait on it {e['gpu_idle_fraction_network']:.1%} of the step."]
    return [head + f"; the network is {e['network_usd_per_step'] / e['usd_per_step']:.1%} of it; GPUs wait on the "
            f"network {f['gpu_idle_fraction_network']} of the step (${e['idle_usd_per_step']:,.2f} per step)."]


def design_sections(d: dict, *, first: str = "The design") -> list[tuple[str, list[str]]]:
    """The record's facts (:func:`record_facts`) as (heading, sentences) pairs, in reading order; ``first``: the
    heading of the headline section."""
    sections = [(first, design_lines(d))]
    if d.get("robust"):
        sections.append(("Each case of the mix", _case_lines(d)))
    sections.append(("Bill of materials", _bom_lines(d)))
    if d.get("serving"):
        sections.append(("Serving latency", [f"Serving job '{n}' at its offered load ({m['load']:.0%} of capacity): "
                                             f"{serving_text(m)}." for n, m in d["serving"].items()]))
    sections.append(("Resilience", _resilience_lines(d)))
    sections.append(("What if", _what_if_lines(d)))
    if d.get("fixes"):
        sections.append(("Cheapest fixes", _fix_lines(d)))
    sections.append(("Cost per step", _cost_lines(d)))
    if d.get("in_network"):
        sections.append(("In-network reduction", [f"{line}." for line in d["in_network"]]))
    if d.get("serving_only"):      # a serving-only workload has no step: its "step" is one unloaded request
        sections = [(h, [_unloaded(x) for x in lines]) for h, lines in sections]
        sections = [("Cost per unloaded request" if h == "Cost per step" else h, lines) for h, lines in sections]
    return sections


def _unloaded(line: str) -> str:
    for a, z in (("p99 step", "p99 unloaded request"), ("of the step", "of the unloaded request"),
                 ("per step", "per unloaded request")):
        line = line.replace(a, z)
    return line

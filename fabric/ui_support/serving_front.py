"""What the search, compare, report and brief views call a workload's figures when it has serving jobs.

A training workload is judged by its p99 step. A serving job (an inference job with a request structure,
:mod:`fabric.evaluate.serving`) is judged by its request latency: p99 time to first token (TTFT), p99 time per
output token (TPOT), SLO attainment. A search record carries the worst serving job's three figures
(:func:`fabric.search.records.serving_fields`); its ``p99_s`` is still the evaluator's step, which for a
serving-only workload is one request's critical path with no queueing (the "unloaded request"), so it must never
be labelled a step time there. Pure functions; no Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["SERVING_COLUMNS", "step_label", "is_serving_only", "has_serving", "front_axis_options",
           "default_front_axis", "objectives_text", "front_caption", "serving_rows", "serving_lines"]

#: Record column -> (label, kind): ``time`` in seconds, ``share`` in 0..1.
SERVING_COLUMNS = {"serving_ttft_p99_s": ("serving p99 time to first token", "time"),
                   "serving_tpot_p99_s": ("serving p99 time per output token", "time"),
                   "serving_slo_attainment": ("serving SLO attainment", "share")}
#: Constraints.inference_objective -> the record column it minimizes (slo_attainment: maximized).
_OBJECTIVE_COLUMN = {"ttft_p99": "serving_ttft_p99_s", "tpot_p99": "serving_tpot_p99_s",
                     "slo_attainment": "serving_slo_attainment"}


def has_serving(workload) -> bool:
    """True when ``workload`` has a serving job."""
    return any(getattr(j, "serving", None) is not None for j in workload.jobs)


def is_serving_only(workload) -> bool:
    """True when the workload has serving jobs and no training job: its "step" is an unloaded request."""
    return has_serving(workload) and not any(j.kind == "training" for j in workload.jobs)


def step_label(serving_only: bool) -> str:
    """What ``p99_s`` is: ``"p99 step time"``, or for a serving-only workload ``"p99 unloaded request"`` (one
    request's critical path, no queueing)."""
    return "p99 unloaded request" if serving_only else "p99 step time"


def front_axis_options(records: Sequence[Mapping], serving_only: bool) -> dict[str, str]:
    """The y axes a front can be drawn on: record column -> label; the step (or unloaded request) always, the
    serving columns when the records carry them."""
    robust = any(r.get("p99_by_case") for r in records)
    out = {"p99_s": "robust p99 step time" if robust else step_label(serving_only)}
    for col, (label, _) in SERVING_COLUMNS.items():
        if any(col in r for r in records):
            out[col] = label
    return out


def default_front_axis(constraints, options: Mapping[str, str], serving_only: bool) -> str:
    """The axis drawn first: the serving objective when the search has one; for a serving-only workload the p99
    TTFT; else the p99 step."""
    col = _OBJECTIVE_COLUMN.get(getattr(constraints, "inference_objective", None) or "")
    if col in options:
        return col
    if serving_only and "serving_ttft_p99_s" in options:
        return "serving_ttft_p99_s"
    return "p99_s"


def objectives_text(constraints, serving_only: bool) -> list[str]:
    """The objectives the search chose its front on, in words, in order."""
    cost = "cost per step" if constraints.cost_objective == "cost_per_step" else "network capex"
    p99 = step_label(serving_only)
    if constraints.p99_objective == "worst_single_failure":
        p99 += " under the worst single failure"
    out = [cost, p99]
    if constraints.optimize_power:
        out.append("network power")
    obj = constraints.inference_objective
    if obj is not None:
        label = SERVING_COLUMNS[_OBJECTIVE_COLUMN[obj]][0]
        out.append(label + (" (maximized)" if obj == "slo_attainment" else ""))
    return out


def front_caption(constraints, y_col: str, serving_only: bool, unit: str | None = None) -> str:
    """The sentence under a front chart: what the axes are (``unit``: the chart's y unit, as its axis title names
    it), which objectives chose the front, and what a two-objective view of a three-objective front hides."""
    objs = objectives_text(constraints, serving_only)
    y = front_axis_options([{y_col: 0}], serving_only).get(y_col, y_col)
    if SERVING_COLUMNS.get(y_col, ("", "time"))[1] == "share":
        unit = "share of requests in %"
    elif not unit:
        unit = "seconds"
    better = "upper-left" if y_col == "serving_slo_attainment" else "lower-left"
    out = (f"x: network capex in USD; y: {y} ({unit}); {better} is better. The front was chosen on "
           f"{len(objs)} objectives: {', '.join(objs)}.")
    if len(objs) > 2:
        out += (" This chart draws two of them, so a front design may look dominated here: it wins on an "
                "objective not drawn (its hover and the table give all of them); pick another y axis to see it.")
    if serving_only and y_col == "p99_s":
        out += (" For a serving-only workload the 'step' is one request's critical path without queueing; the "
                "serving axes include queueing at the offered load.")
    return out


def serving_rows(serving: Mapping) -> dict[str, str]:
    """Compare-table rows of one evaluation's serving jobs (``Evaluation.serving``): each job's p99 TTFT, p99 TPOT
    (ms) and SLO attainment (%), or that its load exceeds its capacity."""
    out = {}
    for name, m in serving.items():
        if not m["stable"]:
            out[f"{name}: p99 TTFT (ms)"] = out[f"{name}: p99 TPOT (ms)"] = "unbounded (load above capacity)"
            out[f"{name}: SLO attainment (%)"] = "0.0"
            continue
        out[f"{name}: p99 TTFT (ms)"] = f"{m['ttft_s']['p99'] * 1e3:,.1f}"
        out[f"{name}: p99 TPOT (ms)"] = f"{m['tpot_s']['p99'] * 1e3:,.2f}"
        a = m.get("slo_attainment")
        out[f"{name}: SLO attainment (%)"] = "no SLO" if a is None else f"{a * 100:.1f}"
    return out


def serving_lines(serving: Mapping) -> list[str]:
    """One sentence per serving job: p99 TTFT, p99 TPOT, SLO attainment and load against capacity."""
    out = []
    for name, m in serving.items():
        load = f"load {m['load']:.0%} of what this design sustains" if m.get("load") is not None else ""
        if not m["stable"]:
            out.append(f"Serving job '{name}': its offered load exceeds its capacity, so its queues grow without "
                       f"bound (no latency limit can be met).")
            continue
        a = m.get("slo_attainment")
        att = "" if a is None else f", SLO attainment {a:.1%}"
        out.append(f"Serving job '{name}': p99 time to first token {m['ttft_s']['p99'] * 1e3:,.1f} ms, p99 time "
                   f"per output token {m['tpot_s']['p99'] * 1e3:,.2f} ms{att}" + (f" ({load})." if load else "."))
    return out


def serving_report_sections(serving: Mapping) -> list:
    """The HTML report's sections of an evaluation's serving jobs: per job, its figures (a list), its
    latency-versus-load curve (when evaluated) and where its p99 request goes (:mod:`fabric.ui_support.report`)."""
    from fabric.ui_support.report import Section
    from fabric.ui_support.serving_view import latency_load_figure, p99_split_figure

    out = []
    for (name, m), line in zip(serving.items(), serving_lines(serving)):
        out.append(Section(f"Serving latency: {name}", "At the offered load, queueing included (docs/serving.md).",
                           [line]))
        if m.get("latency_vs_load"):
            out.append(Section(f"Latency versus load: {name}",
                               "p99 (solid) and p50 (dotted) time to first token and per output token as the "
                               f"request rate approaches capacity ({m['capacity_rps']:,.3g} requests/s); dashed: "
                               "the budgets; log scale.",
                               latency_load_figure(m["latency_vs_load"], ttft_slo_s=m["ttft_slo_s"],
                                                   tpot_slo_s=m["tpot_slo_s"])))
        out.append(Section(f"Where the p99 request goes: {name}",
                           "The p99 TTFT and TPOT split into queueing, compute, NVLink and the scale-out network.",
                           p99_split_figure(m)))
    return out

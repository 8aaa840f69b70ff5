"""The review brief drawn: its charts as small static SVG and the whole brief as one HTML file under 1 MB.

The brief's numbers and sentences come from :mod:`fabric.review.brief`; this module only draws them: the cost-vs-p99
trade-off (the front, the baselines, designs beyond a p99 target, the target and budget lines, the design bought
starred), the step-time distribution of the design bought with p50/p95/p99, and the what-if changes. The same SVG
is shown on the Brief page and written into the HTML file, so the page and the file a review signs agree.
"""

from __future__ import annotations

import pandas as pd

from fabric.units import time_text, time_unit
from fabric.ui_support.report import Section, Svg, report_html
from fabric.ui_support.svg_charts import BASELINE_MARKERS, Series, bars_svg, histogram_svg, scatter_svg

__all__ = ["brief_charts", "brief_html", "record_html", "CHART_TITLES"]

#: chart name -> (heading it follows in the brief, caption)
CHART_TITLES = {
    "front": ("The design to buy", "Network capex (USD) against p99 step time: the front (blue, joined), the "
                                   "baselines (black), designs that meet every limit but the p99 target (hollow "
                                   "grey), the p99 target and budget (dashed); ★ the design to buy."),
    "steps": ("The design to buy", "Step-time distribution of the design to buy over the Monte Carlo samples, with "
                                   "p50, p95 and p99 marked."),
    "what_if": ("What if", "Change of the p99 step under each what-if scenario, in % of the healthy p99."),
}


def _money(v: float) -> str:
    a = abs(v)
    return f"${v / 1e6:,.3g}M" if a >= 1e6 else f"${v / 1e3:,.3g}k" if a >= 1e3 else f"${v:,.0f}"


def brief_charts(b: dict) -> dict[str, Svg]:
    """The brief's charts (name -> SVG): ``front``, ``steps`` and ``what_if`` (when a scenario ran)."""
    step = "unloaded request" if b.get("serving_only") else "step"
    robust = bool(b.get("robust"))
    ys = [r["p99_s"] for r in b.get("front", []) + b.get("baseline_points", []) + b.get("beyond_target", [])]
    scale, unit = time_unit(ys or [b["p99_s"]])
    front = sorted(b.get("front", []), key=lambda r: r["cost_usd"])
    series = [Series("Pareto front", [(r["cost_usd"], r["p99_s"] * scale) for r in front], color="#1f77b4",
                     line="dotted")]
    if b.get("beyond_target"):
        series.append(Series("meets every limit but the p99 target",
                             [(r["cost_usd"], r["p99_s"] * scale) for r in b["beyond_target"]], color="#9a9a9a",
                             hollow=True, line="dotted"))
    for i, r in enumerate(b.get("baseline_points", [])):      # the Search chart's shapes, in the same order
        series.append(Series(r["design"].removeprefix("baseline: "), [(r["cost_usd"], r["p99_s"] * scale)],
                             color="#111", marker=BASELINE_MARKERS[i % len(BASELINE_MARKERS)], size=6, hollow=True))
    chosen = next((r for r in b.get("front", []) if r.get("key") == b.get("key")), None)
    if chosen is not None:
        series.append(Series("★ the design to buy", [(chosen["cost_usd"], chosen["p99_s"] * scale)], color="#d62728",
                             size=7, labels=("★",)))
    hl = [(b["p99_target_s"] * scale, f"p99 target {time_text(b['p99_target_s'])}")] if b.get("p99_target_s") else []
    xs = [p[0] for s in series for p in s.points]
    vl = ([(b["budget_usd"], f"budget {_money(b['budget_usd'])}")]
          if b.get("budget_usd") and xs and b["budget_usd"] <= 1.5 * max(xs) else [])
    out = {}
    if "front" in b:        # a brief (a search's front); a design's own report has none
        out["front"] = Svg(scatter_svg(series, x_title="network capex (USD)",
                                       y_title=f"{'robust ' if robust else ''}p99 {step} time ({unit})",
                                       x_text=_money, hlines=hl, vlines=vl, title="cost versus p99"))
    first = b["cases"][0]       # the histogram is one case's (the only one, or the mix's first)
    p = {"p50": first["p50_s"], "p95": first["p95_s"], "p99": first["p99_s"]}
    s2, u2 = time_unit(list(p.values()))
    on = b["first_case"] if robust else b["workload"]
    out["steps"] = Svg(histogram_svg([x * s2 for x in b["step_samples_s"]],
                                     marks=[(v * s2, f"{k} {time_text(v)}") for k, v in p.items()],
                                     x_title=f"{step} time ({u2}) on {on}", title="step-time distribution"))
    ran = [w for w in b["what_ifs"] if w.get("change") is not None]
    if ran:
        out["what_if"] = Svg(bars_svg([w["scenario"] for w in ran], [w["change"] * 100 for w in ran],
                                      value_text=lambda v: f"{v:+.1f} %",
                                      colors=["#d62728" if w["change"] > 0.0005 else "#2ca02c"
                                              if w["change"] < -0.0005 else "#9a9a9a" for w in ran],
                                      x_title=f"{'robust ' if robust else ''}p99 {step} change (%)",
                                      title="what-if changes"))
    return out


def record_html(d: dict, sections: list[tuple[str, list[str]]], *, facts: list[str], tables=(), title: str) -> str:
    """A design's record as one HTML file (the Design page's report): the sentences of ``sections``
    (:func:`fabric.review.document.design_sections`), the step-time and what-if charts after their sections, the
    bill of materials by category and ``tables`` (more :class:`~fabric.ui_support.report.Section` tables); no
    script, a few hundred kB at most."""
    return report_html(title, [f"Workload: {d['workload']}", f"Context: {d['context']}", *facts],
                       _with_charts(d, sections) + list(tables))


def _with_charts(b: dict, sections) -> list:
    charts = brief_charts(b)
    out = []
    for heading, lines in sections:
        out.append(Section(heading, "", lines))
        if heading == "Bill of materials":
            cats = pd.DataFrame([{"category": c, "cost (USD)": v["cost_usd"], "power (W)": v["power_w"]}
                                 for c, v in b["bom"]["by_category"].items()])
            out.append(Section("Bill of materials by category", "Count x catalog unit price; power excludes the "
                                                                 "servers.", cats,
                               {"cost (USD)": "usd", "power (W)": "count"}))
        for name, (after, caption) in CHART_TITLES.items():
            if (after == heading or (name == "steps" and heading == "The design")) and name in charts:
                out.append(Section({"front": "Cost versus p99", "steps": "Step-time distribution",
                                    "what_if": "What-if changes"}[name], caption, charts[name]))
    return out


def brief_html(b: dict, sections: list[tuple[str, list[str]]], *, facts: list[str]) -> str:
    """The brief as one HTML file: the sentences of ``sections`` (:func:`fabric.review.brief.brief_sections`), the charts
    after the section they belong to, the bill of materials by category as a table; no script (< 1 MB)."""
    return report_html(f"fabric review brief: {b['design']}", facts, _with_charts(b, sections))

"""The plotly figures of the dashboard (and of the HTML report): built from fabric results, never from widgets.

Every figure has axis titles with units, a font readable on a projector (14 px) and no title of its own (the page
puts a heading and a one-line caption around it). Times are shown in the unit that suits the data (s, ms or us)
through :func:`time_unit`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fabric import units as _units
from fabric.ui_support.svg_charts import BASELINE_MARKERS
from fabric.workload.summary import size_label

__all__ = ["FAMILY_COLORS", "FONT_SIZE", "time_unit", "time_text", "axis_unit", "money_text", "style", "pareto_figure",
           "hypervolume_figure", "step_time_figure", "breakdown_figure", "scaling_figure", "strong_scaling_figure",
           "scenario_figure",
           "change_color", "CHANGE_COLORS",
           "cdf_overlay_figure", "p99_parts", "collectives_figure", "message_size_figure", "compute_comm_figure",
           "short_text", "wrap_text", "num_text", "log_ticks", "tick_label", "bytes_tick"]

FONT_SIZE = 14
#: One colour per topology family, the same on every chart.
FAMILY_COLORS = {"clos": "#1f5fbf", "rail_optimized": "#d95f02", "rail_only": "#1b9e77", "dragonfly": "#7570b3",
                 "regions": "#e7298a"}
_FAMILY_NAMES = {"clos": "Clos / fat tree", "rail_optimized": "rail-optimized", "rail_only": "rail-only",
                 "dragonfly": "dragonfly", "regions": "regions"}
#: the baselines' markers: the brief's static charts' shapes (svg_charts.BASELINE_MARKERS), hollow
_BASELINE_SYMBOLS = tuple({"triangle": "triangle-up"}.get(m, m) + "-open" for m in BASELINE_MARKERS)
_MARK_COLORS = {"p50": "#2ca02c", "p95": "#ff7f0e", "p99": "#d62728"}
_PALETTE = ("#1f5fbf", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e")


def time_unit(values) -> tuple[float, str]:
    """(factor, unit) to show seconds ``values`` in, from the largest: s from 1 s up, ms from 1 ms, us below
    (:func:`fabric.units.time_unit`)."""
    return _units.time_unit(np.ravel(np.asarray(values, dtype=float)))


def time_text(seconds: float) -> str:
    """A duration in the unit that suits it (:func:`fabric.units.time_text`, the one formatter of durations)."""
    return _units.time_text(seconds)


def axis_unit(fig: go.Figure, axis: str = "xaxis") -> str:
    """The unit a figure's axis title names in brackets (``"step time (ms)"`` -> ``"ms"``), so a caption can say
    the unit the chart actually uses; ``""`` when the title names none."""
    import re

    title = getattr(getattr(fig.layout, axis).title, "text", None) or ""
    m = re.search(r"\(([^()]*)\)\s*$", title)
    return m.group(1) if m else ""


def money_text(usd: float) -> str:
    """``$2.07B``, ``$1.23M``, ``$456k`` or ``$789``."""
    a = abs(usd)
    if a >= 1e9:
        return f"${usd / 1e9:,.2f}B"
    if a >= 1e6:
        return f"${usd / 1e6:,.2f}M"
    if a >= 1e3:
        return f"${usd / 1e3:,.0f}k"
    return f"${usd:,.0f}"


def num_text(x: float) -> str:
    """A number for a bar label: 3 significant digits, thousands separated, never in e-notation."""
    a = abs(float(x))
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 1 or a == 0:
        return f"{x:.3g}"
    return f"{x:.3g}" if a >= 1e-3 else f"{x:.1e}"


def tick_label(v: float) -> str:
    """An axis tick: ``1,000``, ``20``, ``0.5``, ``0.002`` (thousands separated, never in e-notation)."""
    if abs(v) >= 1:
        return f"{v:,.0f}"
    return f"{v:.6f}".rstrip("0").rstrip(".") if v else "0"


def log_ticks(values, *, max_ticks: int = 10, fmt=None) -> dict:
    """Readable ticks of a log axis over ``values`` (as plotted): 1-2-5 steps (1, 2, 5, 10, 20, ...) when few enough
    fall in the data's range, else powers of ten (every other one, ... when still too many), each labelled in full
    (``2,000``, not plotly's bare minor digits ``2``, ``5`` between powers of ten); a range too narrow for two
    such ticks gets every digit (150, 160, ...) or plotly's own ticks with thousands separators. Keyword arguments
    for ``update_xaxes``/``update_yaxes``; ``{}`` when no value is positive. ``fmt`` writes a tick (default
    :func:`tick_label`), e.g. :func:`bytes_tick` for message sizes."""
    pos = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not pos:
        return {}
    lo, hi = min(pos), max(pos)
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def inside(ticks):       # the ticks within the data's range, and the nearest one beyond each end
        below = [t for t in ticks if t < lo]
        above = [t for t in ticks if t > hi]
        return ([below[-1]] if below else []) + [t for t in ticks if lo <= t <= hi] + ([above[0]] if above else [])

    ticks = inside([m * 10.0 ** k for k in range(k0, k1 + 1) for m in (1, 2, 5)])
    if sum(lo <= t <= hi for t in ticks) < 2:        # a narrow range: every digit, or plotly's own ticks in full
        ticks = inside([m * 10.0 ** k for k in range(k0, k1 + 1) for m in range(1, 10)])
        if sum(lo <= t <= hi for t in ticks) < 2:
            return {"tickformat": ",.4~g"}
    step = 1
    while len(ticks) > max_ticks:
        ticks = inside([10.0 ** k for k in range(k0 - k0 % step, k1 + step, step)])
        step += 1
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [(fmt or tick_label)(t) for t in ticks]}


def bytes_tick(nbytes: float) -> str:
    """A message size tick in decimal units, as nccl-tests counts sizes: ``1 B``, ``20 kB``, ``500 MB``, ``2 GB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{tick_label(nbytes / scale)} {unit}"
    return f"{tick_label(nbytes)} B"


def short_text(text: str, width: int = 42) -> str:
    """``text`` cut to ``width`` characters with an ellipsis."""
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def wrap_text(text: str, width: int = 40, lines: int = 2) -> str:
    """``text`` broken into lines of at most ``width`` characters at spaces (plotly ``<br>``), at most ``lines``
    lines (the last one cut with an ellipsis), so long labels stay readable instead of running off the chart."""
    import textwrap

    parts = textwrap.wrap(str(text), width=width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(parts) > lines:
        parts = parts[: lines - 1] + [short_text(" ".join(parts[lines - 1:]), width)]
    return "<br>".join(parts)


def style(fig: go.Figure, *, height: int = 380, legend_below: bool = False) -> go.Figure:
    """The common look: white template, 14 px font, tight margins, legend above (or below) the plot."""
    legend = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, font=dict(size=FONT_SIZE - 1))
    if legend_below:
        legend = dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0, font=dict(size=FONT_SIZE - 1))
    fig.update_layout(template="plotly_white", height=height, font=dict(size=FONT_SIZE),
                      margin=dict(l=10, r=20, t=40, b=10), legend=legend, hoverlabel=dict(font_size=FONT_SIZE))
    fig.update_xaxes(automargin=True, showline=True, linecolor="#888", ticks="outside")
    fig.update_yaxes(automargin=True, showline=True, linecolor="#888", ticks="outside")

    def separated(axis):      # plotly writes 1000-9999 without a separator: numbers on an axis read like the text's
        if axis.tickformat is None and axis.type not in ("log", "category", "date", "multicategory") \
                and axis.tickmode != "array":
            axis.tickformat = ",~r"

    fig.for_each_xaxis(separated)
    fig.for_each_yaxis(separated)
    return fig


# ------------------------------------------------------------------ search


#: Record values at or above this are the search's stand-in for "no finite value" (records.INFEASIBLE_P99).
_UNBOUNDED_S = 1e8


def _hover_record(r: Mapping, scale: float, unit: str, step_word: str = "step") -> str:
    s_scale, s_unit = time_unit([r["p99_s"]])
    if r.get("p99_by_case"):     # a robust record: its p99 is the robust one; p50 exists per case only
        cases = " · ".join(f"{c.split('|')[0] if c.endswith('|baseline') else c} {time_text(p)}"
                           for c, p in r["p99_by_case"].items())
        times = f"robust p99 {step_word} {r['p99_s'] * s_scale:,.3g} {s_unit}<br>p99 per case: {cases}"
    else:
        times = f"p99 {step_word} {r['p99_s'] * s_scale:,.3g} {s_unit} · p50 {r['p50_s'] * s_scale:,.3g} {s_unit}"
    out = (f"<b>{r['design']}</b><br>network capex {money_text(r['cost_usd'])}<br>{times}<br>"
           f"network power {r['power_w'] / 1e3:,.1f} kW")
    if "serving_tpot_p99_s" in r:
        if r["serving_tpot_p99_s"] >= _UNBOUNDED_S:
            out += "<br>serving: load above capacity (latency unbounded)"
        else:
            out += (f"<br>serving p99 TTFT {time_text(r['serving_ttft_p99_s'])} · p99 TPOT "
                    f"{time_text(r['serving_tpot_p99_s'])} · SLO attainment "
                    f"{r.get('serving_slo_attainment', 1.0):.1%}")
    return out


#: A budget line further right than this multiple of the dearest design shown is named at the chart's edge rather
#: than drawn (the axis would be stretched and the designs squeezed into its left part).
BUDGET_STRETCH = 1.5


def pareto_figure(front: Sequence[Mapping], baselines: Sequence[Mapping] = (), *, others: Sequence[Mapping] = (),
                  p99_target_s: float | None = None, budget_usd: float | None = None,
                  selected_key: str | None = None, height: int = 440, y_col: str = "p99_s",
                  y_title: str = "p99 step time", step_word: str = "step",
                  ranges: Mapping | None = None, flagged: Mapping | None = None,
                  beyond: Sequence[Mapping] = ()) -> go.Figure:
    """Network capex (USD) vs p99 step time (or the record column ``y_col``, titled ``y_title``: a time in
    seconds, or ``serving_slo_attainment`` drawn in %): the front coloured by family, other feasible designs in grey,
    the human baselines as black symbols, the p99 target (on the step axis) and the budget as dashed lines.
    ``customdata[0]`` of every point is the record's ``key`` (for click-to-open).

    A robust front (:mod:`fabric.ui_support.robust_view`): ``y_title`` names the y axis, ``ranges`` (key ->
    (low, high) seconds of ``y_col``) draws each front design's spread across cases as a vertical bar, ``flagged``
    (design name -> note) rings the brittle designs in red. ``beyond``: designs that meet every limit but the p99
    target (:meth:`fabric.search.result.SearchResult.beyond_target`), drawn hollow and grey with the target line,
    so a target that leaves one design on the front does not hide the cost-vs-p99 trade-off. A budget far to the
    right of every design is named at the edge instead of stretching the axis to it."""
    def drawn(r) -> bool:      # a service above its capacity has no finite latency to draw
        return y_col in r and float(r[y_col]) < _UNBOUNDED_S

    pts = [r for r in list(front) + list(baselines) + list(others) + list(beyond)
           if r.get("buildable", True) and drawn(r)]
    front = [r for r in front if drawn(r)]
    beyond = [r for r in beyond if drawn(r)]
    baselines = [r for r in baselines if drawn(r)]
    others = [r for r in others if drawn(r)]
    if y_col == "serving_slo_attainment":
        scale, unit = 100.0, "%"
    else:       # the baselines' unit when there are some: they are evaluated first, so the unit holds while the
        # search adds designs (a live chart in ms must not turn to s when the search ends)
        basis = [r[y_col] for r in baselines if r.get("buildable", True)] or [r[y_col] for r in pts]
        scale, unit = time_unit(basis or [1.0])
    if y_col != "p99_s":
        p99_target_s = None
        ranges = None
    fig = go.Figure()
    ranges = {k: v for k, v in (ranges or {}).items() if all(math.isfinite(x) for x in v)}
    if ranges and front:
        xs, ys = [], []
        for r in front:
            if r.get("key") in ranges:
                lo, hi = ranges[r["key"]]
                xs += [r["cost_usd"], r["cost_usd"], None]
                ys += [lo * scale, hi * scale, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="spread across cases",
                                 line=dict(color="#9a9a9a", width=3), marker=dict(symbol="line-ew-open", size=12,
                                                                                   color="#9a9a9a"),
                                 hoverinfo="skip"))
    if others:
        # designs tying with a front design sit exactly under its dot: drawn there, a click would open one of them
        # instead of the front's (the tie rule's) design; the front table names them
        at_front = {(r["cost_usd"], r[y_col]) for r in front}
        o = [r for r in others if r.get("feasible") and r.get("buildable", True)
             and (r["cost_usd"], r[y_col]) not in at_front]
        if o:
            fig.add_trace(go.Scatter(
                x=[r["cost_usd"] for r in o], y=[r[y_col] * scale for r in o], mode="markers",
                name="other feasible designs", marker=dict(color="#bbbbbb", size=6, opacity=0.6),
                customdata=[[r.get("key", ""), r["design"]] for r in o],
                hovertext=[_hover_record(r, scale, unit, step_word) for r in o], hoverinfo="text"))
    if beyond:
        line = sorted(beyond, key=lambda r: r["cost_usd"])
        fig.add_trace(go.Scatter(
            x=[r["cost_usd"] for r in line], y=[r[y_col] * scale for r in line], mode="lines+markers",
            name="meets every limit but the p99 target", line=dict(color="#aaaaaa", width=1.2, dash="dot"),
            marker=dict(color="white", size=10, line=dict(color="#8a8a8a", width=1.8)),
            customdata=[[r.get("key", ""), r["design"]] for r in line],
            hovertext=[_hover_record(r, scale, unit, step_word) + "<br><i>misses the p99 target</i>" for r in line],
            hoverinfo="text"))
    if front:
        line = sorted(front, key=lambda r: r["cost_usd"])
        fig.add_trace(go.Scatter(x=[r["cost_usd"] for r in line], y=[r[y_col] * scale for r in line],
                                 mode="lines", line=dict(color="#555", width=1.5, dash="dot"),
                                 name="Pareto front", hoverinfo="skip"))
        for fam in sorted({r["family"] for r in front}, key=lambda f: list(FAMILY_COLORS).index(f)
                          if f in FAMILY_COLORS else 99):
            rows = [r for r in front if r["family"] == fam]
            fig.add_trace(go.Scatter(
                x=[r["cost_usd"] for r in rows], y=[r[y_col] * scale for r in rows], mode="markers",
                name=_FAMILY_NAMES.get(fam, fam),
                marker=dict(color=FAMILY_COLORS.get(fam, "#333"), size=12, line=dict(color="white", width=1)),
                customdata=[[r.get("key", ""), r["design"]] for r in rows],
                hovertext=[_hover_record(r, scale, unit, step_word) for r in rows], hoverinfo="text"))
    for i, b in enumerate(r for r in baselines if r.get("buildable", True)):
        fig.add_trace(go.Scatter(
            x=[b["cost_usd"]], y=[b[y_col] * scale], mode="markers", name=b["design"],
            marker=dict(color="black", size=17, symbol=_BASELINE_SYMBOLS[i % len(_BASELINE_SYMBOLS)],
                        line=dict(color="black", width=2.5)),
            customdata=[[b.get("key", ""), b["design"]]], hovertext=[_hover_record(b, scale, unit, step_word)],
            hoverinfo="text"))
    hit = [r for r in front if (flagged or {}).get(r["design"])]
    if hit:
        fig.add_trace(go.Scatter(x=[r["cost_usd"] for r in hit], y=[r[y_col] * scale for r in hit],
                                 mode="markers", name="brittle (rank changes across cases)",
                                 marker=dict(size=22, color="rgba(0,0,0,0)", line=dict(color="#d62728", width=2.5)),
                                 customdata=[[r.get("key", ""), r["design"]] for r in hit],
                                 hovertext=[f"<b>{r['design']}</b><br>brittle: {flagged[r['design']]}" for r in hit],
                                 hoverinfo="text"))
    if selected_key:
        sel = [r for r in pts if r.get("key") == selected_key]
        if sel:
            r = sel[0]
            fig.add_trace(go.Scatter(x=[r["cost_usd"]], y=[r[y_col] * scale], mode="markers",
                                     name="selected design", hoverinfo="skip",
                                     marker=dict(size=26, color="rgba(0,0,0,0)",
                                                 line=dict(color="#d62728", width=3))))
    if p99_target_s is not None:
        fig.add_hline(y=p99_target_s * scale, line=dict(color="#d62728", dash="dash", width=2),
                      annotation_text=f"p99 target {p99_target_s * scale:,.3g} {unit}",
                      annotation_position="top right", annotation_font=dict(color="#d62728", size=FONT_SIZE - 1))
    focus = [r for r in list(front) + list(beyond) + [b for b in baselines if b.get("buildable", True)]]
    far_budget = budget_usd is not None and bool(focus) and \
        budget_usd > BUDGET_STRETCH * max(r["cost_usd"] for r in focus)
    if budget_usd is not None and not far_budget:
        fig.add_vline(x=budget_usd, line=dict(color="#7f3b08", dash="dash", width=2),
                      annotation_text=f"budget {money_text(budget_usd)}", annotation_position="top left",
                      annotation_font=dict(color="#7f3b08", size=FONT_SIZE - 1))
    elif far_budget:       # the axis stays on the designs; the budget is named where it would be
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="bottom",
                           text=f"budget {money_text(budget_usd)} →", showarrow=False,
                           font=dict(color="#7f3b08", size=FONT_SIZE - 1))
    if focus:  # open on the front and the baselines; far-off designs stay one double-click (autoscale) away
        xmax = max(r["cost_usd"] for r in focus)
        ys = [r[y_col] * scale for r in focus] + [v * scale for lo_hi in ranges.values() for v in lo_hi]
        if p99_target_s is not None:
            ys.append(p99_target_s * scale)
        if budget_usd is not None and not far_budget:
            xmax = max(xmax, budget_usd)
        pad = max(max(ys) - min(ys), 0.02 * max(ys))
        fig.update_xaxes(range=[0, xmax * 1.12])
        fig.update_yaxes(range=[min(ys) - 0.15 * pad, max(ys) + 0.25 * pad])
    far = max([r["cost_usd"] for r in pts] or [1.0])
    fig.update_xaxes(title_text="network capex (USD)", **money_ticks(xmax if focus else far, extend_to=far))
    fig.update_yaxes(title_text=f"{y_title} ({unit})")
    return style(fig, height=height, legend_below=True)


def money_ticks(top_usd: float, n: int = 6, extend_to: float = 0.0) -> dict:
    """Axis settings for dollars from 0 to ``top_usd``: round steps labelled $500k, $20M, $1.5B (plotly's SI
    format would write a billion as "$1G"), continued at the same step to ``extend_to`` (designs off to the right,
    shown when the chart is zoomed out; at most 200 ticks)."""
    top = max(float(top_usd), 1.0) * 1.12
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    vals = [i * step for i in range(min(int(max(top, float(extend_to) * 1.12) // step), 200) + 1)]

    def label(v: float) -> str:
        for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
            if v >= div:
                return f"${v / div:,.4g}{suffix}"
        return f"${v:,.0f}"
    return {"tickmode": "array", "tickvals": vals, "ticktext": [label(v) for v in vals]}


def hypervolume_figure(history: Sequence[Mapping], *, finished: bool = True, height: int = 300) -> go.Figure:
    """Hypervolume of the front after each generation against the evaluations spent, in % of the run's last value
    (its final one once ``finished``, else the best so far), so that every run reads on the same 0-100 % scale
    whatever its reference point."""
    fig = go.Figure()
    ref = float(history[-1]["hypervolume"]) if history else 0.0
    if history:
        ys = [100.0 * float(h["hypervolume"]) / ref if ref > 0 else 0.0 for h in history]
        fig.add_trace(go.Scatter(x=[h["evaluations"] for h in history], y=ys,
                                 mode="lines+markers", line=dict(color="#1f5fbf", width=2), name="hypervolume",
                                 hovertemplate="generation %{text}<br>%{x} evaluations<br>%{y:.1f} %"
                                               "<extra></extra>",
                                 text=[h["generation"] for h in history]))
    what = "this run's final" if finished else "the best so far"
    fig.update_xaxes(title_text="designs evaluated", rangemode="tozero")
    fig.update_yaxes(title_text=f"hypervolume (% of {what})", range=[0, 105], ticksuffix=" %")
    return style(fig, height=height)


# ------------------------------------------------------------------ one design


def step_time_figure(samples_s, stats: Mapping[str, float], *, lower_bound_s: float | None = None,
                     height: int = 360) -> go.Figure:
    """Histogram of the Monte Carlo step times with their CDF (right axis) and p50/p95/p99 marked."""
    x = np.asarray(samples_s, dtype=float)
    scale, unit = time_unit(x)
    xs = x * scale
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    spread = float(xs.max() - xs.min()) if xs.size else 0.0
    flat = xs.size > 0 and spread <= 1e-9 * max(abs(float(xs.max())), 1e-30)
    if flat:  # every sample the same: one thin bar, and a window around it instead of plotly's unit-wide bin
        mid = float(xs[0])
        width = max(abs(mid) * 0.002, 1e-9)
        fig.add_trace(go.Bar(x=[mid], y=[xs.size], width=[width], name="samples (all equal)",
                             marker_color="#9ecae1", hovertemplate=f"%{{x:.4g}} {unit}<br>%{{y}} samples"
                                                                   "<extra></extra>"), secondary_y=False)
        fig.update_xaxes(range=[mid - 0.02 * abs(mid), mid + 0.02 * abs(mid)])
    else:
        fig.add_trace(go.Histogram(x=xs, nbinsx=40, name="samples", marker_color="#9ecae1",
                                   hovertemplate=f"%{{x}} {unit}<br>%{{y}} samples<extra></extra>"),
                      secondary_y=False)
    srt = np.sort(xs)
    fig.add_trace(go.Scatter(x=srt, y=np.arange(1, srt.size + 1) / max(srt.size, 1), mode="lines", name="CDF",
                             line=dict(color="#08519c", width=2),
                             hovertemplate=f"%{{x:.4g}} {unit}: %{{y:.1%}} of steps faster<extra></extra>"),
                  secondary_y=True)
    for k in ("p50", "p95", "p99"):
        if k in stats:
            fig.add_vline(x=stats[k] * scale, line=dict(color=_MARK_COLORS[k], dash="dash", width=2))
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"{k} {stats[k] * scale:,.4g} {unit}",
                                     line=dict(color=_MARK_COLORS[k], dash="dash", width=2)), secondary_y=False)
    if lower_bound_s is not None and lower_bound_s > 0 and srt.size and \
            lower_bound_s * scale >= srt[0] - 0.5 * (srt[-1] - srt[0]):  # only when it does not squash the histogram
        fig.add_vline(x=lower_bound_s * scale, line=dict(color="#555", dash="dot", width=1.5))
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines",
                                 name=f"lower bound {lower_bound_s * scale:,.4g} {unit}",
                                 line=dict(color="#555", dash="dot", width=1.5)), secondary_y=False)
    fig.update_xaxes(title_text=f"step time ({unit})")
    fig.update_yaxes(title_text="samples", secondary_y=False)
    fig.update_yaxes(title_text="share of steps (CDF)", tickformat=".0%", range=[0, 1.02], secondary_y=True,
                     showgrid=False, tickvals=[0, 0.25, 0.5, 0.75, 1.0])
    return style(fig, height=height)


def p99_parts(evaluation) -> dict:
    """The p99 step of the primary job by part, from the per-op results: ``compute_s``, ``interference_s`` and
    ``ops`` (label -> exposed seconds, ops with the same label summed)."""
    primary = [name for name, j in evaluation.jobs.items() if j.get("step_time_s") == evaluation.step_time_s]
    ops: dict[str, float] = {}
    for o in evaluation.ops:
        if primary and o.job not in primary:
            continue
        label = f"{o.name or o.kind}@{o.group}"
        ops[label] = ops.get(label, 0.0) + float(o.exposed_in_p99_sample_s)
    b = evaluation.p99_breakdown
    return {"compute_s": float(b.get("compute_s", 0.0)), "interference_s": float(b.get("interference_s", 0.0)),
            "ops": ops}


def breakdown_figure(p99_breakdown: Mapping, *, include_compute: bool = False,
                     height: int | None = None) -> go.Figure:
    """Where the p99 step's time goes: each op's exposed time and checkpoint interference (and compute, which
    usually dwarfs the rest, when ``include_compute``)."""
    items = [("compute", float(p99_breakdown.get("compute_s", 0.0)))] if include_compute else []
    if p99_breakdown.get("interference_s"):
        items.append(("checkpoint interference", float(p99_breakdown["interference_s"])))
    ops = sorted(p99_breakdown.get("ops", {}).items(), key=lambda kv: -kv[1])
    items += [(k, float(v)) for k, v in ops]
    scale, unit = time_unit([v for _, v in items if v > 0] or [1.0])
    labels = [wrap_text(k, 40) for k, _ in items]
    colors = ["#bdbdbd" if k in ("compute", "checkpoint interference") else "#1f5fbf" for k, _ in items]
    fig = go.Figure(go.Bar(x=[v * scale for _, v in items], y=labels, orientation="h", marker_color=colors,
                           text=[num_text(v * scale) for _, v in items], textposition="auto",
                           hovertext=[f"{k}: {v * scale:,.4g} {unit}" for k, v in items], hoverinfo="text"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=f"exposed time ({unit})")
    return style(fig, height=height or max(260, 60 + 46 * len(items)))


def scaling_figure(rows: Sequence[Mapping], *, height: int = 320) -> go.Figure:
    """Weak-scaling efficiency (p50 and p99) at N, 2N, 4N GPUs; 100 % = linear."""
    xs = [f"{r['gpus']:,} GPUs" for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=xs, y=[r["efficiency_p50"] for r in rows], name="p50 efficiency", marker_color="#9ecae1",
                         text=[f"{r['efficiency_p50']:.1%}" for r in rows], textposition="outside"))
    fig.add_trace(go.Bar(x=xs, y=[r["efficiency_p99"] for r in rows], name="p99 efficiency", marker_color="#08519c",
                         text=[f"{r['efficiency_p99']:.1%}" for r in rows], textposition="outside"))
    fig.update_yaxes(title_text="throughput vs linear", tickformat=".0%", range=[0, 1.15])
    fig.update_xaxes(title_text="cluster size (data parallelism grown)")
    fig.update_layout(barmode="group")
    return style(fig, height=height)


#: What-if bar colours: slower (red), faster (green), unchanged (grey).
CHANGE_COLORS = {"slower": "#d62728", "faster": "#2ca02c", "same": "#9e9e9e"}


#: A relative change whose label (one decimal of a percent, ``+0.0%``) reads as no change is drawn as none: grey.
SHOWN_AS_ZERO = 0.0005


def change_color(delta: float) -> str:
    """The colour of a relative step-time change as its label reads (one decimal of a percent): an increase is
    slower (red), a decrease faster (green), and a change the label shows as ``+0.0%``/``-0.0%`` (under 0.05 %) is
    grey, never a red ``+0.0%``."""
    if delta >= SHOWN_AS_ZERO:
        return CHANGE_COLORS["slower"]
    if delta <= -SHOWN_AS_ZERO:
        return CHANGE_COLORS["faster"]
    return CHANGE_COLORS["same"]


def strong_scaling_figure(rows: Sequence[Mapping], *, height: int = 340) -> go.Figure:
    """Strong scaling at each GPU count: the p99 step split into efficiency (share of linear speed-up kept) and
    the shares lost to the pipeline bubble, stragglers and the network; the bars add up to 100 %."""
    xs = [f"{r['gpus']:,} GPUs" for r in rows]
    parts = (("efficiency_p99", "efficiency (p99)", "#08519c"), ("lost_bubble", "lost: pipeline bubble", "#bdbdbd"),
             ("lost_stragglers", "lost: stragglers", "#9ecae1"), ("lost_network", "lost: network", "#d62728"))
    fig = go.Figure()
    for key, name, color in parts:
        vals = [max(0.0, float(r[key])) for r in rows]
        fig.add_trace(go.Bar(x=xs, y=vals, name=name, marker_color=color,
                             text=[f"{v:.1%}" if v >= 0.02 else "" for v in vals], textposition="inside",
                             hovertemplate=f"{name}: %{{y:.1%}}<extra></extra>"))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="share of the p99 step", tickformat=".0%", range=[0, 1.02])
    fig.update_xaxes(title_text="cluster size (fixed global batch)")
    return style(fig, height=height, legend_below=True)


def scenario_figure(rows: Sequence[Mapping], *, height: int | None = None) -> go.Figure:
    """Change of p99 step time under each what-if scenario, in percent of the healthy baseline (red: slower,
    green: faster, grey: unchanged); the hover gives the p99 in the unit that suits the step times.

    Horizontal bars, one row per scenario in the order given: the names read level and both axis titles keep
    their room whatever the number of scenarios (upright bars tilted the names of six or seven scenarios, which
    left the upright axis title taller than the plot at 1280 px wide). The height grows with the rows."""
    scale, unit = time_unit([r["p99_s"] for r in rows] or [1.0])
    names = [r["scenario"] for r in rows]
    fig = go.Figure(go.Bar(
        y=names, x=[r["delta_p99"] for r in rows], orientation="h",
        marker_color=[change_color(r["delta_p99"]) for r in rows],
        text=[f"{r['delta_p99']:+.1%}" for r in rows], textposition="outside", cliponaxis=False,
        hovertext=[f"{r['scenario']}: p99 {r['p99_s'] * scale:,.4g} {unit} ({r['delta_p99']:+.2%})" for r in rows],
        hoverinfo="text"))
    top = max([abs(r["delta_p99"]) for r in rows] + [0.01])
    low = min([r["delta_p99"] for r in rows] + [0.0])
    fig.update_xaxes(title_text="p99 step time change", tickformat="+.0%",
                     range=[min(-top * 0.2 - 0.005, low * 1.35), top * 1.35])
    fig.update_yaxes(title_text="scenario", autorange="reversed")
    return style(fig, height=height or max(240, 110 + 38 * len(rows)))


def cdf_overlay_figure(series: Mapping[str, Sequence[float]], *, height: int = 380,
                       what: str = "step") -> go.Figure:
    """Empirical CDFs of step times (``what``: ``"unloaded request"`` for a serving-only workload), one line per
    design, p99 marked with a dot."""
    allv = np.concatenate([np.asarray(v, float) for v in series.values()]) if series else np.ones(1)
    scale, unit = time_unit(allv)
    fig = go.Figure()
    for i, (name, vals) in enumerate(series.items()):
        srt = np.sort(np.asarray(vals, float)) * scale
        color = _PALETTE[i % len(_PALETTE)]
        fig.add_trace(go.Scatter(x=srt, y=np.arange(1, srt.size + 1) / max(srt.size, 1), mode="lines",
                                 name=wrap_text(name, 60), line=dict(color=color, width=2.5),
                                 hovertemplate=f"%{{x:.4g}} {unit}: %{{y:.1%}}<extra>{short_text(name, 40)}</extra>"))
        if srt.size:
            p99 = float(np.percentile(srt, 99))
            fig.add_trace(go.Scatter(x=[p99], y=[0.99], mode="markers", showlegend=False,
                                     marker=dict(color=color, size=11, symbol="circle"),
                                     hovertemplate=f"p99 {p99:.4g} {unit}<extra>{short_text(name, 40)}</extra>"))
    fig.update_xaxes(title_text=f"{what} time ({unit})")
    fig.update_yaxes(title_text=f"share of {what}s (CDF)", tickformat=".0%", range=[0, 1.02])
    return style(fig, height=height, legend_below=True)


# ------------------------------------------------------------------ workload


def _unit(job_summary: Mapping) -> str:
    """A job's step in the summaries (:mod:`fabric.workload.accounting`): a request for inference, else a step."""
    return "request" if job_summary.get("kind") == "inference" else "step"


def collectives_figure(job_summaries: Sequence[Mapping], *, height: int = 340) -> go.Figure:
    """Per collective kind: bytes per step (left) and calls per step (right), one colour per job."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.06, shared_yaxes=True)
    for i, j in enumerate(job_summaries):
        kinds = sorted(j["per_kind"], key=lambda k: -j["per_kind"][k]["bytes_per_step"])
        if not kinds:
            continue
        color = _PALETTE[i % len(_PALETTE)]
        name = short_text(j["name"], 30)
        fig.add_trace(go.Bar(y=kinds, x=[j["per_kind"][k]["bytes_per_step"] / 2 ** 30 for k in kinds],
                             orientation="h", name=name, marker_color=color, legendgroup=name,
                             hovertext=[f"{name}: {k} {size_label(j['per_kind'][k]['bytes_per_step'])} per "
                                        f"{_unit(j)}" for k in kinds], hoverinfo="text"), row=1, col=1)
        fig.add_trace(go.Bar(y=kinds, x=[j["per_kind"][k]["count_per_step"] for k in kinds], orientation="h",
                             name=name, marker_color=color, legendgroup=name, showlegend=False,
                             hovertext=[f"{name}: {k} {j['per_kind'][k]['count_per_step']:,.4g} calls per "
                                        f"{_unit(j)}" for k in kinds], hoverinfo="text"), row=1, col=2)
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="bytes per step (GiB)", row=1, col=1)
    fig.update_xaxes(title_text="calls per step", row=1, col=2)
    fig.update_yaxes(autorange="reversed")
    style(fig, height=height)
    fig.update_layout(showlegend=len(job_summaries) > 1)
    return fig


def _bin_label(nbytes: int) -> str:
    """A power-of-two bin start without decimals: ``0 B``, ``512 B``, ``16 MiB``."""
    return size_label(nbytes).replace(".0 ", " ")


def message_size_figure(job_summaries: Sequence[Mapping], *, height: int = 320) -> go.Figure:
    """Calls per step by message size (log2 bins), one colour per job."""
    fig = go.Figure()
    bins = sorted({h["bin_lo_bytes"] for j in job_summaries for h in (j.get("message_size_histogram") or [])})
    for i, j in enumerate(job_summaries):
        hist = j.get("message_size_histogram") or []
        if not hist:
            continue
        xs = [_bin_label(h["bin_lo_bytes"]) for h in hist]
        name = short_text(j["name"], 30)
        fig.add_trace(go.Bar(x=xs, y=[h["count_per_step"] for h in hist], name=name,
                             marker_color=_PALETTE[i % len(_PALETTE)],
                             hovertext=[f"{name}: {size_label(h['bin_lo_bytes'])} to {size_label(h['bin_hi_bytes'])}"
                                        f"<br>{h['count_per_step']:,.4g} calls, {size_label(h['bytes_per_step'])}"
                                        f" per {_unit(j)}" for h in hist], hoverinfo="text"))
    fig.update_xaxes(title_text="message size (bin start; each bin up to 2x)", type="category",
                     categoryorder="array", categoryarray=[_bin_label(b) for b in bins])
    fig.update_yaxes(title_text="calls per step (log scale)", type="log",
                     **log_ticks([h["count_per_step"] for j in job_summaries
                                  for h in (j.get("message_size_histogram") or [])]))
    fig.update_layout(barmode="group", showlegend=len(job_summaries) > 1)
    return style(fig, height=height)


def compute_comm_figure(rows: Sequence[Mapping], *, height: int | None = None) -> go.Figure:
    """Per job (rows of :func:`fabric.ui_support.workload_view.compute_comm_rows`): compute per step, and in the
    p99 step the communication with every op back to back and the part of it left exposed, on a reference fabric."""
    vals = [v for r in rows for v in (r["compute_s"], r["comm_s"], r["exposed_s"]) if v > 0]
    scale, unit = time_unit(vals or [1.0])
    names = [short_text(r["job"], 28) for r in rows]
    fig = go.Figure()
    for key, label, color in (("compute_s", "compute", "#bdbdbd"),
                              ("comm_s", "communication in the p99 step, all ops back to back", "#9ecae1"),
                              ("exposed_s", "of which exposed (not hidden behind compute)", "#08519c")):
        fig.add_trace(go.Bar(y=names, x=[r[key] * scale for r in rows], orientation="h", name=label,
                             marker_color=color, text=[num_text(r[key] * scale) for r in rows],
                             textposition="auto"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=f"time per step ({unit})")
    return style(fig, height=height or max(220, 130 + 70 * len(rows)))


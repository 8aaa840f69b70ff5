"""Figures and sentences of a serving job's request latency (fabric.evaluate.serving) for the dashboard.

No streamlit here: the Design page calls these and draws what they return.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go

from fabric.ui_support.charts import log_ticks, style, time_text, time_unit

__all__ = ["serving_metrics_row", "load_text", "latency_load_figure", "p99_split_figure", "serving_sentence", "PARTS"]

#: The parts of a p99 request, in drawing order, with their labels.
PARTS = (("queueing_s", "queueing"), ("compute_s", "compute"), ("nvlink_s", "NVLink"), ("network_s", "network"))
_COLORS = {"queueing_s": "#d62728", "compute_s": "#7f7f7f", "nvlink_s": "#9467bd", "network_s": "#1f77b4"}


def serving_metrics_row(m: Mapping) -> list[tuple[str, str, str | None]]:
    """``(label, value, help)`` of the headline figures: p99 TTFT and TPOT, SLO attainment, load."""
    att = m.get("slo_attainment")
    budgets = ", ".join(f"{k} {time_text(v)}" for k, v in (("TTFT", m.get("ttft_slo_s")), ("TPOT", m.get("tpot_slo_s")))
                        if v is not None)
    return [
        ("p99 time to first token", time_text(m["ttft_s"]["p99"]), f"p50 {time_text(m['ttft_s']['p50'])}, "
                                                                   f"p95 {time_text(m['ttft_s']['p95'])}"),
        ("p99 time per output token", time_text(m["tpot_s"]["p99"]), f"p50 {time_text(m['tpot_s']['p50'])}, "
                                                                     f"p95 {time_text(m['tpot_s']['p95'])}"),
        ("SLO attainment", "no budgets" if att is None else f"{att:.1%}",
         f"share of requests within {budgets}" if budgets else "the workload gives no latency budgets"),
        ("Load on this design", f"{m['load']:.0%}", load_text(m)),
    ]


def _rate(x: float) -> str:
    """A request rate: ``230``, ``1,234``, ``0.5`` (3 significant figures, never e-notation)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def load_text(m: Mapping) -> str:
    """What the load is, in words that agree with a preset's "arrivals at half of what the replicas sustain on
    compute": the arrivals as a share of what the service sustains on compute alone, and as a share of what it
    sustains on this design, network time included (the load)."""
    rate, cap = m["request_rate_per_s"], m["capacity_rps"]
    text = (f"The share of what the service sustains on this design that its arrivals use: {_rate(rate)} "
            "requests/s arrive")
    comp = m.get("compute_capacity_rps")
    if comp:
        text += (f" ({rate / comp:.0%} of the {_rate(comp)} its replicas sustain on compute alone, the basis a "
                 "preset's arrivals are set on)")
    text += (f"; with each request's network time the replicas sustain {_rate(cap)} requests/s on this design, so "
             f"the same arrivals are {m['load']:.0%} of it. Queues grow without bound at 100%.")
    return text


def latency_load_figure(curve: Sequence[Mapping], *, ttft_slo_s: float | None = None, tpot_slo_s: float | None = None,
                        height: int = 380) -> go.Figure:
    """p99 (and p50) TTFT and TPOT against the load (share of capacity), with the budgets as dashed lines."""
    vals = [r[k] for r in curve for k in ("ttft_p99_s", "tpot_p99_s")]
    scale, unit = time_unit(vals or [1.0])
    x = [100 * r["load"] for r in curve]
    fig = go.Figure()
    for key, name, dash, color in (("ttft_p99_s", "p99 TTFT", "solid", "#1f77b4"),
                                   ("ttft_p50_s", "p50 TTFT", "dot", "#1f77b4"),
                                   ("tpot_p99_s", "p99 TPOT", "solid", "#ff7f0e"),
                                   ("tpot_p50_s", "p50 TPOT", "dot", "#ff7f0e")):
        fig.add_trace(go.Scatter(x=x, y=[r[key] * scale for r in curve], name=name, mode="lines+markers",
                                 line=dict(dash=dash, color=color)))
    for slo, name, color in ((ttft_slo_s, "TTFT budget", "#1f77b4"), (tpot_slo_s, "TPOT budget", "#ff7f0e")):
        if slo is not None and x:      # a trace, not a shape: shapes on a log axis take log10 coordinates
            fig.add_trace(go.Scatter(x=[min(x), max(x)], y=[slo * scale] * 2, name=name, mode="lines",
                                     line=dict(dash="dash", color=color, width=1)))
    fig.update_layout(xaxis_title="load (% of what this design sustains)", yaxis_title=f"latency ({unit}, log scale)",
                      yaxis_type="log")
    drawn = [r[k] * scale for r in curve for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")] + \
        [b * scale for b in (ttft_slo_s, tpot_slo_s) if b is not None and x]
    fig.update_yaxes(**log_ticks(drawn))
    return style(fig, height=height)


def p99_split_figure(m: Mapping, *, height: int = 300) -> go.Figure:
    """The p99 TTFT and p99 TPOT split into queueing, compute, NVLink and network (stacked bars)."""
    fig = go.Figure()
    rows = (("TTFT", m["p99_split_ttft_s"]), ("TPOT", m["p99_split_tpot_s"]))
    scale, unit = time_unit([sum(s.values()) for _, s in rows])
    for key, label in PARTS:
        fig.add_trace(go.Bar(y=[f"p99 {name}" for name, _ in rows], x=[s.get(key, 0.0) * scale for _, s in rows],
                             name=label, orientation="h", marker_color=_COLORS[key]))
    fig.update_layout(barmode="stack", xaxis_title=f"time ({unit})")
    return style(fig, height=height)


def serving_sentence(name: str, m: Mapping) -> str:
    """One sentence: where the p99 request goes and what isolation would give."""
    tt = m["p99_split_ttft_s"]
    tp = m["p99_split_tpot_s"]
    big_t = max(tt, key=tt.get)
    big_p = max(tp, key=tp.get)
    label = dict(PARTS)
    out = (f"{name}: the p99 request waits {time_text(m['ttft_s']['p99'])} for its first token, mostly "
           f"{label[big_t]} ({tt[big_t] / max(sum(tt.values()), 1e-30):.0%}), then {time_text(m['tpot_s']['p99'])} "
           f"per token, mostly {label[big_p]} ({tp[big_p] / max(sum(tp.values()), 1e-30):.0%}).")
    iso = m.get("isolated")
    if iso:
        names = ", ".join(c["name"] for c in m.get("competitors", ()))
        out += (f" It shares links with {names}; in a traffic class of its own (design field serving_class, free "
                f"policy) its p99 TTFT would be {time_text(iso['ttft_p99_s'])} and its p99 TPOT "
                f"{time_text(iso['tpot_p99_s'])}.")
    if not m.get("stable", True):
        out += f" Overloaded: {m.get('note', '')}"
    return out

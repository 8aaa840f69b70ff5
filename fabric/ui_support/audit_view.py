"""What the dashboard's Audit section shows (pages/calibrate.py): the audit of uploaded traces, counters and a
mapping on an installed design, as tables and plotly figures. Never raises for bad input: the page shows
``{"error": ...}``."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from fabric.errors import FabricError
from fabric.ui_support.charts import FONT_SIZE, log_ticks, style, time_unit
from fabric.ui_support.messages import public_message

__all__ = ["run_audit", "rank_figure", "collectives_figure", "links_figure", "collective_rows", "straggler_rows",
           "comparison_rows", "link_rows", "tier_rows"]

_COLORS = {"compute": "#9aa5b1", "transfer": "#1f5fbf", "wait": "#d95f02", "measured": "#d95f02",
           "predicted": "#1f5fbf"}


def run_audit(traces, counters=(), mapping=None, design=None, *, catalog=None, samples: int = 64) -> dict:
    """``{"audit": Audit}`` or ``{"error": message}`` for (name, bytes) uploads; ``design`` a Design or None."""
    from fabric.audit import audit_files
    from fabric.audit.counters import read_counter_files

    if not traces:
        return {"error": "upload the per-rank trace files of the job"}
    try:
        ctr = None
        if counters:
            if design is None:
                return {"error": "link counters are compared on the installed design: choose one"}
            if mapping is None:
                return {"error": "link counters need the port -> link mapping file (switch,port,link)"}
            ctr = read_counter_files(list(counters))
        elif mapping is not None:
            return {"error": "the mapping is for link counters: upload the counter files too"}
        a = audit_files(list(traces), design=design, catalog=catalog, samples=samples, counters=ctr,
                        port_map=mapping)
    except FabricError as err:
        return {"error": public_message(err)}
    except Exception as err:   # a bug must not show a traceback
        return {"error": f"the audit failed ({type(err).__name__}: {public_message(err)})"}
    return {"audit": a}


def rank_figure(size) -> go.Figure:
    """Per rank: the mean step split into compute, exposed transfer and waiting for a late rank (stacked bars)."""
    ranks = [f"rank {r.rank}" for r in size.per_rank]
    scale, unit = time_unit([r.step_s for r in size.per_rank])
    parts = {"compute": [(r.step_s - r.exposed_s) * scale for r in size.per_rank],
             "transfer": [max(r.exposed_s - r.wait_s, 0.0) * scale for r in size.per_rank],
             "wait": [r.wait_s * scale for r in size.per_rank]}
    names = {"compute": "compute (and hidden communication)", "transfer": "exposed communication",
             "wait": "waiting for a late rank"}
    fig = go.Figure([go.Bar(name=names[k], x=ranks, y=v, marker_color=_COLORS[k],
                            hovertemplate=f"%{{x}}: %{{y:.4g}} {unit}<extra>{names[k]}</extra>")
                     for k, v in parts.items()])
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text=f"mean step time ({unit})")
    fig.update_xaxes(title_text="traced rank")
    return style(fig, height=340)


def collectives_figure(comparison) -> go.Figure:
    """Measured vs predicted time per step of each collective (log scale)."""
    rows = [r for r in comparison.rows if r.unit == "s" and r.kind != "step"]
    vals = [v for r in rows for v in (r.measured_s, r.predicted_s) if v > 0]
    scale, unit = time_unit(vals or [1.0])
    x = [r.what for r in rows]
    fig = go.Figure([
        go.Bar(name="measured", x=x, y=[r.measured_s * scale for r in rows], marker_color=_COLORS["measured"],
               hovertemplate=f"%{{x}}: %{{y:.4g}} {unit}<extra>measured</extra>"),
        go.Bar(name="predicted", x=x, y=[r.predicted_s * scale for r in rows], marker_color=_COLORS["predicted"],
               hovertemplate=f"%{{x}}: %{{y:.4g}} {unit}<extra>predicted</extra>")])
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text=f"time per step ({unit}, log)", type="log",
                     **log_ticks([v * scale for r in rows for v in (r.measured_s, r.predicted_s)]))
    fig.update_xaxes(title_text="collective (bytes per call), largest disagreement first")
    return style(fig, height=340)


def links_figure(hot, top: int = 12) -> go.Figure:
    """Measured vs predicted utilisation of the measured hottest links (horizontal bars, hottest on top)."""
    rows = list(hot.rows[:top])[::-1]
    y = [r.name + ("  (slow)" if r.speed_bps < 0.95 * r.design_bps else "") for r in rows]
    fig = go.Figure([
        go.Bar(name="measured (busy windows)", y=y, x=[100 * r.measured_utilisation for r in rows],
               orientation="h", marker_color=_COLORS["measured"],
               hovertemplate="%{y}: %{x:.1f} %<extra>measured</extra>"),
        go.Bar(name="predicted", y=y, x=[100 * r.predicted_utilisation for r in rows], orientation="h",
               marker_color=_COLORS["predicted"], hovertemplate="%{y}: %{x:.1f} %<extra>predicted</extra>")])
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="link utilisation (%)")
    fig.update_yaxes(title_text="link (from-to), measured hottest on top", tickfont=dict(size=FONT_SIZE - 1))
    return style(fig, height=max(320, 60 + 34 * len(rows)))


def _t(x: float) -> str:
    from fabric.units import time_text

    return time_text(x)


def _opt(x) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def straggler_rows(size) -> list[dict]:
    return [{"rank": g.rank, "straggler in": f"{g.steps} of {g.of_steps} step(s)",
             "others waited (mean)": _t(g.mean_wait_caused_s)} for g in size.stragglers]


def collective_rows(size) -> list[dict]:
    return [{"collective": c.kind or "?", "group": c.group or "world", "calls per step": round(c.calls_per_step, 3),
             "bytes per call": c.median_bytes, "kernel time per step": _t(c.comm_s_per_step),
             "exposed per step": _t(c.exposed_s_per_step)} for c in size.collectives]


def comparison_rows(comparison) -> list[dict]:
    out = []
    for r in comparison.rows:
        ratio = "inf" if math.isinf(r.ratio) else f"{r.ratio:.2f}x"
        m = f"{r.measured_s:.3g}" if r.unit == "ratio" else _t(r.measured_s)
        p = f"{r.predicted_s:.3g}" if r.unit == "ratio" else _t(r.predicted_s)
        out.append({"what": r.what, "measured": m, "predicted": p, "measured / predicted": ratio,
                    "usual cause": r.cause})
    return out


def link_rows(hot) -> list[dict]:
    return [{"link": r.name, "tier": r.tier, "measured": f"{r.measured_utilisation:.1%}",
             "predicted": f"{r.predicted_utilisation:.1%}",
             "speed": f"{r.speed_bps / 1e9:.4g} of {r.design_bps / 1e9:.4g} Gb/s",
             "bytes/step measured / predicted": f"{r.bytes_ratio:.3f}", "ECN marks/s": _opt(r.ecn_per_s),
             "pause frames/s": _opt(r.pause_per_s), "drops/s": _opt(r.drops_per_s), "partial": r.partial}
            for r in hot.rows]


def tier_rows(hot) -> list[dict]:
    return [{"tier": t.tier, "links": t.links, "measured": f"{t.measured_utilisation:.1%}",
             "predicted": f"{t.predicted_utilisation:.1%}", "ECN marks/s": _opt(t.ecn_per_s),
             "pause frames/s": _opt(t.pause_per_s), "drops/s": _opt(t.drops_per_s)} for t in hot.tiers]

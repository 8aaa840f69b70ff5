"""Measured vs predicted bus bandwidth over message size (plotly), as a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

__all__ = ["busbw_figure", "write_plot"]

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def busbw_figure(result):
    """One colour per collective: measured busbw as markers, the evaluator's prediction as a line (dashed when the
    collective was held out of the fit); log-scale size axis."""
    import plotly.graph_objects as go

    from fabric.ui_support.charts import bytes_tick, log_ticks

    fig = go.Figure()
    kinds = list(dict.fromkeys(p.kind for p in result.points))
    for i, kind in enumerate(kinds):
        rows = sorted((p for p in result.points if p.kind == kind), key=lambda p: p.bytes)
        color = _COLORS[i % len(_COLORS)]
        held = not rows[0].in_fit
        x = [p.bytes for p in rows]
        text = [f"{p.kind} {p.bytes:,} B<br>measured {p.measured_s * 1e6:,.1f} us, predicted "
                f"{p.predicted_s * 1e6:,.1f} us ({p.error:+.1%})" for p in rows]
        fig.add_trace(go.Scatter(x=x, y=[p.measured_busbw / 1e9 for p in rows], mode="markers", name=f"{kind} measured",
                                 marker={"color": color, "size": 7}, text=text, hoverinfo="text",
                                 legendgroup=kind))
        fig.add_trace(go.Scatter(x=x, y=[p.predicted_busbw / 1e9 for p in rows], mode="lines",
                                 name=f"{kind} predicted" + (" (held out)" if held else ""),
                                 line={"color": color, "dash": "dash" if held else "solid"}, text=text,
                                 hoverinfo="text", legendgroup=kind))
    ins = result.in_sample
    title = (f"fabric calibrate: {result.system.name}: bus bandwidth, measured vs predicted<br>"
             f"<sub>in-sample geomean error {ins['geomean_error']:.1%} (all sizes), "
             f"{ins['geomean_error_ge_1mb']:.1%} (>= 1 MB)")
    if result.out_of_sample:
        title += f"; out-of-sample {result.out_of_sample['geomean_error_ge_1mb']:.1%} (>= 1 MB)"
    fig.update_layout(title=title + "</sub>", xaxis={"type": "log", "title": "message size (bytes, nccl-tests size)"},
                      yaxis={"title": "bus bandwidth (GB/s)", "tickformat": ",~r"}, template="plotly_white",
                      hovermode="closest")
    # sizes ticked in full, 1-2-5 steps or powers of ten (1 kB, 10 kB, ...), never a bare minor digit
    fig.update_xaxes(**log_ticks([p.bytes for p in result.points], fmt=bytes_tick))
    return fig


def write_plot(result, path) -> Path:
    """Write the figure as one HTML file with plotly.js embedded (works offline)."""
    path = Path(path)
    busbw_figure(result).write_html(str(path), include_plotlyjs=True, full_html=True)
    return path

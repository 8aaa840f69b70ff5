"""Small static charts as inline SVG, for documents that must stay small and open anywhere (the review brief).

plotly.js alone is ~4.6 MB; a brief a review signs and mails around needs its charts, not an interactive viewer.
These functions draw what the brief shows (a cost-vs-p99 scatter with lines, horizontal bars, a histogram with
marked percentiles) as plain SVG text with no script, a few kilobytes each. Numbers on axes and labels use the same
formatters as the pages (:func:`fabric.units.time_text` for durations).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Series", "scatter_svg", "bars_svg", "histogram_svg", "nice_ticks"]

#: The markers of the human baselines, in their order, on every chart that draws them (the Search page's plotly
#: chart uses the same shapes, hollow: fabric.ui_support.charts).
BASELINE_MARKERS = ("circle", "diamond", "square", "triangle")

_FONT = "font-family='Helvetica, Arial, sans-serif'"
_PALETTE = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")


@dataclass
class Series:
    """One set of points: drawn as markers (``marker``: circle, square, diamond, triangle), joined by a line when
    ``line`` ("solid" or "dotted"); ``hollow`` markers for what is shown but not chosen."""

    name: str
    points: Sequence[tuple[float, float]]
    color: str = _PALETTE[0]
    marker: str = "circle"
    size: float = 5.0
    line: str | None = None
    hollow: bool = False
    labels: Sequence[str] = field(default_factory=tuple)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 times a power of ten)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    n = int(math.floor((hi - first) / step + 1e-9)) + 1      # whole multiples: no drift, at most ~count + 1
    return [round(first + i * step, 12) for i in range(max(0, min(n, 4 * count + 2)))]


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _marker(shape: str, x: float, y: float, r: float, color: str, hollow: bool) -> str:
    fill = "white" if hollow else color
    style = f"fill='{fill}' stroke='{color}' stroke-width='1.5'"
    if shape == "square":
        return f"<rect x='{x - r:.1f}' y='{y - r:.1f}' width='{2 * r:.1f}' height='{2 * r:.1f}' {style}/>"
    if shape == "diamond":
        return (f"<polygon points='{x:.1f},{y - r * 1.3:.1f} {x + r * 1.3:.1f},{y:.1f} {x:.1f},{y + r * 1.3:.1f} "
                f"{x - r * 1.3:.1f},{y:.1f}' {style}/>")
    if shape == "triangle":
        return (f"<polygon points='{x:.1f},{y - r * 1.3:.1f} {x + r * 1.2:.1f},{y + r:.1f} "
                f"{x - r * 1.2:.1f},{y + r:.1f}' {style}/>")
    return f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r:.1f}' {style}/>"


def _frame(width: int, height: int, title: str) -> list[str]:
    return [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
            f"role='img' aria-label='{_esc(title)}' {_FONT} font-size='12'>",
            f"<title>{_esc(title)}</title>", f"<rect width='{width}' height='{height}' fill='white'/>"]


def scatter_svg(series: Sequence[Series], *, x_title: str, y_title: str, x_text=None, y_text=None,
                hlines: Sequence[tuple[float, str]] = (), vlines: Sequence[tuple[float, str]] = (),
                width: int = 760, height: int = 380, title: str = "chart") -> str:
    """Points (and lines) of ``series`` on linear axes, ``hlines``/``vlines`` as dashed red lines with a label,
    ``x_text``/``y_text`` formatting tick values (default: 3 significant digits); a legend below."""
    x_text = x_text or (lambda v: f"{v:,.3g}")
    y_text = y_text or (lambda v: f"{v:,.3g}")
    pts = [p for s in series for p in s.points if all(math.isfinite(c) for c in p)]
    xs = [p[0] for p in pts] + [v for v, _ in vlines]
    ys = [p[1] for p in pts] + [v for v, _ in hlines]
    if not xs:
        xs, ys = [0.0, 1.0], [0.0, 1.0]
    x0, x1 = min(0.0, min(xs)), max(xs)
    y0, y1 = min(ys), max(ys)
    pad = (y1 - y0) or abs(y1) * 0.1 or 1.0
    y0, y1 = y0 - 0.08 * pad, y1 + 0.12 * pad
    x1 = x1 + 0.06 * ((x1 - x0) or 1.0)
    left, right, top = 78, 18, 14
    pw = width - left - right
    places, x, row = [], 0.0, 0                # the legend flows left to right, wrapping, ~6.5 px per character
    for s in series:
        w = 22 + 6.5 * len(s.name) + 14
        if x > 0 and x + w > pw:
            x, row = 0.0, row + 1
        places.append((x, row))
        x += w
    bottom = 46 + 18 * (row + 1)
    height = max(height, top + bottom + 160)
    ph = height - top - bottom

    def X(v):
        return left + (v - x0) / (x1 - x0) * pw

    def Y(v):
        return top + (1 - (v - y0) / (y1 - y0)) * ph

    out = _frame(width, height, title)
    for t in nice_ticks(x0, x1):
        out.append(f"<line x1='{X(t):.1f}' y1='{top}' x2='{X(t):.1f}' y2='{top + ph}' stroke='#eee'/>")
        out.append(f"<text x='{X(t):.1f}' y='{top + ph + 15}' text-anchor='middle' fill='#444'>{_esc(x_text(t))}</text>")
    for t in nice_ticks(y0, y1):
        out.append(f"<line x1='{left}' y1='{Y(t):.1f}' x2='{left + pw}' y2='{Y(t):.1f}' stroke='#eee'/>")
        out.append(f"<text x='{left - 6}' y='{Y(t) + 4:.1f}' text-anchor='end' fill='#444'>{_esc(y_text(t))}</text>")
    out.append(f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#999'/>")
    out.append(f"<text x='{left + pw / 2:.1f}' y='{top + ph + 32}' text-anchor='middle'>{_esc(x_title)}</text>")
    out.append(f"<text transform='translate(14,{top + ph / 2:.1f}) rotate(-90)' text-anchor='middle'>"
               f"{_esc(y_title)}</text>")
    for v, label in hlines:
        out.append(f"<line x1='{left}' y1='{Y(v):.1f}' x2='{left + pw}' y2='{Y(v):.1f}' stroke='#d62728' "
                   f"stroke-dasharray='6,4' stroke-width='1.5'/>")
        out.append(f"<text x='{left + pw - 4}' y='{Y(v) - 4:.1f}' text-anchor='end' fill='#d62728'>{_esc(label)}</text>")
    for v, label in vlines:
        out.append(f"<line x1='{X(v):.1f}' y1='{top}' x2='{X(v):.1f}' y2='{top + ph}' stroke='#7f3b08' "
                   f"stroke-dasharray='6,4' stroke-width='1.5'/>")
        out.append(f"<text x='{X(v) - 4:.1f}' y='{top + 12}' text-anchor='end' fill='#7f3b08'>{_esc(label)}</text>")
    for s in series:
        ok = [(x, y) for x, y in s.points if math.isfinite(x) and math.isfinite(y)]
        if s.line and len(ok) > 1:
            dash = " stroke-dasharray='3,3'" if s.line == "dotted" else ""
            path = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in sorted(ok))
            out.append(f"<polyline points='{path}' fill='none' stroke='{s.color}' stroke-width='1.5'{dash}/>")
        for i, (x, y) in enumerate(ok):
            out.append(_marker(s.marker, X(x), Y(y), s.size, s.color, s.hollow))
            if i < len(s.labels) and s.labels[i]:
                out.append(f"<text x='{X(x) + s.size + 3:.1f}' y='{Y(y) - s.size - 2:.1f}' fill='#222'>"
                           f"{_esc(s.labels[i])}</text>")
    for s, (dx, r) in zip(series, places):
        lx, ly = left + dx, top + ph + 50 + 18 * r
        out.append(_marker(s.marker, lx + 6, ly - 4, 5, s.color, s.hollow))
        out.append(f"<text x='{lx + 16:.1f}' y='{ly:.1f}'>{_esc(s.name)}</text>")
    out.append("</svg>")
    return "".join(out)


def bars_svg(labels: Sequence[str], values: Sequence[float], *, value_text=None, colors: Sequence[str] | None = None,
             x_title: str = "", width: int = 760, title: str = "chart") -> str:
    """Horizontal bars, one per label, from zero (negative values to the left), each with its value written."""
    value_text = value_text or (lambda v: f"{v:,.3g}")
    n = len(values)
    row = 26
    left, right, top = 230, 90, 10
    height = top + n * row + 44
    pw = width - left - right
    finite = [v for v in values if math.isfinite(v)] or [0.0]
    lo, hi = min(0.0, min(finite)), max(0.0, max(finite))
    if hi == lo:
        hi = lo + 1.0

    def X(v):
        return left + (v - lo) / (hi - lo) * pw

    out = _frame(width, height, title)
    for t in nice_ticks(lo, hi):
        out.append(f"<line x1='{X(t):.1f}' y1='{top}' x2='{X(t):.1f}' y2='{top + n * row}' stroke='#eee'/>")
        out.append(f"<text x='{X(t):.1f}' y='{top + n * row + 15}' text-anchor='middle' fill='#444'>"
                   f"{_esc(value_text(t))}</text>")
    for i, (label, v) in enumerate(zip(labels, values)):
        y = top + i * row + 4
        color = (colors[i] if colors else _PALETTE[0])
        text = label if len(label) <= 34 else label[:33] + "…"
        out.append(f"<text x='{left - 6}' y='{y + 13}' text-anchor='end'>{_esc(text)}</text>")
        if math.isfinite(v):
            a, b = sorted((X(0.0), X(v)))
            out.append(f"<rect x='{a:.1f}' y='{y}' width='{max(b - a, 1.0):.1f}' height='{row - 8}' fill='{color}'/>")
            out.append(f"<text x='{b + 4:.1f}' y='{y + 13}'>{_esc(value_text(v))}</text>")
        else:
            out.append(f"<text x='{X(0.0) + 4:.1f}' y='{y + 13}' fill='#777'>n/a</text>")
    out.append(f"<line x1='{X(0.0):.1f}' y1='{top}' x2='{X(0.0):.1f}' y2='{top + n * row}' stroke='#555'/>")
    out.append(f"<text x='{left + pw / 2:.1f}' y='{top + n * row + 34}' text-anchor='middle'>{_esc(x_title)}</text>")
    out.append("</svg>")
    return "".join(out)


def histogram_svg(samples: Sequence[float], *, marks: Sequence[tuple[float, str]] = (), bins: int = 30,
                  x_title: str = "", x_text=None, width: int = 760, height: int = 300, title: str = "chart") -> str:
    """A histogram of ``samples`` with vertical dashed lines at ``marks`` (value, label), e.g. p50/p95/p99."""
    x_text = x_text or (lambda v: f"{v:,.3g}")
    vals = [float(v) for v in samples if math.isfinite(float(v))]
    if not vals:
        vals = [0.0]
    lo, hi = min(vals), max(vals)
    for v, _ in marks:
        lo, hi = min(lo, v), max(hi, v)
    if hi - lo <= 1e-9 * max(abs(hi), 1e-12):      # every sample the same (to rounding): one bar in the middle
        mid = (hi + lo) / 2
        lo, hi = mid - (abs(mid) * 0.01 or 0.5), mid + (abs(mid) * 0.01 or 0.5)
    widthb = (hi - lo) / bins
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, int((v - lo) / widthb))] += 1
    left, right, top, bottom = 60, 18, 20, 44
    pw, ph = width - left - right, height - top - bottom
    cmax = max(counts) or 1

    def X(v):
        return left + (v - lo) / (hi - lo) * pw

    out = _frame(width, height, title)
    for t in nice_ticks(lo, hi):
        if lo <= t <= hi:
            out.append(f"<text x='{X(t):.1f}' y='{top + ph + 15}' text-anchor='middle' fill='#444'>"
                       f"{_esc(x_text(t))}</text>")
    for t in nice_ticks(0, cmax, 4):
        y = top + (1 - t / cmax) * ph
        out.append(f"<line x1='{left}' y1='{y:.1f}' x2='{left + pw}' y2='{y:.1f}' stroke='#eee'/>")
        out.append(f"<text x='{left - 6}' y='{y + 4:.1f}' text-anchor='end' fill='#444'>{t:g}</text>")
    for i, c in enumerate(counts):
        if c:
            x = X(lo + i * widthb)
            h = c / cmax * ph
            out.append(f"<rect x='{x:.1f}' y='{top + ph - h:.1f}' width='{max(pw / bins - 1, 1):.1f}' "
                       f"height='{h:.1f}' fill='#1f77b4'/>")
    for k, (v, label) in enumerate(marks):
        out.append(f"<line x1='{X(v):.1f}' y1='{top}' x2='{X(v):.1f}' y2='{top + ph}' stroke='#d62728' "
                   f"stroke-dasharray='5,4'/>")
        out.append(f"<text x='{X(v) + 3:.1f}' y='{top + 12 + 14 * k}' fill='#d62728'>{_esc(label)}</text>")
    out.append(f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#999'/>")
    out.append(f"<text x='{left + pw / 2:.1f}' y='{top + ph + 34}' text-anchor='middle'>{_esc(x_title)}</text>")
    out.append("</svg>")
    return "".join(out)

"""A one-file HTML report: headline numbers, tables and charts, readable offline.

Charts are plotly figures (interactive: plotly.js is embedded once, inline, in the page head, never fetched from a
CDN, ~4.6 MB) or static :class:`Svg` charts (a few kB each, no script: the review brief, which must stay small).
plotly.js is embedded only when the report holds a plotly figure. Either way the file opens on an air-gapped
laptop in a design review.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

__all__ = ["Section", "Svg", "report_html", "cell_text", "COLUMN_KINDS"]

#: How a table column is written: ``usd`` ($1,344,000), ``percent`` (a share: 0.42 -> 42.0 %), ``count`` (1,024),
#: ``number`` (4 significant digits, never in e-notation), ``text``.
COLUMN_KINDS = ("usd", "percent", "count", "number", "text")

_CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; font-size: 15px;
       color: #222; max-width: 1180px; margin: 24px auto; padding: 0 16px; }
h1 { font-size: 26px; margin-bottom: 4px; } h2 { font-size: 20px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.caption { color: #555; font-size: 14px; margin: 4px 0 10px; }
.facts { color: #333; } .facts li { margin: 2px 0; }
table { border-collapse: collapse; font-size: 14px; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; } th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.footer { color: #777; font-size: 13px; margin-top: 30px; }
"""


class Svg(str):
    """A static chart as inline SVG text (:mod:`fabric.ui_support.svg_charts`), a report section's content."""


class Section:
    """One block of the report: a heading, a one-line caption, and a figure, a table or a list of lines.

    ``formats`` says how a table's columns are written (column name -> one of :data:`COLUMN_KINDS`); numeric
    columns not named are written as ``number``.
    """

    def __init__(self, heading: str, caption: str, content, formats: Mapping[str, str] | None = None):
        self.heading = heading
        self.caption = caption
        self.content = content
        self.formats = dict(formats or {})
        bad = sorted(set(self.formats.values()) - set(COLUMN_KINDS))
        if bad:
            raise ValueError(f"unknown column format(s) {', '.join(bad)}; use {', '.join(COLUMN_KINDS)}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def cell_text(value, kind: str = "number") -> str:
    """A table cell as a person reads it: ``$1,344,000``, ``42.0 %``, ``1,024``, ``0.003412``; never e-notation.

    >>> cell_text(1.344e6, "usd"), cell_text(0.4213, "percent"), cell_text(1024.0, "count"), cell_text(3.4125e-5)
    ('$1,344,000', '42.1 %', '1,024', '0.00003413')
    """
    if not _is_number(value):
        return "" if value is None else str(value)
    v = float(value)
    if not np.isfinite(v):
        return "n/a" if np.isnan(v) else ("∞" if v > 0 else "-∞")
    if kind == "usd":
        return f"-${-v:,.0f}" if v < 0 else f"${v:,.0f}"
    if kind == "percent":
        return f"{v * 100:.1f} %"
    if kind == "count" or (kind == "number" and (abs(v) >= 1000 or (v.is_integer() and abs(v) < 1e15))):
        return f"{v:,.0f}"
    if kind == "text":
        return str(value)
    return np.format_float_positional(v, precision=4, unique=False, fractional=False, trim="-")


def _table_html(df: pd.DataFrame, formats: Mapping[str, str] | None = None) -> str:
    formats = formats or {}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, row in df.iterrows():
        cells = []
        for col, v in zip(df.columns, row.tolist()):
            kind = formats.get(col, "number")
            num = _is_number(v) and kind != "text"
            text = cell_text(v, kind) if num else ("" if v is None else str(v))
            cells.append(f"<td class='num'>{html.escape(text)}</td>" if num else f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def report_html(title: str, facts: Sequence[str], sections: Sequence[Section], *, generated_by: str = "fabric") -> str:
    """The whole report as one HTML string (plotly.js inline once when a section holds a plotly figure; no network
    access needed to view it)."""
    interactive = any(isinstance(s.content, go.Figure) for s in sections)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style>",
        (f"<script type='text/javascript'>{get_plotlyjs()}</script>" if interactive else "") + "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<ul class='facts'>" + "".join(f"<li>{html.escape(str(f))}</li>" for f in facts) + "</ul>",
    ]
    for i, s in enumerate(sections):
        parts.append(f"<h2>{html.escape(s.heading)}</h2><div class='caption'>{html.escape(s.caption)}</div>")
        c = s.content
        if isinstance(c, go.Figure):
            parts.append(c.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig{i}",
                                   config={"displaylogo": False, "responsive": True}))
        elif isinstance(c, Svg):
            parts.append(f"<div class='chart'>{c}</div>")
        elif isinstance(c, pd.DataFrame):
            parts.append(_table_html(c, s.formats))
        else:
            parts.append("<ul>" + "".join(f"<li>{html.escape(str(x))}</li>" for x in c) + "</ul>")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    charts = ("Charts are interactive (hover, zoom); " if interactive else
              "Charts are static pictures drawn into the file; " if any(isinstance(s.content, Svg) for s in sections)
              else "")
    parts.append(f"<div class='footer'>Generated by {html.escape(generated_by)} on {stamp}. {charts}"
                 "this file needs no network access.</div></body></html>")
    return "".join(parts)

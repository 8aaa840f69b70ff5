"""The dashboard's robust design across a job mix (:mod:`fabric.search.robust`): the objective from the session's
workloads, and what a robust front shows: each design's spread across cases, the brittle ones, each case's own
front beside the robust one.

A robust search judges every design on every (workload, scenario) case. The cases run at different paces, so the
page shows a design's p99 on a case relative to the search's reference design on that case (the first buildable
human baseline, the fat tree 1:1; its p99 per case is :func:`case_references`), and its robust p99 in seconds
(the slowdown the mode combines, times the weighted mean reference; see :mod:`fabric.search.robust`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import PurePath

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fabric.errors import FabricError
from fabric.evaluate import SCENARIO_PRESETS
from fabric.search.robust import ROBUST_MODES, RobustObjective, brittle_designs, case_front, on_front_for_case
from fabric.ui_support.charts import FAMILY_COLORS, money_text, style, time_unit

__all__ = ["MODES", "MODE_TEXT", "MAX_MIX", "SCENARIO_NAMES", "MAX_WEIGHT", "workload_name", "unique_names",
           "build_objective",
           "is_robust", "case_references", "case_slowdowns", "spread_ranges", "brittle_notes", "front_columns",
           "case_fronts_figure", "case_front_table", "mix_summary"]

#: Robust modes the Workload page offers ("off": the single-workload search).
MODES = ("off",) + ROBUST_MODES
#: How pages name a mode.
MODE_TEXT = {"off": "off", "worst": "worst case", "mean": "weighted mean"}
#: Most workloads a session's mix holds (the current one included): each costs a full evaluation per scenario.
MAX_MIX = 6
#: Scenario presets a robust search may judge designs under.
SCENARIO_NAMES = tuple(SCENARIO_PRESETS)
MAX_WEIGHT = 1e6
_CASE_COLORS = ("#1f5fbf", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#e6ab02", "#666666")


def workload_name(choice: Mapping) -> str:
    """A short name of a workload choice for case labels: ``mixtral-8x7b``, ``llama3-70b@256``, ``rank0``."""
    kind = choice.get("kind")
    if kind == "sample":
        return str(choice["name"]).split(".json")[0]
    if kind == "plan":
        return f"{choice['preset']}@{int(choice['gpus'])}"
    names = [str(n) for n in choice.get("names", ())]
    if names:
        stem = PurePath(names[0]).name.split(".")[0] or "upload"
        return stem if len(names) == 1 else f"{stem}+{len(names) - 1}"
    return "upload"


def unique_names(names: Sequence[str]) -> list[str]:
    """``names`` made unique (``a``, ``a-2``, ...) and free of the case separator ``|``."""
    out, used = [], set()
    for n in names:
        base = str(n).replace("|", "/") or "workload"
        name, k = base, 2
        while name in used:
            name, k = f"{base}-{k}", k + 1
        used.add(name)
        out.append(name)
    return out


def build_objective(entries: Sequence[tuple], scenarios: Sequence[str], mode: str) -> RobustObjective:
    """The robust objective of ``entries`` ``(name, workload, weight)`` under the scenario presets ``scenarios``;
    FabricError naming what is wrong (a mode, a scenario, a weight, too few workloads or cases)."""
    if mode not in ROBUST_MODES:
        raise FabricError(f"robust mode {mode!r}: choose {' or '.join(ROBUST_MODES)}")
    if not scenarios:
        raise FabricError("choose at least one scenario for the robust search (baseline is the healthy network)")
    unknown = [s for s in scenarios if s not in SCENARIO_PRESETS]
    if unknown:
        raise FabricError(f"unknown scenario(s) {', '.join(map(repr, unknown))}; choose from "
                          f"{', '.join(SCENARIO_NAMES)}")
    if len(entries) + len(scenarios) < 3:
        one = f"{entries[0][0]} × {scenarios[0]}" if entries else "no workload"
        raise FabricError(f"a robust search needs at least two cases (workload × scenario) and this mix has one, "
                          f"{one}: add a workload or a scenario")
    if len(entries) > MAX_MIX:
        raise FabricError(f"a robust search takes at most {MAX_MIX} workloads; this mix has {len(entries)}")
    for name, _, w in entries:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or not 0 < w <= MAX_WEIGHT:
            raise FabricError(f"the weight of workload {name!r} must be a number above 0 and at most "
                              f"{MAX_WEIGHT:,.0f}, got {w!r}")
    names = unique_names([n for n, _, _ in entries])
    return RobustObjective(tuple((n, wl, float(w)) for n, (_, wl, w) in zip(names, entries)),
                           tuple(SCENARIO_PRESETS[s] for s in dict.fromkeys(scenarios)), mode=mode)


def mix_summary(obj: RobustObjective) -> str:
    """``robust (worst) over a, b × baseline, fail-spine: 4 cases``."""
    scen = ", ".join(s.name for s in obj.scenarios)
    n = len(obj.cases)
    return f"{obj.name} × {scen}: {n} case{'s' if n != 1 else ''}"


def is_robust(records: Sequence[Mapping]) -> bool:
    """True when the records come from a robust search (they carry every case's p99)."""
    return any(r.get("p99_by_case") for r in records)


def case_references(baselines: Sequence[Mapping]) -> tuple[str, dict]:
    """``(baseline name, {case: p99 s})``: the reference a robust search measured every case against, the first
    buildable baseline (:func:`fabric.search.run._with_robust_references` takes the same one, with the same seed
    and samples, so these are its references exactly)."""
    for b in baselines:
        if b.get("buildable", True) and b.get("p99_by_case"):
            return b["design"], dict(b["p99_by_case"])
    return "", {}


def case_slowdowns(rec: Mapping, refs: Mapping) -> dict:
    """``{case: p99 on the case / reference p99 on it}`` of a record (1.0: as fast as the reference)."""
    return {c: p / refs[c] for c, p in (rec.get("p99_by_case") or {}).items() if refs.get(c)}


def spread_ranges(front: Sequence[Mapping], refs: Mapping) -> dict:
    """Per front design (key): the lowest and highest of its cases' slowdowns, in the robust p99's seconds (each
    slowdown times the record's scale ``p99_s / robust_slowdown``), for bars on the Pareto chart. In worst mode the
    top of a bar is the design's robust p99; in mean mode the point lies inside its bar."""
    out = {}
    for r in front:
        s = case_slowdowns(r, refs)
        slow = r.get("robust_slowdown")
        if not s or not slow:
            continue
        scale = r["p99_s"] / slow
        out[r["key"]] = (min(s.values()) * scale, max(s.values()) * scale)
    return out


def brittle_notes(front: Sequence[Mapping], records: Sequence[Mapping], *, tolerance: float = 0.10) -> dict:
    """``{design name: "best buy at its price for A; 36% slower than the best at its price for B"}`` of the
    brittle front designs (:func:`fabric.search.robust.brittle_designs`)."""
    out = {}
    for b in brittle_designs(front, records, tolerance=tolerance):
        case, worst = max(b["worse_for"].items(), key=lambda kv: kv[1])
        out[b["design"]] = (f"best buy at its price for {', '.join(b['best_for'])}; {worst:.0%} slower than the best "
                         f"at its price for {case}")
    return out


def front_columns(front: Sequence[Mapping], records: Sequence[Mapping], baselines: Sequence[Mapping]
                  ) -> pd.DataFrame:
    """The robust columns of the front table, one row per front design (records or front-table rows) in
    ``front``'s order: robust slowdown,
    spread (slowest case over fastest case, relative to the reference), the worst case, the brittle note, and every
    case's p99 in seconds (``p99 <case> (s)``)."""
    _, refs = case_references(baselines)
    notes = brittle_notes(front, records)
    cases = sorted({c for r in front for c in (r.get("p99_by_case") or {})})
    rows = []
    for r in front:
        s = case_slowdowns(r, refs)
        row = {"robust slowdown": r.get("robust_slowdown"),
               "spread across cases": (max(s.values()) / min(s.values())) if s else None,
               "worst case": max(s, key=s.get) if s else "",
               "brittle": notes.get(r.get("design"), "")}
        for c in cases:
            row[f"p99 {c} (s)"] = (r.get("p99_by_case") or {}).get(c)
        rows.append(row)
    return pd.DataFrame(rows)


def case_front_table(result) -> pd.DataFrame:
    """Per case: its own front among the evaluated designs beside the robust front: how many designs each has,
    how many are on both, and the fastest p99 on that case of each (the robust front gives up speed on a case to
    hold up on the others)."""
    records, front = result.records, result.front
    cases = sorted({c for r in records if r.get("feasible") for c in (r.get("p99_by_case") or {})})
    rows = []
    for c in cases:
        own = case_front(records, c)
        on_robust = [r for r in front if c in (r.get("p99_by_case") or {})]
        best_own = min((r["p99_by_case"][c] for r in own), default=float("nan"))
        best_rob = min((r["p99_by_case"][c] for r in on_robust), default=float("nan"))
        rows.append({"case": c, "own front (designs)": len(own),
                     "also on the robust front": sum(1 for r in own if on_front_for_case(r, front, c)),
                     "fastest p99, own front (s)": best_own, "fastest p99, robust front (s)": best_rob,
                     "robust front slower by": best_rob / best_own - 1.0 if best_own > 0 else float("nan"),
                     "cheapest, own front (USD)": min((r["cost_usd"] for r in own), default=float("nan"))})
    return pd.DataFrame(rows)


def case_fronts_figure(result, *, height_per_row: int = 260) -> go.Figure:
    """One panel per case: network capex (x) against the p99 on that case (y, in the unit that suits it): the
    case's own front (line and grey dots) and the robust front's designs on that case (coloured by family,
    outlined when also on the case's own front)."""
    records, front = result.records, result.front
    cases = sorted({c for r in records if r.get("feasible") for c in (r.get("p99_by_case") or {})})
    if not cases:
        return style(go.Figure(), height=200)
    cols = min(3, len(cases))
    rows = math.ceil(len(cases) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=cases, horizontal_spacing=0.08,
                        vertical_spacing=0.16 if rows > 1 else 0.1)
    shown = set()
    for i, c in enumerate(cases):
        row, col = i // cols + 1, i % cols + 1
        own = case_front(records, c)
        on = [r for r in front if c in (r.get("p99_by_case") or {})]
        scale, unit = time_unit([r["p99_by_case"][c] for r in own + on] or [1.0])
        fig.add_trace(go.Scatter(
            x=[r["cost_usd"] for r in own], y=[r["p99_by_case"][c] * scale for r in own], mode="lines+markers",
            line=dict(color="#888", width=1.5, dash="dot"), marker=dict(color="#bbbbbb", size=8),
            name="the case's own front", legendgroup="own", showlegend="own" not in shown,
            hovertext=[f"<b>{r['design']}</b><br>{money_text(r['cost_usd'])} · p99 on {c} "
                       f"{r['p99_by_case'][c] * scale:,.3g} {unit}" for r in own], hoverinfo="text"),
            row=row, col=col)
        shown.add("own")
        for fam in sorted({r["family"] for r in on}):
            pts = [r for r in on if r["family"] == fam]
            fig.add_trace(go.Scatter(
                x=[r["cost_usd"] for r in pts], y=[r["p99_by_case"][c] * scale for r in pts], mode="markers",
                marker=dict(color=FAMILY_COLORS.get(fam, "#333"), size=11,
                            line=dict(color=["black" if on_front_for_case(r, own, c) else "white"
                                             for r in pts], width=2)),
                name=f"robust front: {fam.replace('_', '-')}", legendgroup=f"robust-{fam}",
                showlegend=f"robust-{fam}" not in shown,
                hovertext=[f"<b>{r['design']}</b> (robust front)<br>{money_text(r['cost_usd'])} · p99 on {c} "
                           f"{r['p99_by_case'][c] * scale:,.3g} {unit}" for r in pts], hoverinfo="text"),
                row=row, col=col)
            shown.add(f"robust-{fam}")
        fig.update_yaxes(title_text=f"p99 ({unit})", row=row, col=col)
        fig.update_xaxes(tickprefix="$", tickformat="~s", row=row, col=col,
                         title_text="network capex (USD)" if row == rows else None)
    height = height_per_row * rows + 110
    fig = style(fig, height=height, legend_below=False)
    fig.update_annotations(font_size=13)
    # the legend above the first row's panel titles, not on them (y in the plot area's height, 30 px up)
    fig.update_layout(margin=dict(t=80), legend=dict(y=1.0 + 30 / max(1, height - 90)))
    return fig

"""What the Upgrade page shows of an upgrade search and a growth plan (no streamlit here): the installed fabric
from the page's choices, the rows of the front table, the chart of upgrade cost versus p99, the growth table."""

from __future__ import annotations

import json
from typing import Mapping

import plotly.graph_objects as go

from fabric.ui_support.charts import FONT_SIZE, money_text, style, time_unit

__all__ = ["installed_design", "upgrade_rows", "upgrade_figure", "growth_rows", "parse_stage_targets", "KIND_NAMES",
           "LEAF_RATIO_CHOICES"]

#: Names of the upgrade kinds as the page shows them.
KIND_NAMES = {"none": "installed (no change)", "free": "free policy change", "hardware": "hardware upgrade"}
_KIND_COLORS = {"none": "black", "free": "#2ca02c", "hardware": "#1f77b4"}
#: Leaf oversubscription ratios offered for the installed reference design.
LEAF_RATIO_CHOICES = (1.0, 1.5, 2.0, 3.0, 4.0)


def installed_design(preset: str, gpus: int, leaf_ratio: float, routing: str):
    """The installed fabric as a reference design: ``preset`` at ``gpus`` GPUs with leaf oversubscription
    ``leaf_ratio`` (2.0 = 2:1) and ``routing``."""
    from fabric.reference.presets import preset_design

    d = preset_design(preset, gpus)
    return d.replace(oversubscription=(float(leaf_ratio), d.oversub(1)), routing=routing, spines=None,
                     name=f"installed {preset} {leaf_ratio:g}:1 ({gpus:,} GPUs, {routing})")


def upgrade_rows(result: Mapping) -> list[dict]:
    """One row per upgrade of ``result`` (``UpgradeResult.to_dict()``) shown on the page: the front, then the
    other offers meeting the limits and target; the answer first."""
    best = result.get("best")
    seen, rows = set(), []
    order = ([best] if best else []) + list(result.get("front", [])) + list(result.get("offers", []))
    for u in order:
        # the same design twice, or a policy variant that changes nothing measurable (same kind, cost and p99:
        # e.g. a placement rule on a fabric where it places the same way) is shown once, the first (fewest changes)
        key = json.dumps(u["design"], sort_keys=True)
        same = (u["kind"], round(u["net_usd"], 2), u["p99_s"])
        if key in seen or same in seen:
            continue
        seen.update((key, same))
        rows.append({"answer": best is not None and u is best, "change": "; ".join(u["changes"]) or "no change",
                     "kind": KIND_NAMES.get(u["kind"], u["kind"]), "buys (USD)": u["added_usd"],
                     "resale (USD)": u["resale_usd"], "net (USD)": u["net_usd"], "p99 (s)": u["p99_s"],
                     **({"p99 under worst failure (s)": u.get("p99_under_failure_s")}
                        if result.get("failure_front") else {}),
                     "facility power (kW)": u["facility_power_w"] / 1e3,
                     "max compute rack (kW)": u["max_compute_rack_w"] / 1e3,
                     "servers re-cabled (links)": u["recabled_server_links"],
                     "fewest free ports on a switch": u.get("fewest_free_ports")})
    return rows


def _hover(u: Mapping, scale: float, unit: str) -> str:
    return (f"<b>{'; '.join(u['changes']) or 'no change'}</b><br>buys {money_text(u['added_usd'])}"
            f" · net {money_text(u['net_usd'])}<br>p99 {u['p99_s'] * scale:,.4g} {unit}")


def upgrade_figure(result: Mapping, *, failure: bool = False, height: int = 420) -> go.Figure:
    """Net upgrade cost (USD) vs p99 step time: the front as a line, free policy changes green, hardware blue, the
    installed fabric black, the budget and the p99 target dashed. ``failure``: p99 under the worst single
    failure instead."""
    field = "p99_under_failure_s" if failure else "p99_s"
    front = [u for u in result.get("failure_front" if failure else "front", []) if u.get(field) is not None]
    offers = [u for u in result.get("offers", []) if u.get(field) is not None]
    inst = result["installed"]
    base_p99 = inst.get("p99_under_failure_s" if failure else "p99_s")
    pts = front + offers
    scale, unit = time_unit([u[field] for u in pts] + ([base_p99] if base_p99 else []) or [1.0])
    fig = go.Figure()
    if front:
        fig.add_trace(go.Scatter(x=[u["net_usd"] for u in front], y=[u[field] * scale for u in front],
                                 mode="lines", line=dict(color="#555", width=1.5, dash="dot"),
                                 name="upgrade front", hoverinfo="skip"))
    for kind in ("free", "hardware"):
        rows = [u for u in front if u["kind"] == kind]
        if rows:
            fig.add_trace(go.Scatter(
                x=[u["net_usd"] for u in rows], y=[u[field] * scale for u in rows], mode="markers",
                name=KIND_NAMES[kind], marker=dict(color=_KIND_COLORS[kind], size=12, line=dict(color="white",
                                                                                                 width=1)),
                hovertext=[_hover(u, scale, unit) for u in rows], hoverinfo="text"))
    if base_p99:
        fig.add_trace(go.Scatter(x=[0.0], y=[base_p99 * scale], mode="markers", name="installed fabric",
                                 marker=dict(color="black", size=16, symbol="square"),
                                 hovertext=["installed fabric"], hoverinfo="text"))
    best = result.get("best")
    if best and best.get(field) is not None:
        fig.add_trace(go.Scatter(x=[best["net_usd"]], y=[best[field] * scale], mode="markers", name="the answer",
                                 hoverinfo="skip", marker=dict(size=26, color="rgba(0,0,0,0)",
                                                               line=dict(color="#d62728", width=3))))
    limits = result.get("limits", {})
    target = limits.get("max_p99_under_failure_s" if failure else "p99_target_s")
    if target:
        fig.add_hline(y=target * scale, line=dict(color="#d62728", dash="dash", width=2),
                      annotation_text=f"p99 target {target * scale:,.4g} {unit}", annotation_position="top right",
                      annotation_font=dict(color="#d62728", size=FONT_SIZE - 1))
    if limits.get("budget_usd") is not None:
        fig.add_vline(x=limits["budget_usd"], line=dict(color="#7f3b08", dash="dash", width=2),
                      annotation_text=f"budget {money_text(limits['budget_usd'])}", annotation_position="top left",
                      annotation_font=dict(color="#7f3b08", size=FONT_SIZE - 1))
    fig.update_xaxes(title_text="net upgrade cost (USD)", tickprefix="$", tickformat="~s", rangemode="tozero")
    fig.update_yaxes(title_text=f"p99 step time{' under the worst single failure' if failure else ''} ({unit})")
    return style(fig, height=height, legend_below=True)


def growth_rows(plan: Mapping) -> list[dict]:
    """One row per stage of a growth plan (``GrowthPlan.to_dict()``): the plan's fabric and purchases beside the
    from-scratch design."""
    rows = []
    for i, s in enumerate(plan["stages"]):
        rows.append({"stage": i + 1, "GPUs": s["gpus"], "p99 target (s)": s["p99_target_s"],
                     "target from": s.get("p99_target_from") or "given",
                     "plan": s["plan"]["label"], "plan p99 (s)": s["plan"]["p99_s"], "buys (USD)": s["buy_usd"],
                     "takes out": ", ".join(f"{n:,} {m}" for m, n in s["take_out"].items()) or "nothing",
                     "from scratch": s["scratch"]["label"], "from scratch new (USD)": s["scratch"]["cost_usd"],
                     "from scratch throws away": ", ".join(f"{n:,} {m}" for m, n in
                                                           s["scratch_throws_away"].items()) or "nothing"})
    return rows


def parse_stage_targets(text: str, stages: int) -> tuple:
    """``"900, 950"`` (ms) -> ``(0.9, 0.95)`` seconds, one per stage; empty -> ``(None,) * stages`` (the default
    targets of :func:`fabric.brownfield.plan_growth`)."""
    from fabric.errors import FabricError

    text = str(text or "").strip()
    if not text:
        return (None,) * stages
    try:
        out = tuple(float(x) / 1e3 for x in text.split(",") if x.strip())
    except ValueError as err:
        raise FabricError(f"p99 target per stage: expected numbers of ms separated by commas, got {text!r}") from err
    if len(out) != stages or any(not (t > 0 and t < float("inf")) for t in out):
        raise FabricError(f"p99 target per stage: give one target > 0 ms per stage ({stages}), got {text!r}")
    return out

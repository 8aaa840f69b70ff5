"""Side-by-side comparison of designs: metrics, gene-by-gene differences, and what the extra money buys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from fabric.ui_support.designs import GENE_COLUMNS, GENE_LABELS, design_genes, gene_value_text

__all__ = ["metrics_frame", "gene_frame", "money_deltas"]


def metrics_frame(rows: Sequence[Mapping]) -> pd.DataFrame:
    """One column per design: network capex, power, p50/p95/p99 and the lower bound (rows are the metrics).

    Each row of ``rows`` has ``name``, ``cost_usd``, ``power_w`` and ``step_time_s`` (p50/p95/p99) and
    ``lower_bound_s``.
    """
    data = {}
    for r in rows:
        st = r["step_time_s"]
        data[r["name"]] = {"network capex (USD)": f"${r['cost_usd']:,.0f}",
                           "network power (kW)": f"{r['power_w'] / 1e3:,.1f}",
                           "p50 step time (s)": f"{st['p50']:.4f}", "p95 step time (s)": f"{st['p95']:.4f}",
                           "p99 step time (s)": f"{st['p99']:.4f}",
                           "lower bound (s)": f"{r['lower_bound_s']:.4f}"}
    return pd.DataFrame(data)


def gene_frame(designs: Mapping[str, object], *, only_differences: bool = False) -> pd.DataFrame:
    """Genes (rows) of each design (columns), with a ``differs`` column; ``designs`` maps name -> Design."""
    genes = {name: design_genes(d) for name, d in designs.items()}
    rows = []
    for g in GENE_COLUMNS:
        vals = {name: gene_value_text(g, genes[name][g]) for name in genes}
        differs = len(set(vals.values())) > 1
        if only_differences and not differs:
            continue
        rows.append({"gene": GENE_LABELS[g], **vals, "differs": "yes" if differs else ""})
    return pd.DataFrame(rows, columns=["gene", *genes, "differs"])


def money_deltas(rows: Sequence[Mapping]) -> list[dict]:
    """What each design buys relative to the first: capex and power change, p99 and p50 change, and the price
    of each millisecond of p99 saved (when it is saved for more money) or the saving (when it costs less).

    Returns one dict per design after the first with the numbers and a ``sentence``.
    """
    if len(rows) < 2:
        return []
    ref = rows[0]
    out = []
    for r in rows[1:]:
        d_cost = r["cost_usd"] - ref["cost_usd"]
        d_power = r["power_w"] - ref["power_w"]
        d_p99 = r["step_time_s"]["p99"] - ref["step_time_s"]["p99"]
        d_p50 = r["step_time_s"]["p50"] - ref["step_time_s"]["p50"]
        rel_p99 = d_p99 / ref["step_time_s"]["p99"] if ref["step_time_s"]["p99"] else 0.0
        pct = _pct(abs(rel_p99))
        per_ms = None
        same_cost, same_p99 = abs(d_cost) < 0.5, abs(d_p99) <= 1e-12 * max(1.0, abs(ref["step_time_s"]["p99"]))
        cost = ("costs the same as" if same_cost else
                f"costs ${abs(d_cost):,.0f} {'more' if d_cost > 0 else 'less'} than") + f" '{ref['name']}'"
        speed = ("has the same p99 step" if same_p99 else
                 f"is {abs(d_p99) * 1e3:,.1f} ms ({pct}) {'faster' if d_p99 < 0 else 'slower'} at p99")
        if same_cost and same_p99:
            verdict = ": the same on both"
        elif d_cost > 0 and d_p99 < 0 and not same_p99:
            per_ms = d_cost / (-d_p99 * 1e3)
            verdict = f": ${per_ms:,.0f} per ms of p99"
        elif (d_cost < 0 or same_cost) and (d_p99 < 0 or same_p99):
            verdict = ": better on both" if not (same_cost or same_p99) else ": better"
        elif (d_cost > 0 or same_cost) and (d_p99 > 0 or same_p99):
            verdict = ": worse on both" if not (same_cost or same_p99) else ": worse"
        else:
            verdict = ""
        sentence = f"'{r['name']}' {cost} and {speed}{verdict}."
        out.append({"design": r["name"], "reference": ref["name"], "delta_cost_usd": d_cost,
                    "delta_power_w": d_power, "delta_p99_s": d_p99, "delta_p50_s": d_p50,
                    "relative_p99": rel_p99, "usd_per_ms_p99": per_ms, "sentence": sentence})
    return out


def _pct(x: float) -> str:
    """A share as a percentage with the digits a small difference needs (``0.04%``, ``3.1%``)."""
    return f"{x:.2%}" if x < 0.01 else f"{x:.1%}"

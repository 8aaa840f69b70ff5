"""The hardware catalog as the Constraints page shows it: every column named in words with its unit, and a blank
in an optional column said in words (docs/catalog.md: what a blank means there), never ``None`` or ``nan``.

No streamlit here: the page turns :func:`column_labels` into column configs and shows :func:`display_table`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

__all__ = ["COLUMN_LABELS", "BLANK_TEXT", "EDITABLE", "column_labels", "display_table", "merge_edits"]

#: Every catalog column (fabric.catalog tables) in words, with its unit.
COLUMN_LABELS = {
    "model": "model", "vendor": "vendor", "fabric": "fabric", "kind": "kind", "ports": "ports",
    "port_speed_gbps": "port speed (Gb/s)", "speed_gbps": "speed (Gb/s)", "price_usd": "price (USD)",
    "power_w": "power (W)", "latency_ns": "latency (ns)", "ports_per_cage": "ports per cage",
    "sharp_trees": "SHARP trees (in-network reduction)", "reach_m": "reach (m)", "ports_per_module": "ports per module",
    "side": "plugs into", "medium": "fibre", "scale_up_gbps": "NVLink (Gb/s)",
    "scale_up_domain_max": "largest NVLink domain (GPUs)", "bf16_tflops": "BF16 (TFLOPS)",
    "server_gpus": "GPUs per server", "server_price_usd": "server price (USD)", "server_power_w": "server power (W)",
    "nvls": "NVLink SHARP (NVLS)", "max_nic_gbps_per_gpu": "most NIC bandwidth per GPU (Gb/s)",
    "node_gpus": "GPUs per host", "hbm_gb": "HBM (GB)", "source": "source",
}
#: What a blank cell of an optional column means (docs/catalog.md, "Optional columns").
BLANK_TEXT = {
    "sharp_trees": "no limit known",
    "max_nic_gbps_per_gpu": "no limit known",
    "ports_per_cage": "1",
    "hbm_gb": "not given",
}
#: The columns the page lets the user edit.
EDITABLE = ("price_usd", "power_w", "latency_ns", "server_price_usd", "server_power_w")


def column_labels(columns) -> dict[str, str]:
    """``column -> label`` for every column (an unknown column keeps its name with spaces for underscores)."""
    return {c: COLUMN_LABELS.get(c, str(c).replace("_", " ")) for c in columns}


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """The table to show: read-only columns with blanks get the words :data:`BLANK_TEXT` says (the column turns
    into text: a whole number stays whole, ``64``, not ``64.0``); editable columns stay numbers."""
    out = df.copy()
    for col in out.columns:
        if col in EDITABLE or not out[col].isna().any():
            continue
        blank = BLANK_TEXT.get(col, "not given")
        out[col] = [blank if pd.isna(v) else _cell(v) for v in out[col]]
    return out


def _cell(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return f"{int(v):,}"
    if isinstance(v, (int, float)):
        return f"{v:,}"
    return str(v)


def merge_edits(base: Mapping[str, pd.DataFrame], edited: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The catalog tables after an edit: ``base`` with the editable columns taken from ``edited`` (the shown
    tables, whose read-only columns may be text: they are never read back)."""
    out = {}
    for name, df in base.items():
        new = df.copy()
        shown = edited.get(name)
        if shown is not None:
            for col in EDITABLE:
                if col in new.columns and col in shown.columns:
                    new[col] = shown[col].to_numpy()
        out[name] = new
    return out

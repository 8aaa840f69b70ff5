"""Downloadable forms of a design and its bill of materials (the dashboard's export buttons).

The CSV has one row per item and place with unit and total price (USD) and power (W), then a ``total`` row; the
JSON is the document ``fabric build --json`` prints (:func:`fabric.cost.document.fabric_document`: the bill of
materials, the design file as ``design_spec``, the racks), so the same figures travel to a spreadsheet or a
script and the file loads as an installed fabric on the Upgrade page and in ``fabric upgrade --existing``.
"""

from __future__ import annotations

import json

import pandas as pd

from fabric.design import Design

__all__ = ["BOM_COLUMNS", "bom_frame", "bom_csv_text", "design_bom_json_text"]

#: Columns of the bill-of-materials export, in order.
BOM_COLUMNS = ("category", "model", "where", "count", "unit_price_usd", "price_usd", "unit_power_w", "power_w",
               "source")


def bom_frame(bom: dict) -> pd.DataFrame:
    """The items of a bill of materials (the ``to_dict`` form) as a table, with a last ``total`` row."""
    items = pd.DataFrame(bom["items"], columns=list(BOM_COLUMNS))
    total = {c: "" for c in BOM_COLUMNS}
    total.update({"category": "total", "price_usd": float(bom["cost_usd"]), "power_w": float(bom["power_w"])})
    return pd.concat([items, pd.DataFrame([total])], ignore_index=True)


def bom_csv_text(bom: dict) -> str:
    """The bill of materials as CSV text (USD and W, one row per item and place, then the total)."""
    return bom_frame(bom).to_csv(index=False)


def design_bom_json_text(design: Design, bom: dict, racks: dict | None = None) -> str:
    """The design, its bill of materials and (when given) its racks as the ``fabric build --json`` document."""
    from fabric.cost.document import fabric_document

    return json.dumps(fabric_document(design, bom, racks), indent=2, default=float)

"""The fabric document: a design beside its bill of materials (and its racks), the one JSON form that
``fabric build --json`` prints and the dashboard's "Design and bill of materials (JSON)" button downloads.

``fabric upgrade --existing FILE``, ``fabric plan-growth --existing FILE`` and the Upgrade page read it back as an
installed fabric (:func:`fabric.brownfield.load_installed`): ``design_spec`` says how the fabric is cabled and
``items`` what is on the floor. One schema for every writer and reader, so an export always loads.
"""

from __future__ import annotations

__all__ = ["fabric_document"]


def fabric_document(design, bom: dict, racks: dict | None = None) -> dict:
    """``{"design": name, <bill of materials: switches, links, items, cost_usd, ...>, "design_spec": <the design
    file's fields>, "racks": <rack report>}`` from a design, its bill of materials (``BillOfMaterials.to_dict()``)
    and, when given, its rack report (:func:`fabric.facility.rackpower.rack_report`)."""
    from fabric.design import design_to_dict

    doc = {"design": design.name, **bom, "design_spec": design_to_dict(design)}
    if racks is not None:
        doc["racks"] = racks
    return doc

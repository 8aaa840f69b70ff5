"""Bill of materials, capex and power."""

from fabric.cost.bom import BillOfMaterials, BomItem, bill_of_materials

__all__ = ["BillOfMaterials", "BomItem", "bill_of_materials"]

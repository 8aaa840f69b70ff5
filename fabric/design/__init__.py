"""Design descriptions: the schema, its validation and loading."""

from fabric.design.schema import (
    CABLING, FAMILIES, LEGACY_PLACEMENTS, LEGACY_TRANSPORTS, PLACEMENTS, REORDER_TOLERANT_TRANSPORTS,
    ROUTING_POLICIES, TRANSPORTS, Design, design_from_dict, design_to_dict, dump_design, load_design,
)

__all__ = [
    "Design", "design_from_dict", "design_to_dict", "dump_design", "load_design",
    "FAMILIES", "ROUTING_POLICIES", "TRANSPORTS", "REORDER_TOLERANT_TRANSPORTS", "LEGACY_TRANSPORTS", "PLACEMENTS",
    "LEGACY_PLACEMENTS", "CABLING",
]

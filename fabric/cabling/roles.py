"""Names shared by the cabling plan and its tables: link roles and the plan's CSV columns."""

from __future__ import annotations

from fabric.topology.fabric import LINK_KINDS

__all__ = ["ROLE_NAMES", "RESERVED_ROLE", "PLAN_COLUMNS"]

#: A plan row's role: a link kind of the fabric, or a reserved slot (cabled for later, not in the bill).
ROLE_NAMES = tuple(LINK_KINDS) + ("reserved",)
RESERVED_ROLE = len(LINK_KINDS)
#: Columns of the plan's CSV, in order.
PLAN_COLUMNS = ("link", "role", "plane", "speed_gbps", "a_rack", "a_u", "a_device", "a_interface", "a_port",
                "a_cage", "a_lane", "a_optic", "b_rack", "b_u", "b_device", "b_interface", "b_port", "b_cage",
                "b_lane", "b_optic", "medium", "cable_model", "cable_length_m", "length_m")

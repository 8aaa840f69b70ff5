"""Where the power goes on the floor, for an upgrade's limits: per compute rack, network racks, IT power; and
rack units.

Limits of an upgrade are physical: a rack's power feed, the facility's, the free rack units for new switches. Where
each watt sits is :func:`fabric.facility.rackpower.place_power`, the one placement the Design and Fabric & BOM pages and
``fabric build`` use too (compute racks: servers at their rated power, which covers their NICs, NIC-side optics,
powered server cables and top-of-rack leaves with their modules; network racks: every other switch with its
modules). Compute racks plus network racks add up to the IT power (:func:`fabric.facility.rackpower.it_power_w`) exactly; the
facility's power is IT power x PUE (:func:`fabric.facility.rackpower.facility_power_w`).

Rack units are per switch model (:data:`SWITCH_RACK_UNITS`, editable): what an upgrade needs of free space is the
rack units of the switches it adds minus those it takes out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.errors import DesignError

__all__ = ["SWITCH_RACK_UNITS", "DEFAULT_RACK_UNITS", "SitePower", "site_power", "switch_rack_units"]

#: Rack units per switch model: the form factor of the class's common products (vendor datasheets; an estimate
#: where a class has several): QM9700 (NDR, 64 x 400G) and QM8700 (HDR, 40 x 200G) are 1U (NVIDIA datasheets);
#: Quantum-X800 Q3400 (144 x 800G) is 4U (NVIDIA); 64 x 800G Tomahawk 5 boxes (e.g. Arista 7060X5) are 2U, as are
#: 64 x 400G Tomahawk 4 boxes; 32 x 400G Tomahawk 3 boxes are 1U.
SWITCH_RACK_UNITS = {"ib-ndr-64x400": 1, "ib-hdr-40x200": 1, "ib-xdr-144x800": 4, "eth-51t-64x800": 2,
                     "eth-25t-64x400": 2, "eth-12t-32x400": 1}
#: A switch model missing from the table (a user's catalog row) counts as 2U: the larger of the common sizes.
DEFAULT_RACK_UNITS = 2


def switch_rack_units(model: str, table: dict | None = None) -> float:
    """Rack units of one switch of ``model`` (``table`` overrides :data:`SWITCH_RACK_UNITS`)."""
    if table and model in table:
        v = table[model]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 48:
            raise DesignError(f"rack units of switch {model}: expected a number in (0, 48], got {v!r}")
        return float(v)
    return float(SWITCH_RACK_UNITS.get(model, DEFAULT_RACK_UNITS))


@dataclass(frozen=True)
class SitePower:
    """Power of a built fabric by place, in watts: ``compute_rack_w[r]`` per compute rack (servers, their network
    items, top-of-rack leaves), ``network_w`` in network racks, ``total_w`` the IT power (servers + the network
    outside them; :func:`fabric.facility.rackpower.it_power_w`)."""

    compute_rack_w: np.ndarray
    network_w: float
    server_w: float
    total_w: float

    @property
    def max_rack_w(self) -> float:
        return float(self.compute_rack_w.max()) if self.compute_rack_w.size else 0.0

    @property
    def racks(self) -> int:
        return int(self.compute_rack_w.size)

    def facility_w(self, pue: float) -> float:
        """Facility power: IT power x ``pue`` (:func:`fabric.facility.rackpower.facility_power_w`)."""
        from fabric.facility.rackpower import facility_power_w

        return facility_power_w(self.total_w, pue)

    def racks_over(self, limit_w: float) -> int:
        return int((self.compute_rack_w > limit_w * (1 + 1e-12)).sum())

    def to_dict(self) -> dict:
        return {"compute_racks": self.racks, "max_compute_rack_w": self.max_rack_w,
                "network_racks_w": self.network_w, "total_w": self.total_w}


def site_power(fabric, bom, catalog=None) -> SitePower:
    """Where ``fabric``'s power goes (``bom`` is its bill of materials): :func:`fabric.facility.rackpower.place_power`, the
    one placement every page and command uses."""
    from fabric.facility.rackpower import place_power

    p = place_power(fabric, bom, catalog)
    return SitePower(p.compute_rack_w, p.network_rack_w, p.server_w, p.it_w)

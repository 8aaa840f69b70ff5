"""The hardware catalog: switches, NICs, transceivers, cables and GPUs with prices, power and latency.

The defaults ship as CSV files next to this module (edge units in the column names, a ``source`` on every row);
:func:`load_catalog` reads them and applies a user's override file. Inside fabric every value is SI.

>>> cat = default_catalog()
>>> cat.switch("ib-ndr-64x400").radix_at(400e9)
64
"""

from fabric.catalog.catalog import Catalog
from fabric.catalog.compat import compatible_nics, host_nic_bps, nic_host_problem
from fabric.catalog.loader import apply_overrides, default_catalog, load_catalog, read_overrides
from fabric.catalog.models import MAX_BREAKOUT_LANES, Cable, GpuModel, NicModel, SwitchModel, Transceiver
from fabric.catalog.schema import FABRICS, TABLE_NAMES, TABLES

__all__ = [
    "Catalog", "SwitchModel", "NicModel", "Transceiver", "Cable", "GpuModel",
    "load_catalog", "default_catalog", "apply_overrides", "read_overrides",
    "TABLE_NAMES", "TABLES", "FABRICS", "MAX_BREAKOUT_LANES",
    "compatible_nics", "nic_host_problem", "host_nic_bps",
]

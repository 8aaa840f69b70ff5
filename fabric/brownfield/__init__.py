"""Brownfield: what to add to an installed fabric, and how to grow a cluster in stages without throwing away what
was bought (docs/upgrade.md).

- :mod:`fabric.brownfield.inventory`: installed items, what a fabric needs, the difference item by item;
- :mod:`fabric.brownfield.site`: power per compute rack and in total, rack units;
- :mod:`fabric.brownfield.upgrade`: the upgrade front of an installed fabric within a budget and limits;
- :mod:`fabric.brownfield.growth`: staged growth plans against designing each stage from scratch.
"""

from fabric.brownfield.inventory import Delta, Installed, Inventory, bom_delta, installed_from_design, load_installed
from fabric.brownfield.growth import GrowthPlan, GrowthStage, parse_stages, plan_growth
from fabric.brownfield.upgrade import MOVES, UpgradeLimits, UpgradeResult, hardware_options, upgrade_front

__all__ = ["Delta", "Installed", "Inventory", "bom_delta", "installed_from_design", "load_installed", "MOVES",
           "UpgradeLimits", "UpgradeResult", "hardware_options", "upgrade_front", "GrowthPlan", "GrowthStage",
           "parse_stages", "plan_growth"]

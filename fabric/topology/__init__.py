"""Topology builders and the :class:`Fabric` they return."""

from fabric.topology.build import build_fabric, required_tiers
from fabric.topology.fabric import LINK_KINDS, NODE_KINDS, Fabric

__all__ = ["Fabric", "build_fabric", "required_tiers", "LINK_KINDS", "NODE_KINDS"]

"""Dual-homed NICs and a failed ToR (issue 28): a leaf may fail when every NIC port on it has a sibling port on a
leaf that stays up (a dual-plane or dual-ToR NIC, as in Alibaba HPN); its NICs then run on their other ports.

A flow between two NICs can use the ports (planes) that are up at both ends; its queue pairs are hashed (ECMP) or
placed (computed paths) onto those, or split evenly over them (adaptive, spraying). With one leaf per node port
(a single-homed NIC) a leaf failure takes servers out of the job instead, which the evaluator refuses.
"""

from __future__ import annotations

import numpy as np

from fabric.errors import DesignError

__all__ = ["check_leaf_failure", "usable_ports"]


def check_leaf_failure(fabric, leaf: int, name: str) -> None:
    """DesignError unless every NIC with a port on ``leaf`` (node id) has another port on another leaf."""
    on = (fabric.nic_ports == leaf).any(axis=1)
    if not on.any():
        return
    other = (fabric.nic_ports[on] != leaf).any(axis=1)
    if not other.all():
        raise DesignError(f"scenario: {name} is a {fabric.tier_names[0]} its servers' NICs reach through no other "
                          f"leaf (one port per NIC, or all ports on it); its failure takes those servers out of the "
                          f"job rather than slowing it (fail a spine or core, or a link; dual-homed NICs, e.g. "
                          f"planes: 2, survive a leaf failure)")


def usable_ports(fabric, dead_leaf: np.ndarray, si: np.ndarray, di: np.ndarray) -> np.ndarray:
    """``(flows, ports)`` bool: the ports of each flow (NIC indices ``si`` -> ``di``) whose leaves are up at both
    ends. DesignError when a flow has none (its two NICs share no plane that is up)."""
    sb = fabric.switch_base
    ok = ~dead_leaf[fabric.nic_ports[si] - sb] & ~dead_leaf[fabric.nic_ports[di] - sb]
    none = ~ok.any(axis=1)
    if none.any():
        i = int(np.flatnonzero(none)[0])
        raise DesignError(f"the scenario leaves NICs #{int(si[i])} and #{int(di[i])} no plane in common that is up: "
                          f"the fabric is partitioned for them (fail fewer leaves)")
    return ok

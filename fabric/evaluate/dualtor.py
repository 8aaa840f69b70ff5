"""Dual-homed NICs and a failed ToR (issue 28): a leaf may fail when every NIC port on it has a sibling port on a
leaf that stays up (a dual-plane or dual-ToR NIC, as in Alibaba HPN); its NICs then run on their other ports.

A flow between two NICs can use the ports (planes) that are up at both ends; its queue pairs are hashed (ECMP) or
placed (computed paths) onto those, or split evenly over them (adaptive, spraying). A NIC whose every port is on
the failed leaf is dead: its GPU detours over NVLink through the server's other NICs when the server keeps one
(a rail leaf: :mod:`fabric.evaluate.detour`). A leaf holding every NIC port of a server (top of rack) takes that
server out of the job instead, which the evaluator refuses.
"""

from __future__ import annotations

import numpy as np

from fabric.errors import DesignError

__all__ = ["check_leaf_failure", "ports_down"]


def check_leaf_failure(fabric, leaf: int, name: str) -> None:
    """DesignError unless every server with a NIC port on ``leaf`` (node id) keeps a NIC port on another switch
    that its GPUs reach: another port of the same NIC (dual-homed), or, with the NVLink detour
    (:func:`fabric.evaluate.detour.nvlink_detour`), another NIC of the server."""
    from fabric.evaluate.detour import nvlink_detour

    on = (fabric.nic_ports == leaf).any(axis=1)
    if not on.any():
        return
    other = (fabric.nic_ports != leaf).any(axis=1)              # per NIC: a port elsewhere
    if nvlink_detour(fabric):
        npn = max(1, int(fabric.design.nics_per_node))
        server_ok = other.reshape(-1, npn).any(axis=1)
        ok = server_ok[np.flatnonzero(on) // npn].all()
    else:
        ok = other[on].all()
    if not ok:
        raise DesignError(f"scenario: {name} is a {fabric.tier_names[0]} holding every NIC port of its servers "
                          f"(top of rack); its failure takes those servers out of the job rather than slowing it "
                          f"(fail a spine or core, or a link; a rail leaf, dual-homed NICs or planes: 2 keep the "
                          f"servers in the job)")


def ports_down(fabric, dead_leaf: np.ndarray, si: np.ndarray, di: np.ndarray):
    """The flows (NIC indices ``si`` -> ``di``) that lose a port to the failed leaves ``dead_leaf`` at either end,
    and the ports each of them can still use: ``(rows, ok)``, ``rows`` their indices in ascending order, ``ok`` a
    ``(rows, ports)`` bool of the ports whose leaves are up at both ends (every other flow keeps all its ports).
    DesignError when a flow has none (its two NICs share no plane that is up)."""
    from fabric.arrays import any_per_row

    up = ~dead_leaf[fabric.nic_ports - fabric.switch_base]         # per NIC and port: its leaf is up
    hit = any_per_row(~up)                                          # per NIC: a port on a failed leaf
    rows = np.flatnonzero(np.take(hit, si) | np.take(hit, di))
    ok = np.take(up, np.take(si, rows), axis=0) & np.take(up, np.take(di, rows), axis=0)
    none = ~any_per_row(ok)
    if none.any():
        i = int(rows[np.flatnonzero(none)[0]])
        raise DesignError(f"the scenario leaves NICs #{int(si[i])} and #{int(di[i])} no plane in common that is up: "
                          f"the fabric is partitioned for them (fail fewer leaves)")
    return rows, ok

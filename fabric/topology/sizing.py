"""Sizing rules shared by the builders, and the closed-form maxima they must agree with.

Radix ``R`` is in ports at the endpoint link speed; oversubscription ``o`` is down:up.
A switch with oversubscription ``o`` keeps ``up = ceil(R / (1 + o))`` ports for uplinks and the rest for
downlinks, so the realised ratio never exceeds the requested one (at 1:1 a 64-port leaf is 32 down, 32 up).
"""

from __future__ import annotations

import math

from fabric.errors import DesignError

__all__ = [
    "split_ports", "uplinks_for", "spread_over_spines",
    "fat_tree_max_endpoints", "fat_tree_switches",
    "clos2_max_endpoints", "clos3_max_endpoints", "dragonfly_max_endpoints", "dragonfly_balanced",
    "format_ratio",
]


def split_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """(down, up) ports of a switch of ``radix`` ports at ``oversubscription`` down:up."""
    if radix < 2:
        raise DesignError(f"a switch needs at least 2 ports at the link speed to have uplinks, got radix {radix}")
    up = math.ceil(radix / (1.0 + oversubscription) - 1e-9)
    return radix - up, up


def uplinks_for(down_used: int, oversubscription: float) -> int:
    """Uplinks a switch cables for ``down_used`` downlinks at ``oversubscription`` (at least 1)."""
    return max(1, math.ceil(down_used / oversubscription - 1e-9))


def spread_over_spines(uplinks: int, lower: int, radix: int) -> tuple[int, int] | None:
    """How ``lower`` switches with ``uplinks`` each are spread evenly over a spine layer of ``radix``-port switches.

    Returns ``(spines, bundle)``: the fewest spines that can take all uplinks such that every lower switch sends
    the same number ``bundle`` of links to every spine (spine counts that cannot split the uplinks evenly are
    rounded up to one that can), or ``None`` when no count works (more lower switches than spine ports).
    """
    need = math.ceil(lower * uplinks / radix)
    for spines in range(max(need, 1), uplinks + 1):
        if uplinks % spines == 0:
            bundle = uplinks // spines
            if lower * bundle <= radix:
                return spines, bundle
    return None


def format_ratio(o: float) -> str:
    """``2.0`` -> ``"2:1"``."""
    return f"{o:g}:1"


def fat_tree_max_endpoints(k: int) -> int:
    """Hosts of a k-ary fat tree: k^3/4 (Al-Fares et al., SIGCOMM 2008)."""
    return k ** 3 // 4


def fat_tree_switches(k: int) -> dict[str, int]:
    """Switches of a k-ary fat tree: k^2/2 edge, k^2/2 aggregation, k^2/4 core."""
    return {"leaf": k * k // 2, "spine": k * k // 2, "core": k * k // 4}


def clos2_max_endpoints(radix: int, o: float = 1.0) -> int:
    """Endpoints of a 2-tier Clos: R spines' worth of leaves x leaf downlinks (R^2 o/(1+o); R^2/2 at 1:1)."""
    down, _ = split_ports(radix, o)
    return radix * down


def clos3_max_endpoints(radix: int, o1: float = 1.0, o2: float = 1.0) -> int:
    """Endpoints of a 3-tier Clos: R pods x leaves per pod x leaf downlinks (R^3 o1 o2/((1+o1)(1+o2)))."""
    d1, _ = split_ports(radix, o1)
    d2, _ = split_ports(radix, o2)
    return radix * d2 * d1


def dragonfly_balanced(radix: int) -> tuple[int, int, int]:
    """(p, a, h) of the balanced dragonfly a = 2p = 2h with router radix p + a - 1 + h = 4p - 1 <= R."""
    p = (radix + 1) // 4
    if p < 1:
        raise DesignError(f"a dragonfly router needs radix >= 3, got {radix}")
    return p, 2 * p, p


def dragonfly_max_endpoints(p: int, a: int, h: int) -> int:
    """N = a p (a h + 1) (Kim, Dally, Scott, Abts, ISCA 2008)."""
    return a * p * (a * h + 1)

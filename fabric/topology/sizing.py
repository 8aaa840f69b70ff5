"""Sizing rules shared by the builders, and the closed-form maxima they must agree with.

Radix ``R`` is in ports at the endpoint link speed; oversubscription ``o`` is down:up.
A switch with oversubscription ``o`` keeps ``up = ceil(R / (1 + o))`` ports for uplinks and the rest for
downlinks, so the realised ratio never exceeds the requested one (at 1:1 a 64-port leaf is 32 down, 32 up).

Uplinks may run at another speed than the downlinks (``Design.uplink_gbps``): :class:`TierPorts` then counts a
switch's physical ports, each running either downlinks or uplinks in whole breakout lanes, and the oversubscription
is the ratio of down to up *capacity* (32 x 400G down and 8 x 800G up is 2:1). At one speed it is exactly the
rule above.

Every upper layer (spines, cores) is sized to the links it carries: :func:`spread_upward` gives the fewest
switches that take them, at least :data:`MIN_UPPER_SWITCHES`; leaf-to-spine bundles are equal when that costs at
most half of the layer's ports (NVIDIA's SuperPOD rule), else (and always from pods to cores) links are dealt
round-robin so bundles differ by at most one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabric.errors import DesignError

__all__ = [
    "TierPorts", "MIN_UPPER_SWITCHES", "Spread", "split_ports", "uplinks_for", "leaf_uplinks", "spread_upward",
    "bundle_links",
    "spread_over_spines",
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


@dataclass(frozen=True)
class TierPorts:
    """The ports of one switch as a tier uses them: downlinks of ``down_bps``, uplinks of ``up_bps``.

    ``ports`` physical ports; a port runs ``down_lanes`` downlinks or ``up_lanes`` uplinks (its breakout at that
    speed). At one speed the legs of one port may go either way (a twin-port module's two legs are cabled apart), so
    ``down + up <= radix``; at two speeds a port runs one lane mode, so ``ceil(down / down_lanes) + ceil(up /
    up_lanes) <= ports`` (the capacity rule ``down x down_bps + up x up_bps <= ports x port speed``, rounded to
    whole ports).
    """

    ports: int
    down_lanes: int
    up_lanes: int
    down_bps: float
    up_bps: float

    @classmethod
    def of(cls, switch, down_bps: float, up_bps: float | None = None) -> "TierPorts":
        """The tier view of catalog ``switch`` (``up_bps`` defaults to ``down_bps``)."""
        up_bps = down_bps if up_bps is None else up_bps
        down = switch.radix_at(down_bps)
        up = down if math.isclose(up_bps, down_bps, rel_tol=1e-9) else switch.radix_at(up_bps)
        return cls(switch.ports, max(down // switch.ports, 0), max(up // switch.ports, 0), float(down_bps),
                   float(up_bps))

    @property
    def same_speed(self) -> bool:
        return math.isclose(self.up_bps, self.down_bps, rel_tol=1e-9)

    @property
    def radix(self) -> int:
        """Downlinks the switch takes when every port runs at the down speed."""
        return self.ports * self.down_lanes

    @property
    def up_radix(self) -> int:
        """Uplinks the switch takes when every port runs at the up speed."""
        return self.ports * self.up_lanes

    def max_up(self, down: int) -> int:
        """Most uplinks that fit beside ``down`` downlinks."""
        if self.same_speed:
            return max(self.radix - down, 0)
        if self.up_lanes == 0:
            return 0
        return max(self.ports - math.ceil(down / self.down_lanes), 0) * self.up_lanes

    def split(self, oversubscription: float) -> tuple[int, int]:
        """(down, up) of the most downlinks at down:up capacity <= ``oversubscription`` (see :func:`split_ports`)."""
        if self.same_speed:
            return split_ports(self.radix, oversubscription)
        if self.ports < 2 or self.up_lanes == 0 or self.down_lanes == 0:
            raise DesignError(f"a switch needs at least 2 ports to have uplinks at {self.up_bps / 1e9:g}G beside "
                              f"downlinks at {self.down_bps / 1e9:g}G")
        best = (0, 0)
        for up_ports in range(1, self.ports):
            up = up_ports * self.up_lanes
            down = min((self.ports - up_ports) * self.down_lanes,
                       math.floor(oversubscription * up * self.up_bps / self.down_bps + 1e-9))
            if down > best[0]:
                best = (down, up)
        return best

    def uplinks_for(self, down_used: int, oversubscription: float) -> int:
        """Uplinks for ``down_used`` downlinks at down:up capacity ``oversubscription`` (at least 1)."""
        return max(1, math.ceil(down_used * self.down_bps / (oversubscription * self.up_bps) - 1e-9))

    def leaf_uplinks(self, down_used: int, oversubscription: float) -> int:
        """:meth:`uplinks_for`, raised to :data:`MIN_UPPER_SWITCHES` when the ports allow (see :func:`leaf_uplinks`)."""
        return max(self.uplinks_for(down_used, oversubscription),
                   min(MIN_UPPER_SWITCHES, self.max_up(down_used)))


#: Fewest switches in a spine or core layer: with one, a single switch failure cuts every leaf (pod) off from the
#: others (facts.md section 8: every leaf needs at least two uplink switches; NVIDIA's 1-SU SuperPOD has 4 spines).
MIN_UPPER_SWITCHES = 2


def leaf_uplinks(down_used: int, oversubscription: float, radix: int) -> int:
    """Uplinks of a switch with ``down_used`` downlinks: :func:`uplinks_for`, raised to :data:`MIN_UPPER_SWITCHES`
    when the switch has the spare ports, so that it can reach two upper switches."""
    return max(uplinks_for(down_used, oversubscription), min(MIN_UPPER_SWITCHES, radix - down_used))


@dataclass(frozen=True)
class Spread:
    """How ``lower`` switches of ``uplinks`` links each are cabled to ``switches`` upper switches.

    ``even``: every lower switch sends exactly ``uplinks // switches`` links to every upper switch; otherwise the
    bundles are ``bundle`` or ``bundle - 1`` (links dealt round-robin). ``max_ports``: most links landing on one
    upper switch.
    """

    switches: int
    bundle: int
    even: bool
    max_ports: int


def spread_upward(uplinks: int, lower: int, capacity: int, *, equal_bundles: bool = True,
                  switches: int | None = None) -> Spread | None:
    """The upper layer for ``lower`` switches with ``uplinks`` each, on switches with ``capacity`` ports for them.

    The count starts at the fewest switches whose ports hold every link, and at least :data:`MIN_UPPER_SWITCHES`
    (or ``uplinks``, when a lower switch has a single uplink). With ``equal_bundles`` (leaf to spine), equal
    bundles need a count that divides ``uplinks`` (NVIDIA's SuperPOD tables round 12 spines up to 16 for 32
    uplinks): the smallest such count is taken unless it leaves the layer under half of its ports used, in which
    case the minimum count is kept and each lower switch deals its links round-robin (bundles differ by at most
    one, every upper switch gets the same number of links give or take one). Without it (pods to cores), the
    minimum count is always kept and links are dealt round-robin. Returns ``None`` when no count works: a lower
    switch must reach every upper switch, so at most ``uplinks`` switches, which then hold ``lower`` links each.
    ``switches`` fixes the count (the design's ``spines``): equal bundles when it divides ``uplinks``, else
    round-robin; ``None`` when the switches cannot take the links or a lower switch cannot reach them all.
    """
    if uplinks < 1 or lower < 1 or capacity < 1:
        return None
    links = uplinks * lower
    if switches is not None:
        s = int(switches)
        if s < 1 or s > uplinks:
            return None
        even = uplinks % s == 0
        spread = Spread(s, math.ceil(uplinks / s), even, lower * (uplinks // s) if even else math.ceil(links / s))
        return spread if spread.max_ports <= capacity else None
    links = uplinks * lower
    need = max(min(MIN_UPPER_SWITCHES, uplinks), math.ceil(links / capacity))
    if need > uplinks:
        return None
    for s in range(need, uplinks + 1 if equal_bundles else need + 1):
        if uplinks % s == 0:
            if s == need or 2 * links >= s * capacity:
                return Spread(s, uplinks // s, True, lower * (uplinks // s))
            break
    return Spread(need, math.ceil(uplinks / need), False, math.ceil(links / need))


def bundle_links(lower: int, uplinks: int, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
    """(lower index, upper index) of every link, one row per link, lower switches in order.

    Equal bundles go to upper switches in blocks (lower switch l: ``bundle`` links to 0, then to 1, ...); uneven
    ones are dealt round-robin across all lower switches' links, so upper switches differ by at most one link.
    """
    lo = np.repeat(np.arange(lower), uplinks)
    if spread.even:
        up = np.tile(np.repeat(np.arange(spread.switches), spread.bundle), lower)
    else:
        up = np.arange(lower * uplinks) % spread.switches
    return lo, up


def spread_over_spines(uplinks: int, lower: int, radix: int) -> tuple[int, int] | None:
    """How ``lower`` switches with ``uplinks`` each are spread evenly over a spine layer of ``radix``-port switches.

    Returns ``(spines, bundle)`` of :func:`spread_upward` (``bundle`` the larger one when bundles are uneven), or
    ``None`` when no count works (more lower switches than spine ports).
    """
    spread = spread_upward(uplinks, lower, radix)
    return None if spread is None else (spread.switches, spread.bundle)


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

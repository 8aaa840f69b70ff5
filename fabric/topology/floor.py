"""The floor a design is built on: racks in halls, and the cable run between two halls.

A hall holds :data:`HALL_ROWS` rows of :data:`HALL_ROW_RACKS` racks (a 0.6 m rack pitch, a 2.4 m row pitch: a
1.2 m deep rack and a 1.2 m aisle), with room for :data:`OVERFLOW_ROWS` more rows of network racks; halls stand in
a line, :data:`HALL_GAP_M` apart (walls and a corridor). Any two racks of one hall are then within
:data:`IN_HALL_REACH_M` of cable (the farthest pair: 20.4 m along a row, 24 m across rows, up and down 48U racks to
the overhead tray, 1 m of service loops), so a switch-to-switch link inside a hall is bought as that class
(multimode optics); a link between halls is bought at the longest run between the two halls
(:func:`cross_hall_length_m`), which is beyond multimode reach: single-mode optics.

Racks go on the floor in node-slot order, each pod with the network racks of its leaves and spines: a pod that
fits in what is left of a hall goes there, else it starts a new hall; a pod larger than a hall fills halls of its
own in turn. Spines stand in their pod's middle hall, a leaf in the hall of
its servers. Hall boundaries never split racks whose servers share a leaf (a top-of-rack leaf over two racks, a
scalable unit's rail leaves). On a floor of more than one hall the cores stand in a hall of their own in the middle
of the line (a network room). :mod:`fabric.cabling.layout` lays out the same halls rack by rack (a floor of one
hall is its square floor), and the cabling plan's lengths are checked against what the bill of materials bought.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Floor", "plan_floor", "cross_hall_length_m", "switch_link_reach_m", "floor_text", "HALL_ROWS",
           "HALL_ROW_RACKS", "HALL_RACKS", "OVERFLOW_ROWS", "HALL_GAP_M", "HALL_PITCH_M", "IN_HALL_REACH_M",
           "RACK_PITCH_M", "ROW_PITCH_M", "TRAY_M", "U_M", "SLACK_BETWEEN_RACKS_M", "NETWORK_RACK_SWITCHES"]

#: Height of one rack unit, in metres (EIA-310).
U_M = 0.04445
#: Rack pitch along a row (a 600 mm wide rack) and row pitch (a 1,200 mm deep rack plus a 1,200 mm aisle), metres.
RACK_PITCH_M, ROW_PITCH_M = 0.6, 2.4
#: Overhead tray above the rack top, metres; service loops between racks (both ends together), metres.
TRAY_M, SLACK_BETWEEN_RACKS_M = 0.3, 1.0
#: A hall: rows, racks per row, and the extra rows its network racks may take beyond them.
HALL_ROWS, HALL_ROW_RACKS, OVERFLOW_ROWS = 9, 35, 2
HALL_RACKS = HALL_ROWS * HALL_ROW_RACKS
#: Walls and corridor between two halls, metres; one hall's start to the next one's.
HALL_GAP_M = 6.0
HALL_PITCH_M = (HALL_ROWS + OVERFLOW_ROWS) * ROW_PITCH_M + HALL_GAP_M
#: The cable class of a switch-to-switch link inside one hall, metres (multimode optics reach 50 m at 400/800G).
IN_HALL_REACH_M = 50.0
#: Switches one network rack holds at most (the rack report's rule, fabric.facility.rackpower); the floor plans
#: the halls' room with it (fewer fit under a tight rack power limit: the overflow rows take them).
NETWORK_RACK_SWITCHES = 16
#: Up a rack to the overhead tray and down the other (48U rack-scale racks, the tallest): both ends, metres.
_VERTICAL_M = 2 * (48 * U_M + TRAY_M)


def cross_hall_length_m(hall_a, hall_b) -> np.ndarray:
    """The longest cable run between a rack of hall ``hall_a`` and one of hall ``hall_b`` (arrays of hall
    indices), rounded up to the metre: the halls' distance, every row of both halls, a whole row's length, the
    runs up and down the racks and the service loops. 0 where the halls are the same."""
    apart = np.abs(np.asarray(hall_a, np.int64) - np.asarray(hall_b, np.int64))
    run = (apart * HALL_PITCH_M + (HALL_ROWS + OVERFLOW_ROWS - 1) * ROW_PITCH_M
           + (HALL_ROW_RACKS - 1) * RACK_PITCH_M + _VERTICAL_M + SLACK_BETWEEN_RACKS_M)
    return np.where(apart > 0, np.ceil(run), 0.0)


def switch_link_reach_m(hall_a, hall_b) -> np.ndarray:
    """The length a switch-to-switch link is bought at: :data:`IN_HALL_REACH_M` inside a hall, else the run
    between the halls (:func:`cross_hall_length_m`)."""
    hall_a, hall_b = np.asarray(hall_a, np.int64), np.asarray(hall_b, np.int64)
    if hall_a.size > 64 and hall_a.shape == hall_b.shape:
        # 100,000s of links between a few halls: the lengths of every pair of halls, looked up
        lo = min(int(hall_a.min()), int(hall_b.min()))
        n = max(int(hall_a.max()), int(hall_b.max())) - lo + 1
        if lo >= 0 and n <= 256:
            h = np.arange(n)
            table = switch_link_reach_m(h[:, None], h[None, :])
            return table[hall_a - lo, hall_b - lo] if lo else table[hall_a, hall_b]
    return np.where(hall_a == hall_b, IN_HALL_REACH_M, cross_hall_length_m(hall_a, hall_b))


@dataclass(frozen=True)
class Floor:
    """Halls of a built design: ``rack_hall`` (per compute rack of ``nodes_per_rack`` node slots),
    ``switch_hall`` (per switch, index = node id - switch base), ``halls`` and ``pods`` (pods kept whole where they
    fit)."""

    halls: int
    rack_hall: np.ndarray
    switch_hall: np.ndarray
    pods: int

    def to_dict(self) -> dict:
        """What a report says of the floor (counts and the assumptions)."""
        return {"halls": int(self.halls), "hall_rows": HALL_ROWS, "hall_row_racks": HALL_ROW_RACKS,
                "hall_racks": HALL_RACKS, "overflow_rows": OVERFLOW_ROWS, "hall_gap_m": HALL_GAP_M,
                "hall_pitch_m": HALL_PITCH_M, "rack_pitch_m": RACK_PITCH_M, "row_pitch_m": ROW_PITCH_M,
                "in_hall_reach_m": IN_HALL_REACH_M, "pods": int(self.pods)}


def floor_text(floor: dict) -> str:
    """One sentence on the floor a design was priced on (``floor`` is :meth:`Floor.to_dict`'s form)."""
    halls = int(floor.get("halls", 1))
    size = (f"halls of {floor['hall_rows']} rows x {floor['hall_row_racks']} racks ({floor['rack_pitch_m']:g} m "
            f"rack pitch, {floor['row_pitch_m']:g} m rows, halls {floor['hall_pitch_m']:g} m apart)")
    where = ("racks in one hall" if halls == 1 else f"racks in {halls:,} {size}; pods kept whole in a hall where "
             f"they fit, a leaf in its servers' hall, spines in their pod's middle hall, cores (if any) in a hall of "
             f"their own in the middle")
    return (f"Floor: {where if halls > 1 else where + ' (' + size + ')'}; links inside a hall bought as "
            f"{floor['in_hall_reach_m']:g} m multimode runs, links between halls at their longest run, single-mode.")


def plan_floor(*, slots: int, per_rack: int, slot_leaves: np.ndarray, leaf_pod: np.ndarray, n_leaves: int,
               n_spines: int, n_cores: int, spine_pod: np.ndarray, planes: int, tor_leaves: bool) -> tuple:
    """Halls of one plane's switches and of the compute racks (module docstring).

    ``slot_leaves``: the plane-local leaf of each node slot's ports (slots x ports); ``leaf_pod`` / ``spine_pod``: each leaf's
    and spine's pod (-1: none); ``tor_leaves``: leaves stand in their servers' racks (no network rack for them).
    Returns ``(rack_hall, leaf_hall, spine_hall, core_hall, halls, pods)``, plane-local switch halls (every plane
    is laid out alike, its network racks beside the others')."""
    n_racks = max(1, math.ceil(slots / per_rack))
    slot_leaf = np.asarray(slot_leaves, np.int64)[:, 0]
    first_slot = np.arange(n_racks) * per_rack
    rack_leaf = slot_leaf[np.minimum(first_slot, slots - 1)]
    pod_of_rack = np.where(rack_leaf >= 0, leaf_pod[np.maximum(rack_leaf, 0)], 0) if leaf_pod.size else \
        np.zeros(n_racks, np.int64)
    # racks whose servers share a leaf (a top-of-rack leaf over two racks, a scalable unit's rail leaves): a hall
    # boundary never falls between them
    every = np.asarray(slot_leaves, np.int64)          # (slots, ports): every port's leaf, rails included
    joined = np.zeros(n_racks, bool)        # joined[r]: rack r and rack r + 1 share a leaf
    if n_racks > 1 and n_leaves:
        # a leaf holds consecutive slots on each port (a top-of-rack leaf its rack's servers, a rail leaf its
        # unit's): racks share a leaf when one port's leaf is the same on both sides of their boundary
        last = np.minimum(np.arange(1, n_racks) * per_rack - 1, slots - 1)
        joined[:-1] = (every[last] == every[np.minimum(last + 1, slots - 1)]).any(axis=1)
    # network racks each pod brings (per plane, all planes): its leaves when not top-of-rack, and its spines
    n_pods = int(max(pod_of_rack.max(initial=0), spine_pod.max(initial=-1), 0)) + 1
    leaves_of = np.bincount(leaf_pod[leaf_pod >= 0], minlength=n_pods) if not tor_leaves else np.zeros(n_pods)
    spines_of = np.bincount(spine_pod[spine_pod >= 0], minlength=n_pods)
    net_of = np.ceil((leaves_of + spines_of) * planes / NETWORK_RACK_SWITCHES).astype(np.int64)
    rack_hall = np.zeros(n_racks, np.int64)
    # runs of consecutive racks of one pod, in slot order
    starts = np.flatnonzero(np.concatenate([[True], pod_of_rack[1:] != pod_of_rack[:-1]]))
    ends = np.concatenate([starts[1:], [n_racks]])
    hall, used = 0, 0
    for s, e in zip(starts.tolist(), ends.tolist()):
        pod = int(pod_of_rack[s])
        compute = e - s
        need = compute + int(net_of[pod]) if 0 <= pod < n_pods else compute
        if used and used + need > HALL_RACKS:
            hall, used = hall + 1, 0
        if need <= HALL_RACKS - used:
            rack_hall[s:e] = hall
            used += need
            continue
        # a pod larger than a hall: halls of its own, filled in turn, its network racks spread with its racks
        per_hall = max(1, int(HALL_RACKS * compute / need))
        r = s
        while r < e:
            cut = min(e, r + per_hall)
            while cut < e and cut > r + 1 and joined[cut - 1]:
                cut -= 1
            rack_hall[r:cut] = hall
            r = cut
            if r < e:
                hall += 1
        used = min(HALL_RACKS, int((rack_hall[s:e] == hall).sum() * need / max(compute, 1)))
    halls = int(rack_hall.max()) + 1
    core_halls = 0
    if halls > 1 and n_cores:
        # the cores in a hall of their own in the middle of the line (a network room): the halls after it move on
        core_racks = math.ceil(n_cores * planes / NETWORK_RACK_SWITCHES)
        core_halls = math.ceil(core_racks / HALL_RACKS)
        middle_at = halls // 2
        rack_hall = np.where(rack_hall >= middle_at, rack_hall + core_halls, rack_hall)
        halls += core_halls
    # switches: a leaf in the hall of its servers' middle slot, spines in their pod's middle hall, cores in the
    # floor's middle hall
    leaf_hall = np.zeros(n_leaves, np.int64)
    if n_leaves:
        # a leaf's racks are never split by a hall boundary: the hall of the rack of its mean slot
        flat = every.ravel()
        ok = (flat >= 0) & (flat < n_leaves)
        slot_of = np.repeat(np.arange(every.shape[0]), every.shape[1])
        count = np.bincount(flat[ok], minlength=n_leaves)
        mean = np.bincount(flat[ok], weights=slot_of[ok], minlength=n_leaves) / np.maximum(count, 1)
        leaf_hall = np.where(count > 0, rack_hall[np.minimum(mean.astype(np.int64) // per_rack, n_racks - 1)], 0)
    pod_hall = np.zeros(n_pods, np.int64)
    for p in range(n_pods):
        h = rack_hall[pod_of_rack == p]
        pod_hall[p] = int(np.sort(h)[(h.size - 1) // 2]) if h.size else 0
    middle = int(np.sort(rack_hall)[(n_racks - 1) // 2])
    spine_hall = np.where(spine_pod >= 0, pod_hall[np.clip(spine_pod, 0, n_pods - 1)], middle) if n_spines else \
        np.zeros(0, np.int64)
    # cores: their own hall(s) in the middle of the line, spread over them in order; on one hall, that hall
    core_hall = (middle_at + np.arange(n_cores) * core_halls // max(n_cores, 1) if core_halls
                 else np.full(n_cores, middle, np.int64))
    return rack_hall, leaf_hall, spine_hall, core_hall, halls, n_pods

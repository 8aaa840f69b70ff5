"""Measured link utilisation in the busy windows, and ECN/PFC/drop rates, from port counters and a port map.

Busy windows: the counters' sampling intervals in which the mapped ports together transmit at least
``BUSY_SHARE`` (50 %) of their busiest interval's rate (the job's synchronised phases, not its idle time). For each
mapped link: bytes transmitted in the busy windows over (speed x busy time), where the speed is the ports' reported
``speed_bps`` when the counters carry it (a link running below its design speed shows as such) and the design's
capacity otherwise; ECN marks, pause frames and drops per second of busy time. A link whose ports miss some samples
of the busy windows is measured over the intervals it has and labelled partial.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.audit.counters import Counters, increase
from fabric.audit.linkload import directed_links, tier_of
from fabric.audit.portmap import PortMap
from fabric.errors import FabricError

__all__ = ["BUSY_SHARE", "MeasuredLink", "Measured", "measure_links"]

BUSY_SHARE = 0.5


@dataclass(frozen=True)
class MeasuredLink:
    name: str
    tier: str
    ports: int                       # mapped ports (cables measured)
    design_bps: float                # design capacity of the measured cables
    speed_bps: float                 # reported speed of those ports (design when not reported)
    busy_bytes: float
    busy_s: float                    # busy time this link was measured over
    utilisation: float               # busy_bytes x 8 / (speed x busy_s)
    ecn_per_s: float | None          # None: not reported
    pause_per_s: float | None
    drops_per_s: float | None
    partial: str = ""                # why only part of the busy windows was measured ("" = all)

    @property
    def slow(self) -> bool:
        """Reported speed below 95 % of the design's."""
        return self.speed_bps < 0.95 * self.design_bps


@dataclass(frozen=True)
class Measured:
    links: dict                      # name -> MeasuredLink
    busy_windows: tuple              # (t0, t1) intervals
    intervals: int                   # sampling intervals seen
    notes: tuple


def _rate(pts, windows):
    if not pts:
        return None
    total, seen = 0.0, 0.0
    for t0, t1 in windows:
        inc = increase(pts, t0, t1)
        if inc is not None:
            total += inc
            seen += t1 - t0
    return total / seen if seen > 0 else None


def measure_links(counters: Counters, port_map: PortMap, fabric) -> Measured:
    """Busy windows and per-link utilisation and congestion rates (see the module docstring)."""
    design = directed_links(fabric)
    mapped = {k: v for k, v in port_map.items() if k in counters.series and "bytes" in counters.series[k]}
    notes = list(counters.notes)
    unmapped = [k for k in counters.series if k not in port_map]
    if unmapped:
        notes.append(f"{len(unmapped)} port(s) in the counters are not in the mapping (left out), e.g. "
                     f"{unmapped[0][0]} {unmapped[0][1]}")
    no_data = [k for k in port_map if k not in mapped]
    if no_data:
        notes.append(f"partial: {len(no_data)} mapped port(s) have no byte counter, e.g. {no_data[0][0]} "
                     f"{no_data[0][1]}")
    if not mapped:
        raise FabricError("no mapped port has a byte counter: check that the mapping's switch and port names are "
                          "the counters' (e.g. " + ", ".join(f"{s} {p}" for s, p in list(counters.series)[:3]) + ")")
    times = sorted({t for k in mapped for t, _ in counters.series[k]["bytes"]})
    if len(times) < 2:
        raise FabricError("the counters hold one sampling time only: utilisation needs two or more")
    rates = []
    for t0, t1 in zip(times, times[1:]):
        tot = 0.0
        for k in mapped:
            inc = increase(counters.series[k]["bytes"], t0, t1)
            tot += inc or 0.0
        rates.append(tot / (t1 - t0))
    peak = max(rates)
    if peak <= 0:
        raise FabricError("the mapped ports transmitted nothing over the counters' time span")
    windows = [(t0, t1) for (t0, t1), r in zip(zip(times, times[1:]), rates) if r >= BUSY_SHARE * peak]
    out = {}
    for link, ports in port_map.ports_of.items():
        ports = [p for p in ports if p in mapped]
        if not ports:
            continue
        a, b, cables, cap = design[link]
        per_cable = cap / cables
        busy_bytes, busy_s, missing = 0.0, 0.0, 0
        for t0, t1 in windows:
            incs = [increase(counters.series[p]["bytes"], t0, t1) for p in ports]
            if any(x is None for x in incs):
                missing += 1
                continue
            busy_bytes += sum(incs)
            busy_s += t1 - t0
        speeds = []
        for p in ports:
            sp = [v for t, v in counters.series[p].get("speed_bps", []) if windows[0][0] <= t <= windows[-1][1]]
            speeds.append(min(sp) if sp else per_cable)
        speed = sum(speeds)
        rates_of = {}
        for f in ("ecn_marks", "pause_frames", "drops"):
            vals = [_rate(counters.series[p].get(f, []), windows) for p in ports]
            rates_of[f] = None if all(v is None for v in vals) else sum(v or 0.0 for v in vals)
        partial = []
        if missing:
            partial.append(f"{missing} of {len(windows)} busy interval(s) lack a sample")
        if len(ports) < len(port_map.ports_of[link]):
            partial.append(f"{len(ports)} of {len(port_map.ports_of[link])} mapped port(s) have byte counters")
        if len(port_map.ports_of[link]) < cables:
            partial.append(f"{len(port_map.ports_of[link])} of {cables} cable(s) mapped")
        out[link] = MeasuredLink(
            name=link, tier=tier_of(fabric, a, b), ports=len(ports), design_bps=per_cable * len(ports),
            speed_bps=speed, busy_bytes=busy_bytes, busy_s=busy_s,
            utilisation=busy_bytes * 8.0 / (speed * busy_s) if speed > 0 and busy_s > 0 else 0.0,
            ecn_per_s=rates_of["ecn_marks"], pause_per_s=rates_of["pause_frames"], drops_per_s=rates_of["drops"],
            partial="; ".join(partial))
    return Measured(links=out, busy_windows=tuple(windows), intervals=len(times) - 1, notes=tuple(notes))

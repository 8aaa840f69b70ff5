"""Regions: a design that divides its cluster into parts cabled differently, joined by one shared core tier.

A region is a run of consecutive servers with its own cabling (``clos``: whole servers per leaf, any-to-any;
``rail_optimized``: rail r of a unit on a rail-r leaf, or ``rails_per_leaf`` rails per leaf), its own down:up ratio
at the leaf and at its spines (the spines' uplinks to the shared core), and the jobs placed in it. Every region is
two tiers (leaves and the region's spines); the spines of all regions join one core layer, sized to the links they
send it. The switch and NIC models, NICs per GPU, planes and link speeds are the design's (one catalog of parts).

A design with one region is the uniform design of that region's cabling (``Design`` folds it in when built), so
uniform designs are the one-region case and evaluate exactly as before. ``docs/regions.md`` has the rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fabric.errors import DesignError

__all__ = ["Region", "REGION_FAMILIES", "region_from_dict", "region_to_dict", "regions_from_value", "regions_json",
           "regions_from_json", "regions_text", "highest_ratio"]

#: Cablings a region may have.
REGION_FAMILIES = ("clos", "rail_optimized")
#: Oversubscription bounds (the design's: fabric.design.schema)
_MIN_O, _MAX_O = 0.25, 16.0


@dataclass(frozen=True)
class Region:
    """One region: ``nodes`` servers cabled as ``family`` at ``oversubscription`` = (leaf, spine) down:up, the
    spine ratio being the region's spines to the shared core. ``nodes_per_su`` and ``rails_per_leaf`` as the
    design fields of the same names (rail-optimized regions). ``jobs``: names of the workload's jobs placed in this
    region (a placement rule, free policy); jobs no region names fill the regions' free GPUs in order."""

    name: str
    nodes: int
    family: str = "clos"
    oversubscription: tuple[float, float] = (1.0, 1.0)
    nodes_per_su: int | None = None
    rails_per_leaf: int = 1
    jobs: tuple[str, ...] = ()

    def oversub(self, tier: int) -> float:
        """Down:up at tier ``tier`` (0 leaf, 1 spine-to-core)."""
        return float(self.oversubscription[tier]) if tier < len(self.oversubscription) else 1.0


def _err(where: str, msg: str):
    raise DesignError(f"design field '{where}': {msg}")


def _ratio(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        _err(where, f"expected a down:up ratio (a number), got {v!r}")
    if not _MIN_O <= float(v) <= _MAX_O:
        _err(where, f"ratio {v:g} is outside {_MIN_O:g}-{_MAX_O:g}")
    return float(v)


def region_from_dict(d: Any, i: int) -> Region:
    """A validated :class:`Region` from its JSON form (``i``: its index, for messages)."""
    at = f"regions[{i}]"
    if isinstance(d, Region):
        d = region_to_dict(d)
    if not isinstance(d, dict):
        _err(at, f"expected an object with name, nodes, family, oversubscription, got {type(d).__name__}")
    known = {"name", "nodes", "family", "oversubscription", "nodes_per_su", "rails_per_leaf", "jobs"}
    bad = sorted(set(map(str, d)) - known)
    if bad:
        _err(at, f"unknown field(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    name = d.get("name", chr(ord("A") + i) if i < 26 else f"R{i}")
    if not isinstance(name, str) or not name.strip():
        _err(f"{at}.name", f"expected a non-empty name, got {name!r}")
    nodes = d.get("nodes")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        _err(f"{at}.nodes", f"expected a whole number of servers >= 1, got {nodes!r}")
    fam = d.get("family", "clos")
    if fam not in REGION_FAMILIES:
        _err(f"{at}.family", f"unknown value {fam!r}; a region is cabled {' or '.join(REGION_FAMILIES)}")
    o = d.get("oversubscription", (1.0, 1.0))
    if isinstance(o, (int, float)) and not isinstance(o, bool):
        o = (o, 1.0)
    if isinstance(o, dict):
        extra = sorted(set(o) - {"leaf", "spine"})
        if extra:
            _err(f"{at}.oversubscription", f"unknown tier(s) {', '.join(extra)}; use leaf, spine")
        o = (o.get("leaf", 1.0), o.get("spine", 1.0))
    if not isinstance(o, (list, tuple)) or not 1 <= len(o) <= 2:
        _err(f"{at}.oversubscription", f"expected [leaf, spine] down:up ratios, got {o!r}")
    o = tuple(_ratio(v, f"{at}.oversubscription") for v in o)
    if len(o) == 1:
        o = (o[0], 1.0)
    nps = d.get("nodes_per_su")
    if nps is not None and (isinstance(nps, bool) or not isinstance(nps, int) or not 1 <= nps <= 4096):
        _err(f"{at}.nodes_per_su", f"expected a whole number 1-4096 or null, got {nps!r}")
    rpl = d.get("rails_per_leaf", 1)
    if isinstance(rpl, bool) or not isinstance(rpl, int) or not 1 <= rpl <= 64:
        _err(f"{at}.rails_per_leaf", f"expected a whole number 1-64, got {rpl!r}")
    if fam != "rail_optimized" and (rpl != 1 or nps is not None):
        _err(at, "nodes_per_su and rails_per_leaf apply to a rail_optimized region only")
    jobs = d.get("jobs", ())
    if isinstance(jobs, str):
        jobs = (jobs,)
    if not isinstance(jobs, (list, tuple)) or not all(isinstance(j, str) and j for j in jobs):
        _err(f"{at}.jobs", f"expected a list of job names, got {jobs!r}")
    return Region(name=name.strip(), nodes=nodes, family=fam, oversubscription=o, nodes_per_su=nps,
                  rails_per_leaf=rpl, jobs=tuple(jobs))


def region_to_dict(r: Region) -> dict:
    """The JSON form of a region."""
    out = {"name": r.name, "nodes": r.nodes, "family": r.family, "oversubscription": list(r.oversubscription)}
    if r.nodes_per_su is not None:
        out["nodes_per_su"] = r.nodes_per_su
    if r.rails_per_leaf != 1:
        out["rails_per_leaf"] = r.rails_per_leaf
    if r.jobs:
        out["jobs"] = list(r.jobs)
    return out


def regions_from_value(v: Any) -> tuple[Region, ...] | None:
    """The design's ``regions`` field in canonical form (None, or a tuple of validated regions)."""
    if v is None:
        return None
    if not isinstance(v, (list, tuple)) or not v:
        _err("regions", f"expected a non-empty list of regions (or null), got {v!r}")
    out = tuple(region_from_dict(r, i) for i, r in enumerate(v))
    names = [r.name for r in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        _err("regions", f"region names must differ; {', '.join(dup)} repeats")
    placed = [j for r in out for j in r.jobs]
    twice = sorted({j for j in placed if placed.count(j) > 1})
    if twice:
        _err("regions", f"job(s) {', '.join(twice)} placed in more than one region")
    return out


def regions_json(regions) -> str:
    """The compact JSON text of ``regions`` (a record column, a link): ``""`` for None."""
    import json

    if not regions:
        return ""
    return json.dumps([region_to_dict(r) for r in regions], separators=(",", ":"), sort_keys=True)


def regions_from_json(text) -> tuple[Region, ...] | None:
    """The regions of :func:`regions_json` text (None for empty text); a clear error for text that is not."""
    import json

    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return None
    try:
        value = json.loads(str(text))
    except ValueError as err:
        raise DesignError(f"design field 'regions': not JSON ({err.msg} at character {err.pos})") from None
    return regions_from_value(value)


_FAMILY_WORDS = {"clos": "Clos", "rail_optimized": "rail-opt"}


def regions_text(regions, *, jobs: bool = True) -> str:
    """A one-line description: ``A 128 srv rail-opt 1:1 (mixtral) | B 128 srv Clos 3:1``."""
    out = []
    for r in regions or ():
        o1, o2 = r.oversub(0), r.oversub(1)
        ratio = f"{o1:g}:1" + (f"/{o2:g}:1" if o2 != 1.0 else "")
        extra = f" {r.rails_per_leaf} rails/leaf" if r.rails_per_leaf > 1 else ""
        held = f" ({', '.join(r.jobs)})" if jobs and r.jobs else ""
        out.append(f"{r.name} {r.nodes:,} srv {_FAMILY_WORDS.get(r.family, r.family)} {ratio}{extra}{held}")
    return " | ".join(out)


def highest_ratio(design, tier: int) -> float:
    """Down:up at ``tier`` (0 leaf, 1 spine) of a uniform design; of a design of regions, the highest any region
    has there (what a table column of one ratio per design shows for it, with the regions beside it)."""
    if getattr(design, "regions", None):
        return max(r.oversub(tier) for r in design.regions)
    return design.oversub(tier)

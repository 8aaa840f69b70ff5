"""The design description: one documented schema (JSON or YAML) for a cluster network design.

A :class:`Design` names hardware by catalog model id and says how it is wired (topology family, tiers,
per-tier oversubscription, planes, scalable units) and how it is operated (routing policy, queue pairs,
transport, placement, storage isolation). ``docs/design-schema.md`` documents every field.

Validation here is structural (types, ranges, known names). Whether the endpoints fit the chosen radix and tiers
is checked by :func:`fabric.design.capacity.check_capacity`, which needs the catalog.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from fabric.errors import DesignError

__all__ = [
    "FAMILIES", "DESIGN_FAMILIES", "SERVING_PRIORITIES", "ROUTING_POLICIES", "DEFAULT_SEARCH_ROUTINGS", "TRANSPORTS", "REORDER_TOLERANT_TRANSPORTS", "LEGACY_TRANSPORTS", "PLACEMENTS",
    "LEGACY_PLACEMENTS",
    "CABLING", "NCCL_ALGO_NAMES",
    "MAX_OVERSUBSCRIPTION", "MIN_OVERSUBSCRIPTION", "Design", "design_from_dict", "design_to_dict", "load_design", "dump_design",
]

#: Topology families a builder exists for (and the search offers).
FAMILIES = ("clos", "rail_optimized", "rail_only", "dragonfly")
#: What a design's ``family`` may be: a family, or ``regions`` (a design of regions cabled differently, joined by a
#: shared core: fabric.design.regions; set when a design has two or more regions).
DESIGN_FAMILIES = FAMILIES + ("regions",)
#: How a serving traffic class is scheduled against training on shared links (design field serving_priority).
SERVING_PRIORITIES = ("strict", "weighted")
#: Routing policies: per-flow ECMP hashing, adaptive (load-aware, near-even), per-packet spraying (even split),
#: computed paths (a controller places whole flows on disjoint paths: NSLB-style load balancing, path pinning).
ROUTING_POLICIES = ("ecmp", "adaptive", "spray", "computed")
#: The routing policies a search or an upgrade plan tries unless told otherwise: computed paths need a controller
#: that knows the job's flows (NSLB-style switches, a fabric manager pinning paths), so they are tried only when
#: asked for (search constraint ``routings``).
DEFAULT_SEARCH_ROUTINGS = ("ecmp", "adaptive", "spray")
#: Transport profiles (efficiency, latency and reordering parameters live in fabric.evaluate.transport):
#: InfiniBand, RoCEv2 (go-back-N), kernel TCP, reorder-tolerant Ethernet (UEC/SRD-style).
TRANSPORTS = ("infiniband", "roce", "tcp", "uec")
#: Transports whose NICs tolerate packets out of order (per-packet spraying costs them nothing extra).
REORDER_TOLERANT_TRANSPORTS = ("infiniband", "uec")
#: Old transport names that still load, and their current names.
LEGACY_TRANSPORTS = {"spray_ethernet": "uec"}
#: Job placement rules (what the scheduler is told to do; a fragmented cluster is a scenario, not a rule).
PLACEMENTS = ("packed", "rail_aligned")
#: Old placement values that still load, and the rule they load as: "scattered" was a fragmented cluster, which is
#: now the scenario field ``fragmentation`` (preset ``fragmented``).
LEGACY_PLACEMENTS = {"scattered": "packed"}
#: How endpoint (NIC-to-leaf) links are cabled: "auto" = copper when the leaf sits in the nodes' rack.
CABLING = ("auto", "copper", "optics")
#: ``NCCL_ALGO`` values a design may force for its all-reduces (None: NCCL's own choice; docs/evaluator.md).
NCCL_ALGO_NAMES = ("ring", "tree", "nvls", "nvlstree", "collnet")
#: Oversubscription above this is rejected as a mistake (Meta's AI zones run ~7:1 above the zone).
MAX_OVERSUBSCRIPTION = 16.0
#: Down:up below 1 (more uplink than downlink capacity, e.g. uplinks faster than the NIC ports) is allowed: it
#: absorbs ECMP collisions; below this it is rejected as a mistake.
MIN_OVERSUBSCRIPTION = 0.25
#: Upper bound on GPUs in one design (also capped by fabric.limits at run time).
MAX_GPUS = 4_194_304


@dataclass(frozen=True)
class Design:
    """A cluster network design. Every field has a default so a design file may give only what differs.

    Sizes: ``gpus`` in total, ``gpus_per_node`` per server, ``scale_up_size`` GPUs per NVLink domain (a multiple
    of ``gpus_per_node``; 72 for an NVL72 rack of 4-GPU trays). ``nics_per_gpu`` may be fractional (0.5: two GPUs
    share a NIC) as long as NICs per node is whole. ``oversubscription`` is down:up per switch tier, leaf first.
    ``tiers`` is 1, 2, 3 or ``None`` (the fewest that fit). ``spines`` fixes the spine switches (per pod for 3
    tiers, per rail for rail-only) instead of the fewest that take the leaf uplinks in equal bundles.
    ``uplink_gbps`` is the speed of the switch-to-switch links per tier in Gb/s, ``(leaf -> spine, spine ->
    core)``; ``None`` (the whole field or one tier) means the NIC port speed, so designs without it are unchanged
    (a single number sets both tiers). ``planes`` > 1 splits each NIC's ports over that many independent planes
    (NIC ports must be a multiple of ``planes``). ``reserved_node_slots`` are node slots taken by appliances that
    use leaf ports like a server (NVIDIA's UFM node in a SuperPOD), placed first. ``rack_power_w`` is the power
    one compute rack is given (watts): it takes as many servers as that feeds, a server (or rack-scale system) above
    it is a rack of its own; ``None``: 40.8 kW (:data:`fabric.topology.racks.RACK_POWER_BUDGET_W`).
    """

    name: str = "design"
    family: str = "clos"
    gpus: int = 1024
    gpu_model: str = "h100-sxm"
    gpus_per_node: int = 8
    scale_up_size: int | None = None
    nics_per_gpu: float = 1.0
    nic_model: str = "nic-cx7-400"
    switch_model: str = "ib-ndr-64x400"
    tiers: int | None = None
    spines: int | None = None
    oversubscription: tuple[float, ...] = (1.0, 1.0)
    uplink_gbps: tuple | None = None
    planes: int = 1
    nodes_per_su: int | None = None
    rails_per_leaf: int = 1
    reserved_node_slots: int = 0
    dragonfly_terminals: int | None = None
    dragonfly_routers: int | None = None
    dragonfly_globals: int | None = None
    routing: str = "ecmp"
    qps_per_connection: int = 1
    storage_routing: str | None = None
    transport: str = "infiniband"
    in_network_reduction: bool = False
    pxn: bool = False
    placement: str = "packed"
    storage_isolation: bool = False
    #: free policy: inference traffic in a traffic class of its own with priority (an InfiniBand service level /
    #: RoCE DSCP priority queue), so training collectives and checkpoint bursts on shared links do not slow it
    serving_class: bool = False
    #: free policy: how the serving class is scheduled on shared links: "strict" priority (serving first, whatever
    #: it costs the training traffic) or "weighted" (a weighted round-robin guaranteeing serving ``serving_weight`` of
    #: a contended link and training the rest); only with ``serving_class``
    serving_priority: str = "strict"
    serving_weight: float = 0.8
    #: free policy: routing of serving jobs' traffic (None: as ``routing``): a traffic class routed its own way
    serving_routing: str | None = None
    endpoint_cabling: str = "auto"
    nccl_algo: str | None = None
    rack_power_w: float | None = None
    #: NCCL connections (channels) per NIC between two ranks of a collective; each opens ``qps_per_connection``
    #: queue pairs, so a rank pair has channels x QPs flows for ECMP to hash. None: NCCL's own rule by NIC count and
    #: message size (fabric.evaluate.channels, docs/evaluator.md); a number: NCCL_MIN/MAX_NCHANNELS pinned, or 1
    #: for traffic with one connection per pair (the packet-level validation runs that)
    channels_per_nic: int | None = None
    #: regions cabled differently, joined by a shared core (fabric.design.regions); None: one uniform fabric. One
    #: region is folded into the uniform design of its cabling; two or more make ``family`` "regions"
    regions: tuple | None = None

    def __post_init__(self):
        object.__setattr__(self, "uplink_gbps", _normalise_uplinks(self.uplink_gbps))
        _fold_regions(self)
        if self.transport in LEGACY_TRANSPORTS:
            _warn_legacy_transport(self.transport)
            object.__setattr__(self, "transport", LEGACY_TRANSPORTS[self.transport])
        if isinstance(self.placement, str) and self.placement in LEGACY_PLACEMENTS:
            warn_legacy_placement(self.placement)
            object.__setattr__(self, "placement", LEGACY_PLACEMENTS[self.placement])
        validate_design(self)

    @property
    def nics_per_node(self) -> int:
        """NICs in one server."""
        return int(round(self.gpus_per_node * self.nics_per_gpu))

    @property
    def nodes(self) -> int:
        """Servers (the last one may be partly filled only if gpus is not a multiple of gpus_per_node: rejected)."""
        return self.gpus // self.gpus_per_node

    @property
    def domain_size(self) -> int:
        """GPUs per scale-up (NVLink) domain."""
        return self.scale_up_size or self.gpus_per_node

    def oversub(self, tier: int) -> float:
        """Oversubscription (down:up) at switch tier ``tier`` (0 = leaf); 1.0 past the given list."""
        return float(self.oversubscription[tier]) if tier < len(self.oversubscription) else 1.0

    def uplink_speed_gbps(self, tier: int) -> float | None:
        """Speed (Gb/s) of the uplinks of switch tier ``tier`` (0: leaf -> spine, 1: spine -> core); ``None`` means
        the NIC port speed."""
        if self.uplink_gbps is None or tier >= len(self.uplink_gbps):
            return None
        return self.uplink_gbps[tier]

    def replace(self, **changes) -> "Design":
        """A validated copy with ``changes`` applied."""
        return replace(self, **changes)


def _warn_legacy_transport(old: str) -> None:
    import warnings

    new = LEGACY_TRANSPORTS[old]
    warnings.warn(f"design field 'transport': {old!r} is now called {new!r} (a reorder-tolerant Ethernet transport, "
                  f"docs/design-schema.md); the old name still loads, write {new!r} in new files",
                  FutureWarning, stacklevel=4)


def legacy_placement_text(old: str) -> str:
    """The one-line notice for an old placement value (design files, links and constraints say the same)."""
    return (f"{old!r} is a fragmented cluster, a condition rather than a rule a scheduler follows: it "
            f"loads as {LEGACY_PLACEMENTS[old]!r}; evaluate under the scenario 'fragmented' (fabric evaluate "
            f"--scenario fragmented) to see the fragmented cluster")


def warn_legacy_placement(old: str, stacklevel: int = 4) -> None:
    import warnings

    warnings.warn(f"design field 'placement': {legacy_placement_text(old)}", FutureWarning, stacklevel=stacklevel)


def _err(fld: str, msg: str):
    raise DesignError(f"design field '{fld}': {msg}")


def _fold_regions(d: "Design") -> None:
    """``regions`` in canonical form; one region folded into the uniform design of its cabling; two or more set
    ``family`` to "regions" after checking the design-wide fields they replace were left alone."""
    from fabric.design.regions import regions_from_value

    regions = regions_from_value(d.regions)
    if regions is None:
        object.__setattr__(d, "regions", None)
        if d.family == "regions":
            _err("family", "'regions' needs a list of regions in the field 'regions' (docs/regions.md)")
        return
    if len(regions) == 1:
        r = regions[0]
        for k, v in (("family", r.family), ("oversubscription", tuple(r.oversubscription)),
                     ("nodes_per_su", r.nodes_per_su), ("rails_per_leaf", r.rails_per_leaf), ("regions", None)):
            object.__setattr__(d, k, v)
        return
    for fld, default in (("oversubscription", (1.0, 1.0)), ("nodes_per_su", None), ("rails_per_leaf", 1),
                         ("spines", None), ("reserved_node_slots", 0)):
        v = getattr(d, fld)
        if (tuple(float(x) for x in v) if fld == "oversubscription" and isinstance(v, tuple) else v) != default:
            _err(fld, f"a design with regions sets it per region (or, for spines and reserved slots, not at all); "
                      f"leave it out (got {v!r})")
    if d.tiers not in (None, 2, 3):
        _err("tiers", f"regions are joined by shared spines (2) or a shared core (3), or leave tiers out; "
                      f"got {d.tiers!r}")
    if d.family not in ("clos", "regions"):
        _err("family", f"a design with {len(regions)} regions has family 'regions' (each region has its own "
                       f"family); got {d.family!r}")
    object.__setattr__(d, "family", "regions")
    object.__setattr__(d, "regions", regions)


#: Fastest uplink accepted (Gb/s): above any switch port in the catalog's generations (1.6T).
MAX_UPLINK_GBPS = 3200.0


def _normalise_uplinks(v):
    """``uplink_gbps`` in its canonical form: ``None`` or ``(leaf, spine)`` with ``None`` for "the NIC speed".

    A number (or a one-item list) sets both tiers; ``{"leaf": .., "spine": ..}`` names them (a missing spine tier
    follows the leaf tier). Values that are not numbers are left for :func:`validate_design` to reject.
    """
    if v is None:
        return None
    if isinstance(v, dict):
        bad = sorted(map(str, set(v) - {"leaf", "spine"}))
        if bad:
            _err("uplink_gbps", f"unknown tier(s) {', '.join(bad)}; use leaf, spine")
        leaf = v.get("leaf")
        v = (leaf, v.get("spine", leaf))
    elif isinstance(v, (list, tuple)):
        if len(v) == 0 or len(v) > 2:
            _err("uplink_gbps", f"give one speed or two (leaf -> spine, spine -> core) in Gb/s; got {len(v)}")
        v = (v[0], v[0]) if len(v) == 1 else (v[0], v[1])
    else:
        v = (v, v)
    v = tuple(_plain_number(x) for x in v)
    return None if v == (None, None) else v


def _plain_number(x):
    """A numpy scalar as a Python one, and a whole or fractional number as a float (so equal designs are equal)."""
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            x = x.item()
        except (TypeError, ValueError):
            return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    return x


def _int_in(d: Design, fld: str, lo: int, hi: int, *, allow_none=False):
    v = getattr(d, fld)
    if v is None and allow_none:
        return
    if isinstance(v, bool) or not isinstance(v, int):
        _err(fld, f"expected a whole number, got {v!r}")
    if v < lo or v > hi:
        _err(fld, f"must be between {lo:,} and {hi:,}, got {v:,}")


def _choice(d: Design, fld: str, choices):
    v = getattr(d, fld)
    if v not in choices:
        _err(fld, f"unknown value {v!r}; choose one of {', '.join(choices)}")


def validate_design(d: Design) -> None:
    """Structural checks with one-line fix-it messages (raises :class:`DesignError`)."""
    if not isinstance(d.name, str) or not d.name.strip():
        _err("name", "expected a non-empty string")
    _choice(d, "family", DESIGN_FAMILIES)
    if isinstance(d.gpus, int) and not isinstance(d.gpus, bool) and d.gpus <= 0:
        _err("gpus", f"a design needs at least one GPU, got {d.gpus}")
    _int_in(d, "gpus", 1, MAX_GPUS)
    _int_in(d, "gpus_per_node", 1, 256)
    if d.gpus % d.gpus_per_node:
        _err("gpus", f"{d.gpus:,} GPUs is not a whole number of {d.gpus_per_node}-GPU nodes; "
                     f"use a multiple of {d.gpus_per_node}")
    _int_in(d, "scale_up_size", 1, 4096, allow_none=True)
    if d.scale_up_size is not None:
        if d.scale_up_size % d.gpus_per_node:
            _err("scale_up_size", f"must be a multiple of gpus_per_node ({d.gpus_per_node}), got {d.scale_up_size}")
        if d.gpus % d.scale_up_size:
            _err("scale_up_size", f"{d.gpus:,} GPUs do not fill whole {d.scale_up_size}-GPU scale-up domains; use a "
                                  f"multiple of {d.scale_up_size}, e.g. "
                                  f"{-(-d.gpus // d.scale_up_size) * d.scale_up_size:,}")
    if isinstance(d.nics_per_gpu, bool) or not isinstance(d.nics_per_gpu, (int, float)) \
            or not math.isfinite(d.nics_per_gpu) or d.nics_per_gpu <= 0 or d.nics_per_gpu > 8:
        _err("nics_per_gpu", f"must be a number in (0, 8], got {d.nics_per_gpu!r}")
    per_node = d.gpus_per_node * d.nics_per_gpu
    if abs(per_node - round(per_node)) > 1e-9 or round(per_node) < 1:
        _err("nics_per_gpu", f"{d.nics_per_gpu} NICs per GPU x {d.gpus_per_node} GPUs per node is not a whole "
                             f"number of NICs per node")
    for fld in ("gpu_model", "nic_model", "switch_model"):
        v = getattr(d, fld)
        if not isinstance(v, str) or not v:
            _err(fld, f"expected a catalog model id, got {v!r}")
    _int_in(d, "tiers", 1, 3, allow_none=True)
    _int_in(d, "spines", 1, 4096, allow_none=True)
    if d.spines is not None and d.family == "dragonfly":
        _err("spines", "a dragonfly has no spine layer; leave spines unset")
    if not isinstance(d.oversubscription, tuple) or not d.oversubscription:
        _err("oversubscription", "expected a non-empty list of down:up ratios, leaf tier first")
    if len(d.oversubscription) > 2:
        _err("oversubscription", f"give at most 2 ratios (leaf, spine); got {len(d.oversubscription)}")
    for i, o in enumerate(d.oversubscription):
        if isinstance(o, bool) or not isinstance(o, (int, float)) or not math.isfinite(o):
            _err("oversubscription", f"ratio {i} must be a number, got {o!r}")
        if o < MIN_OVERSUBSCRIPTION:
            _err("oversubscription", f"ratio {i} is {o:g}: down:up below {MIN_OVERSUBSCRIPTION:g} buys more than "
                                     f"{1 / MIN_OVERSUBSCRIPTION:g} times the uplink capacity the downlinks can fill; "
                                     f"use >= {MIN_OVERSUBSCRIPTION:g}")
        if o > MAX_OVERSUBSCRIPTION:
            _err("oversubscription", f"ratio {i} is {o:g}: above {MAX_OVERSUBSCRIPTION:g}:1 is not a usable fabric")
    if d.uplink_gbps is not None:
        for tier, v in zip(("leaf", "spine"), d.uplink_gbps):
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                _err("uplink_gbps", f"{tier} uplink speed must be a number of Gb/s, got {v!r}")
            if not 0 < v <= MAX_UPLINK_GBPS:
                _err("uplink_gbps", f"{tier} uplink speed must be in (0, {MAX_UPLINK_GBPS:g}] Gb/s, got {v:g}")
        if d.family == "dragonfly":
            _err("uplink_gbps", "dragonfly router-to-router links run at the NIC port speed; leave uplink_gbps out")
    _int_in(d, "planes", 1, 8)
    _int_in(d, "nodes_per_su", 1, 4096, allow_none=True)
    _int_in(d, "rails_per_leaf", 1, 64)
    if d.rails_per_leaf != 1 and d.family != "rail_optimized":
        _err("rails_per_leaf", f"only a rail_optimized fabric groups rails on a leaf (family is {d.family!r}); "
                               "leave it at 1")
    _int_in(d, "reserved_node_slots", 0, 4096)
    if d.regions is not None and isinstance(d.gpus, int) and isinstance(d.gpus_per_node, int) and d.gpus_per_node:
        have = sum(r.nodes for r in d.regions)
        if have != d.gpus // d.gpus_per_node:
            _err("regions", f"the regions hold {have:,} servers ({', '.join(f'{r.name} {r.nodes:,}' for r in d.regions)})"
                            f" but the design has {d.gpus // d.gpus_per_node:,} ({d.gpus:,} GPUs / "
                            f"{d.gpus_per_node}); make them add up")
    for fld in ("dragonfly_terminals", "dragonfly_routers", "dragonfly_globals"):
        _int_in(d, fld, 1, 1024, allow_none=True)
    _choice(d, "routing", ROUTING_POLICIES)
    if d.storage_routing is not None:
        _choice(d, "storage_routing", ROUTING_POLICIES)
    _int_in(d, "qps_per_connection", 1, 256)
    _int_in(d, "channels_per_nic", 1, 64, allow_none=True)
    _choice(d, "transport", TRANSPORTS)
    _choice(d, "serving_priority", SERVING_PRIORITIES)
    w = d.serving_weight
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.5 <= float(w) <= 0.99:
        _err("serving_weight", f"the serving class's share of a contended link must be in [0.5, 0.99], got {w!r}")
    object.__setattr__(d, "serving_weight", float(w))
    if d.serving_routing is not None:
        _choice(d, "serving_routing", ROUTING_POLICIES)
    _choice(d, "placement", PLACEMENTS)
    _choice(d, "endpoint_cabling", CABLING)
    for fld in ("in_network_reduction", "pxn", "storage_isolation", "serving_class"):
        if not isinstance(getattr(d, fld), bool):
            _err(fld, f"expected true or false, got {getattr(d, fld)!r}")
    if d.family == "dragonfly" and d.planes != 1:
        _err("planes", "dragonfly designs have one plane")
    if d.family != "dragonfly" and any(
            getattr(d, f) is not None for f in ("dragonfly_terminals", "dragonfly_routers", "dragonfly_globals")):
        _err("family", f"dragonfly_* fields only apply to family 'dragonfly', not {d.family!r}")
    if d.in_network_reduction and d.transport != "infiniband":
        _err("in_network_reduction", "in-network reduction (SHARP-like) needs the 'infiniband' transport")
    if d.nccl_algo is not None and d.nccl_algo not in NCCL_ALGO_NAMES:
        _err("nccl_algo", f"unknown value {d.nccl_algo!r}; choose one of {', '.join(NCCL_ALGO_NAMES)} "
                          "(NCCL_ALGO), or null for NCCL's own choice")
    if d.rack_power_w is not None:
        v = d.rack_power_w
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 1e3 <= v <= 1e6:
            _err("rack_power_w", f"the power of one rack must be between 1,000 and 1,000,000 W, got {v!r}")
        object.__setattr__(d, "rack_power_w", float(v))
    if d.nccl_algo is not None:
        if d.nccl_algo == "collnet" and not d.in_network_reduction:
            _err("nccl_algo", "'collnet' is NCCL's in-network reduction: set in_network_reduction: true "
                              "(infiniband transport) or choose ring, tree, nvls or nvlstree")


_FIELD_NAMES = [f.name for f in fields(Design)]
#: Accepted in files as an alternative to nic_model: resolved against the catalog by fabric.design.resolve.
_EXTRA_KEYS = {"nic_speed_gbps", "schema"}
SCHEMA_VERSION = "fabric.design/1"


def design_from_dict(d: dict[str, Any], *, catalog=None) -> Design:
    """Build a validated :class:`Design` from a dict (the JSON/YAML form).

    Unknown keys are errors (typos must not be ignored). ``nic_speed_gbps`` may stand in for ``nic_model``: the
    cheapest catalog NIC of that port speed is chosen (needs ``catalog``, defaults to the built-in one).
    """
    if not isinstance(d, dict):
        raise DesignError(f"a design must be an object of fields, got {type(d).__name__}")
    unknown = sorted(set(d) - set(_FIELD_NAMES) - _EXTRA_KEYS)
    if unknown:
        raise DesignError(f"unknown design field(s) {', '.join(unknown)}; known fields: {', '.join(_FIELD_NAMES)}")
    schema = d.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise DesignError(f"design field 'schema': unsupported {schema!r}; expected {SCHEMA_VERSION!r}")
    kw = {k: v for k, v in d.items() if k in _FIELD_NAMES}
    if "oversubscription" in kw:
        o = kw["oversubscription"]
        if isinstance(o, (int, float)) and not isinstance(o, bool):
            o = [o]
        if isinstance(o, dict):  # {"leaf": 2, "spine": 1}
            bad = sorted(set(o) - {"leaf", "spine"})
            if bad:
                raise DesignError(f"design field 'oversubscription': unknown tier(s) {', '.join(bad)}; use leaf, spine")
            o = [o.get("leaf", 1.0), o.get("spine", 1.0)]
        if not isinstance(o, (list, tuple)):
            raise DesignError(f"design field 'oversubscription': expected a number or a list, got {o!r}")
        kw["oversubscription"] = tuple(o)
    if kw.get("tiers") == "auto":
        kw["tiers"] = None
    if isinstance(kw.get("nccl_algo"), str):
        kw["nccl_algo"] = kw["nccl_algo"].strip().lower()      # NCCL_ALGO is case-insensitive (NVLSTree)
    if "nic_speed_gbps" in d:
        from fabric.catalog import default_catalog

        cat = catalog or default_catalog()
        speed = d["nic_speed_gbps"]
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) or speed <= 0:
            raise DesignError(f"design field 'nic_speed_gbps': expected a positive number, got {speed!r}")
        candidates = [n for n in cat.nics.values() if abs(n.port_speed_bps - speed * 1e9) < 1]
        if "nic_model" in kw:
            nic = cat.nic(kw["nic_model"])
            if abs(nic.port_speed_bps - speed * 1e9) > 1:
                raise DesignError(f"design fields 'nic_model' ({nic.model}, {nic.port_speed_bps / 1e9:g} Gb/s) and "
                                  f"'nic_speed_gbps' ({speed:g}) disagree")
        elif not candidates:
            speeds = sorted({n.port_speed_bps / 1e9 for n in cat.nics.values()})
            raise DesignError(f"design field 'nic_speed_gbps': no catalog NIC has {speed:g} Gb/s ports; "
                              f"available: {', '.join(f'{s:g}' for s in speeds)}")
        else:
            kw["nic_model"] = min(candidates, key=lambda n: (n.price_usd, n.model)).model
    try:
        return Design(**kw)
    except TypeError as err:  # defensive: wrong types that dataclass construction rejects
        raise DesignError(f"invalid design: {err}") from err


def design_to_dict(design: Design) -> dict[str, Any]:
    """The JSON/YAML form of a design (every field, plus the schema version)."""
    d = asdict(design)
    d["oversubscription"] = list(design.oversubscription)
    d["uplink_gbps"] = None if design.uplink_gbps is None else list(design.uplink_gbps)
    if design.regions is not None:
        from fabric.design.regions import region_to_dict

        d["regions"] = [region_to_dict(r) for r in design.regions]
    else:
        d.pop("regions", None)
    return {"schema": SCHEMA_VERSION, **d}


def load_design(path_or_text: str | Path, *, catalog=None) -> Design:
    """Read a design from a ``.json``/``.yaml``/``.yml`` file (or JSON/YAML text). Errors name the file."""
    p = Path(path_or_text) if not str(path_or_text).lstrip().startswith(("{", "name:", "family:")) else None
    src = str(p) if p is not None else "design text"
    if p is not None:
        if not p.exists():
            raise DesignError(f"design file {p} not found")
        if p.stat().st_size > 1_000_000:
            raise DesignError(f"design file {p} is larger than 1 MB; a design is a small JSON/YAML object")
        text = p.read_text(encoding="utf-8", errors="replace")
    else:
        text = str(path_or_text)
    try:
        if p is not None and p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)  # JSON is YAML too; safe_load never builds objects
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise DesignError(f"{src}: not valid JSON/YAML ({' '.join(str(err).split())})") from err
    try:
        return design_from_dict(data, catalog=catalog)
    except DesignError as err:
        raise DesignError(f"{src}: {err}") from err


def dump_design(design: Design) -> str:
    """JSON text of a design."""
    return json.dumps(design_to_dict(design), indent=2)

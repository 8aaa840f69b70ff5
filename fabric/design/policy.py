"""Free policy versus hardware: which decisions of a design cost nothing to change.

A design mixes two kinds of decisions. **Free policy** is how the installed fabric is operated and can change with
a configuration push, at no cost: the routing policy (ECMP, adaptive, spraying), queue pairs per connection, the
storage traffic class's routing, the scheduler's placement rule, PXN and the NCCL algorithm. **Hardware** is what is
bought and cabled: the topology, switch and NIC models and counts, oversubscription, uplink speeds, planes, the
transport (what the NICs and switches speak), in-network reduction (switches with SHARP), a separate storage
network, cabling. Conditions of the cluster (failures, background load, a fragmented cluster) are neither: they
are scenarios (:mod:`fabric.evaluate.scenario`).

This module is the single definition: the advisor, the search genes, the front and the comparison of designs all
read it. Two designs with the same hardware cost the same (the bill of materials depends on hardware only); the
difference between them is what free policy gives.
"""

from __future__ import annotations

from dataclasses import fields

from fabric.design.schema import Design

__all__ = ["POLICY", "HARDWARE", "region_jobs", "POLICY_FIELDS", "HARDWARE_FIELDS", "GENE_FIELDS", "field_kind", "gene_kind",
           "edit_kind", "policy_of", "hardware_of", "same_hardware", "with_policy", "policy_changes",
           "hardware_changes", "policy_options", "policy_text", "DEFAULT_POLICY", "RECORD_POLICY_COLUMNS",
           "RECORD_HARDWARE_COLUMNS", "record_policy_changes", "same_record_hardware", "plainness", "TIE_RULE",
           "best_free_policy"]

POLICY, HARDWARE = "free policy", "hardware"

#: Design fields that are free policy (configuration of the installed fabric, no hardware bought).
POLICY_FIELDS = ("routing", "qps_per_connection", "storage_routing", "placement", "pxn", "nccl_algo", "serving_class",
                 "channels_per_nic", "serving_priority", "serving_weight", "serving_routing")
#: Every other design field but the name: hardware (bought, cabled, or the cluster itself).
HARDWARE_FIELDS = tuple(f.name for f in fields(Design) if f.name not in POLICY_FIELDS and f.name != "name")
#: Search genes and record columns that stand for a design field of another name.
GENE_FIELDS = {"oversub_leaf": "oversubscription", "oversub_spine": "oversubscription",
               "uplink_speed_factor": "uplink_gbps", "uplink_leaf_gbps": "uplink_gbps",
               "uplink_spine_gbps": "uplink_gbps"}
#: The policy a design has when nobody tuned it (the schema's defaults): what "no policy work" means.
DEFAULT_POLICY = {f: Design.__dataclass_fields__[f].default for f in POLICY_FIELDS}

_NAMES = {"routing": "routing", "qps_per_connection": "queue pairs per connection",
          "storage_routing": "storage traffic routing", "placement": "placement rule", "pxn": "PXN",
          "nccl_algo": "NCCL algorithm", "channels_per_nic": "NCCL channels per NIC", "serving_class": "serving traffic class", "serving_priority": "serving class priority",
          "serving_weight": "serving class weight", "serving_routing": "serving traffic routing", "oversubscription": "oversubscription", "uplink_gbps": "uplink speed"}


def field_kind(name: str) -> str:
    """:data:`POLICY` or :data:`HARDWARE` for a design field; ValueError for a name that is not one."""
    if name in POLICY_FIELDS:
        return POLICY
    if name in HARDWARE_FIELDS:
        return HARDWARE
    raise ValueError(f"{name!r} is not a design field")


def gene_kind(name: str) -> str:
    """:data:`POLICY` or :data:`HARDWARE` for a search gene or record column (``oversub_leaf`` is hardware)."""
    return field_kind(GENE_FIELDS.get(name, name))


def edit_kind(edit: dict) -> str:
    """The kind of a design edit (fields to replace): free policy only when every field it touches is."""
    return POLICY if edit and all(field_kind(k) == POLICY for k in edit) else HARDWARE


def policy_of(design: Design) -> dict:
    """The design's free policy, field -> value."""
    return {f: getattr(design, f) for f in POLICY_FIELDS}


def hardware_of(design: Design) -> dict:
    """The design's hardware, field -> value (a design of regions: its regions without the jobs each holds, which
    are placement, free policy)."""
    out = {f: getattr(design, f) for f in HARDWARE_FIELDS}
    if design.regions:
        from dataclasses import replace

        out["regions"] = tuple(replace(r, jobs=()) for r in design.regions)
    return out


def region_jobs(design: Design) -> dict:
    """A design of regions' placement rule: job name -> the region that names it (empty for other designs)."""
    return {j: r.name for r in design.regions or () for j in r.jobs}


def same_hardware(a: Design, b: Design) -> bool:
    """True when ``a`` and ``b`` differ at most in free policy (so they cost the same)."""
    return hardware_of(a) == hardware_of(b)


def with_policy(hardware: Design, policy: Design | dict, name: str | None = None) -> Design:
    """``hardware``'s design run with ``policy`` (a design, whose policy is taken, or a field dict). Settings that
    mean nothing on that hardware take their canonical value, as the search's repair does: PXN only on
    rail-optimized fabrics, queue pairs only under ECMP."""
    pol = policy_of(policy) if isinstance(policy, Design) else dict(policy)
    bad = [k for k in pol if k not in POLICY_FIELDS]
    if bad:
        raise ValueError(f"not free policy: {', '.join(bad)}")
    if isinstance(policy, Design) and hardware.regions and policy.regions and \
            hardware_of(hardware)["regions"] == hardware_of(policy)["regions"]:
        pol["regions"] = policy.regions           # the same regions holding the policy's jobs
    if hardware.family != "rail_optimized":
        pol["pxn"] = hardware.pxn
    if pol.get("routing", hardware.routing) != "ecmp":
        pol["qps_per_connection"] = 1
    return hardware.replace(**pol, **({"name": name} if name is not None else {}))


def _text(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, tuple):
        return "/".join(_text(x) for x in v)
    if v is None:
        return "default"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _changes(a: Design, b: Design, names) -> list[str]:
    out = []
    for f in names:
        if getattr(a, f) == getattr(b, f):
            continue
        if f == "regions":
            out += _region_changes(a, b)
            continue
        if f == "oversubscription":
            out += [f"{tier} oversubscription {a.oversub(t):g}:1 -> {b.oversub(t):g}:1"
                    for t, tier in enumerate(("leaf", "spine")) if a.oversub(t) != b.oversub(t)]
        elif f == "uplink_gbps":
            out += [f"{tier} uplinks {_speed(a.uplink_speed_gbps(t))} -> {_speed(b.uplink_speed_gbps(t))}"
                    for t, tier in enumerate(("leaf", "spine")) if a.uplink_speed_gbps(t) != b.uplink_speed_gbps(t)]
        else:
            x, y = (_NONE_TEXT.get(f, "default") if v is None else _text(v) for v in (getattr(a, f), getattr(b, f)))
            out.append(f"{_NAMES.get(f, f.replace('_', ' '))} {x} -> {y}")
    return out


#: What ``None`` means in the fields where it is allowed.
_NONE_TEXT = {"tiers": "auto", "spines": "auto", "storage_routing": "same as routing", "serving_routing": "same as routing", "nccl_algo": "NCCL's choice",
              "scale_up_size": "one server", "nodes_per_su": "auto"}


def _speed(gbps) -> str:
    return "at the NIC speed" if gbps is None else f"{gbps:g}G"


def _region_changes(a: Design, b: Design) -> list[str]:
    """The cabling changes of two designs' regions (``"region B leaf 3:1 -> 1.5:1"``); jobs moving are policy."""
    ra, rb = hardware_of(a).get("regions") or (), hardware_of(b).get("regions") or ()
    if ra == rb:
        return []
    if not ra or not rb or [r.name for r in ra] != [r.name for r in rb]:
        from fabric.design.regions import regions_text

        return [f"regions {regions_text(ra, jobs=False) or a.family} -> {regions_text(rb, jobs=False) or b.family}"]
    out = []
    for x, y in zip(ra, rb):
        for t, tier in enumerate(("leaf", "spine")):
            if x.oversub(t) != y.oversub(t):
                out.append(f"region {x.name} {tier} {x.oversub(t):g}:1 -> {y.oversub(t):g}:1")
        for f in ("nodes", "family", "nodes_per_su", "rails_per_leaf"):
            if getattr(x, f) != getattr(y, f):
                out.append(f"region {x.name} {f.replace('_', ' ')} {_text(getattr(x, f))} -> {_text(getattr(y, f))}")
    return out


def policy_changes(a: Design, b: Design) -> list[str]:
    """The free-policy fields that differ from ``a`` to ``b``, as ``"routing ecmp -> adaptive"`` (and jobs placed in
    other regions: ``"job moe region A -> B"``)."""
    ja, jb = region_jobs(a), region_jobs(b)
    moves = [f"job {j} region {ja.get(j, 'any')} -> {jb.get(j, 'any')}" for j in sorted(set(ja) | set(jb))
             if ja.get(j) != jb.get(j)]
    return _changes(a, b, POLICY_FIELDS) + moves


def hardware_changes(a: Design, b: Design) -> list[str]:
    """The hardware fields that differ from ``a`` to ``b``, as ``"oversubscription 2/1 -> 1/1"``."""
    return _changes(a, b, HARDWARE_FIELDS)


def policy_text(design: Design) -> str:
    """A short description of a design's free policy: ``ecmp/4qp packed``, ``adaptive rail_aligned +PXN``."""
    parts = [f"{design.routing}/{design.qps_per_connection}qp" if design.routing == "ecmp" else design.routing,
             design.placement]
    if design.pxn:
        parts.append("+PXN")
    if design.storage_routing is not None and design.storage_routing != design.routing:
        parts.append(f"storage {design.storage_routing}")
    if design.nccl_algo is not None:
        parts.append(f"NCCL_ALGO={design.nccl_algo}")
    if design.serving_class:
        parts.append("+serving class" + (f" (weighted {design.serving_weight:g})"
                                         if design.serving_priority == "weighted" else ""))
    if design.serving_routing is not None and design.serving_routing != design.routing:
        parts.append(f"serving {design.serving_routing}")
    return " ".join(parts)


def policy_options(design: Design, *, routings=None, qps=(1, 2, 4, 8), placements=None) -> list[Design]:
    """Every canonical free policy of ``design``'s hardware the search can choose (routing: ``routings``, by default
    :data:`~fabric.design.schema.DEFAULT_SEARCH_ROUTINGS`; queue pairs under ECMP,
    placement rule, PXN on rail-optimized fabrics), as designs; the design's own storage routing and NCCL algorithm
    are kept. The first is the design itself when it is one of them."""
    from fabric.design.schema import DEFAULT_SEARCH_ROUTINGS, PLACEMENTS

    routings = tuple(routings or DEFAULT_SEARCH_ROUTINGS)
    placements = tuple(placements or PLACEMENTS)
    pxns = (False, True) if design.family == "rail_optimized" else (False,)
    out, seen = [], set()
    for r in routings:
        for q in (qps if r == "ecmp" else (1,)):
            for p in placements:
                for x in pxns:
                    pol = {"routing": r, "qps_per_connection": q, "placement": p, "pxn": x}
                    key = tuple(sorted(pol.items()))
                    if key not in seen:
                        seen.add(key)
                        out.append(design.replace(**pol))
    own = [d for d in out if d == design]
    return own + [d for d in out if d != design]


#: Gene columns of a search record (fabric.search.records), by kind.
_RECORD_COLUMNS = ("family", "switch_model", "nic_model", "nics_per_gpu", "oversub_leaf", "oversub_spine", "planes",
                   "routing", "qps_per_connection", "transport", "placement", "pxn", "storage_isolation",
                   "in_network_reduction", "uplink_leaf_gbps", "uplink_spine_gbps", "serving_class")
RECORD_POLICY_COLUMNS = tuple(c for c in _RECORD_COLUMNS if gene_kind(c) == POLICY)
RECORD_HARDWARE_COLUMNS = tuple(c for c in _RECORD_COLUMNS if gene_kind(c) == HARDWARE)


def _same_value(a, b) -> bool:
    try:
        return bool(a == b) or (float(a) == float(b))
    except (TypeError, ValueError):
        return False


def same_record_hardware(a, b) -> bool:
    """True when two search records (of one search: same cluster) have the same hardware genes, built the same
    number of switch tiers (a baseline may fix its tiers where the search lets the builder choose) and have the same
    scalable units and reserved node slots (a SuperPOD-style baseline's; 0 or missing: the builder's default)."""
    return all(_same_value(a.get(c), b.get(c)) for c in RECORD_HARDWARE_COLUMNS + ("tiers",)) and all(
        _same_value(a.get(c) or 0, b.get(c) or 0) for c in ("design_nodes_per_su", "design_reserved_slots")) and \
        (a.get("design_rails_per_leaf") or 1) == (b.get("design_rails_per_leaf") or 1) and \
        _region_cabling(a.get("design_regions")) == _region_cabling(b.get("design_regions"))


def _region_cabling(text):
    """A record's regions without the jobs each holds (placement is free policy): what is bought and cabled."""
    from fabric.design.regions import regions_from_json

    regions = regions_from_json(text)
    return None if not regions else tuple((r.name, r.nodes, r.family, tuple(r.oversubscription), r.nodes_per_su,
                                           r.rails_per_leaf) for r in regions)


def record_policy_changes(a, b) -> list[str]:
    """The free-policy genes that differ from record ``a`` to record ``b`` (``"routing ecmp -> adaptive"``)."""
    out = []
    for c in RECORD_POLICY_COLUMNS:
        x, y = a.get(c, DEFAULT_POLICY.get(c)), b.get(c, DEFAULT_POLICY.get(c))     # older records: the default
        if not _same_value(x, y):
            out.append(f"{_NAMES.get(c, c)} {_text(_plain(x))} -> {_text(_plain(y))}")
    return out


def _plain(v):
    return v.item() if hasattr(v, "item") else v


#: The stated rule that picks one of several designs tying on every objective (equal cost, equal p99): the
#: plainest configuration, the one that departs least from what a cluster runs when nobody tunes it.
TIE_RULE = ("the plainest configuration: ECMP before adaptive before spraying before computed paths, fewer queue "
            "pairs, packed before "
            "rail-aligned, PXN off, no serving class, then without in-network reduction or a storage network, "
            "then the lowest oversubscription and uplinks at the NIC speed (between GPU systems, the cheaper "
            "cluster first: the lower cost per step, servers included)")
_ROUTING_ORDER = {"ecmp": 0, "adaptive": 1, "spray": 2, "computed": 3}
_PLACEMENT_ORDER = {"packed": 0, "rail_aligned": 1}


def _truthy(v) -> bool:
    return v in (True, 1, "True", "true", "1")


def plainness(item) -> tuple:
    """Sort key of :data:`TIE_RULE` for a :class:`Design` or a search record (smaller is plainer). Used wherever
    designs tie on every objective: the search's front, the best free policy of a design, the recommendation."""
    if isinstance(item, Design):
        g = {"routing": item.routing, "qps_per_connection": item.qps_per_connection, "placement": item.placement,
             "pxn": item.pxn, "serving_class": item.serving_class,
             "in_network_reduction": item.in_network_reduction, "storage_isolation": item.storage_isolation,
             "oversub_leaf": item.oversub(0), "oversub_spine": item.oversub(1),
             "uplink_leaf_gbps": item.uplink_speed_gbps(0) or 0.0, "uplink_spine_gbps": item.uplink_speed_gbps(1) or 0.0}
    else:
        g = item
    return (_ROUTING_ORDER.get(str(g.get("routing")), 9), int(g.get("qps_per_connection") or 1),
            _PLACEMENT_ORDER.get(str(g.get("placement")), 9), _truthy(g.get("pxn")), _truthy(g.get("serving_class")),
            _truthy(g.get("in_network_reduction")), _truthy(g.get("storage_isolation")),
            float(g.get("oversub_leaf") or 1.0), float(g.get("oversub_spine") or 1.0),
            float(g.get("uplink_leaf_gbps") or 0.0), float(g.get("uplink_spine_gbps") or 0.0))


def best_free_policy(design: Design, evaluate) -> dict:
    """The fastest free policy on ``design``'s hardware: every canonical routing, queue-pair, placement-rule and PXN
    choice (:func:`policy_options`), by the p99 ``evaluate(design)`` returns; among policies with the same p99 the
    plainest (:data:`TIE_RULE`). The one definition of "the best free fix" the Design page (advisor), Compare and the
    brief show.

    Returns ``{"design", "policy", "p99_s", "own_p99_s", "delta_p99_s", "changes", "ties", "tried",
    "not_possible"}``: ``delta_p99_s`` is the best p99 minus the design's own (<= 0; 0 when the design's own policy
    is already the best or ties with it), ``ties`` the other policies reaching the same p99 (texts).
    """
    from fabric.errors import FabricError

    own = float(evaluate(design).step_time_s["p99"])
    results, impossible = [(design, own)], []
    for d in policy_options(design):
        if d == design:
            continue
        try:
            results.append((d, float(evaluate(d).step_time_s["p99"])))
        except FabricError as err:
            impossible.append({"policy": policy_text(d), "reason": " ".join(str(err).split())})
    best_p99 = min(p for _, p in results)
    tied = [d for d, p in results if p <= best_p99]
    # the design's own policy stays when it ties with the best (nothing to change), else the plainest of the best
    best = design if design in tied else min(tied, key=plainness)
    return {"design": best, "policy": policy_text(best), "p99_s": best_p99, "own_p99_s": own,
            "delta_p99_s": best_p99 - own, "changes": policy_changes(design, best),
            "ties": [policy_text(d) for d in sorted(tied, key=plainness) if d != best],
            "tried": len(results), "not_possible": impossible}

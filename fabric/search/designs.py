"""Designs of search records: rebuilt from a record (a row of the search, or of its CSV read back), described gene by gene,

A search record (``fabric.search`` records and front/baseline frames) carries every decision the search made
(the gene columns) but not the cluster's size, which comes from the constraints. :func:`design_from_record`
joins the two back into a validated :class:`~fabric.design.Design`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fabric.design import Design
from fabric.design.regions import highest_ratio, regions_from_json, regions_json
from fabric.errors import DesignError

__all__ = ["GENE_COLUMNS", "LATER_GENES", "GENE_LABELS", "SYSTEM_KEYS", "design_from_record", "design_genes",
           "gene_value_text", "short_label", "recommended_record", "genes_of_record", "design_choices"]

#: Search record columns that define a design (with the constraints' gpus, gpus_per_node and gpu_model).
GENE_COLUMNS = ("family", "switch_model", "nic_model", "nics_per_gpu", "oversub_leaf", "oversub_spine", "planes",
                "routing", "qps_per_connection", "transport", "placement", "pxn", "storage_isolation",
                "in_network_reduction", "uplink_leaf_gbps", "uplink_spine_gbps")
#: Gene columns added after the first release, with the value that means what designs did before them (uplinks at
#: the NIC port speed): records, CSV files and links without them still read.
LATER_GENES = {"uplink_leaf_gbps": 0.0, "uplink_spine_gbps": 0.0}

#: Readable names of the genes (tables and the compare page).
GENE_LABELS = {
    "family": "topology family", "switch_model": "switch model", "nic_model": "NIC model",
    "nics_per_gpu": "NICs per GPU", "oversub_leaf": "leaf oversubscription (down:up)",
    "oversub_spine": "spine oversubscription (down:up)", "planes": "planes", "routing": "routing",
    "qps_per_connection": "queue pairs per connection", "transport": "transport", "placement": "placement rule",
    "pxn": "PXN (rail-local forwarding)", "storage_isolation": "separate storage network",
    "in_network_reduction": "in-network reduction (SHARP)",
    "uplink_leaf_gbps": "leaf uplink speed (leaf -> spine)", "uplink_spine_gbps": "spine uplink speed (spine -> core)",
    "serving_class": "serving traffic class",
    "gpu_model": "GPU system (scale-up domain)", "gpus": "GPUs installed",
}

_BOOL_GENES = ("pxn", "storage_isolation", "in_network_reduction", "serving_class")
_TEXT_GENES = ("family", "switch_model", "nic_model", "routing", "transport", "placement")


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("1", "true", "yes", "y"):
            return True
        if low in ("0", "false", "no", "n", ""):
            return False
        raise DesignError(f"design gene '{name}': expected true/false, got {value!r}")
    return bool(value)


def _as_float(value: Any, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError) as err:
        raise DesignError(f"design gene '{name}': expected a number, got {value!r}") from err
    if not math.isfinite(out):
        raise DesignError(f"design gene '{name}': expected a finite number, got {value!r}")
    return out


def _as_int(value: Any, name: str) -> int:
    out = _as_float(value, name)
    if not out.is_integer():
        raise DesignError(f"design gene '{name}': expected a whole number, got {value!r}")
    return int(out)


def design_from_record(record: Mapping[str, Any], *, gpus: int, gpus_per_node: int = 8,
                       gpu_model: str = "h100-sxm", name: str | None = None, rack_power_w: float | None = None,
                       catalog=None) -> Design:
    """The :class:`Design` a search record stands for, at the constraints' cluster size.

    ``record`` needs every column of :data:`GENE_COLUMNS` but those of :data:`LATER_GENES` (extra keys are ignored);
    numpy and string values are accepted (a record read back from CSV). ``name`` defaults to the record's ``design``
    column. Uplink speeds are in Gb/s, 0 (or missing) meaning the NIC port speed. A record of a search over GPU
    systems (:data:`SYSTEM_KEYS`: ``gpu_model`` and ``gpus``, with ``gpus_per_node`` and ``scale_up_size`` when it
    has them, else the catalog row's host and NVLink domain) sets those instead of ``gpus``, ``gpus_per_node`` and
    ``gpu_model``; its ``rack_power_budget_w`` (0: none) instead of ``rack_power_w``.

    >>> rec = {"family": "clos", "switch_model": "ib-ndr-64x400", "nic_model": "nic-cx7-400",
    ...        "nics_per_gpu": 1.0, "oversub_leaf": 2.0, "oversub_spine": 1.0, "planes": 1, "routing": "ecmp",
    ...        "qps_per_connection": 4, "transport": "infiniband", "placement": "packed", "pxn": False,
    ...        "storage_isolation": False, "in_network_reduction": False, "design": "my design"}
    >>> d = design_from_record(rec, gpus=256)
    >>> d.name, d.oversubscription, d.qps_per_connection
    ('my design', (2.0, 1.0), 4)
    """
    missing = [c for c in GENE_COLUMNS if c not in record and c not in LATER_GENES]
    if missing:
        raise DesignError(f"a design record needs the gene column(s) {', '.join(missing)}")
    for c in _TEXT_GENES:
        if not isinstance(record[c], str) or not record[c]:
            raise DesignError(f"design gene '{c}': expected a name, got {record[c]!r}")
    label = name if name is not None else str(record.get("design") or short_label(record))
    system = _system(record, int(gpus), int(gpus_per_node), gpu_model, catalog)
    budget = record.get("rack_power_budget_w", None)
    budget = rack_power_w if _blank(budget) else (_as_float(budget, "rack_power_budget_w") or None)
    regions = regions_from_json(record.get("design_regions"))
    over = (1.0, 1.0) if regions else (_as_float(record["oversub_leaf"], "oversub_leaf"),
                                       _as_float(record["oversub_spine"], "oversub_spine"))
    return Design(
        name=label, family="regions" if regions else record["family"], **system, rack_power_w=budget,
        switch_model=record["switch_model"], nic_model=record["nic_model"],
        nics_per_gpu=_as_float(record["nics_per_gpu"], "nics_per_gpu"),
        oversubscription=over, regions=regions,
        planes=_as_int(record["planes"], "planes"), routing=record["routing"],
        qps_per_connection=_as_int(record["qps_per_connection"], "qps_per_connection"),
        transport=record["transport"], placement=record["placement"],
        pxn=_as_bool(record["pxn"], "pxn"),
        storage_isolation=_as_bool(record["storage_isolation"], "storage_isolation"),
        in_network_reduction=_as_bool(record["in_network_reduction"], "in_network_reduction"),
        uplink_gbps=_uplinks(record),
        tiers=_as_int(record["design_tiers"], "design_tiers") or None if record.get("design_tiers") else None,
        **_layout(record),
        serving_class=_as_bool(record.get("serving_class") or False, "serving_class"),
        **_class_policy(record),
    )


#: Traffic-class policy columns of a record (free policy) and their defaults: what a record leaves out.
CLASS_POLICY = {"serving_priority": "strict", "serving_weight": 0.8, "serving_routing": None, "storage_routing": None}


def _class_policy(record: Mapping[str, Any]) -> dict:
    """The traffic-class policy fields of a record (:data:`CLASS_POLICY`; blank or missing: the default)."""
    out = {}
    for k, default in CLASS_POLICY.items():
        v = record.get(k)
        if _blank(v):
            continue
        out[k] = _as_float(v, k) if k == "serving_weight" else str(v)
    return out


#: Record keys of a search over GPU systems (constraint ``gpu_models``): the system and the cluster it sizes.
SYSTEM_KEYS = ("gpu_model", "gpus")


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, float) and math.isnan(v))


def _system(record: Mapping[str, Any], gpus: int, gpus_per_node: int, gpu_model: str, catalog) -> dict:
    """``gpus``, ``gpu_model``, ``gpus_per_node``, ``scale_up_size`` of a record (see :func:`design_from_record`)."""
    gm = record.get("gpu_model")
    if _blank(gm):
        return {"gpus": gpus, "gpu_model": gpu_model, "gpus_per_node": gpus_per_node, "scale_up_size": None}
    gm = str(gm)
    n = gpus if _blank(record.get("gpus")) else _as_int(record["gpus"], "gpus")
    if not _blank(record.get("gpus_per_node")):
        gpn = _as_int(record["gpus_per_node"], "gpus_per_node")
        dom = gpn if _blank(record.get("scale_up_size")) else _as_int(record["scale_up_size"], "scale_up_size")
    else:
        from fabric.catalog import default_catalog

        row = (catalog or default_catalog()).gpu(gm)
        gpn = row.host_gpus
        dom = row.scale_up_domain_max if row.rack_scale else gpn
    return {"gpus": n, "gpu_model": gm, "gpus_per_node": gpn, "scale_up_size": dom if dom != gpn else None}


def _layout(record: Mapping[str, Any]) -> dict:
    """``nodes_per_su`` and ``reserved_node_slots`` of a design a search did not choose (a SuperPOD-style baseline:
    record columns ``design_nodes_per_su``, ``design_reserved_slots``, ``design_rails_per_leaf``; 0, 1 or missing: the
    builder's default)."""
    out = {}
    if not _blank(record.get("design_nodes_per_su")) and _as_int(record["design_nodes_per_su"], "design_nodes_per_su"):
        out["nodes_per_su"] = _as_int(record["design_nodes_per_su"], "design_nodes_per_su")
    if not _blank(record.get("design_reserved_slots")):
        out["reserved_node_slots"] = _as_int(record["design_reserved_slots"], "design_reserved_slots")
    if not _blank(record.get("design_rails_per_leaf")) and _as_int(record["design_rails_per_leaf"],
                                                                    "design_rails_per_leaf") > 1:
        out["rails_per_leaf"] = _as_int(record["design_rails_per_leaf"], "design_rails_per_leaf")
    return out


def _uplinks(record: Mapping[str, Any]):
    """``Design.uplink_gbps`` from the two uplink gene columns (0, empty or missing: the NIC port speed)."""
    speeds = []
    for col in ("uplink_leaf_gbps", "uplink_spine_gbps"):
        v = record.get(col, 0.0)
        v = 0.0 if v is None or (isinstance(v, str) and not v.strip()) else _as_float(v, col)
        if v < 0:
            raise DesignError(f"design gene '{col}': expected a speed in Gb/s (0: the NIC speed), got {v:g}")
        speeds.append(v or None)
    return None if speeds == [None, None] else tuple(speeds)


def design_genes(design: Design) -> dict[str, Any]:
    """The gene values of ``design`` (the inverse of :func:`design_from_record`)."""
    return {
        "family": design.family, "switch_model": design.switch_model, "nic_model": design.nic_model,
        "nics_per_gpu": float(design.nics_per_gpu), "oversub_leaf": highest_ratio(design, 0),
        "oversub_spine": highest_ratio(design, 1), "planes": int(design.planes), "routing": design.routing,
        "qps_per_connection": int(design.qps_per_connection), "transport": design.transport,
        "placement": design.placement, "pxn": bool(design.pxn), "storage_isolation": bool(design.storage_isolation),
        "in_network_reduction": bool(design.in_network_reduction),
        "uplink_leaf_gbps": float(design.uplink_speed_gbps(0) or 0.0),
        "uplink_spine_gbps": float(design.uplink_speed_gbps(1) or 0.0),
        **({"design_tiers": int(design.tiers)} if design.tiers else {}),
        **({"design_nodes_per_su": int(design.nodes_per_su)} if design.nodes_per_su else {}),
        **({"design_reserved_slots": int(design.reserved_node_slots)} if design.reserved_node_slots else {}),
        **({"design_rails_per_leaf": int(design.rails_per_leaf)} if design.rails_per_leaf > 1 else {}),
        **({"design_regions": regions_json(design.regions)} if design.regions else {}),
        **{k: getattr(design, k) for k, default in CLASS_POLICY.items() if getattr(design, k) != default},
        **({"serving_class": True} if design.serving_class else {}),
    }


def gene_value_text(gene: str, value: Any) -> str:
    """A gene value as a table shows it (``2:1``, ``yes``/``no``, ``0.5``)."""
    if gene in _BOOL_GENES:
        return "yes" if _as_bool(value, gene) else "no"
    if gene in ("oversub_leaf", "oversub_spine"):
        return f"{_as_float(value, gene):g}:1"
    if gene in ("nics_per_gpu",):
        return f"{_as_float(value, gene):g}"
    if gene in ("planes", "qps_per_connection"):
        return str(_as_int(value, gene))
    if gene in LATER_GENES:
        v = _as_float(value, gene) if value is not None else 0.0
        return "NIC speed" if v == 0 else f"{v:g} Gb/s"
    return str(value)


def short_label(genes: Mapping[str, Any]) -> str:
    """A compact one-line name of a gene set, e.g. ``clos ib-ndr-64x400 nic-cx7-400 2:1 ecmp/4qp``."""
    o1, o2 = _as_float(genes["oversub_leaf"], "oversub_leaf"), _as_float(genes["oversub_spine"], "oversub_spine")
    over = f"{o1:g}:1" if o1 == o2 else f"{o1:g}:1/{o2:g}:1"
    npg = _as_float(genes["nics_per_gpu"], "nics_per_gpu")
    regions = regions_from_json(genes.get("design_regions"))
    if regions:                 # a design of regions: its regions say the cabling and the ratios
        from fabric.design.regions import regions_text

        parts = [f"regions [{regions_text(regions)}]", genes["switch_model"], genes["nic_model"]]
    else:
        parts = [genes["family"], genes["switch_model"], genes["nic_model"]]
    if npg != 1:
        parts.append(f"{npg:g}/GPU")
    if not regions:
        parts.append(over)
    up = [_as_float(genes.get(c) or 0.0, c) for c in ("uplink_leaf_gbps", "uplink_spine_gbps")]
    if any(up):
        parts.append(f"up{up[0]:g}G" if up[0] == up[1] else "up" + "/".join(f"{u:g}G" if u else "NIC" for u in up))
    planes = _as_int(genes["planes"], "planes")
    if planes > 1:
        parts.append(f"x{planes} planes")
    routing = genes["routing"]
    parts.append(f"{routing}/{_as_int(genes['qps_per_connection'], 'qps')}qp" if routing == "ecmp" else routing)
    parts += [genes["transport"], genes["placement"]]
    for flag, text in (("pxn", "+PXN"), ("storage_isolation", "+storage net"), ("in_network_reduction", "+SHARP"),
                       ("serving_class", "+serving class")):
        if _as_bool(genes.get(flag, False), flag):
            parts.append(text + (f" (weighted {float(genes.get('serving_weight') or 0.8):g})"
                                 if flag == "serving_class" and genes.get("serving_priority") == "weighted" else ""))
    for k, word in (("serving_routing", "serving"), ("storage_routing", "storage")):
        if not _blank(genes.get(k)):
            parts.append(f"{word}:{genes[k]}")
    return " ".join(str(p) for p in parts)


def recommended_record(front: list[dict], baselines: list[dict], *, p99_target_s: float | None = None) -> dict | None:
    """The design the dashboard proposes from a front, or ``None`` for an empty front (the rule and its reference:
    :func:`fabric.search.recommend.recommend`)."""
    from fabric.search.recommend import recommend

    return recommend(front, baselines, p99_target_s=p99_target_s).record


def genes_of_record(rec: Mapping[str, Any], *, systems: bool = False) -> dict:
    """The gene dict of a search record (what :func:`design_from_record` rebuilds a design from, as the dashboard
    keeps a selected design): typed genes, the tiers and scalable units a baseline was drawn with, the serving
    class when set; with ``systems`` (a search over GPU systems) the record's GPU model and count."""
    g = {k: rec.get(k, LATER_GENES.get(k)) if k in LATER_GENES else rec[k] for k in GENE_COLUMNS}
    for k in ("pxn", "storage_isolation", "in_network_reduction"):
        g[k] = bool(g[k])
    for k in ("planes", "qps_per_connection"):
        g[k] = int(g[k])
    for k in ("nics_per_gpu", "oversub_leaf", "oversub_spine", *LATER_GENES):
        g[k] = float(g[k] or 0.0)
    if rec.get("design_tiers"):              # a baseline drawn with a fixed number of tiers keeps it
        g["design_tiers"] = int(rec["design_tiers"])
    for k, default in CLASS_POLICY.items():   # traffic-class policies that are not the default
        v = rec.get(k)
        if not _blank(v) and (float(v) if k == "serving_weight" else str(v)) != default:
            g[k] = float(v) if k == "serving_weight" else str(v)
    if rec.get("design_regions"):            # a design of regions keeps them (its genes alone do not say them)
        g["design_regions"] = str(rec["design_regions"])
    for k in ("design_nodes_per_su", "design_reserved_slots"):     # a SuperPOD-style baseline keeps its units
        if rec.get(k):
            g[k] = int(rec[k])
    if int(rec.get("design_rails_per_leaf") or 1) > 1:      # rail groups (1, the default, is no gene: as design_genes)
        g["design_rails_per_leaf"] = int(rec["design_rails_per_leaf"])
    if rec.get("serving_class"):             # serving traffic in a class of its own (free policy)
        g["serving_class"] = True
    if systems and rec.get("gpu_model"):     # a search over GPU systems
        g["gpu_model"], g["gpus"] = str(rec["gpu_model"]), int(rec["gpus"])
    return g


def design_choices(front: list[dict], baseline_records: list[dict], *, p99_target_s: float | None = None,
                   selected: dict | None = None, selected_name: str | None = None, baselines=(),
                   systems: bool = False) -> list[dict]:
    """Designs a page can offer, each once (by its genes), in this order: the recommended one of the search
    (``front`` and ``baseline_records``, :func:`recommended_record`), the ``selected`` genes, the human
    ``baselines`` (designs) and the front by cost. Each entry: ``label`` (unique), ``name``, ``genes``,
    ``source`` ("recommended", "selected", "baseline", "front")."""
    import json

    out: list[dict] = []
    seen: set[str] = set()

    def add(genes, name, source):
        key = json.dumps(genes, sort_keys=True, default=str)
        if key in seen:
            return
        seen.add(key)
        out.append({"label": f"{source}: {name}", "name": name, "genes": genes, "source": source})

    rec = recommended_record(front, baseline_records, p99_target_s=p99_target_s) if front else None
    if rec is not None:
        add(genes_of_record(rec, systems=systems), rec["design"], "recommended")
    if selected:
        add(selected, selected_name or short_label(selected), "selected")
    for d in baselines:
        add(design_genes(d) | ({"gpu_model": d.gpu_model, "gpus": d.gpus} if systems else {}),
            d.name.removeprefix("baseline: "), "baseline")
    for r in sorted(front, key=lambda r: r["cost_usd"]):
        add(genes_of_record(r, systems=systems), r["design"], "front")
    return out

"""The state that defines a dashboard view, to and from URL query parameters (a link reproduces the view).

Readable, no pickles, every value validated on the way in:

- ``wl``: the workload choice: ``sample:mixtral-8x7b.json``, ``plan:llama3-70b:1024:tp=8,pp=4`` (a preset with
  a parallelism plan) or ``upload:a.json,b.json`` (uploaded files cannot travel in a link; the names are kept so
  the receiver is told what to upload);
- ``gpus`` and one parameter per other constraint that differs from its default, named like the field
  (``gpus=256``, ``families=clos,rail_optimized``, ``budget_usd=5000000``); without ``gpus`` the cluster is sized
  for the workload;
- ``design``: the selected design's genes in :data:`~fabric.search.designs.GENE_COLUMNS` order, comma
  separated; ``compare``: designs to compare, ``|`` separated. Links made before the uplink-speed genes (two fewer
  values) still read: their designs had uplinks at the NIC port speed, which is what the missing genes mean;
- links made while ``scattered`` was a placement (a fragmented cluster, now the what-if scenario ``fragmented``)
  open with placement ``packed``, and ``problems`` says so;
- ``evals`` and ``seed``: the search budget and seed (the search is deterministic for a seed);
- ``search``: the id of the search saved on the server (32 hex digits), so that reloading the page after a server
  restart resumes it (:mod:`fabric.ui_support.saved_searches`);
- ``robust``: ``worst`` or ``mean`` when the search is robust across a job mix (:mod:`fabric.search.robust`), with
  ``mix``: the other workloads of the mix as ``wl`` values with a weight, ``|`` separated
  (``sample:dlrm-dcnv2.json*2|plan:llama3-70b:256``; uploaded files cannot travel: their names are kept so the
  receiver is told), ``wlw``: the weight of ``wl`` (default 1), ``scenarios``: the scenario presets
  (``baseline,fail-spine``; default baseline). Nothing of the mix is written while the robust mode is off;
- ``plans``: ``auto`` when the search judges every design at its best parallelism plan (docs/plans.md; default
  ``fixed``: the workload's own plan), with ``plan_model``: the training model the user named for a workload whose
  model fabric does not recognise (``llama3-70b``).

:func:`decode_view` never raises for a bad link: whatever cannot be used is left at its default and explained in
``problems``.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from fabric.design.schema import LEGACY_PLACEMENTS, legacy_placement_text
from fabric.errors import FabricError
from fabric.search.constraints import Constraints, constraints_from_dict
from fabric.search.designs import GENE_COLUMNS, LATER_GENES

__all__ = ["PLAN_KEYS", "View", "encode_view", "decode_view", "encode_workload", "decode_workload",
           "encode_genes", "decode_genes", "constraint_params", "encode_robust", "decode_robust", "DEFAULT_EVALS",
           "MAX_EVALS"]

#: Parallelism-plan overrides a link may carry (whole numbers).
PLAN_KEYS = ("tp", "pp", "ep", "cp", "zero_stage", "micro_batch", "global_batch")
#: Default and largest search budget (distinct evaluations) a view asks for.
DEFAULT_EVALS = 300
MAX_EVALS = 20_000

#: (max_gpus_lost_on_single_failure: a whole number is a count of GPUs, a fraction a share of the cluster)
_INT_FIELDS = {"gpus", "gpus_per_node", "max_radix", "cable_count", "max_gpus_lost_on_single_failure"}
_FLOAT_FIELDS = {"max_oversubscription", "budget_usd", "power_w", "p99_target_s", "max_p99_under_failure_s",
                 "rack_power_w", "facility_power_w",
                 "life_years", "electricity_usd_per_kwh", "pue", "inference_ttft_p99_s", "inference_tpot_p99_s",
                 "inference_slo_attainment", "max_p99_slowdown_under_failure"}
_BOOL_FIELDS = {"optimize_power", "survive_single_failure", "failure_p99_for_every_design"}
_STR_LIST_FIELDS = {"switch_models", "nic_models", "gpu_models", "families", "routings", "transports", "placements"}
_FLOAT_LIST_FIELDS = {"nics_per_gpu", "oversubscriptions", "uplink_speed_factors"}
_INT_LIST_FIELDS = {"qps", "planes"}
_BOOL_LIST_FIELDS = {"serving_classes"}
_RESERVED = {"wl", "design", "compare", "evals", "seed", "search", "robust", "mix", "wlw", "scenarios", "plans",
             "plan_model"}
#: Plan spaces a link may name (docs/plans.md).
PLAN_SPACE_VALUES = ("fixed", "auto")


@dataclass
class View:
    """What a link carries. ``workload`` is a dict (see :func:`decode_workload`); ``design`` and ``compare`` are
    gene dicts; ``problems`` lists what could not be used."""

    workload: dict | None = None
    constraints: Constraints = field(default_factory=Constraints)
    constraints_given: bool = False
    gpus_given: bool = False
    design: dict | None = None
    compare: list = field(default_factory=list)
    evals: int = DEFAULT_EVALS
    seed: int = 0
    search_id: str | None = None
    #: the robust search across a job mix: ``{"mode", "weight" (of ``workload``), "mix": [{"choice", "weight"}],
    #: "scenarios": [names]}``, or None (robust mode off)
    robust: dict | None = None
    #: "fixed" (the workload's own plan) or "auto" (every design at its best plan)
    plan_space: str = "fixed"
    #: the training model named for a workload fabric does not recognise, or None
    plan_model: str | None = None
    problems: list = field(default_factory=list)


def _num_text(v: float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


# ------------------------------------------------------------------ workload


def encode_workload(choice: Mapping[str, Any]) -> str:
    """The ``wl`` parameter of a workload choice dict."""
    kind = choice.get("kind")
    if kind == "sample":
        return f"sample:{choice['name']}"
    if kind == "plan":
        over = ",".join(f"{k}={int(choice[k])}" for k in PLAN_KEYS if choice.get(k) is not None)
        text = f"plan:{choice['preset']}:{int(choice['gpus'])}"
        return f"{text}:{over}" if over else text
    if kind == "upload":
        return "upload:" + ",".join(str(n).replace(",", " ") for n in choice.get("names", ()))
    raise FabricError(f"unknown workload choice kind {kind!r}; expected sample, plan or upload")


def decode_workload(text: str, *, samples: tuple[str, ...], presets: tuple[str, ...]) -> dict:
    """A workload choice dict from a ``wl`` parameter; FabricError saying what is wrong otherwise.

    ``samples`` and ``presets`` are the names a link may refer to (nothing else is ever opened).
    """
    kind, _, rest = str(text).partition(":")
    if kind == "sample":
        if rest not in samples:
            raise FabricError(f"link workload: no built-in sample {rest!r}; samples: {', '.join(samples)}")
        return {"kind": "sample", "name": rest}
    if kind == "plan":
        parts = rest.split(":")
        if len(parts) not in (2, 3):
            raise FabricError(f"link workload: expected plan:PRESET:GPUS[:k=v,...], got {text!r}")
        preset, gpus_text = parts[0], parts[1]
        if preset not in presets:
            raise FabricError(f"link workload: unknown preset {preset!r}; presets: {', '.join(presets)}")
        try:
            gpus = int(gpus_text)
        except ValueError as err:
            raise FabricError(f"link workload: GPU count {gpus_text!r} is not a whole number") from err
        if not 1 <= gpus <= 4_194_304:
            raise FabricError(f"link workload: GPU count {gpus} is out of range")
        out: dict[str, Any] = {"kind": "plan", "preset": preset, "gpus": gpus}
        if len(parts) == 3 and parts[2]:
            for item in parts[2].split(","):
                k, eq, v = item.partition("=")
                if not eq or k not in PLAN_KEYS:
                    raise FabricError(f"link workload: unknown plan setting {item!r}; allowed: {', '.join(PLAN_KEYS)}")
                try:
                    val = int(v)
                except ValueError as err:
                    raise FabricError(f"link workload: plan setting {k} = {v!r} is not a whole number") from err
                if not 0 <= val <= 10_000_000:
                    raise FabricError(f"link workload: plan setting {k} = {val} is out of range")
                out[k] = val
        return out
    if kind == "upload":
        return {"kind": "upload", "names": [n for n in rest.split(",") if n]}
    raise FabricError(f"link workload: {text!r} is not sample:..., plan:... or upload:...")


# ------------------------------------------------------------------ designs


#: Traffic-class policy genes carried in a link (token ``c`` after the others) and their short keys.
_CLASS_KEYS = {"serving_priority": "sp", "serving_weight": "sw", "serving_routing": "sr", "storage_routing": "st"}


def encode_genes(genes: Mapping[str, Any]) -> str:
    """Genes as one comma-separated parameter value, in :data:`GENE_COLUMNS` order."""
    out = []
    for g in GENE_COLUMNS:
        v = genes[g] if g in genes or g not in LATER_GENES else LATER_GENES[g]
        if isinstance(v, (bool,)) or type(v).__name__ == "bool_":
            out.append("1" if v else "0")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(_num_text(v))
        else:
            out.append(str(v))
    if genes.get("design_tiers"):          # a design drawn with a fixed number of tiers (a baseline)
        out.append(f"t{int(genes['design_tiers'])}")
    rails = int(genes.get("design_rails_per_leaf") or 1)
    if genes.get("design_nodes_per_su") or genes.get("design_reserved_slots") or rails > 1:   # scalable units
        out.append(f"u{int(genes.get('design_nodes_per_su') or 0)}r{int(genes.get('design_reserved_slots') or 0)}"
                   + (f"g{rails}" if rails > 1 else ""))
    if genes.get("design_regions"):        # a design of regions: its regions as URL-safe base64 of their JSON
        out.append("R" + base64.urlsafe_b64encode(str(genes["design_regions"]).encode()).decode().rstrip("="))
    if genes.get("gpu_model"):             # a search over GPU systems: the system and the GPUs it installs
        out.append(f"s{genes['gpu_model']}@{int(genes.get('gpus') or 0)}")
    if genes.get("serving_class"):         # serving traffic in a class of its own (free policy; off: no token)
        out.append("s1")
    cls = [f"{_CLASS_KEYS[k]}={genes[k]:g}" if k == "serving_weight" else f"{_CLASS_KEYS[k]}={genes[k]}"
           for k in _CLASS_KEYS if genes.get(k) is not None]
    if cls:                                # traffic-class policies that are not the default
        out.append("c" + ";".join(cls))
    return ",".join(out)


def decode_genes(text: str) -> dict:
    """A gene dict from :func:`encode_genes` text (values typed; full validation happens when a design is built)."""
    parts = str(text).split(",")
    tiers, serving_class = None, False
    classes = {}
    if parts and (m := re.fullmatch(r"c((?:[a-z]{2}=[a-z0-9.]{1,12};?){1,4})", parts[-1])):
        names = {v: k for k, v in _CLASS_KEYS.items()}
        for item in filter(None, m.group(1).split(";")):
            key, _, value = item.partition("=")
            if key not in names:
                raise FabricError(f"link design: unknown traffic-class token {key!r}")
            try:
                classes[names[key]] = float(value) if key == "sw" else value
            except ValueError:
                raise FabricError(f"link design: serving weight {value!r} is not a number") from None
        parts.pop()
    if parts and parts[-1] == "s1":
        serving_class = bool(parts.pop())
    system = None
    if parts and (m := re.fullmatch(r"s([a-z0-9][a-z0-9._-]*)@(\d+)", parts[-1])):
        system = (m.group(1), int(m.group(2)))
        parts.pop()
    regions = None
    if parts and (m := re.fullmatch(r"R([A-Za-z0-9_-]{4,8000})", parts[-1])):
        try:
            text = base64.urlsafe_b64decode(m.group(1) + "=" * (-len(m.group(1)) % 4)).decode()
            from fabric.design.regions import regions_from_json

            regions_from_json(text)
        except (ValueError, UnicodeDecodeError, FabricError) as err:
            raise FabricError(f"link design: the regions token is not valid ({err})") from None
        regions = text
        parts.pop()
    layout = None
    if parts and (m := re.fullmatch(r"u(\d{1,4})r(\d{1,4})(?:g(\d{1,2}))?", parts[-1])):
        layout = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 1))
        parts.pop()
    if parts and re.fullmatch(r"t[123]", parts[-1]):
        tiers = int(parts.pop()[1:])
    older = len(GENE_COLUMNS) - len(LATER_GENES)
    if len(parts) == older:                  # a link made before the later genes: their "as before" values
        parts += [_num_text(v) for v in LATER_GENES.values()]
    if len(parts) != len(GENE_COLUMNS):
        raise FabricError(f"link design: expected {len(GENE_COLUMNS)} comma-separated genes "
                          f"({', '.join(GENE_COLUMNS)}; {older} in links made before uplink speeds), "
                          f"got {len(parts)}")
    g = dict(zip(GENE_COLUMNS, parts))
    try:
        for k in ("nics_per_gpu", "oversub_leaf", "oversub_spine", *LATER_GENES):
            g[k] = float(g[k])
            if not math.isfinite(g[k]) or (k in LATER_GENES and g[k] < 0):
                raise ValueError(k)
        for k in ("planes", "qps_per_connection"):
            g[k] = int(g[k])
    except ValueError as err:
        raise FabricError(f"link design: a numeric gene is not a number ({text!r})") from err
    for k in ("pxn", "storage_isolation", "in_network_reduction"):
        if g[k] not in ("0", "1"):
            raise FabricError(f"link design: gene {k} must be 0 or 1, got {g[k]!r}")
        g[k] = g[k] == "1"
    if tiers:
        g["design_tiers"] = tiers
    if layout is not None:
        if layout[0]:
            g["design_nodes_per_su"] = layout[0]
        if layout[1]:
            g["design_reserved_slots"] = layout[1]
        if layout[2] > 1:
            g["design_rails_per_leaf"] = layout[2]
    if serving_class:
        g["serving_class"] = True
    g.update(classes)
    if regions is not None:
        g["design_regions"] = regions
    if system is not None:
        g["gpu_model"] = system[0]
        if system[1]:
            g["gpus"] = system[1]
    return g


def _rule_placement(genes: dict, problems: list) -> dict:
    """Genes whose old placement ``scattered`` becomes the rule it loads as, with a line in ``problems``."""
    old = genes.get("placement")
    if old in LEGACY_PLACEMENTS:
        genes = dict(genes, placement=LEGACY_PLACEMENTS[old])
        line = f"link design: placement {legacy_placement_text(old)}"
        line = line.replace("(fabric evaluate --scenario fragmented)", "(a what-if scenario on the Design page)")
        if line not in problems:
            problems.append(line)
    return genes


# ------------------------------------------------------------------ constraints


def constraint_params(constraints: Constraints) -> dict[str, str]:
    """One parameter per constraint field that differs from its default, and always ``gpus`` (a link without
    it sizes the cluster for its workload)."""
    default = Constraints()
    out = {}
    for f in fields(Constraints):
        v, d = getattr(constraints, f.name), getattr(default, f.name)
        if v == d and f.name != "gpus":
            continue
        if v is None:
            out[f.name] = "none"
        elif isinstance(v, bool):
            out[f.name] = "1" if v else "0"
        elif isinstance(v, tuple):
            out[f.name] = ",".join(("1" if x else "0") if isinstance(x, bool) else
                                   _num_text(x) if isinstance(x, (int, float)) else str(x) for x in v)
        elif isinstance(v, (int, float)):
            out[f.name] = _num_text(v)
        else:
            out[f.name] = str(v)
    return out


def _parse_constraint(name: str, text: str):
    if text == "none":
        return None
    if name in _INT_FIELDS:
        return int(float(text)) if float(text).is_integer() else float(text)
    if name in _FLOAT_FIELDS:
        return float(text)
    if name in _STR_LIST_FIELDS:
        return [t for t in text.split(",") if t]
    if name in _FLOAT_LIST_FIELDS:
        return [float(t) for t in text.split(",") if t]
    if name in _INT_LIST_FIELDS:
        return [int(t) for t in text.split(",") if t]
    if name in _BOOL_LIST_FIELDS:
        if any(t not in ("0", "1") for t in text.split(",")):
            raise ValueError(text)
        return [t == "1" for t in text.split(",")]
    if name in _BOOL_FIELDS:
        if text not in ("0", "1"):
            raise ValueError(text)
        return text == "1"
    return text


# ------------------------------------------------------------------ the view


def encode_robust(robust: Mapping[str, Any]) -> dict[str, str]:
    """The ``robust``, ``mix``, ``wlw`` and ``scenarios`` parameters of a robust view (see the module doc)."""
    out = {"robust": str(robust["mode"])}
    items = []
    for m in robust.get("mix", ()):
        choice = dict(m["choice"])
        if choice.get("kind") == "upload":
            choice["names"] = [str(n).replace("|", " ").replace("*", " ") for n in choice.get("names", ())]
        text = encode_workload(choice)
        w = float(m.get("weight", 1.0))
        items.append(text if w == 1.0 else f"{text}*{_num_text(w)}")
    if items:
        out["mix"] = "|".join(items)
    if float(robust.get("weight", 1.0)) != 1.0:
        out["wlw"] = _num_text(float(robust["weight"]))
    scen = list(robust.get("scenarios") or ["baseline"])
    if scen != ["baseline"]:
        out["scenarios"] = ",".join(scen)
    return out


def _weight(text: str, what: str) -> float:
    try:
        w = float(text)
    except ValueError:
        raise FabricError(f"link {what}: weight {text!r} is not a number") from None
    if not (math.isfinite(w) and 0 < w <= 1e6):
        raise FabricError(f"link {what}: weight {text!r} must be above 0 and at most 1,000,000")
    return w


def decode_robust(p: Mapping[str, str], *, samples: tuple[str, ...], presets: tuple[str, ...],
                  scenarios: tuple[str, ...], max_mix: int = 5) -> tuple[dict | None, list[str]]:
    """``(robust view or None, problems)`` from the link's parameters; never raises."""
    problems: list[str] = []
    mode = p.get("robust")
    if mode is None:
        if any(k in p for k in ("mix", "wlw", "scenarios")):
            problems.append("link parameters mix, wlw and scenarios only apply with robust=worst or robust=mean and "
                            "were ignored")
        return None, problems
    if mode not in ("worst", "mean"):
        return None, [f"link parameter robust={mode!r} must be worst or mean; the search is not robust"]
    out: dict[str, Any] = {"mode": mode, "weight": 1.0, "mix": [], "scenarios": ["baseline"]}
    if "wlw" in p:
        try:
            out["weight"] = _weight(p["wlw"], "wlw")
        except FabricError as err:
            problems.append(f"{err}; weight 1 used")
    for item in [t for t in p.get("mix", "").split("|") if t][:max_mix]:
        text, star, wtext = item.rpartition("*") if "*" in item else (item, "", "")
        try:
            choice = decode_workload(text, samples=samples, presets=presets)
            weight = _weight(wtext, f"mix workload {text!r}") if star else 1.0
        except FabricError as err:
            problems.append(str(err))
            continue
        if choice["kind"] == "upload":
            names = ", ".join(choice.get("names", [])) or "files"
            problems.append(f"the link's job mix had uploaded traces ({names}); files cannot travel in a link: "
                            f"add them again on the Workload page")
            continue
        out["mix"].append({"choice": choice, "weight": weight})
    if len([t for t in p.get("mix", "").split("|") if t]) > max_mix:
        problems.append(f"link parameter mix: only the first {max_mix} workloads were used")
    if "scenarios" in p:
        names = [t for t in p["scenarios"].split(",") if t]
        bad = [t for t in names if t not in scenarios]
        if bad:
            problems.append(f"link scenarios: unknown {', '.join(map(repr, bad))} ignored; known: "
                            f"{', '.join(scenarios)}")
        good = list(dict.fromkeys(t for t in names if t in scenarios))
        if good:
            out["scenarios"] = good
    return out, problems


def encode_view(*, workload: Mapping[str, Any] | None, constraints: Constraints, design: Mapping | None = None,
                compare: list | tuple = (), evals: int = DEFAULT_EVALS, seed: int = 0,
                search_id: str | None = None, robust: Mapping[str, Any] | None = None, plan_space: str = "fixed",
                plan_model: str | None = None) -> dict[str, str]:
    """Query parameters of a view (defaults left out)."""
    out: dict[str, str] = {}
    if workload is not None:
        out["wl"] = encode_workload(workload)
    out.update(constraint_params(constraints))
    if design is not None:
        out["design"] = encode_genes(design)
    if compare:
        out["compare"] = "|".join(encode_genes(g) for g in compare)
    if int(evals) != DEFAULT_EVALS:
        out["evals"] = str(int(evals))
    if int(seed) != 0:
        out["seed"] = str(int(seed))
    if search_id:
        out["search"] = search_id
    if robust is not None:
        out.update(encode_robust(robust))
    if plan_space != "fixed":
        out["plans"] = plan_space
        if plan_model:
            out["plan_model"] = plan_model
    return out


def decode_view(params: Mapping[str, Any], *, samples: tuple[str, ...], presets: tuple[str, ...],
                scenarios: tuple[str, ...] = ()) -> View:
    """The view a link's query parameters describe; never raises (problems are listed in ``View.problems``)."""
    def one(v):
        return v[-1] if isinstance(v, (list, tuple)) else v

    p = {str(k): str(one(v)) for k, v in params.items()}
    view = View()
    if "wl" in p:
        try:
            view.workload = decode_workload(p["wl"], samples=samples, presets=presets)
        except FabricError as err:
            view.problems.append(str(err))
    known = {f.name for f in fields(Constraints)}
    raw: dict[str, Any] = {}
    for k, v in p.items():
        if k in known:
            try:
                raw[k] = _parse_constraint(k, v)
            except ValueError:
                view.problems.append(f"link constraint {k}: cannot read {v!r}")
        elif k not in _RESERVED:
            view.problems.append(f"link parameter {k!r} is not known and was ignored")
    old = [x for x in raw.get("placements") or () if x in LEGACY_PLACEMENTS]
    if old:
        kept = [x for x in raw["placements"] if x not in LEGACY_PLACEMENTS]
        if kept:
            raw["placements"] = kept
        else:
            del raw["placements"]
        view.problems.append(f"link constraint placements: {', '.join(map(repr, old))} left out: a fragmented "
                             f"cluster is a condition, not a placement the search chooses (see the what-if scenario "
                             f"'fragmented' on the Design page)")
    if raw:
        try:
            view.constraints = constraints_from_dict(raw)
            view.constraints_given = True
            view.gpus_given = "gpus" in raw
        except FabricError as err:
            view.problems.append(f"link constraints not used: {err}")
    if "design" in p:
        try:
            view.design = _rule_placement(decode_genes(p["design"]), view.problems)
        except FabricError as err:
            view.problems.append(str(err))
    if "compare" in p:
        for item in p["compare"].split("|")[:4]:
            try:
                view.compare.append(_rule_placement(decode_genes(item), view.problems))
            except FabricError as err:
                view.problems.append(str(err))
    for k, lo, hi in (("evals", 1, MAX_EVALS), ("seed", 0, 2 ** 31 - 1)):
        if k in p:
            try:
                val = int(p[k])
                if not lo <= val <= hi:
                    raise ValueError(val)
                setattr(view, k, val)
            except ValueError:
                view.problems.append(f"link parameter {k}={p[k]!r} must be a whole number in [{lo}, {hi:,}]")
    if "search" in p:
        from fabric.ui_support.saved_searches import is_search_id

        if is_search_id(p["search"]):
            view.search_id = p["search"]
        else:
            view.problems.append("link parameter search is not a search id (32 hexadecimal digits) and was ignored")
    if not scenarios:
        from fabric.evaluate import SCENARIO_PRESETS

        scenarios = tuple(SCENARIO_PRESETS)
    view.robust, problems = decode_robust(p, samples=samples, presets=presets, scenarios=scenarios)
    view.problems += problems
    _decode_plans(p, view)
    return view


def _decode_plans(p: Mapping[str, str], view: View) -> None:
    """``plans`` and ``plan_model`` into ``view`` (problems for values that cannot be used)."""
    from fabric.workload.presets import training_models

    if "plans" in p:
        if p["plans"] in PLAN_SPACE_VALUES:
            view.plan_space = p["plans"]
        else:
            view.problems.append(f"link parameter plans={p['plans']!r} must be fixed or auto; the plan space is fixed")
    if "plan_model" in p:
        known = training_models()
        if view.plan_space != "auto":
            view.problems.append("link parameter plan_model only applies with plans=auto and was ignored")
        elif p["plan_model"] in known:
            view.plan_model = p["plan_model"]
        else:
            view.problems.append(f"link parameter plan_model={p['plan_model']!r} is not a known model "
                                 f"({', '.join(known)}) and was ignored")

"""What is installed, what a fabric needs, and the difference between them, item by item.

An **inventory** counts network items per ``(category, model)``: switches, NICs, transceivers and cables, as the
bill of materials (:mod:`fabric.cost.bom`) lists them. Items of one model are interchangeable: a switch bought as
a spine can serve as a spine of a pod later, a 400G twin-port module moves to another port, a fibre of one length
class is re-plugged. Tiers and link kinds (the BOM's ``where``) say where an item serves, not what it is, so they
are not part of the key.

:func:`bom_delta` compares an installed inventory with what a target fabric needs, model by model:

- **kept** ``min(installed, needed)``: reused, costs nothing;
- **added** ``max(0, needed - installed)``: bought at the catalog's unit price (the upgrade's capex);
- **removed** ``max(0, installed - needed)``: taken out, credited at ``resale_fraction`` of the unit price paid
  (default 0: nobody buys used optics; editable per category).

The upgrade's net cost is added capex minus the resale credit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from fabric.errors import DesignError

__all__ = ["CATEGORIES", "Inventory", "DeltaLine", "Delta", "Installed", "bom_delta", "resale_fractions",
           "load_installed", "installed_from_design"]

#: Item categories of a bill of materials, in the order they are listed.
CATEGORIES = ("switch", "nic", "transceiver", "cable")


@dataclass(frozen=True)
class Inventory:
    """Counts of network items per ``(category, model)`` with their unit price (USD) and power (W)."""

    counts: dict = field(default_factory=dict)
    unit_price_usd: dict = field(default_factory=dict)
    unit_power_w: dict = field(default_factory=dict)

    @classmethod
    def from_bom(cls, bom) -> "Inventory":
        """The items of a :class:`~fabric.cost.bom.BillOfMaterials`, summed per (category, model)."""
        return cls.from_items([i.to_dict() for i in bom.items], source="bill of materials")

    @classmethod
    def from_items(cls, items, *, source: str) -> "Inventory":
        """From BOM item dicts (``category``, ``model``, ``count``, ``unit_price_usd``, ``unit_power_w``), as
        ``fabric build --json`` writes them; errors name ``source`` and the item."""
        if not isinstance(items, list):
            raise DesignError(f"{source}: 'items' must be a list of bill-of-materials items")
        counts, price, power = {}, {}, {}
        for n, it in enumerate(items):
            where = f"{source}: item {n + 1}"
            if not isinstance(it, dict):
                raise DesignError(f"{where}: expected an object with category, model and count")
            cat, model, count = it.get("category"), it.get("model"), it.get("count")
            if cat not in CATEGORIES:
                raise DesignError(f"{where}: category {cat!r} is not one of {', '.join(CATEGORIES)}")
            if not isinstance(model, str) or not model:
                raise DesignError(f"{where}: 'model' must be a catalog model id")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise DesignError(f"{where} ({model}): 'count' must be a whole number >= 0, got {count!r}")
            key = (cat, model)
            for name, store in (("unit_price_usd", price), ("unit_power_w", power)):
                v = it.get(name, 0.0)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    raise DesignError(f"{where} ({model}): {name!r} must be a number >= 0, got {v!r}")
                store.setdefault(key, float(v))
            counts[key] = counts.get(key, 0) + count
        return cls(counts, price, power)

    def count(self, category: str, model: str) -> int:
        return int(self.counts.get((category, model), 0))

    def by_category(self, category: str) -> dict[str, int]:
        """``{model: count}`` of one category."""
        return {m: n for (c, m), n in self.counts.items() if c == category and n}

    @property
    def cost_usd(self) -> float:
        return float(sum(n * self.unit_price_usd.get(k, 0.0) for k, n in self.counts.items()))

    @property
    def power_w(self) -> float:
        return float(sum(n * self.unit_power_w.get(k, 0.0) for k, n in self.counts.items()))

    def to_items(self) -> list[dict]:
        """The inventory as BOM-like item dicts (the form :meth:`from_items` reads)."""
        return [{"category": c, "model": m, "count": n, "unit_price_usd": self.unit_price_usd.get((c, m), 0.0),
                 "unit_power_w": self.unit_power_w.get((c, m), 0.0)}
                for (c, m), n in sorted(self.counts.items(), key=_order) if n]


def _order(kv):
    (c, m), _ = kv
    return CATEGORIES.index(c), m


def resale_fractions(resale) -> dict[str, float]:
    """``{category: share of the unit price paid}`` from one number (every category) or a dict of categories
    (missing ones 0). A share must be in [0, 1]."""
    if resale is None:
        resale = 0.0
    if isinstance(resale, dict):
        bad = sorted(set(resale) - set(CATEGORIES))
        if bad:
            raise DesignError(f"resale value: unknown item category {', '.join(map(str, bad))}; use "
                              f"{', '.join(CATEGORIES)}")
        out = {c: resale.get(c, 0.0) for c in CATEGORIES}
    else:
        out = {c: resale for c in CATEGORIES}
    for c, v in out.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise DesignError(f"resale value of {c} items: expected a share of the price paid in [0, 1], got {v!r}")
    return {c: float(v) for c, v in out.items()}


@dataclass(frozen=True)
class DeltaLine:
    """One (category, model) of an upgrade: counts installed, needed, kept, added, removed, and money."""

    category: str
    model: str
    installed: int
    needed: int
    unit_price_usd: float          # what one more costs (catalog)
    resale_unit_usd: float         # what one removed brings back
    unit_power_w: float

    @property
    def kept(self) -> int:
        return min(self.installed, self.needed)

    @property
    def added(self) -> int:
        return max(0, self.needed - self.installed)

    @property
    def removed(self) -> int:
        return max(0, self.installed - self.needed)

    @property
    def added_usd(self) -> float:
        return self.added * self.unit_price_usd

    @property
    def resale_usd(self) -> float:
        return self.removed * self.resale_unit_usd

    def to_dict(self) -> dict:
        return {"category": self.category, "model": self.model, "installed": self.installed, "needed": self.needed,
                "kept": self.kept, "added": self.added, "removed": self.removed,
                "unit_price_usd": self.unit_price_usd, "added_usd": self.added_usd,
                "resale_unit_usd": self.resale_unit_usd, "resale_usd": self.resale_usd}


@dataclass(frozen=True)
class Delta:
    """The item-by-item difference between an installed inventory and what a fabric needs."""

    lines: tuple[DeltaLine, ...]

    @property
    def added_usd(self) -> float:
        """Capex of what is bought (what an upgrade budget limits)."""
        return float(sum(x.added_usd for x in self.lines))

    @property
    def resale_usd(self) -> float:
        """Credit for what is taken out."""
        return float(sum(x.resale_usd for x in self.lines))

    @property
    def net_usd(self) -> float:
        """Added capex minus the resale credit."""
        return self.added_usd - self.resale_usd

    def added(self, category: str | None = None) -> dict[str, int]:
        return {x.model: x.added for x in self.lines if x.added and category in (None, x.category)}

    def removed(self, category: str | None = None) -> dict[str, int]:
        return {x.model: x.removed for x in self.lines if x.removed and category in (None, x.category)}

    def kept(self, category: str | None = None) -> dict[str, int]:
        return {x.model: x.kept for x in self.lines if x.kept and category in (None, x.category)}

    @property
    def discards_anything(self) -> bool:
        return any(x.removed for x in self.lines)

    def text(self) -> list[str]:
        """One line per model that changes: ``+2 switch ib-ndr-64x400 ($84,000)``."""
        out = []
        for x in self.lines:
            if x.added:
                out.append(f"+{x.added:,} {x.category} {x.model} (${x.added_usd:,.0f})")
            if x.removed:
                credit = f", resale ${x.resale_usd:,.0f}" if x.resale_usd else ""
                out.append(f"-{x.removed:,} {x.category} {x.model} (taken out{credit})")
        return out

    def to_dict(self) -> dict:
        return {"added_usd": self.added_usd, "resale_usd": self.resale_usd, "net_usd": self.net_usd,
                "lines": [x.to_dict() for x in self.lines if x.added or x.removed or x.kept]}


def bom_delta(installed: Inventory, needed: Inventory, *, resale=0.0) -> Delta:
    """Model-by-model difference between ``installed`` and ``needed`` (see the module docstring). New items are
    priced at ``needed``'s unit price (the catalog's), removed ones credited at ``resale`` (a share, or a share per
    category) of ``installed``'s unit price (the price paid)."""
    share = resale_fractions(resale)
    keys = sorted(set(installed.counts) | set(needed.counts), key=lambda k: (CATEGORIES.index(k[0]), k[1]))
    lines = []
    for k in keys:
        have, need = installed.counts.get(k, 0), needed.counts.get(k, 0)
        if not have and not need:
            continue
        price = needed.unit_price_usd.get(k, installed.unit_price_usd.get(k, 0.0))
        paid = installed.unit_price_usd.get(k, price)
        power = needed.unit_power_w.get(k, installed.unit_power_w.get(k, 0.0))
        lines.append(DeltaLine(k[0], k[1], int(have), int(need), float(price), share[k[0]] * float(paid),
                               float(power)))
    return Delta(tuple(lines))


@dataclass(frozen=True)
class Installed:
    """An installed fabric: its design (how it is cabled and run) and its inventory (what is on the floor, which
    may include spares beyond what the design uses). ``source`` names where it came from."""

    design: object
    inventory: Inventory
    source: str = "design"


def installed_from_design(design, catalog=None, *, source: str = "design") -> Installed:
    """The installed fabric of ``design``: exactly the items its bill of materials lists."""
    from fabric.cost import bill_of_materials
    from fabric.topology import build_fabric

    return Installed(design, Inventory.from_bom(bill_of_materials(build_fabric(design, catalog), catalog)), source)


def load_installed(path: str | Path, catalog=None) -> Installed:
    """Read an installed fabric: a design file (JSON/YAML, docs/design-schema.md), whose bill of materials is what
    is installed, or the JSON ``fabric build --json`` writes and the dashboard's "Design and bill of materials
    (JSON)" downloads (:func:`fabric.cost.document.fabric_document`: its ``design_spec`` and its ``items``, which
    may list spares beyond what the design needs, never fewer). Errors name the file."""
    from fabric.design import design_from_dict, load_design

    p = Path(path)
    if not p.exists():
        raise DesignError(f"installed fabric {p}: file not found")
    if p.suffix.lower() == ".json":
        if p.stat().st_size > 20_000_000:
            raise DesignError(f"installed fabric {p}: larger than 20 MB; give the design or `fabric build --json`")
        try:
            data = json.loads(p.read_text(encoding="utf-8", errors="replace"))
        except json.JSONDecodeError as err:
            raise DesignError(f"installed fabric {p}: not valid JSON ({err})") from err
        if isinstance(data, dict) and isinstance(data.get("design"), dict) \
                and isinstance(data.get("bill_of_materials"), dict):
            # the dashboard's design-and-BOM download before it became the `fabric build --json` document
            data = {**data["bill_of_materials"], "design_spec": data["design"]}
        if isinstance(data, dict) and "items" in data:
            spec = data.get("design_spec")
            if not isinstance(spec, dict):
                raise DesignError(f"installed fabric {p}: a bill of materials needs its 'design_spec' (how it is "
                                  f"cabled); write it with a current `fabric build DESIGN --json`, or give the "
                                  f"design file instead")
            try:
                design = design_from_dict(spec, catalog=catalog)
            except DesignError as err:
                raise DesignError(f"installed fabric {p}: design_spec: {err}") from err
            inv = Inventory.from_items(data["items"], source=f"installed fabric {p}")
            _check_covers(inv, installed_from_design(design, catalog).inventory, p)
            return Installed(design, inv, str(p))
    design = load_design(p, catalog=catalog)
    return installed_from_design(design, catalog, source=str(p))


def _check_covers(inv: Inventory, needed: Inventory, p) -> None:
    for (cat, model), n in needed.counts.items():
        have = inv.counts.get((cat, model), 0)
        if have < n:
            raise DesignError(f"installed fabric {p}: its items list {have:,} {cat} {model} but its design_spec "
                              f"needs {n:,}; the items must include everything the design uses (extra spares are "
                              f"fine)")

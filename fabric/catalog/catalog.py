"""The :class:`Catalog`: every hardware table keyed by model id, with lookups and selection helpers."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from fabric.catalog.models import Cable, GpuModel, NicModel, SwitchModel, Transceiver
from fabric.catalog.schema import TABLE_NAMES, TABLES, build_table
from fabric.errors import CatalogError
from fabric.units import bps_to_gbps

if TYPE_CHECKING:            # pandas is imported where the tables are used: every CLI command pays ~0.4 s else
    import pandas as pd

__all__ = ["Catalog"]


@dataclass(frozen=True)
class Catalog:
    """The hardware catalog: one read-only ``model -> row`` mapping per table, in SI units.

    ``source`` says where it came from (e.g. "built-in defaults + prices.csv").
    """

    switches: Mapping[str, SwitchModel]
    nics: Mapping[str, NicModel]
    transceivers: Mapping[str, Transceiver]
    cables: Mapping[str, Cable]
    gpus: Mapping[str, GpuModel]
    source: str = "built-in defaults"

    def __post_init__(self):
        for name in TABLE_NAMES:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def __reduce__(self):
        # read-only mapping proxies do not pickle: rebuild from plain dicts (catalogs travel to search workers)
        return (Catalog, tuple(dict(getattr(self, n)) for n in TABLE_NAMES) + (self.source,))

    def fingerprint(self) -> str:
        """A digest of every row of every table (equal for catalogs of equal content, whatever their source or
        object): what caches of results that depend on the hardware key on (a built fabric's ``cache_key``). Made
        once per catalog object."""
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            text = repr([(name, list(getattr(self, name).items())) for name in TABLE_NAMES])
            fp = hashlib.sha1(text.encode()).hexdigest()[:16]
            object.__setattr__(self, "_fingerprint", fp)         # a frozen dataclass: set once, read after
        return fp

    # -- lookups -------------------------------------------------------------------------------------------

    def _get(self, table: str, singular: str, model: str):
        rows = getattr(self, table)
        if not isinstance(model, str):
            raise CatalogError(f"a {singular} model must be a catalog id (text), got {model!r}")
        if model not in rows:
            raise CatalogError(f"unknown {singular} model {model!r}; known: {', '.join(rows)}")
        return rows[model]

    def switch(self, model: str) -> SwitchModel:
        """The switch called ``model``."""
        return self._get("switches", "switch", model)

    def nic(self, model: str) -> NicModel:
        """The NIC called ``model``."""
        return self._get("nics", "nic", model)

    def transceiver(self, model: str) -> Transceiver:
        """The transceiver called ``model``."""
        return self._get("transceivers", "transceiver", model)

    def cable(self, model: str) -> Cable:
        """The cable called ``model``."""
        return self._get("cables", "cable", model)

    def gpu(self, model: str) -> GpuModel:
        """The GPU called ``model``."""
        return self._get("gpus", "gpu", model)

    def models(self, table: str) -> list[str]:
        """Model ids of ``table`` (one of switches, nics, transceivers, cables, gpus), in catalog order."""
        return list(getattr(self, _table_name(table)))

    # -- selection -----------------------------------------------------------------------------------------

    def transceiver_for(self, speed_bps: float, reach_m: float, side: str, cage_bps: float | None = None,
                        medium: str | None = None) -> Transceiver:
        """The cheapest module for one port of ``speed_bps`` over ``reach_m`` metres on ``side`` ("nic"/"switch").

        On the switch side modules are compared by price per port, so a twin-port module wins when it is cheaper
        per port; on the NIC side each port takes a module of its own, so they are compared by module price.
        Modules whose ``side`` is "any" fit both sides. ``cage_bps``: the switch cage's bandwidth
        (:attr:`SwitchModel.cage_bps`); a module carrying more (a twin-port 2 x 400G module in a 400G QSFP-DD
        cage) does not fit. ``medium``: only modules for that fibre ("multimode" / "singlemode"). Ties go to the
        lower power, then the model id.
        """
        if side not in ("nic", "switch", "any"):
            raise CatalogError(f"transceiver side must be 'nic', 'switch' or 'any', got {side!r}")
        fits = [
            t for t in self.transceivers.values()
            if math.isclose(t.speed_bps, speed_bps, rel_tol=1e-9) and t.reach_m >= reach_m
            and (t.side == "any" or side == "any" or t.side == side)
            and (cage_bps is None or t.speed_bps * t.ports_per_module <= cage_bps * (1 + 1e-9))
            and (medium is None or t.medium == medium)
        ]
        if not fits:
            same_speed = [
                f"{t.model} ({t.reach_m:g} m, {t.side})" for t in self.transceivers.values()
                if math.isclose(t.speed_bps, speed_bps, rel_tol=1e-9)
            ]
            have = f"at that speed the catalog has: {', '.join(same_speed)}" if same_speed else "none at that speed"
            cage = "" if cage_bps is None else f" that fits a {bps_to_gbps(cage_bps):g} Gb/s switch cage"
            cage += "" if medium is None else f" for {medium} fibre"
            raise CatalogError(
                f"no transceiver for {bps_to_gbps(speed_bps):g} Gb/s over {reach_m:g} m on the {side} side{cage} "
                f"({have}); add one to the catalog or shorten the link"
            )
        per_port = side == "switch"
        return min(fits, key=lambda t: (
            t.price_per_port_usd if per_port else t.price_usd,
            t.power_w / t.ports_per_module if per_port else t.power_w,
            t.model,
        ))

    def cable_for(self, kind: str, speed_bps: float, reach_m: float, medium: str | None = None) -> Cable:
        """The cheapest ``kind`` cable ("dac", "acc", "aoc", "fibre") for ``speed_bps`` at least ``reach_m`` long.

        Fibre rows with speed 0 fit any speed. ``medium``: a fibre for modules of that medium (rows without a
        medium fit any). Ties go to the shorter cable, then the model id.
        """
        fits = [c for c in self.cables.values() if c.kind == kind and c.fits_speed(speed_bps) and c.reach_m >= reach_m
                and (medium is None or c.medium is None or c.medium == medium)]
        if not fits:
            kinds = sorted({c.kind for c in self.cables.values()})
            raise CatalogError(
                f"no {kind} cable{'' if medium is None else ' (' + medium + ')'} for {bps_to_gbps(speed_bps):g} Gb/s "
                f"over {reach_m:g} m "
                f"(cable kinds in the catalog: {', '.join(kinds)}); add one to the catalog, pick another kind "
                f"or shorten the link"
            )
        return min(fits, key=lambda c: (c.price_usd, c.reach_m, c.model))

    # -- tables (edge units) -------------------------------------------------------------------------------

    def rows(self, table: str) -> list[dict]:
        """The rows of ``table`` as dicts in edge units (the CSV form), in catalog order."""
        spec = TABLES[_table_name(table)]
        return [spec.to_edge(row) for row in getattr(self, spec.name).values()]

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table as a DataFrame in edge units (``port_speed_gbps``, ``latency_ns``...), one row per model."""
        import pandas as pd

        return {
            name: pd.DataFrame(self.rows(name), columns=list(TABLES[name].column_names)) for name in TABLE_NAMES
        }

    @classmethod
    def from_tables(cls, tables: Mapping[str, pd.DataFrame], source: str = "edited tables") -> "Catalog":
        """A catalog rebuilt from edge-unit DataFrames shaped like :meth:`tables` (every table, every column but
        the optional ones, which a frame may leave out).

        Errors name ``source``, the table, the row number (1-based), model, column and value.
        """
        unknown = [name for name in tables if name not in TABLES]
        missing = [name for name in TABLE_NAMES if name not in tables]
        problems = [f"unknown table(s) {', '.join(map(repr, unknown))}"] if unknown else []
        problems += [f"missing table(s) {', '.join(missing)}"] if missing else []
        if problems:
            raise CatalogError(f"{source}: {'; '.join(problems)}; give exactly the tables {', '.join(TABLE_NAMES)}")
        built = {}
        for name in TABLE_NAMES:
            frame = tables[name]
            absent = [c for c in TABLES[name].required_names if c not in frame.columns]
            if absent:
                raise CatalogError(f"{source}: table {name} is missing column(s) {', '.join(absent)}")
            rows = (
                (f"{source}, {name} row {i}", {k: _plain(v) for k, v in record.items()})
                for i, record in enumerate(frame.to_dict(orient="records"), start=1)
            )
            built[name] = build_table(TABLES[name], rows, source)
        return cls(**built, source=source)


def _plain(value):
    """A pandas/numpy cell as a plain Python value; NaN, None and pd.NA become None (a blank cell)."""
    if isinstance(value, str):
        return value
    import pandas as pd

    if pd.api.types.is_scalar(value) and pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _table_name(table: str) -> str:
    if table not in TABLES:
        raise CatalogError(f"unknown table {table!r}; tables: {', '.join(TABLE_NAMES)}")
    return table

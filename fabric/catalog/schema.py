"""Column schema of the catalog tables: edge-unit names, SI conversion and value checks.

Each table has a fixed list of :class:`Column`. A column knows its edge name (``port_speed_gbps``), the dataclass
field it fills (``port_speed_bps``), the factor from edge to SI units, and what values it accepts. Every error
names where the value came from (``where``: file and line, or table and row), the table, model, column and value.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Any, Mapping

from fabric.catalog.models import Cable, GpuModel, NicModel, SwitchModel, Transceiver
from fabric.errors import CatalogError
from fabric.units import GB, GBPS, NS

__all__ = ["Column", "TableSpec", "TABLES", "TABLE_NAMES", "FABRICS", "is_blank", "build_table"]

FABRICS = ("infiniband", "ethernet")
TFLOPS = 1e12


@dataclass(frozen=True)
class Column:
    """One column: ``name`` in edge units, the SI ``field`` it fills and the values it accepts.

    ``kind`` is "text", "choice", "int" or "number"; numbers must be >= ``minimum`` (> it when ``strict``);
    ``scale`` turns the edge value into SI. An ``optional`` column may be left out of a file or left blank in a
    new row: the row then takes ``None`` (its meaning is documented with the column, e.g. "no limit"), so catalog
    files written before the column existed still load.
    """

    name: str
    kind: str = "number"
    field: str | None = None
    scale: float = 1.0
    minimum: float = 0.0
    strict: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False

    @property
    def attr(self) -> str:
        """The dataclass field this column fills."""
        return self.field or self.name

    def parse(self, value: Any, fail) -> Any:
        """The SI value of a non-blank edge ``value``; ``fail(problem)`` raises the located error."""
        if isinstance(value, bool) and self.kind == "choice" and set(self.choices) == {"yes", "no"}:
            return "yes" if value else "no"          # YAML reads yes/no as booleans
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
            fail(f"must be {'text' if self.kind in ('text', 'choice') else 'a number'}, got {value!r}")
        if self.kind == "text":
            text = str(value).strip()
            return text if text else fail("is empty")
        if self.kind == "choice":
            text = str(value).strip().lower()
            if text not in self.choices:
                fail(f"must be one of {', '.join(self.choices)}, got {value!r}")
            return text
        try:
            number = float(value)
        except (ValueError, OverflowError):
            fail(f"must be a number, got {value!r}")
        if not math.isfinite(number):
            fail(f"must be a finite number, got {value!r}")
        if self.kind == "int" and not number.is_integer():
            fail(f"must be a whole number, got {value!r}")
        if number < self.minimum or (self.strict and number == self.minimum):
            bound = f"> {self.minimum:g}" if self.strict else f">= {self.minimum:g}"
            fail(f"must be {bound}, got {value!r}")
        return int(number) if self.kind == "int" else number * self.scale

    def to_edge(self, si_value: Any) -> Any:
        """The edge-unit value of an SI value (whole numbers come back as ``int``)."""
        if self.kind in ("text", "choice") or si_value is None:
            return si_value
        edge = float(f"{si_value / self.scale:.12g}")  # drop float noise such as 129.99999999999997 ns
        return int(edge) if edge.is_integer() else edge


def _text(name: str) -> Column:
    return Column(name, "text")


def _price(name: str = "price_usd") -> Column:
    return Column(name)


def _gbps(name: str, field: str, *, strict: bool = True) -> Column:
    return Column(name, field=field, scale=GBPS, strict=strict)


def _count(name: str) -> Column:
    return Column(name, "int", minimum=1)


@dataclass(frozen=True)
class TableSpec:
    """A catalog table: its ``name``, row class and columns (``model`` first, ``source`` last)."""

    name: str
    row_type: type
    columns: tuple[Column, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        """Edge-unit column names in CSV order."""
        return tuple(c.name for c in self.columns)

    @property
    def required_names(self) -> tuple[str, ...]:
        """The columns every file and every new row must give (all but the optional ones)."""
        return tuple(c.name for c in self.columns if not c.optional)

    def column(self, name: str) -> Column:
        """The column called ``name``."""
        for col in self.columns:
            if col.name == name:
                return col
        raise CatalogError(f"table {self.name} has no column {name!r}; its columns: {', '.join(self.column_names)}")

    def parse_cells(self, cells: Mapping[str, Any], where: str, *, complete: bool) -> dict[str, Any]:
        """SI field values of the non-blank ``cells`` of one row (edge column -> value).

        Unknown columns are rejected; with ``complete`` every column must be given (a new or replacing row).
        """
        model = str(cells.get("model", "")).strip() or "?"
        unknown = [name for name in cells if name not in self.column_names]
        if unknown:
            raise CatalogError(
                f"{where}: table {self.name}, model {model!r}: unknown column(s) {', '.join(map(repr, unknown))}; "
                f"the columns of {self.name} are {', '.join(self.column_names)}"
            )
        given = {name: v for name, v in cells.items() if not is_blank(v)}
        if complete:
            optional = [name for name in self.column_names if name not in self.required_names]
            missing = [name for name in self.required_names if name not in given]
            if missing:
                raise CatalogError(
                    f"{where}: table {self.name}, model {model!r}: missing column(s) {', '.join(missing)}; "
                    f"a new or replacing row must give every column ({', '.join(self.required_names)})"
                    + (f"; {', '.join(optional)} may be left out" if optional else "")
                )
        out = {}
        for name, value in given.items():
            def fail(problem: str, _name=name) -> None:
                raise CatalogError(f"{where}: table {self.name}, model {model!r}, column {_name}: {problem}")

            out[self.column(name).attr] = self.column(name).parse(value, fail)
        return out

    def build(self, values: Mapping[str, Any], where: str):
        """A row object from complete SI ``values`` (optional columns may be absent: ``None``), after the checks
        that span several columns."""
        values = {**{c.attr: None for c in self.columns if c.optional}, **values}
        row = self.row_type(**values)
        if isinstance(row, Cable) and row.kind != "fibre" and row.speed_bps == 0:
            raise CatalogError(
                f"{where}: table cables, model {row.model!r}, column speed_gbps: a {row.kind} cable needs its "
                f"speed (> 0); only passive fibre may give 0 (= any speed)"
            )
        return row

    def to_edge(self, row) -> dict[str, Any]:
        """One row as a dict in edge units, columns in CSV order."""
        return {c.name: c.to_edge(getattr(row, c.attr)) for c in self.columns}


def is_blank(value: Any) -> bool:
    """True for a cell that gives no value: None, NaN or an empty/whitespace string."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, float) and math.isnan(value)


TABLES: dict[str, TableSpec] = {
    "switches": TableSpec("switches", SwitchModel, (
        _text("model"), _text("vendor"), Column("fabric", "choice", choices=FABRICS), _count("ports"),
        _gbps("port_speed_gbps", "port_speed_bps"), _price(), Column("power_w"),
        Column("latency_ns", field="latency_s", scale=NS), _text("source"),
        Column("ports_per_cage", "int", minimum=1, optional=True),
        Column("sharp_trees", "int", minimum=0, optional=True),
    )),
    "nics": TableSpec("nics", NicModel, (
        _text("model"), Column("fabric", "choice", choices=FABRICS), _count("ports"),
        _gbps("port_speed_gbps", "port_speed_bps"), _price(), Column("power_w"),
        Column("latency_ns", field="latency_s", scale=NS), _text("source"),
    )),
    "transceivers": TableSpec("transceivers", Transceiver, (
        _text("model"), _gbps("speed_gbps", "speed_bps"), _count("ports_per_module"),
        Column("reach_m", strict=True), Column("side", "choice", choices=("nic", "switch", "any")),
        Column("medium", "choice", choices=("multimode", "singlemode")), _price(), Column("power_w"),
        _text("source"),
    )),
    "cables": TableSpec("cables", Cable, (
        _text("model"), Column("kind", "choice", choices=("dac", "acc", "aoc", "fibre")),
        _gbps("speed_gbps", "speed_bps", strict=False), Column("reach_m", strict=True), _price(),
        Column("power_w"), _text("source"),
        Column("medium", "choice", choices=("multimode", "singlemode"), optional=True),
    )),
    "gpus": TableSpec("gpus", GpuModel, (
        _text("model"), _price(), Column("power_w"), _gbps("scale_up_gbps", "scale_up_bps", strict=False),
        _count("scale_up_domain_max"), Column("bf16_tflops", field="bf16_flops", scale=TFLOPS, strict=True),
        _count("server_gpus"), _price("server_price_usd"), Column("server_power_w"),
        Column("nvls", "choice", choices=("yes", "no")),
        Column("max_nic_gbps_per_gpu", field="max_nic_bps_per_gpu", scale=GBPS, strict=True, optional=True),
        Column("node_gpus", "int", minimum=1, optional=True),
        Column("hbm_gb", field="hbm_bytes", scale=GB, strict=True, optional=True),
        Column("hbm_tbps", field="hbm_bytes_per_s", scale=1e12, strict=True, optional=True),
        _text("source"),
    )),
}
TABLE_NAMES = tuple(TABLES)


def _check_specs() -> None:
    """Each spec fills exactly its dataclass's fields (guards against a typo when a column is added)."""
    for spec in TABLES.values():
        assert {c.attr for c in spec.columns} == {f.name for f in fields(spec.row_type)}, spec.name


_check_specs()


def build_table(spec: TableSpec, rows, source: str) -> dict[str, Any]:
    """A model -> row dict from complete rows given as ``(where, cells)`` pairs; duplicates are rejected."""
    out: dict[str, Any] = {}
    first_seen: dict[str, str] = {}
    for where, cells in rows:
        row = spec.build(spec.parse_cells(cells, where, complete=True), where)
        if row.model in out:
            raise CatalogError(
                f"{where}: table {spec.name}: duplicate model {row.model!r} (first at {first_seen[row.model]}); "
                f"give each model once"
            )
        out[row.model] = row
        first_seen[row.model] = where
    if not out:
        raise CatalogError(f"{source}: table {spec.name} has no rows; give at least one model")
    return out

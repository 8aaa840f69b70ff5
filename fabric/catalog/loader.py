"""Loading the catalog: the built-in CSV tables, then a user's override file (CSV, JSON or YAML).

Override CSV: a ``table`` column, a ``model`` column and any of the tables' columns; a blank cell keeps the
default, a model not in the catalog must give every column of its table. Override JSON/YAML:
``{"switches": [{"model": "ib-ndr-64x400", "price_usd": 38000}], "replace": false}``; with ``"replace": true``
each table named in the file replaces the built-in one (rows then must be complete).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import yaml

from fabric.catalog.catalog import Catalog
from fabric.catalog.schema import TABLE_NAMES, TABLES, build_table, is_blank
from fabric.errors import CatalogError
from fabric.limits import current_limits

__all__ = ["load_catalog", "default_catalog", "apply_overrides", "read_overrides"]

DEFAULTS_NAME = "built-in defaults"


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The built-in catalog from the CSV files shipped in ``fabric/catalog/`` (read once, then cached)."""
    built = {}
    for name in TABLE_NAMES:
        where = f"fabric/catalog/{name}.csv"
        text = resources.files("fabric.catalog").joinpath(f"{name}.csv").read_text(encoding="utf-8")
        header, rows = _read_csv(text, where)
        _check_header(header, TABLES[name].column_names, where, TABLES[name].required_names)
        built[name] = build_table(TABLES[name], rows, where)
    return Catalog(**built, source=DEFAULTS_NAME)


def load_catalog(override: str | Path | None = None) -> Catalog:
    """The built-in catalog, with the rows of the ``override`` file (.csv, .json, .yaml/.yml) applied when given."""
    if override is None:
        return default_catalog()
    entries, replaced = read_overrides(override)
    return apply_overrides(default_catalog(), entries, replaced, source=f"{DEFAULTS_NAME} + {override}")


def read_overrides(path: str | Path) -> tuple[list[tuple[str, str, dict[str, Any]]], set[str]]:
    """The rows of an override file as ``(table, where, cells)`` and the set of tables it replaces whole."""
    path = Path(path)
    text = _read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _csv_overrides(text, str(path)), set()
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise CatalogError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from err
    elif suffix in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise CatalogError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from err
    else:
        raise CatalogError(f"{path}: unknown catalog file type {suffix or '(none)'!r}; use .csv, .json, .yaml or .yml")
    return _mapping_overrides(data, str(path))


def apply_overrides(
    base: Catalog, entries: Iterable[tuple[str, str, dict[str, Any]]], replaced: set[str] = frozenset(),
    *, source: str = "overrides",
) -> Catalog:
    """``base`` with override rows applied: cells of known models change, new complete rows are added, and
    tables in ``replaced`` are rebuilt from their rows alone."""
    by_table: dict[str, list[tuple[str, dict[str, Any]]]] = {name: [] for name in TABLE_NAMES}
    seen: dict[tuple[str, str], str] = {}
    for table, where, cells in entries:
        model = "" if is_blank(cells.get("model")) else str(cells["model"]).strip()
        if not model:
            raise CatalogError(f"{where}: table {table}: the model cell is empty; name the model the row is about")
        if (table, model) in seen:
            raise CatalogError(
                f"{where}: table {table}: duplicate model {model!r} (also at {seen[table, model]}); "
                "give each model once"
            )
        seen[table, model] = where
        by_table[table].append((where, {**cells, "model": model}))

    tables = {name: dict(getattr(base, name)) for name in TABLE_NAMES}
    for name in TABLE_NAMES:
        spec = TABLES[name]
        if name in replaced:
            tables[name] = build_table(spec, by_table[name], source)
            continue
        for where, cells in by_table[name]:
            old = tables[name].get(cells["model"])
            values = spec.parse_cells(cells, where, complete=old is None)
            merged = {**asdict(old), **values} if old is not None else values
            tables[name][cells["model"]] = spec.build(merged, where)
    return replace(base, **tables, source=source)


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise CatalogError(f"{path}: catalog file not found; check the path")
    limit = current_limits().max_upload_bytes
    if path.stat().st_size > limit:
        raise CatalogError(f"{path}: file is larger than the {limit}-byte limit (FABRIC_LIMIT_MAX_UPLOAD_BYTES)")
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise CatalogError(f"{path}: cannot read it as UTF-8 text ({err})") from err


def _read_csv(text: str, where: str) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    """Header and ``(where, cells)`` rows of a CSV text; ``where`` of a row is ``"<file>, line <n>"``."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise CatalogError(f"{where}: the file is empty; the first line must be the column names")
    if len(set(header)) != len(header):
        twice = sorted({h for h in header if header.count(h) > 1})
        raise CatalogError(f"{where}: column(s) {', '.join(twice)} appear more than once in the header")
    reader.fieldnames = header
    rows = []
    for record in reader:
        line = f"{where}, line {reader.line_num}"
        if None in record:
            raise CatalogError(f"{line}: more cells than the {len(header)} columns of the header")
        if all(is_blank(v) for v in record.values()):
            continue
        rows.append((line, record))
    return header, rows


def _check_header(header: list[str], allowed: Iterable[str], where: str, required: Iterable[str] | None = None):
    allowed = list(allowed)
    required = allowed if required is None else list(required)
    missing = [c for c in required if c not in header]
    if missing:
        raise CatalogError(f"{where}: missing column(s) {', '.join(missing)}; add them to the header line")
    unknown = [c for c in header if c not in allowed]
    if unknown:
        raise CatalogError(
            f"{where}: unknown column(s) {', '.join(unknown)}; allowed columns: {', '.join(allowed)}"
        )


def _csv_overrides(text: str, name: str) -> list[tuple[str, str, dict[str, Any]]]:
    header, rows = _read_csv(text, name)
    allowed = ["table"] + list(dict.fromkeys(c for spec in TABLES.values() for c in spec.column_names))
    _check_header(header, allowed, name, required=("table", "model"))
    entries = []
    for where, record in rows:
        table = (record.pop("table") or "").strip().lower()
        if table not in TABLES:
            raise CatalogError(f"{where}: unknown table {table!r} in column table; use one of {', '.join(TABLE_NAMES)}")
        entries.append((table, where, {k: v for k, v in record.items() if not is_blank(v)}))
    return entries


def _mapping_overrides(data: Any, name: str) -> tuple[list[tuple[str, str, dict[str, Any]]], set[str]]:
    if not isinstance(data, dict):
        raise CatalogError(
            f"{name}: expected a mapping of table name to a list of rows, e.g. "
            f'{{"switches": [{{"model": "ib-ndr-64x400", "price_usd": 38000}}]}}'
        )
    replace_all = data.get("replace", False)
    if not isinstance(replace_all, bool):
        raise CatalogError(f"{name}: 'replace' must be true or false, got {replace_all!r}")
    entries = []
    for table, rows in data.items():
        if table == "replace":
            continue
        if table not in TABLES:
            raise CatalogError(f"{name}: unknown table {table!r}; use one of {', '.join(TABLE_NAMES)} (and 'replace')")
        if not isinstance(rows, list):
            raise CatalogError(f"{name}: table {table} must be a list of rows, got {type(rows).__name__}")
        for i, cells in enumerate(rows, start=1):
            where = f"{name}, {table} entry {i}"
            if not isinstance(cells, dict):
                raise CatalogError(f"{where}: each row must be a mapping of column to value, got {cells!r}")
            entries.append((table, where, {str(k): v for k, v in cells.items()}))
    replaced = {t for t in data if t != "replace"} if replace_all else set()
    return entries, replaced

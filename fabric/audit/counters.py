"""Read per-port switch counters over time: Prometheus text exposition, Prometheus JSON range queries (``matrix``)
and fabric's counter CSV (formats and metric names in docs/audit.md).

Every reader returns :class:`Counters`: per (switch, port), per field, the cumulative counter samples
``[(t_s, value)]`` sorted by time. Fields: ``bytes`` (transmitted), ``ecn_marks`` (ECN-marked packets sent),
``pause_frames`` (PFC pause frames received: the port's transmit direction was paused), ``drops`` (dropped or
discarded packets) and ``speed_bps`` (the port's current speed, a gauge). Bad input raises a
:class:`~fabric.errors.ParseError` naming the file, the line (or JSON path) and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime

from fabric.errors import FabricError, ParseError
from fabric.workload.io import decode_text, read_input

__all__ = ["FIELDS", "COUNTER_FIELDS", "CSV_COLUMNS", "Counters", "read_counters", "read_counter_files",
           "field_of_metric", "increase"]

COUNTER_FIELDS = ("bytes", "ecn_marks", "pause_frames", "drops")
FIELDS = COUNTER_FIELDS + ("speed_bps",)
CSV_COLUMNS = ("timestamp", "switch", "port") + FIELDS
_CSV_REQUIRED = ("timestamp", "switch", "port", "bytes")
SWITCH_LABELS = ("switch", "instance", "host", "hostname", "node", "sysName")
PORT_LABELS = ("port", "interface", "ifName", "ifname", "ifDescr", "device", "iface")


@dataclass
class Counters:
    """Per-port counter series of one or several files."""

    series: dict = field(default_factory=dict)      # (switch, port) -> {field: [(t_s, value)]}
    sources: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def add(self, switch: str, port: str, fld: str, t: float, v: float, where: str) -> None:
        pts = self.series.setdefault((switch, port), {}).setdefault(fld, {})
        old = pts.get(t)
        if old is not None and old != v:
            raise ParseError(f"{fld} of {switch} {port} at t={t:g} s given twice with different values "
                             f"({old:g} and {v:g})", source=where)
        pts[t] = v

    def finish(self) -> "Counters":
        for fields in self.series.values():
            for fld, pts in list(fields.items()):
                if isinstance(pts, dict):
                    fields[fld] = sorted(pts.items())
        return self

    def merge(self, other: "Counters") -> None:
        for key, fields in other.series.items():
            for fld, pts in fields.items():
                for t, v in pts:
                    self.add(key[0], key[1], fld, t, v, ", ".join(other.sources))
        self.sources += other.sources
        self.notes += [n for n in other.notes if n not in self.notes]

    @property
    def times(self) -> list[float]:
        return sorted({t for f in self.series.values() for pts in f.values() for t, _ in pts})


def increase(pts: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    """Increase of a cumulative counter between the samples at t0 and t1 (a drop in value is a counter reset: the
    value after it counts from zero). None when the series has no sample at t0 or t1."""
    sel = [(t, v) for t, v in pts if t0 <= t <= t1]
    if not sel or sel[0][0] != t0 or sel[-1][0] != t1:
        return None
    inc = 0.0
    for (_, a), (_, b) in zip(sel, sel[1:]):
        inc += b - a if b >= a else b
    return inc


# ------------------------------------------------------------------ metric names -> fields

def field_of_metric(name: str) -> str | None:
    """Which field a Prometheus metric name measures (None: not used), by the rules of docs/audit.md."""
    n = name.lower()
    if n in ("ifhighspeed",) or n.endswith(("speed_bps", "speed_bytes", "speed_bits")):
        return "speed_bps"
    if "ecn" in n:
        return "ecn_marks"
    if "pause" in n:
        return "pause_frames" if re.search(r"(^|_)(rx|receive[ds]?|in)(_|$)", n) else None
    if "drop" in n or "discard" in n:
        return "drops"
    if ("octets" in n or "bytes" in n) and re.search(r"(^|_)(tx|transmit(ted)?|out)(_|$)|hcout|ifout", n):
        return "bytes"
    return None


def _speed_scale(name: str) -> float:
    n = name.lower()
    if n == "ifhighspeed":
        return 1e6
    if n.endswith("speed_bytes"):
        return 8.0
    return 1.0


def _port_of(labels: dict, where: str) -> tuple[str, str]:
    sw = next((labels[k] for k in SWITCH_LABELS if labels.get(k)), None)
    port = next((labels[k] for k in PORT_LABELS if labels.get(k)), None)
    if sw is None or port is None:
        missing = "switch" if sw is None else "port"
        names = SWITCH_LABELS if sw is None else PORT_LABELS
        raise ParseError(f"no {missing} label (one of {', '.join(names)}) among {sorted(labels) or 'no labels'}",
                         source=where)
    return str(sw), str(port)


def _number(text, where: str, what: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise ParseError(f"{what} {text!r} is not a number", source=where) from None
    if not math.isfinite(v):
        raise ParseError(f"{what} {text!r} is not a finite number", source=where)
    if v < 0:
        raise ParseError(f"{what} {text!r} is negative", source=where)
    return v


class _MetricPick:
    """The first metric name seen for each (port, field) is used; others are noted."""

    def __init__(self, out: Counters):
        self.out = out
        self.chosen: dict = {}
        self.ignored: dict = {}

    def accept(self, key, fld: str, metric: str) -> bool:
        got = self.chosen.setdefault((key, fld), metric)
        if got != metric:
            self.ignored.setdefault((fld, got), set()).add(metric)
            return False
        return True

    def notes(self, unused: set) -> None:
        for (fld, got), others in sorted(self.ignored.items()):
            self.out.notes.append(f"{fld}: used {got}, ignored {', '.join(sorted(others))} for the same ports")
        if unused:
            self.out.notes.append(f"metrics not used: {', '.join(sorted(unused)[:12])}"
                                  f"{' ...' if len(unused) > 12 else ''}")


# ------------------------------------------------------------------ Prometheus text exposition

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+(\S+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')


def _labels(text: str, where: str) -> dict:
    out, pos = {}, 0
    text = text.strip()
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m:
            raise ParseError(f"bad label set {{{text}}} near {text[pos:pos + 20]!r}", source=where)
        out[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return out


def _read_prom_text(name: str, text: str) -> Counters:
    out = Counters(sources=[name])
    pick = _MetricPick(out)
    unused = set()
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        where = f"{name}:{i}"
        m = _SAMPLE.match(s)
        if not m:
            raise ParseError(f"not a Prometheus sample line: {s[:80]!r}", source=where)
        metric = m.group(1)
        try:
            float(m.group(4))
            if m.group(5) is not None:
                float(m.group(5))
        except ValueError:
            raise ParseError(f"not a Prometheus sample line (metric value [timestamp]): {s[:80]!r}",
                             source=where) from None
        fld = field_of_metric(metric)
        if fld is None:
            unused.add(metric)
            continue
        if m.group(5) is None:
            raise ParseError(f"{metric}: sample without a timestamp; counters over time need the scrape time "
                             f"(milliseconds) after each value", source=where)
        key = _port_of(_labels(m.group(3) or "", where), where)
        v = _number(m.group(4), where, f"{metric} value")
        t = _number(m.group(5), where, f"{metric} timestamp") / 1000.0
        if pick.accept(key, fld, metric):
            out.add(key[0], key[1], fld, t, v * (_speed_scale(metric) if fld == "speed_bps" else 1.0), where)
    pick.notes(unused)
    return out.finish()


# ------------------------------------------------------------------ Prometheus JSON (query_range)

def _read_prom_json(name: str, doc) -> Counters:
    out = Counters(sources=[name])
    pick = _MetricPick(out)
    unused = set()
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise ParseError("not a Prometheus API response: no 'data' object", source=name, line="data")
    if doc.get("status") not in (None, "success"):
        raise ParseError(f"Prometheus says status {doc.get('status')!r}: {doc.get('error', '')}", source=name,
                         line="status")
    rtype = doc["data"].get("resultType")
    if rtype not in ("matrix", "vector"):
        raise ParseError(f"resultType {rtype!r}: expected 'matrix' (a range query) or 'vector'", source=name,
                         line="data.resultType")
    result = doc["data"].get("result")
    if not isinstance(result, list):
        raise ParseError("'data.result' must be a list", source=name, line="data.result")
    for i, r in enumerate(result):
        path = f"data.result[{i}]"
        if not isinstance(r, dict) or not isinstance(r.get("metric"), dict):
            raise ParseError("each result needs a 'metric' object", source=name, line=path)
        labels = {str(k): str(v) for k, v in r["metric"].items()}
        metric = labels.get("__name__")
        if not metric:
            raise ParseError("result without __name__: query the raw counters (e.g. "
                             "node_network_transmit_bytes_total), not rate() or sum()", source=name, line=path)
        fld = field_of_metric(metric)
        if fld is None:
            unused.add(metric)
            continue
        key = _port_of(labels, f"{name} {path}.metric")
        values = r.get("values") if rtype == "matrix" else [r.get("value")]
        if not isinstance(values, list):
            raise ParseError("'values' must be a list of [time, \"value\"] pairs", source=name,
                             line=f"{path}.values")
        if not pick.accept(key, fld, metric):
            continue
        for j, pair in enumerate(values):
            where = f"{name} {path}.values[{j}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise ParseError("expected a [time, \"value\"] pair", source=where)
            t = _number(pair[0], where, "time")
            v = _number(pair[1], where, f"{metric} value")
            out.add(key[0], key[1], fld, t, v * (_speed_scale(metric) if fld == "speed_bps" else 1.0), where)
    pick.notes(unused)
    return out.finish()


# ------------------------------------------------------------------ CSV

def _timestamp(text: str, where: str) -> float:
    s = text.strip()
    try:
        v = float(s)
    except ValueError:
        try:
            d = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            raise ParseError(f"timestamp {s!r} is neither Unix seconds nor ISO 8601", source=where) from None
        if d.tzinfo is None:
            raise ParseError(f"timestamp {s!r} has no time zone (add Z or +00:00)", source=where)
        return d.timestamp()
    if not math.isfinite(v):
        raise ParseError(f"timestamp {s!r} is not finite", source=where)
    return v


def _read_csv(name: str, text: str) -> Counters:
    out = Counters(sources=[name])
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None:
        raise ParseError("empty counter CSV", source=name)
    cols = [h.strip().lower() for h in header]
    missing = [c for c in _CSV_REQUIRED if c not in cols]
    if missing:
        raise ParseError(f"CSV header lacks {', '.join(missing)} (columns: {', '.join(CSV_COLUMNS)})",
                         source=f"{name}:1")
    unknown = [c for c in cols if c not in CSV_COLUMNS]
    if unknown:
        out.notes.append(f"{name}: columns not used: {', '.join(unknown)}")
    idx = {c: cols.index(c) for c in CSV_COLUMNS if c in cols}
    absent = [f for f in FIELDS if f not in idx]
    for i, row in enumerate(rows, 2):
        if not row or all(not c.strip() for c in row):
            continue
        where = f"{name}:{i}"
        if len(row) != len(cols):
            raise ParseError(f"{len(row)} cells, the header has {len(cols)}", source=where)
        t = _timestamp(row[idx["timestamp"]], f"{where} timestamp")
        sw, port = row[idx["switch"]].strip(), row[idx["port"]].strip()
        if not sw or not port:
            raise ParseError("empty switch or port", source=where)
        for f in FIELDS:
            if f in idx and row[idx[f]].strip():
                out.add(sw, port, f, t, _number(row[idx[f]].strip(), f"{where} {f}", f), where)
    if absent:
        out.notes.append(f"{name}: no {', '.join(absent)} column: not reported")
    return out.finish()


# ------------------------------------------------------------------ entry points

def read_counters(name: str, raw: bytes) -> Counters:
    """Read one counter file (any of the three formats, .gz too)."""
    data = read_input(name, raw)
    text = decode_text(data, name)
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise ParseError(f"bad JSON: {err.msg}", source=name, line=err.lineno) from None
        c = _read_prom_json(name, doc)
    elif text.lstrip().lower().startswith("timestamp"):
        c = _read_csv(name, text)
    else:
        c = _read_prom_text(name, text)
    if not c.series:
        raise ParseError("no per-port counter of a known kind (bytes, ECN marks, pause frames, drops, speed) "
                         "found" + (f"; {c.notes[-1]}" if c.notes else ""), source=name)
    return c


def read_counter_files(files: list[tuple[str, bytes]]) -> Counters:
    """Read and merge several counter files (e.g. one Prometheus scrape per file)."""
    if not files:
        raise FabricError("no counter file given")
    out = Counters()
    for name, raw in files:
        out.merge(read_counters(name, raw))
    return out.finish()

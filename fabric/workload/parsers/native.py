"""fabric's own workload JSON (schema ``fabric.workload/1``, see :mod:`fabric.workload.model`)."""

from __future__ import annotations

import re

from fabric.errors import ParseError, WorkloadError
from fabric.workload.io import load_json
from fabric.workload.model import SCHEMA_VERSION, Workload, workload_from_dict

__all__ = ["FORMAT", "sniff", "parse"]

FORMAT = "native"

_SCHEMA = re.compile(rb'"schema"\s*:\s*"fabric\.workload/')
# workload_to_dict writes "schema" last, so a long file may not show it in the head: accept the shape of the
# dump instead (a top-level object whose first key is "jobs", holding objects that start with "name").
_DUMP_SHAPE = re.compile(rb'\A\s*\{\s*"jobs"\s*:\s*\[\s*(\]|\{\s*"name"\s*:)')


def sniff(head: bytes, name: str) -> bool:
    """True for a JSON object carrying ``"schema": "fabric.workload/..."`` or shaped like fabric's own dump."""
    h = head.lstrip()
    if not h.startswith(b"{"):
        return False
    return bool(_SCHEMA.search(head) or _DUMP_SHAPE.match(head))


def parse(files: list[tuple[str, bytes]]) -> Workload:
    """Load one or more native workload files; several are combined job by job (job names must differ)."""
    if not files:
        raise ParseError("no native workload file given")
    workloads = []
    for name, data in files:
        d = load_json(data, name)
        if not isinstance(d, dict):
            raise ParseError("expected a JSON object at the top level", source=name)
        schema = d.get("schema", SCHEMA_VERSION)
        if isinstance(schema, str) and schema.startswith("fabric.workload/") and schema != SCHEMA_VERSION:
            raise ParseError(
                f"workload schema {schema!r} is not supported by this fabric version (expects {SCHEMA_VERSION!r})",
                source=name, line="schema",
            )
        try:
            wl = workload_from_dict(d)
        except WorkloadError as err:
            raise ParseError(str(err), source=name) from err
        except (TypeError, ValueError) as err:  # malformed unparsed/measurements rows
            raise ParseError(f"malformed entry ({err})", source=name) from err
        workloads.append(wl)
    if len(workloads) == 1:
        return workloads[0]
    jobs, seen = [], set()
    for (name, _), wl in zip(files, workloads):
        for job in wl.jobs:
            if job.name in seen:
                raise ParseError(f"job name {job.name!r} already used by another native file", source=name)
            seen.add(job.name)
            jobs.append(job)
    return Workload(
        jobs=tuple(jobs),
        sources=tuple(s for wl in workloads for s in wl.sources),
        unparsed=tuple(u for wl in workloads for u in wl.unparsed),
        measurements=tuple(m for wl in workloads for m in wl.measurements),
        facts=tuple(f for wl in workloads for f in wl.facts),
        warnings=tuple(w for wl in workloads for w in wl.warnings),
        name=workloads[0].name,
    )

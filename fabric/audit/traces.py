"""Read per-rank Kineto traces for the audit and group them into job sizes.

Each file is one rank of one job (PyTorch profiler JSON, .gz too), read by the Kineto parser's own
:func:`~fabric.workload.parsers.kineto.load_rank` (steps, collective calls, their kernels, compute kernels). Files
are grouped by the ``distributedInfo.world_size`` they record: one group per job size, so the same job traced at N
and 4N GPUs can be compared. A file without a world size joins a group of its own whose size is the number of such
files (said in a note).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from fabric.errors import FabricError, ParseError
from fabric.workload.io import read_input
from fabric.workload.parsers.kineto import RankTrace, load_rank

__all__ = ["RunTraces", "load_traces", "read_paths"]


@dataclass
class RunTraces:
    """The traced ranks of one job size."""

    world_size: int
    ranks: list[RankTrace]          # sorted by rank
    notes: list[str]


def read_paths(paths) -> list[tuple[str, bytes]]:
    """(name, raw bytes) of each path; an unreadable path raises a ParseError naming it."""
    out = []
    for p in paths:
        name = os.fspath(p)
        try:
            with open(name, "rb") as fh:
                out.append((name, fh.read()))
        except OSError as err:
            raise ParseError(f"cannot read the file ({err.strerror or err})", source=name) from None
    return out


def load_traces(files: list[tuple[str, bytes]]) -> list[RunTraces]:
    """Load every (name, raw bytes) file as one rank and group them by job size (smallest first).

    Raises a ParseError naming the file when a file is not a usable Kineto trace (no profiler steps is allowed: the
    whole trace is then one window), or when one size holds the same rank twice.
    """
    if not files:
        raise ParseError("no trace file given")
    loaded: list[RankTrace] = []
    for name, raw in files:
        try:
            data = read_input(name, raw)
            loaded.append(load_rank(name, data))
        except ParseError:
            raise
        except FabricError as err:
            raise ParseError(str(err), source=name) from None
    by_size: dict[int | None, list[RankTrace]] = {}
    for t in loaded:
        by_size.setdefault(t.world_size, []).append(t)
    runs: list[RunTraces] = []
    for size, ranks in by_size.items():
        notes = []
        if size is None:
            size = max(len(ranks), max((t.rank + 1 for t in ranks if t.rank is not None), default=1))
            notes.append(f"{len(ranks)} file(s) record no distributedInfo.world_size: taken as one job of {size} "
                         f"rank(s)")
        seen: dict[int, str] = {}
        for i, t in enumerate(ranks):
            r = t.rank if t.rank is not None else i
            if r in seen:
                raise ParseError(f"rank {r} of the {size}-rank job is given twice ({seen[r]} and {t.name}); give "
                                 f"one file per rank of each job size", source=t.name, line="distributedInfo.rank")
            seen[r] = t.name
        ranks = sorted(ranks, key=lambda t: (t.rank if t.rank is not None else -1, t.name))
        if len(ranks) < size:
            notes.append(f"{len(ranks)} of {size} ranks traced: stragglers and waits are among the traced ranks "
                         f"only")
        runs.append(RunTraces(world_size=size, ranks=ranks, notes=notes + [w for t in ranks for w in t.warnings]))
    return sorted(runs, key=lambda r: r.world_size)

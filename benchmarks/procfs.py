"""Process table from Linux ``/proc`` for the benchmarks: each process's parent and CPU ticks (empty elsewhere)."""

from __future__ import annotations

import os


def process_stats() -> dict[int, list[str]]:
    """Per process id, the fields of ``/proc/<pid>/stat`` from field 3 (state) on: ``[1]`` is the parent id,
    ``[11:15]`` utime, stime, cutime and cstime in clock ticks. Processes that end while read are left out."""
    out: dict[int, list[str]] = {}
    if not os.path.isdir("/proc"):
        return out
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        out[int(d)] = stat[stat.rindex(")") + 2:].split()
    return out

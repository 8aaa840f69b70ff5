"""Parse throughput and peak memory of the trace parsers (target: a 100 MB Kineto trace well under a minute).

Run: python benchmarks/bench_parse.py [--mb 100] [--repeats 3] [--keep DIR]

Writes a ~100 MB synthetic NEW-format Kineto trace (rank 0 of a 64-GPU DP x TP x EP job, thousands of kernels per
step) with :mod:`fabric.workload.kineto_writer` into a temporary folder, then for it and for the largest real traces
in ../shared/traces (when present) prints: size, median parse time, throughput (MB/s of decompressed input), peak
Python heap during the parse (tracemalloc, separate run) and the peak resident growth of a fresh process that only
reads and parses the files (VmHWM after minus before). ``json.load`` of the whole synthetic file (time and resident
growth, fresh process) is shown beside it for reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from fabric.workload.ingest import ingest
from fabric.workload.kineto_writer import write_kineto
from fabric.workload.model import CommOp, Job, ProcessGroup

REPO = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("FABRIC_TRACES_DIR", REPO.parent / "shared" / "traces"))
REAL = [
    ["kineto/hta/nccl_parser_config/nccl_data.json.gz"],
    [f"kineto/param_dlrm_kineto/{p.name}" for p in sorted((TRACES / "kineto/param_dlrm_kineto").glob("*.json"))],
    ["kineto/hta/trace_filter/sampled_rank-0.json.gz", "kineto/hta/trace_filter/sampled_rank-1.json.gz"],
    ["chakra_et/chakra.0.et"],
]


def bench_job() -> Job:
    """A 64-GPU job with DP 8 x TP 8 and an EP group: realistic op mix and many kernels per step."""
    return Job(
        "bench", world_size=64,
        groups=(ProcessGroup("dp", 8, "dp", rank_start=0, rank_stride=8),
                ProcessGroup("tp", 8, "tp", rank_start=0, rank_stride=1),
                ProcessGroup("ep", 8, "ep", rank_start=0, rank_stride=1)),
        ops=(CommOp("all_reduce", 64 << 20, "dp", 4, "bfloat16", 0.7),
             CommOp("all_gather", 16 << 20, "tp", 48, "bfloat16", 0.3),
             CommOp("reduce_scatter", 16 << 20, "tp", 48, "bfloat16", 0.3),
             CommOp("all_to_allv", 8 << 20, "ep", 16, "bfloat16", 0.2,
                    per_rank_bytes=tuple((8 << 20) - i * 4096 for i in range(8)))),
        compute_time_s=0.4, compute_cv=0.03)


def write_trace(path: Path, target_mb: float, kernels_per_step: int = 4000) -> int:
    """Write rank 0's trace, choosing the step count so the file is about ``target_mb`` MB; returns bytes."""
    job = bench_job()
    probe = path.with_suffix(".probe")
    with open(probe, "w") as fh:
        one = write_kineto(fh, job, 0, steps=1, compute_kernels_per_step=kernels_per_step)
    probe.unlink()
    steps = max(1, round(target_mb * 1e6 / one))
    with open(path, "w") as fh:
        write_kineto(fh, job, 0, steps=steps, compute_kernels_per_step=kernels_per_step)
    return path.stat().st_size


_CHILD = r"""
import json, resource, sys, time


def hwm_kib():
    # VmHWM belongs to this exec'd image (ru_maxrss would inherit the parent's peak across fork)
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


mode, paths = sys.argv[1], sys.argv[2:]
from fabric.workload.ingest import ingest
base = hwm_kib()
t0 = time.perf_counter()
if mode == "parse":
    res = ingest([(p, open(p, "rb").read()) for p in paths])
    assert res.ok, res.errors
else:
    with open(paths[0]) as fh:
        doc = json.load(fh)
dt = time.perf_counter() - t0
print(dt, base, hwm_kib())
"""


def fresh_process_rss(paths: list[str], mode: str = "parse") -> tuple[float, float]:
    """(seconds, peak resident growth in MB) of a fresh interpreter that reads and parses ``paths``
    (``mode="json"``: only ``json.load`` of the first file, for reference)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, *paths], capture_output=True, text=True, check=True)
    dt, base, peak = (float(x) for x in out.stdout.split())
    return dt, (peak - base) / 1024.0


def measure(paths: list[str], repeats: int, with_json: bool = False) -> dict:
    files = [(p, Path(p).read_bytes()) for p in paths]
    raw_mb = sum(len(d) for _, d in files) / 1e6
    times = []
    res = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = ingest(files)
        times.append(time.perf_counter() - t0)
    if not res.ok:
        raise SystemExit(f"parse failed: {res.errors}")
    from fabric.workload.io import read_input

    dec_mb = sum(len(read_input(n, d)) for n, d in files) / 1e6
    tracemalloc.start()
    ingest(files)
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    _, rss_mb = fresh_process_rss(paths)
    json_s = json_rss = None
    if with_json and len(paths) == 1 and paths[0].endswith(".json"):
        json_s, json_rss = fresh_process_rss(paths, "json")
    t = statistics.median(times)
    return {"files": len(paths), "raw_mb": raw_mb, "mb": dec_mb, "seconds": t, "mb_per_s": dec_mb / t,
            "heap_peak_mb": heap_peak / 1e6, "rss_growth_mb": rss_mb, "json_load_s": json_s, "json_rss_mb": json_rss,
            "jobs": [(j.name, len(j.ops)) for j in res.workload.jobs]}


def _row(label: str, m: dict) -> str:
    js = (f"{m['json_load_s']:.2f} s, RSS +{m['json_rss_mb']:.0f} MB" if m["json_load_s"] is not None else "-")
    return (f"{label:<44} {m['files']:>3} {m['raw_mb']:>8.1f} {m['mb']:>8.1f} {m['seconds']:>8.2f} "
            f"{m['mb_per_s']:>7.1f} {m['heap_peak_mb']:>9.1f} {m['rss_growth_mb']:>8.1f}  {js}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the synthetic trace in MB (default 100)")
    ap.add_argument("--repeats", type=int, default=3, help="timed parses per input (median reported)")
    ap.add_argument("--keep", metavar="DIR", help="write the synthetic trace here instead of a temporary folder")
    args = ap.parse_args()
    header = (f"{'input':<44} {'n':>3} {'file MB':>8} {'json MB':>8} {'parse s':>8} {'MB/s':>7} "
              f"{'heap MB':>9} {'RSS MB':>8}  json.load")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "bench_rank0.pt.trace.json"
        t0 = time.perf_counter()
        size = write_trace(path, args.mb)
        print(f"wrote {path.name}: {size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s")
        print(header)
        print("-" * len(header))
        print(_row(f"synthetic Kineto ({size / 1e6:.0f} MB)", measure([str(path)], args.repeats, with_json=True)))
        for rels in REAL:
            paths = [str(TRACES / r) for r in rels if (TRACES / r).exists()]
            if not paths:
                continue
            label = rels[0] if len(rels) == 1 else f"{os.path.dirname(rels[0])}/* ({len(paths)} ranks)"
            print(_row(label[-44:], measure(paths, args.repeats)))
    print("MB/s is decompressed input per second of wall time (read_input + detection + parse + merge); heap MB is "
          "tracemalloc's peak; RSS MB is the peak resident growth of a fresh process reading and parsing the files "
          "(includes the raw bytes themselves).")


if __name__ == "__main__":
    main()

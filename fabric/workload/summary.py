"""A readable summary of a :class:`~fabric.workload.model.Workload`: what was read, per job and per step.

:func:`summarize` returns a JSON-ready dict; :func:`format_summary` renders it as text. Only what the trace says is
reported: compute time per step and communication *bytes* per step (no communication time is invented: that
depends on the fabric, which is what fabric evaluates later).
"""

from __future__ import annotations

from dataclasses import asdict

from fabric.workload.accounting import step_ops, step_text
from fabric.workload.model import Job, Workload

__all__ = ["summarize", "format_summary", "size_label", "log2_bin"]


def size_label(nbytes: float) -> str:
    """Bytes in binary units, e.g. ``31.5 MiB`` (``0 B`` for zero)."""
    n = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def log2_bin(nbytes: int) -> int:
    """The log2 histogram bin of a message size: k with 2**k <= nbytes < 2**(k+1); -1 for 0 bytes."""
    return -1 if nbytes <= 0 else int(nbytes).bit_length() - 1


def _ranks_text(g) -> str | None:
    r = g.global_ranks()
    if r is None:
        if g.rank_stride is not None:
            return f"one group per slice, stride {g.rank_stride}"
        return None
    if len(r) > 1 and all(b - a == r[1] - r[0] for a, b in zip(r, r[1:])):
        return f"{r[0]}..{r[-1]} step {r[1] - r[0]}" if r[1] - r[0] != 1 else f"{r[0]}..{r[-1]}"
    return ",".join(str(x) for x in r[:16]) + (",..." if len(r) > 16 else "")


def _job_summary(job: Job) -> dict:
    per_kind: dict[str, dict] = {}
    hist: dict[int, list[float]] = {}
    ov_w = ov_b = 0.0
    ops = step_ops(job)                 # per step of the job: a serving job's per request (decode x token steps)
    for op in ops:
        pk = per_kind.setdefault(op.kind, {"ops": 0, "count_per_step": 0.0, "bytes_per_step": 0.0})
        pk["ops"] += 1
        pk["count_per_step"] += op.count_per_step
        pk["bytes_per_step"] += op.bytes_per_step
        sizes = op.per_rank_bytes if op.per_rank_bytes else (op.bytes,)
        share = op.count_per_step / len(sizes)
        for b in sizes:
            h = hist.setdefault(log2_bin(int(b)), [0.0, 0.0])
            h[0] += share
            h[1] += share * b
        ov_w += op.overlap_fraction * op.bytes_per_step
        ov_b += op.bytes_per_step
    histogram = [{"bin_lo_bytes": 0 if k < 0 else 2 ** k, "bin_hi_bytes": 1 if k < 0 else 2 ** (k + 1),
                  "count_per_step": round(v[0], 9), "bytes_per_step": v[1]} for k, v in sorted(hist.items())]
    comm = float(sum(op.bytes_per_step for op in ops))
    return {
        "name": job.name,
        "kind": job.kind,
        "world_size": job.world_size,
        "steps_observed": job.steps_observed,
        "compute_time_s": job.compute_time_s,
        "compute_cv": job.compute_cv,
        "compute_gpu": job.compute_gpu,
        "compute_gpu_tflops": job.compute_gpu_tflops,
        "groups": [{"name": g.name, "size": g.size, "role": g.role, "role_source": g.role_source,
                    "ranks": _ranks_text(g)} for g in job.groups],
        "step": step_text(job),
        # count_per_step as the workload counts it (a serving job's decode ops: per token step); calls_per_step and
        # bytes_per_step per step of the job (per request: fabric.workload.accounting)
        "ops": [{"kind": op.kind, "bytes": op.bytes, "group": op.group, "count_per_step": op.count_per_step,
                 "calls_per_step": per.count_per_step, "bytes_per_step": per.bytes_per_step,
                 "dtype": op.dtype, "overlap_fraction": op.overlap_fraction, "name": op.name,
                 "per_rank_bytes": list(op.per_rank_bytes) if op.per_rank_bytes else None, "phase": op.phase}
                for op, per in zip(job.ops, ops)],
        "per_kind": per_kind,
        "comm_bytes_per_step": comm,
        "comm_calls_per_step": sum(op.count_per_step for op in ops),
        "overlap_fraction_bytes_weighted": (ov_w / ov_b) if ov_b > 0 else 0.0,
        "comm_bytes_per_compute_second": (comm / job.compute_time_s) if job.compute_time_s > 0 else None,
        "message_size_histogram": histogram,
        "request_rate_per_s": job.request_rate_per_s,
        "latency_slo_s": job.latency_slo_s,
        "serving": None if job.serving is None else asdict(job.serving),
        "burst_bytes": job.burst_bytes,
        "burst_period_s": job.burst_period_s,
        "notes": list(job.notes),
    }


def summarize(workload: Workload) -> dict:
    """A JSON-ready summary: jobs (groups, per-kind counts and bytes per step, log2 message-size histogram,
    compute time), unparsed communication, measurements count, facts and warnings."""
    return {
        "name": workload.name,
        "sources": list(workload.sources),
        "jobs": [_job_summary(j) for j in workload.jobs],
        "unparsed": [{"source": u.source, "name": u.name, "count": u.count, "total_time_s": u.total_time_s,
                      "reason": u.reason} for u in workload.unparsed],
        "measurements": len(workload.measurements),
        "facts": [list(f) for f in workload.facts],
        "warnings": list(workload.warnings),
    }


def _t(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def _count(x: float) -> str:
    return f"{x:g}" if float(x).is_integer() else f"{x:.3g}"


def format_summary(summary: dict) -> str:
    """The summary of :func:`summarize` as readable text."""
    out: list[str] = []
    jobs = summary.get("jobs", [])
    out.append(f"workload {summary.get('name', 'workload')!r}: {len(jobs)} job(s) from "
               f"{len(summary.get('sources', []))} source(s)")
    for j in jobs:
        out.append("")
        head = f"job {j['name']!r} ({j['kind']}, {j['world_size']} ranks"
        if j["steps_observed"]:
            head += f", {j['steps_observed']} step(s) observed"
        out.append(head + ")")
        if j["kind"] == "storage":
            out.append(f"  writes {size_label(j['burst_bytes'] or 0)} every {_t(j['burst_period_s'] or 0)}")
        unit = "request" if j["kind"] == "inference" else "step"
        gpu = j.get("compute_gpu") or ("a GPU of {:g} TFLOPS BF16".format(j["compute_gpu_tflops"])
                                      if j.get("compute_gpu_tflops") else "an unknown GPU")
        out.append(f"  compute per {unit}: {_t(j['compute_time_s'])} (cv {j['compute_cv']:.3f}) on {gpu}")
        out.append(f"  communication per {unit}: {size_label(j['comm_bytes_per_step'])} in "
                   f"{_count(j['comm_calls_per_step'])} call(s); bytes-weighted overlap with compute "
                   f"{j['overlap_fraction_bytes_weighted']:.0%}")
        if j["groups"]:
            out.append("  process groups:")
            for g in j["groups"]:
                extra = f", ranks {g['ranks']}" if g["ranks"] else ""
                out.append(f"    {g['name']:<16} size {g['size']:<6} role {g['role']} ({g['role_source']}){extra}")
        if j["per_kind"]:
            out.append(f"  per {unit} by kind:")
            for kind, v in sorted(j["per_kind"].items(), key=lambda kv: -kv[1]["bytes_per_step"]):
                calls, size = _count(v["count_per_step"]), size_label(v["bytes_per_step"])
                out.append(f"    {kind:<15} {calls:>8} calls  {size:>11}")
        sv = j.get("serving")
        if sv:
            out.append(f"  serving: {sv['replicas']} {sv['mode']} replica(s), {j['request_rate_per_s']:g} requests/s "
                       f"({sv['arrival']}), {sv['prompt_tokens']} prompt + {sv['output_tokens']} output tokens, "
                       f"decode batch {sv['decode_batch']}; prefill {_t(sv['prefill_s'])}, decode "
                       f"{_t(sv['decode_step_s'])} per token step; ops counted per request, decode ops per token "
                       "step (docs/serving.md)")
        if j["ops"]:
            out.append("  ops (size, group, count per step, overlap):" if not sv else
                       "  ops (size, group, count per request or per token step [phase], overlap):")
            for op in j["ops"][:40]:
                prb = ""
                if op["per_rank_bytes"]:
                    pr = op["per_rank_bytes"]
                    prb = f", per rank {size_label(min(pr))}..{size_label(max(pr))}"
                label = f" [{op['name']}]" if op["name"] else ""
                if op.get("phase"):
                    label += f" [{op['phase']}]"
                out.append(f"    {op['kind']:<15} {size_label(op['bytes']):>11} {op['dtype']:<9} on {op['group']:<12} "
                           f"x{_count(op['count_per_step']):<6} overlap {op['overlap_fraction']:.0%}{prb}{label}")
            if len(j["ops"]) > 40:
                out.append(f"    ... and {len(j['ops']) - 40} more")
        if j["message_size_histogram"]:
            out.append("  message sizes (log2 bins, calls per step):")
            for h in j["message_size_histogram"]:
                lo = h["bin_lo_bytes"]
                rng = "0 B" if lo == 0 else f"{size_label(lo)}..{size_label(h['bin_hi_bytes'])}"
                out.append(f"    {rng:>22}  {_count(h['count_per_step']):>8}  {size_label(h['bytes_per_step']):>11}")
        for n in j["notes"]:
            out.append(f"  note: {n}")
    if summary.get("measurements"):
        out.append("")
        out.append(f"{summary['measurements']} measured point(s) kept for calibration")
    if summary.get("unparsed"):
        out.append("")
        out.append("communication seen but not turned into ops:")
        for u in summary["unparsed"]:
            out.append(f"  {u['name']} x{u['count']} ({_t(u['total_time_s'])}) in {u['source']}: {u['reason']}")
    if summary.get("warnings"):
        out.append("")
        out.append("warnings:")
        for w in summary["warnings"]:
            out.append(f"  {w}")
    return "\n".join(out)


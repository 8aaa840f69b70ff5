"""The workload model every parser and the synthesizer produce, and its native JSON form.

A :class:`Workload` is one or more :class:`Job` (training, inference, storage/checkpoint traffic). A job has
process groups (:class:`ProcessGroup`) and a per-step list of communication operations (:class:`CommOp`).

Byte convention (the one nccl-tests uses for its ``size`` column, so bus-bandwidth formulas apply unchanged):

- ``all_reduce``, ``broadcast``, ``reduce``: the buffer size S on each rank;
- ``all_gather``: the gathered (output) size on each rank (= group size x per-rank input);
- ``reduce_scatter``: the input size on each rank (= group size x per-rank output);
- ``all_to_all`` / ``all_to_allv``: the total bytes each rank sends (its whole send buffer); per-rank differences
  of ``all_to_allv`` are kept in ``per_rank_bytes``;
- ``send_recv``: the bytes one rank sends to its peer in one call.

Everything is SI: bytes and seconds.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from fabric.errors import WorkloadError

__all__ = [
    "COLLECTIVE_KINDS", "JOB_KINDS", "ROLES", "SCHEMA_VERSION",
    "SERVING_PHASES", "ARRIVAL_PROCESSES", "SERVING_MODES",
    "ProcessGroup", "CommOp", "ServingSpec", "Job", "step_ops", "UnparsedComm", "Measurement", "Workload",
    "workload_from_dict", "workload_to_dict", "load_workload_json", "dump_workload_json", "workload_key",
]

SCHEMA_VERSION = "fabric.workload/1"

#: Communication kinds the evaluator understands.
COLLECTIVE_KINDS = (
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "all_to_allv",
    "broadcast", "reduce", "send_recv", "barrier",
)
#: Kinds of job.
JOB_KINDS = ("training", "inference", "storage")
#: Phases of a serving request an op belongs to (``CommOp.phase``; ``None`` for training ops). Counts of a
#: serving job's ops are per request for "prefill", "kv_transfer" and "kv_offload", per decode iteration (token
#: step) for "decode".
SERVING_PHASES = ("prefill", "decode", "kv_transfer", "kv_offload")
#: Arrival processes of a serving job's requests.
ARRIVAL_PROCESSES = ("poisson", "bursty")
#: Where prefill runs: on the decode replicas ("colocated") or on a pool of its own ("disaggregated").
SERVING_MODES = ("colocated", "disaggregated")
#: Parallelism roles of a process group ("world": every rank; "unknown": the trace does not tell).
ROLES = ("dp", "tp", "pp", "ep", "cp", "world", "unknown")

# Sanity caps on a single number: larger values are almost surely unit mistakes or corrupted files.
MAX_OP_BYTES = 2 ** 50          # 1 PiB in one collective call
MAX_RANKS = 10_000_000
MAX_COUNT_PER_STEP = 10_000_000


@dataclass(frozen=True)
class ProcessGroup:
    """A communicator: ``size`` ranks, their global ``ranks`` when known, and the inferred parallelism ``role``.

    ``rank_start``/``rank_stride`` describe a strided pattern (ranks start, start+stride, ...) when explicit ranks
    are not listed; ``role_source`` says how the role was decided ("trace", "inferred", "plan", "default").
    """

    name: str
    size: int
    role: str = "unknown"
    ranks: tuple[int, ...] | None = None
    rank_start: int | None = None
    rank_stride: int | None = None
    role_source: str = "default"

    def global_ranks(self) -> tuple[int, ...] | None:
        """The group's global ranks, from ``ranks`` or from the strided pattern; ``None`` when unknown."""
        if self.ranks is not None:
            return self.ranks
        if self.rank_start is not None and self.rank_stride is not None:
            return tuple(self.rank_start + i * self.rank_stride for i in range(self.size))
        return None


@dataclass(frozen=True)
class CommOp:
    """One communication operation of a step, repeated ``count_per_step`` times.

    ``overlap_fraction`` is the share of its time hidden behind compute (0: fully exposed, 1: fully hidden).
    ``per_rank_bytes`` keeps per-rank sizes for uneven ops (all_to_allv); ``bytes`` is then their maximum.
    ``name`` is a free label (e.g. "layer3.wg" or "bucket 2").
    """

    kind: str
    bytes: int
    group: str
    count_per_step: float = 1.0
    dtype: str = "unknown"
    overlap_fraction: float = 0.0
    per_rank_bytes: tuple[int, ...] | None = None
    name: str = ""
    #: serving jobs only: the request phase (:data:`SERVING_PHASES`) this op belongs to
    phase: str | None = None
    #: seconds of the step's compute the overlapped share can hide behind (None: any of it). A data-parallel
    #: gradient sync under gradient accumulation waits for the last micro-batch, so it hides behind that
    #: micro-batch's backward pass only (issue 28, docs/evaluator.md "Strong scaling")
    overlap_window_s: float | None = None

    @property
    def bytes_per_step(self) -> float:
        """Bytes of this op per step (``bytes`` x ``count_per_step``)."""
        return float(self.bytes) * float(self.count_per_step)


@dataclass(frozen=True)
class ServingSpec:
    """The request structure of a serving (inference) job: what the request-level latency model needs
    (:mod:`fabric.evaluate.serving`, docs/serving.md).

    ``replicas`` serve decode (and prefill too when ``mode`` is "colocated"); "disaggregated" runs prefill on
    ``prefill_replicas`` replicas of their own and moves each request's KV cache to a decode replica
    (``kv_bytes_per_request``). A replica runs one prefill at a time (``prefill_s`` of compute per request) and
    decode iterations of up to ``decode_batch`` sequences (``decode_step_s`` of compute each). Requests arrive at
    the job's ``request_rate_per_s`` ("poisson", or "bursty": ``burst_factor`` x the mean rate for a share
    ``burst_fraction`` of the time, in bursts of ``burst_mean_s`` on average). ``ttft_slo_s`` and ``tpot_slo_s``
    are the time-to-first-token and time-per-output-token budgets (SLO attainment: the share of requests within
    both). Times in seconds, sizes in bytes.
    """

    prompt_tokens: int
    output_tokens: int
    decode_batch: int
    replicas: int
    prefill_s: float
    decode_step_s: float
    mode: str = "colocated"
    prefill_replicas: int | None = None
    kv_bytes_per_request: int = 0
    arrival: str = "poisson"
    burst_factor: float = 1.0
    burst_fraction: float = 0.0
    burst_mean_s: float = 1.0
    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None


@dataclass(frozen=True)
class Job:
    """A job sharing the fabric.

    Training: ``compute_time_s`` is the mean compute time of one step, ``compute_cv`` its coefficient of variation
    across steps and ranks (drives the straggler effect). Inference: a "step" is one request; ``request_rate_per_s``
    and ``latency_slo_s`` describe the service. Storage/checkpoint: ``burst_bytes`` written by the job's ranks every
    ``burst_period_s`` towards ``burst_target`` ("storage" or "peers").
    """

    name: str
    kind: str = "training"
    world_size: int = 1
    groups: tuple[ProcessGroup, ...] = ()
    ops: tuple[CommOp, ...] = ()
    compute_time_s: float = 0.0
    compute_cv: float = 0.0
    steps_observed: int = 0
    gpus_per_node_hint: int | None = None
    request_rate_per_s: float | None = None
    latency_slo_s: float | None = None
    burst_bytes: int | None = None
    burst_period_s: float | None = None
    burst_target: str | None = None
    notes: tuple[str, ...] = ()
    #: serving jobs: the request structure (None: the job's step is one request's critical path, no queueing)
    serving: ServingSpec | None = None
    #: the GPU the compute times were measured on (a trace) or synthesized for: a catalog GPU model ("h100-sxm"), or
    #: the device name a trace gives when no catalog row matches it; None: unknown. The evaluator scales compute to
    #: the design's GPU by their BF16 rates (:mod:`fabric.evaluate.gpu_compute`)
    compute_gpu: str | None = None
    #: the dense BF16 rate the compute was synthesized at (TFLOPS); None: the catalog row of ``compute_gpu``
    compute_gpu_tflops: float | None = None

    def group(self, name: str) -> ProcessGroup:
        """The process group called ``name``."""
        for g in self.groups:
            if g.name == name:
                return g
        raise WorkloadError(f"job {self.name!r}: no process group named {name!r}")

    @property
    def comm_bytes_per_step(self) -> float:
        """Total bytes of all ops per step of the job (nccl-tests size convention; a serving job's step is one
        request, its decode ops once per token step: :func:`step_ops`)."""
        return float(sum(op.bytes_per_step for op in step_ops(self)))


def step_ops(job: Job) -> list[CommOp]:
    """The job's ops with their counts per step of the job (:mod:`fabric.workload.accounting`): a serving job's decode ops run
    ``output_tokens - 1`` times per request, every other op as the workload counts it."""
    if job.serving is None:
        return list(job.ops)
    steps = max(job.serving.output_tokens - 1, 0)
    return [replace(op, count_per_step=op.count_per_step * steps) if op.phase == "decode" else op for op in job.ops]


@dataclass(frozen=True)
class UnparsedComm:
    """Communication seen in a trace that could not be turned into an op, with the reason. Never dropped silently."""

    source: str
    name: str
    count: int
    total_time_s: float
    reason: str


@dataclass(frozen=True)
class Measurement:
    """One measured point (nccl-tests row or a measured per-op CSV row), kept for calibration and display."""

    source: str
    kind: str
    bytes: int
    time_s: float
    ranks: int
    algbw_bytes_per_s: float | None = None
    busbw_bytes_per_s: float | None = None
    in_place: bool = False
    dtype: str = "unknown"


@dataclass(frozen=True)
class Workload:
    """Everything fabric knows about what will run on the fabric."""

    jobs: tuple[Job, ...]
    sources: tuple[str, ...] = ()
    unparsed: tuple[UnparsedComm, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    name: str = "workload"
    #: the job whose step time an evaluation reports (its headline p99); None: the largest training job. A job mix
    #: on one cluster is judged job by job through it (fabric.search.robust.job_mix_objective)
    primary: str | None = None

    def with_jobs(self, jobs) -> "Workload":
        """A copy with ``jobs`` replaced."""
        return replace(self, jobs=tuple(jobs))

    @property
    def training_jobs(self) -> tuple[Job, ...]:
        return tuple(j for j in self.jobs if j.kind == "training")


# ---------------------------------------------------------------- validation


def _fail(path: str, msg: str) -> None:
    raise WorkloadError(f"{path}: {msg}")


def _num(value: Any, path: str, *, lo: float | None = 0.0, hi: float | None = None, integer: bool = False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(path, f"expected a number, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        _fail(path, f"expected a finite number, got {value!r}")
    if integer and (isinstance(value, float) and not float(value).is_integer()):
        _fail(path, f"expected a whole number, got {value!r}")
    if lo is not None and value < lo:
        _fail(path, f"must be >= {lo:g}, got {value!r}")
    if hi is not None and value > hi:
        _fail(path, f"must be <= {hi:g}, got {value!r}")
    return int(value) if integer else float(value)


def _str(value: Any, path: str, *, choices=None) -> str:
    if not isinstance(value, str) or not value:
        _fail(path, f"expected a non-empty string, got {value!r}")
    if choices is not None and value not in choices:
        _fail(path, f"unknown value {value!r}; choose one of {', '.join(choices)}")
    return value


def _check_keys(d: dict, path: str, allowed: set[str], required: set[str]) -> None:
    if not isinstance(d, dict):
        _fail(path, f"expected an object, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        _fail(path, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    missing = sorted(required - set(d))
    if missing:
        _fail(path, f"missing required field(s) {', '.join(missing)}")


def validate_job(job: Job, path: str = "job") -> Job:
    """Check a job's internal consistency (groups exist, sizes fit the world, numbers in range); return it."""
    _str(job.name, f"{path}.name")
    _str(job.kind, f"{path}.kind", choices=JOB_KINDS)
    _num(job.world_size, f"{path}.world_size", lo=1, hi=MAX_RANKS, integer=True)
    names = set()
    for i, g in enumerate(job.groups):
        gp = f"{path}.groups[{i}]"
        _str(g.name, f"{gp}.name")
        if g.name in names:
            _fail(gp, f"duplicate process group name {g.name!r}")
        names.add(g.name)
        _num(g.size, f"{gp}.size", lo=1, hi=job.world_size, integer=True)
        _str(g.role, f"{gp}.role", choices=ROLES)
        if g.ranks is not None:
            if len(g.ranks) != g.size:
                _fail(gp, f"lists {len(g.ranks)} ranks but size is {g.size}")
            for r in g.ranks:
                _num(r, f"{gp}.ranks", lo=0, hi=job.world_size - 1, integer=True)
    for i, op in enumerate(job.ops):
        op_path = f"{path}.ops[{i}]"
        _str(op.kind, f"{op_path}.kind", choices=COLLECTIVE_KINDS)
        _num(op.bytes, f"{op_path}.bytes", lo=0, hi=MAX_OP_BYTES, integer=True)
        _num(op.count_per_step, f"{op_path}.count_per_step", lo=0, hi=MAX_COUNT_PER_STEP)
        _num(op.overlap_fraction, f"{op_path}.overlap_fraction", lo=0, hi=1)
        if op.overlap_window_s is not None:
            _num(op.overlap_window_s, f"{op_path}.overlap_window_s", lo=0, hi=1e6)
        if op.group not in names:
            _fail(op_path, f"group {op.group!r} is not one of the job's process groups ({', '.join(sorted(names)) or 'none'})")
        if op.per_rank_bytes is not None:
            for b in op.per_rank_bytes:
                _num(b, f"{op_path}.per_rank_bytes", lo=0, hi=MAX_OP_BYTES, integer=True)
    _num(job.compute_time_s, f"{path}.compute_time_s", lo=0, hi=1e6)
    _num(job.compute_cv, f"{path}.compute_cv", lo=0, hi=10)
    if job.compute_gpu is not None:
        _str(job.compute_gpu, f"{path}.compute_gpu")
    if job.compute_gpu_tflops is not None:
        _num(job.compute_gpu_tflops, f"{path}.compute_gpu_tflops", lo=1e-6, hi=1e6)
    if job.kind == "storage":
        if job.burst_bytes is None or job.burst_period_s is None:
            _fail(path, "a storage job needs burst_bytes and burst_period_s")
        _num(job.burst_bytes, f"{path}.burst_bytes", lo=1, hi=MAX_OP_BYTES, integer=True)
        _num(job.burst_period_s, f"{path}.burst_period_s", lo=1e-6, hi=1e9)
        _str(job.burst_target or "storage", f"{path}.burst_target", choices=("storage", "peers"))
    if job.kind == "inference":
        if job.request_rate_per_s is not None:
            _num(job.request_rate_per_s, f"{path}.request_rate_per_s", lo=0, hi=1e9)
        if job.latency_slo_s is not None:
            _num(job.latency_slo_s, f"{path}.latency_slo_s", lo=0, hi=1e6)
    if job.serving is not None:
        _validate_serving(job, path)
    elif any(op.phase is not None for op in job.ops):
        _fail(path, "ops carry a serving phase but the job has no 'serving' request structure")
    return job


def _validate_serving(job: Job, path: str) -> None:
    sp, p = job.serving, f"{path}.serving"
    if job.kind != "inference":
        _fail(f"{path}.kind", f"a job with a 'serving' request structure must be of kind 'inference', not {job.kind!r}")
    for f in ("prompt_tokens", "output_tokens", "decode_batch", "replicas"):
        _num(getattr(sp, f), f"{p}.{f}", lo=1, hi=MAX_RANKS, integer=True)
    for f in ("prefill_s", "decode_step_s"):
        _num(getattr(sp, f), f"{p}.{f}", lo=0, hi=1e6)
    _str(sp.mode, f"{p}.mode", choices=SERVING_MODES)
    if sp.mode == "disaggregated":
        if sp.prefill_replicas is None:
            _fail(p, "a disaggregated service needs prefill_replicas")
        _num(sp.prefill_replicas, f"{p}.prefill_replicas", lo=1, hi=MAX_RANKS, integer=True)
    elif sp.prefill_replicas is not None:
        _fail(f"{p}.prefill_replicas", "only a disaggregated service has a prefill pool of its own")
    _num(sp.kv_bytes_per_request, f"{p}.kv_bytes_per_request", lo=0, hi=MAX_OP_BYTES, integer=True)
    _str(sp.arrival, f"{p}.arrival", choices=ARRIVAL_PROCESSES)
    _num(sp.burst_factor, f"{p}.burst_factor", lo=1, hi=1e3)
    _num(sp.burst_fraction, f"{p}.burst_fraction", lo=0, hi=1)
    _num(sp.burst_mean_s, f"{p}.burst_mean_s", lo=1e-6, hi=1e6)
    if sp.arrival == "bursty" and sp.burst_factor * sp.burst_fraction > 1:
        _fail(p, f"burst_factor x burst_fraction must be <= 1 (the bursts cannot carry more than all requests), "
                 f"got {sp.burst_factor:g} x {sp.burst_fraction:g}")
    for f in ("ttft_slo_s", "tpot_slo_s"):
        if getattr(sp, f) is not None:
            _num(getattr(sp, f), f"{p}.{f}", lo=1e-9, hi=1e6)
    if not job.request_rate_per_s:
        _fail(f"{path}.request_rate_per_s", "a serving job needs a request rate > 0")
    for i, op in enumerate(job.ops):
        if op.phase is None:
            _fail(f"{path}.ops[{i}].phase", f"every op of a serving job needs a phase ({', '.join(SERVING_PHASES)})")
        _str(op.phase, f"{path}.ops[{i}].phase", choices=SERVING_PHASES)


def validate_workload(wl: Workload) -> Workload:
    """Validate every job; job names must be unique. Returns the workload."""
    if not wl.jobs:
        raise WorkloadError("workload has no jobs")
    seen = set()
    for i, job in enumerate(wl.jobs):
        validate_job(job, f"jobs[{i}]")
        if job.name in seen:
            _fail(f"jobs[{i}].name", f"duplicate job name {job.name!r}")
        seen.add(job.name)
    if wl.primary is not None and wl.primary not in {j.name for j in wl.jobs if j.kind != "storage"}:
        _fail("workload.primary", f"{wl.primary!r} is not a training or inference job of the workload "
                                  f"({', '.join(j.name for j in wl.jobs if j.kind != 'storage')})")
    return wl


# ---------------------------------------------------------------- (de)serialization

_GROUP_KEYS = {"name", "size", "role", "ranks", "rank_start", "rank_stride", "role_source"}
_OP_KEYS = {"kind", "bytes", "group", "count_per_step", "dtype", "overlap_fraction", "overlap_window_s",
            "per_rank_bytes", "name",
            "phase"}
_SERVING_KEYS = {f for f in ServingSpec.__dataclass_fields__}
_JOB_KEYS = {f for f in Job.__dataclass_fields__}
_WL_KEYS = {"schema", "name", "jobs", "sources", "unparsed", "measurements", "facts", "warnings", "primary"}


def _tuple_of_ints(v, path):
    if v is None:
        return None
    if not isinstance(v, list):
        _fail(path, f"expected a list of integers, got {type(v).__name__}")
    return tuple(_num(x, path, lo=0, integer=True) for x in v)


def _group_from_dict(d, path) -> ProcessGroup:
    _check_keys(d, path, _GROUP_KEYS, {"name", "size"})
    return ProcessGroup(
        name=_str(d["name"], f"{path}.name"),
        size=_num(d["size"], f"{path}.size", lo=1, hi=MAX_RANKS, integer=True),
        role=_str(d.get("role", "unknown"), f"{path}.role", choices=ROLES),
        ranks=_tuple_of_ints(d.get("ranks"), f"{path}.ranks"),
        rank_start=None if d.get("rank_start") is None else _num(d["rank_start"], f"{path}.rank_start", integer=True),
        rank_stride=None if d.get("rank_stride") is None else _num(d["rank_stride"], f"{path}.rank_stride", lo=1, integer=True),
        role_source=str(d.get("role_source", "default")),
    )


def _op_from_dict(d, path) -> CommOp:
    _check_keys(d, path, _OP_KEYS, {"kind", "bytes", "group"})
    return CommOp(
        kind=_str(d["kind"], f"{path}.kind", choices=COLLECTIVE_KINDS),
        bytes=_num(d["bytes"], f"{path}.bytes", lo=0, hi=MAX_OP_BYTES, integer=True),
        group=_str(d["group"], f"{path}.group"),
        count_per_step=_num(d.get("count_per_step", 1.0), f"{path}.count_per_step", lo=0, hi=MAX_COUNT_PER_STEP),
        dtype=str(d.get("dtype", "unknown")),
        overlap_fraction=_num(d.get("overlap_fraction", 0.0), f"{path}.overlap_fraction", lo=0, hi=1),
        per_rank_bytes=_tuple_of_ints(d.get("per_rank_bytes"), f"{path}.per_rank_bytes"),
        name=str(d.get("name", "")),
        phase=None if d.get("phase") is None else _str(d["phase"], f"{path}.phase", choices=SERVING_PHASES),
        overlap_window_s=None if d.get("overlap_window_s") is None else _num(d["overlap_window_s"],
                                                                            f"{path}.overlap_window_s", lo=0, hi=1e6),
    )


def _serving_from_dict(d, path) -> ServingSpec:
    _check_keys(d, path, _SERVING_KEYS, {"prompt_tokens", "output_tokens", "decode_batch", "replicas",
                                         "prefill_s", "decode_step_s"})
    kw = dict(d)
    for k in ("prompt_tokens", "output_tokens", "decode_batch", "replicas", "prefill_replicas",
              "kv_bytes_per_request"):
        if kw.get(k) is not None:
            kw[k] = _num(kw[k], f"{path}.{k}", lo=0, integer=True)
    for k in ("prefill_s", "decode_step_s", "burst_factor", "burst_fraction", "burst_mean_s", "ttft_slo_s",
              "tpot_slo_s"):
        if kw.get(k) is not None:
            kw[k] = _num(kw[k], f"{path}.{k}", lo=0)
    return ServingSpec(**kw)


def _job_from_dict(d, path) -> Job:
    _check_keys(d, path, _JOB_KEYS, {"name"})
    groups = d.get("groups", [])
    ops = d.get("ops", [])
    if not isinstance(groups, list):
        _fail(f"{path}.groups", "expected a list")
    if not isinstance(ops, list):
        _fail(f"{path}.ops", "expected a list")
    kw = {k: v for k, v in d.items() if k not in ("groups", "ops", "notes", "serving")}
    for k in ("world_size", "steps_observed", "gpus_per_node_hint", "burst_bytes"):
        if kw.get(k) is not None:
            kw[k] = _num(kw[k], f"{path}.{k}", lo=0, integer=True)
    for k in ("compute_time_s", "compute_cv", "request_rate_per_s", "latency_slo_s", "burst_period_s",
              "compute_gpu_tflops"):
        if kw.get(k) is not None:
            kw[k] = _num(kw[k], f"{path}.{k}", lo=0)
    job = Job(
        groups=tuple(_group_from_dict(g, f"{path}.groups[{i}]") for i, g in enumerate(groups)),
        ops=tuple(_op_from_dict(o, f"{path}.ops[{i}]") for i, o in enumerate(ops)),
        notes=tuple(str(n) for n in d.get("notes", ())),
        serving=None if d.get("serving") is None else _serving_from_dict(d["serving"], f"{path}.serving"),
        **kw,
    )
    return validate_job(job, path)


def workload_from_dict(d: dict) -> Workload:
    """Build and validate a :class:`Workload` from its native JSON dict; errors name the offending field."""
    _check_keys(d, "workload", _WL_KEYS, {"jobs"})
    schema = d.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        _fail("workload.schema", f"unsupported schema {schema!r}; expected {SCHEMA_VERSION!r}")
    if not isinstance(d["jobs"], list) or not d["jobs"]:
        _fail("workload.jobs", "expected a non-empty list of jobs")
    jobs = tuple(_job_from_dict(j, f"jobs[{i}]") for i, j in enumerate(d["jobs"]))
    unparsed = tuple(UnparsedComm(**u) for u in d.get("unparsed", []))
    measurements = tuple(Measurement(**m) for m in d.get("measurements", []))
    wl = Workload(
        jobs=jobs,
        sources=tuple(str(s) for s in d.get("sources", [])),
        unparsed=unparsed,
        measurements=measurements,
        facts=tuple((str(k), str(v)) for k, v in d.get("facts", [])),
        warnings=tuple(str(w) for w in d.get("warnings", [])),
        name=str(d.get("name", "workload")),
        primary=None if d.get("primary") is None else str(d["primary"]),
    )
    return validate_workload(wl)


def _clean(obj):
    if isinstance(obj, tuple):
        return [_clean(x) for x in obj]
    if isinstance(obj, list):
        return [_clean(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items() if v is not None}
    return obj


def workload_to_dict(wl: Workload) -> dict:
    """The native JSON dict of a workload (``None`` fields left out)."""
    d = _clean(asdict(wl))
    d["schema"] = SCHEMA_VERSION
    return d


def dump_workload_json(wl: Workload, *, indent: int | None = 2) -> str:
    """Serialize to the native JSON text."""
    return json.dumps(workload_to_dict(wl), indent=indent, sort_keys=False)


def workload_key(workload) -> str:
    """A stable key of a workload's content (or of a robust objective's: its workloads, weights, scenarios)."""
    import hashlib

    if hasattr(workload, "evaluate_record"):       # an objective of its own (robust, plans): its own key
        return workload.key()

    return hashlib.sha1(dump_workload_json(workload, indent=None).encode()).hexdigest()[:16]


def load_workload_json(text: str | bytes, source: str = "workload.json") -> Workload:
    """Parse native JSON text into a validated workload; errors name ``source`` and the field."""
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise WorkloadError(f"{source}: not valid JSON ({err})") from err
    if not isinstance(d, dict):
        raise WorkloadError(f"{source}: expected a JSON object at the top level")
    try:
        return workload_from_dict(d)
    except WorkloadError as err:
        raise WorkloadError(f"{source}: {err}") from err
    except TypeError as err:  # unknown keys in unparsed/measurements rows
        raise WorkloadError(f"{source}: malformed entry ({err})") from err

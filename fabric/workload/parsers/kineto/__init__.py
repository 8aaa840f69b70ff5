"""PyTorch profiler (Kineto) JSON traces -> a training (or inference) :class:`~fabric.workload.model.Job`.

What is read
------------
- Collective calls. NEW format (PyTorch >= 2.1): ``cpu_op`` ``record_param_comms`` with ``Collective name``,
  ``In msg nelems``/``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group Name`` (or ``... ID``),
  ``Process Group Ranks``, ``In split size``. OLD format: the ``nccl:<op>`` ``user_annotation`` with ``Input Dims``
  and ``Input type`` (the process group is not recorded: the world group is assumed). NCCL kernels whose CPU call
  is missing but whose args carry ``Collective name`` are read from the kernel args.
- Bytes follow the model's convention (see :mod:`fabric.workload.model`): all_gather = output bytes (old format:
  input x group size), reduce_scatter = input bytes, all_to_all(v) = total send bytes; ``recv`` calls are not
  counted (the matching ``send`` on the peer is).
- Steps: ``ProfilerStep#N`` windows (CPU side). A call belongs to the step whose window holds its CPU start;
  ``count_per_step`` = occurrences / steps. Calls outside every window are left out (with a warning).
- Collective kernels are told by name: NCCL's and RCCL's own (``nccl...``/``rccl...``, including the generic
  ``ncclDevKernel_Generic`` that names no collective) and RCCL's MSCCL ``mscclKernel_...``; every other kernel, on
  any stream (HIP or CUDA), is compute.
- Compute time of a step = ProfilerStep duration minus the *exposed transfer* time inside that ProfilerStep span:
  the part of the union of the collective kernels running inside the span (clipped to it, whichever step
  launched them: a rank whose CPU runs ahead of its GPU has one step's kernels spinning into the next span) not
  overlapped by compute kernels of any stream of the same device, where a kernel that waited for a late peer counts
  only its transfer part. So a step's compute is never below its compute kernels' busy time inside the span, nor
  above the span. A collective ends at about the same time on every member, so when ranks are merged the
  shortest kernel of one call over the traced ranks (the last rank to arrive) is its transfer and the rest of
  each rank's kernel is waiting (load imbalance or compute elsewhere, which a perfect network would not remove):
  that waiting stays in compute. With one rank (or calls that do not pair up, uneven all_to_allv sizes, send/recv)
  waiting cannot be told from transfer and the whole kernel counts as communication (a note says so). So compute +
  exposed transfer reproduces the measured step time; idle/CPU-bound gaps count as compute. The GPU's busy time
  (union of non-communication kernels) is reported in the job notes for comparison. ``compute_cv`` is the
  step-to-step spread within each rank, pooled over ranks (0 with a warning when each rank has one step: the
  rank-to-rank difference of one step is waiting and phase, not jitter).
- ``overlap_fraction`` of an op = share of its NCCL kernels' transfer time overlapped by compute kernels (any
  other stream of the same device), averaged over occurrences and ranks.
- No ``ProfilerStep#`` markers: the trace is treated as one request window (job kind "inference", counts per
  trace, compute = GPU activity span minus exposed NCCL time) and a warning says so.
- Never dropped silently: NCCL kernels with no annotation (size unknown), communication kernels not issued through
  NCCL (DeepEP dispatch/combine, ``multimem_all_reduce``, vLLM ``cross_device_reduce``, custom all-reduce ...),
  unknown collective names and unknown dtypes become :class:`~fabric.workload.model.UnparsedComm` with a reason.

Several rank files of one job
-----------------------------
:func:`parse_groups` puts files into jobs: files whose paths are equal once every run of digits is masked (e.g.
``worker#_step_#.#.pt.trace.json``) are rank files of one job. Within such a set every file must carry
``distributedInfo.rank``, the same ``world_size`` and distinct ranks, or the whole set fails with an error naming
the disagreement (no silent merge). The collectives of one process group are paired across ranks by position
(collectives on a communicator run in the same order on every member); per-rank sizes of all_to_allv are kept in
``per_rank_bytes`` (group-rank order) when every rank of the group is present. When ranks disagree on the
sequence (e.g. down-sampled traces) counts are averaged over ranks and a warning says so.

Process-group roles (``role_source="inferred"``)
------------------------------------------------
all_to_all(v) on a group -> "ep" (expert / embedding parallel), except a world-spanning group that also carries
other collectives -> "world"; send/recv only -> "pp"; a world-spanning group -> "dp"; a sub-group of contiguous
ranks (stride 1, e.g. Megatron tensor parallel; an FSDP/HSDP shard group looks the same and also lives inside a
node) -> "tp"; a strided sub-group (one rank per model-parallel slice) -> "dp"; otherwise "unknown". When the
members differ from rank to rank (one group per slice) the common stride is still used.

The package, by concern: :mod:`~fabric.workload.parsers.kineto.events` (one rank file's events and their
formats), :mod:`~fabric.workload.parsers.kineto.collectives` (collective names, data types, communication kernels),
:mod:`~fabric.workload.parsers.kineto.steps` (a rank read: its calls in step windows),
:mod:`~fabric.workload.parsers.kineto.compute` (compute, exposed communication, waiting versus transfer) and
:mod:`~fabric.workload.parsers.kineto.merge` (the rank files of one job merged); the entry points are here.
"""

from __future__ import annotations

import os

from fabric.errors import FabricError, ParseError
from fabric.limits import Limits
from fabric.workload.model import Workload
from fabric.workload.parsers.kineto.collectives import DTYPE_BYTES, collective_kind, dtype_info
from fabric.workload.parsers.kineto.events import FORMAT, MEASURED_STEP_FACT, RankTrace
from fabric.workload.parsers.kineto.merge import infer_group_role, job_key, job_name_for, merge_ranks
from fabric.workload.parsers.kineto.steps import load_rank

__all__ = [
    "FORMAT", "sniff", "parse", "parse_groups", "load_rank", "merge_ranks", "merge_rank_files", "RankTrace",
    "DTYPE_BYTES", "dtype_info", "collective_kind", "infer_group_role", "job_key", "job_name_for",
    "MEASURED_STEP_FACT",
]


def sniff(head: bytes, name: str) -> bool:
    """True for a JSON object that looks like a Chrome/Kineto trace (``traceEvents``, or Kineto's header keys)."""
    h = head.lstrip()
    if h.startswith(b"\xef\xbb\xbf"):
        h = h[3:].lstrip()
    if not h.startswith(b"{"):
        return False
    if b'"traceEvents"' in head:
        return True
    return b'"schemaVersion"' in head and (b'"deviceProperties"' in head or b'"distributedInfo"' in head)


def parse_groups(files: list[tuple[str, bytes]], limits: Limits | None = None) -> list[tuple[tuple[str, ...], object]]:
    """Parse Kineto files into jobs: [(file names of one job, Workload or the ParseError that stopped it)].

    Files are grouped by :func:`job_key`; a file that fails to load fails alone, a set that cannot be merged fails
    as a whole.
    """
    loaded: list[RankTrace] = []
    results: list[tuple[tuple[str, ...], object]] = []
    for name, data in files:
        try:
            loaded.append(load_rank(name, data, limits))
        except FabricError as err:
            results.append(((name,), err if isinstance(err, ParseError) else ParseError(str(err), source=name)))
    return results + merge_rank_files(loaded, "kineto")


def merge_rank_files(loaded: list[RankTrace], default_name: str, **merge_kw) -> list[tuple[tuple[str, ...], object]]:
    """Put loaded rank traces into jobs by :func:`job_key` and merge each: [(file names, Workload or ParseError)].

    Shared by the Kineto and PyTorch ET parsers; ``merge_kw`` goes to :func:`merge_ranks`.
    """
    results: list[tuple[tuple[str, ...], object]] = []
    by_key: dict[str, list[RankTrace]] = {}
    for tr in loaded:
        by_key.setdefault(job_key(tr.name), []).append(tr)
    for key in list(by_key):
        # the same rank twice under one pattern: maybe two runs in numbered folders (run1/, run2/) -> split by folder
        trs = by_key[key]
        ranks = [t.rank for t in trs]
        if len(set(ranks)) < len(ranks):
            by_dir: dict[str, list[RankTrace]] = {}
            for t in trs:
                by_dir.setdefault(os.path.dirname(t.name), []).append(t)
            if len(by_dir) > 1 and all(len({t.rank for t in v}) == len(v) for v in by_dir.values()):
                del by_key[key]
                for d, v in by_dir.items():
                    by_key[f"{key}\0{d}"] = v
    for key, trs in by_key.items():
        group_names = tuple(t.name for t in trs)
        try:
            results.append((group_names, merge_ranks(trs, job_name_for(list(group_names), default_name),
                                                     **merge_kw)))
        except FabricError as err:
            results.append((group_names, err if isinstance(err, ParseError) else ParseError(str(err))))
    return results


def parse(files: list[tuple[str, bytes]], limits: Limits | None = None) -> Workload:
    """Parse Kineto trace files (already decompressed) into a workload; raises the first ParseError."""
    from fabric.workload.ingest import parse_grouped

    return parse_grouped(parse_groups, files, limits, "Kineto")

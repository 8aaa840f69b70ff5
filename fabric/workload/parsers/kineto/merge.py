"""Kineto traces: the rank files of one job merged into one :class:`~fabric.workload.model.Job`: which files belong
together, the process groups and their inferred roles, collectives paired across ranks by position, counts per
step, per-rank sizes, overlap, the measured step and the compute per step."""

from __future__ import annotations

import math
import os
import re
import statistics

from fabric.errors import FabricError, ParseError
from fabric.workload.model import CommOp, Job, ProcessGroup, UnparsedComm, Workload, validate_job
from fabric.workload.parsers.kineto.compute import _assign_waits, _compute_gpu, _recompute_compute
from fabric.workload.parsers.kineto.events import MEASURED_STEP_FACT, RankTrace


def infer_group_role(size: int, world: int, kinds: set[str], ranks: tuple[int, ...] | None,
                     stride: int | None = None) -> str:
    """Parallelism role of a process group from what runs on it (rule in the module docstring).

    ``stride`` is the spacing of the group's global ranks (1: contiguous), taken from ``ranks`` when omitted.
    """
    a2a = bool(kinds & {"all_to_all", "all_to_allv"})
    others = kinds - {"all_to_all", "all_to_allv", "barrier"}
    if a2a:
        return "world" if (size == world and others) else "ep"
    if kinds and kinds <= {"send_recv", "barrier"} and "send_recv" in kinds:
        return "pp"
    if size <= 1:
        return "unknown"
    if size == world:
        return "dp"
    if stride is None and ranks and len(ranks) > 1:
        diffs = {b - a for a, b in zip(ranks, ranks[1:])}
        stride = diffs.pop() if len(diffs) == 1 else None
    if stride == 1:
        return "tp"
    if stride is not None and stride > 1:
        return "dp"
    return "unknown"


_DIGITS = re.compile(r"\d+")


_COMPRESS_EXT = re.compile(r"\.(gz|gzip)$", re.I)


def job_key(name: str) -> str:
    """The grouping key of a rank file: its path with every run of digits masked and .gz dropped.

    (Sets under one key that repeat a rank are split by folder when that makes each part consistent, so
    ``run1/rank0.json`` and ``run2/rank0.json`` become two jobs.)
    """
    return _DIGITS.sub("#", _COMPRESS_EXT.sub("", name))


def job_name_for(names: list[str], default: str = "job") -> str:
    """A readable job name from the file names of its ranks (common prefix of the base names)."""
    stems = []
    for n in names:
        b = os.path.basename(_COMPRESS_EXT.sub("", re.sub(r" \(\d+\)$", "", n)))
        for ext in (".json", ".pt.trace", ".trace", ".et"):
            if b.lower().endswith(ext):
                b = b[: -len(ext)]
        stems.append(b)
    if len(stems) == 1:
        s = stems[0]
    else:
        s = os.path.commonprefix(stems)
    s = s.strip(" ._-#")
    s = re.sub(r"[^A-Za-z0-9_.+-]+", "_", s).strip("_")
    if len(stems) > 1:
        s = re.sub(r"[._-]*(rank|worker|node|gpu)?[._-]*$", "", s, flags=re.I) or s
    return s[:80] or default


def _group_display_names(keys: list[str], info: dict[str, dict]) -> dict[str, str]:
    names: dict[str, str] = {}
    taken: set[str] = set()
    desc_count: dict[str, int] = {}
    for k in keys:
        d = info[k].get("desc")
        if d and d != "undefined":
            desc_count[d] = desc_count.get(d, 0) + 1
    for k in keys:
        d = info[k].get("desc")
        if k == "":
            cand = "world"
        elif d and d != "undefined" and desc_count.get(d) == 1:
            cand = d
        elif d and d != "undefined":
            cand = f"{d}:{k}"
        else:
            cand = f"pg{k}" if k[:1].isdigit() else k
        base, i = cand, 2
        while cand in taken:
            cand = f"{base}-{i}"
            i += 1
        taken.add(cand)
        names[k] = cand
    return names


def merge_ranks(traces: list[RankTrace], job_name: str, *, compute_note: str | None = None,
                trace_label: str = "Kineto", world_hint: str = "distributedInfo.world_size",
                compute_spread: str = "steps", rank_hint: str = "distributedInfo.rank",
                world_missing: str | None = None) -> Workload:
    """Merge the rank traces of one job into a one-job :class:`Workload` (see the module docstring).

    Also used by the Chakra and PyTorch ET parsers, which pass their own ``compute_note``, ``trace_label`` and
    ``world_hint`` (where the world size is read from), and ``world_missing`` (what to say when it is not there;
    default "<world_hint> not recorded"). ``compute_spread`` says what ``compute_cv`` measures: ``"steps"``
    (Kineto) the step-to-step spread within each rank, pooled over ranks; ``"ranks"`` the spread over every (rank,
    step) sample (Chakra, where a rank's compute is its own kernels' time and holds no waiting).
    """
    if not traces:
        raise ParseError("no Kineto trace to merge")
    names = [t.name for t in traces]
    if len(traces) > 1:
        _check_consistent(traces, rank_hint)
    traces = sorted(traces, key=lambda t: (t.rank if t.rank is not None else -1, t.name))
    warnings: list[str] = [w for t in traces for w in t.warnings]
    notes: list[str] = []
    world = next((t.world_size for t in traces if t.world_size), None)
    max_group = 0
    for t in traces:
        for c in t.calls:
            if c.group_size:
                max_group = max(max_group, c.group_size)
        for pg in t.pg_config.values():
            if pg.get("size"):
                max_group = max(max_group, pg["size"])
    if world is None:
        ranks_seen = [t.rank for t in traces if t.rank is not None]
        world = max([len(traces), max_group, (max(ranks_seen) + 1) if ranks_seen else 1])
        warnings.append(f"{names[0]}: {world_missing or world_hint + ' not recorded'}: world size assumed {world} "
                        f"(from the rank files and group sizes given)")
    elif max_group > world:
        raise ParseError(f"a process group of {max_group} ranks is larger than world_size {world}",
                         source=names[0], line=world_hint)
    old_format = any(c.group == "" for t in traces for c in t.calls)
    if old_format:
        notes.append(f"{trace_label} trace without process-group information: those collectives are put on the "
                     f"world group")

    # -- process groups
    info: dict[str, dict] = {}
    for t in traces:
        for c in t.calls:
            if c.kind in ("", "recv"):
                continue
            g = info.setdefault(c.group, {"size": None, "ranks": {}, "desc": None, "kinds": set()})
            g["kinds"].add(c.kind)
            if c.group == "":
                g["size"] = world
            size = c.group_size or (t.pg_config.get(c.group) or {}).get("size")
            if size and not g["size"]:
                g["size"] = size
            ranks = c.group_ranks or (t.pg_config.get(c.group) or {}).get("ranks")
            if ranks:
                g["ranks"][ranks] = g["ranks"].get(ranks, 0) + 1
            d = c.group_desc or (t.pg_config.get(c.group) or {}).get("desc")
            if d and not g["desc"]:
                g["desc"] = d
    keys = sorted(info)
    disp = _group_display_names(keys, info)
    groups: list[ProcessGroup] = []
    group_ranks: dict[str, tuple[int, ...] | None] = {}
    for k in keys:
        g = info[k]
        if not g["size"]:
            notes.append(f"size of group {disp[k]!r} not recorded in the trace: assumed the world size ({world})")
        size = g["size"] or world
        if size > world:
            raise ParseError(f"process group {disp[k]!r} has {size} ranks, more than world_size {world}",
                             source=names[0], line="Group size")
        ranks = None
        if k == "" or (size == world and not g["ranks"]):
            ranks = tuple(range(world))
        elif len(g["ranks"]) == 1:
            ranks = next(iter(g["ranks"]))
            if len(ranks) != size or any(r >= world for r in ranks):
                ranks = None
        elif len(g["ranks"]) > 1:
            notes.append(f"group {disp[k]!r} has different members on different ranks (one group per slice): "
                         f"ranks not listed")
        group_ranks[k] = ranks
        strides = set()
        for rl in ([ranks] if ranks else list(g["ranks"])):
            if len(rl) > 1:
                diffs = {b - a for a, b in zip(rl, rl[1:])}
                strides.add(diffs.pop() if len(diffs) == 1 else None)
        stride = strides.pop() if len(strides) == 1 else None
        role = infer_group_role(size, world, g["kinds"], ranks, stride)
        strided = bool(ranks) and (len(ranks) == 1 or (stride is not None and stride >= 1))
        groups.append(ProcessGroup(
            name=disp[k], size=size, role=role, ranks=None if strided else ranks,
            rank_start=ranks[0] if strided else None,
            rank_stride=(stride or 1) if strided else (stride if stride and stride >= 1 else None),
            role_source="inferred"))

    # -- ops: pair calls across ranks by position within each group
    steps_by_rank = {id(t): max(len(t.steps), 1) for t in traces}
    agg: dict[tuple, list] = {}
    order: list[tuple] = []

    def add(key, weight, ov, label):
        rec = agg.get(key)
        if rec is None:
            rec = agg[key] = [0.0, 0.0, 0.0, label]
            order.append(key)
        rec[0] += weight
        if ov is not None:
            rec[1] += ov * weight
            rec[2] += weight

    for t in traces:
        for c in t.calls:
            if c.per_rank_input and c.nbytes is not None and c.kind not in ("", "recv"):
                c.nbytes *= info[c.group]["size"] or 1
                c.per_rank_input = False

    recv_calls = 0
    wait_pairs = 0
    partial_wait_groups: set[str] = set()
    for k in keys:
        seqs = []
        for t in traces:
            seq = [c for c in t.calls if c.group == k and c.kind not in ("", "recv")]
            if seq:
                seqs.append((t, seq))
        aligned = (
            len(seqs) > 1
            and len({len(s) for _, s in seqs}) == 1
            and len({steps_by_rank[id(t)] for t, _ in seqs}) == 1
            and all(len({s[i].kind for _, s in seqs}) == 1 for i in range(len(seqs[0][1])))
        )
        granks = group_ranks.get(k)
        full = False
        pos_of_rank: dict[int, int] = {}
        if granks is not None:
            pos_of_rank = {r: i for i, r in enumerate(granks)}
            present = {t.rank for t, _ in seqs}
            full = present >= set(granks) and len(seqs) == len(granks)
        if aligned:
            steps = steps_by_rank[id(seqs[0][0])]
            for i in range(len(seqs[0][1])):
                cs = [(t, s[i]) for t, s in seqs]
                if _assign_waits(cs):
                    wait_pairs += 1
                    if not full:
                        partial_wait_groups.add(k)
                kind = cs[0][1].kind
                by = [c.nbytes for _, c in cs]
                uneven = any(c.uneven for _, c in cs) or len(set(by)) > 1
                per_rank = None
                if kind in ("all_to_all", "all_to_allv") and uneven:
                    kind = "all_to_allv"
                    if full:
                        arr = [0] * len(granks)
                        for t, c in cs:
                            arr[pos_of_rank[t.rank]] = c.nbytes
                        per_rank = tuple(arr)
                    else:
                        note = (f"per-rank sizes of all_to_allv on group {disp[k]!r} are known for only "
                                f"{len(cs)} rank(s) of the group: the largest is used")
                        if note not in notes:
                            notes.append(note)
                elif len(set(by)) > 1:
                    warnings.append(f"{names[0]}: ranks disagree on the size of {cs[0][1].coll} #{i} on group "
                                    f"{disp[k]!r} ({min(by)}..{max(by)} B); the largest is used")
                ovs = [c.overlap_us / c.kernel_us for _, c in cs if c.kernel_us > 0]
                ov = sum(ovs) / len(ovs) if ovs else None
                key = (kind, k, max(by), cs[0][1].dtype, per_rank)
                add(key, 1.0 / steps, ov, cs[0][1].coll)
        else:
            if len(seqs) > 1:
                lens = ", ".join(f"rank {t.rank}: {len(s)}" for t, s in seqs)
                warnings.append(f"{names[0]}: ranks disagree on the sequence of collectives on group {disp[k]!r} "
                                f"({lens}); counts are averaged over ranks and per-rank sizes are not paired")
            denom = sum(steps_by_rank[id(t)] for t, _ in seqs)
            for t, seq in seqs:
                for c in seq:
                    ov = c.overlap_us / c.kernel_us if c.kernel_us > 0 else None
                    add((c.kind, k, c.nbytes, c.dtype, None), 1.0 / denom, ov, c.coll)
    for t in traces:
        recv_calls += sum(1 for c in t.calls if c.kind == "recv")
    if recv_calls:
        notes.append(f"{recv_calls} recv call(s) not counted: each is the other half of a counted send")

    ops = []
    for key in order:
        kind, k, nbytes, dtype, per_rank = key
        weight, ov_sum, ov_w, label = agg[key]
        ov = min(max(ov_sum / ov_w, 0.0), 1.0) if ov_w > 0 else 0.0
        ops.append(CommOp(kind=kind, bytes=int(nbytes), group=disp[k], count_per_step=_round_count(weight),
                          dtype=dtype, overlap_fraction=round(ov, 6), per_rank_bytes=per_rank, name=label))

    unparsed: list[UnparsedComm] = [u for t in traces for u in t.unparsed]
    for t in traces:
        bad: dict[tuple[str, str], int] = {}
        for c in t.calls:
            if c.kind == "" and c.reason:
                bad[(c.coll, c.reason)] = bad.get((c.coll, c.reason), 0) + 1
        for (coll, reason), n in sorted(bad.items()):
            tus = sum(c.kernel_us for c in t.calls if c.kind == "" and c.coll == coll and c.reason == reason)
            unparsed.append(UnparsedComm(source=t.name, name=coll, count=n, total_time_s=tus * 1e-6, reason=reason))

    waited_us = [sum(c.wait_us for c in t.calls) / max(len(t.window_len_us), 1) for t in traces
                 if t.window_len_us]
    for t in traces:
        _recompute_compute(t)
    samples = [x * 1e-6 for t in traces for x in t.compute_us]
    compute = statistics.fmean(samples) if samples else 0.0
    has_steps = all(t.steps for t in traces)
    if compute_spread == "ranks":
        cv = (statistics.pstdev(samples) / compute) if len(samples) > 1 and compute > 0 else 0.0
    else:
        per_rank = [[x * 1e-6 for x in t.compute_us] for t in traces if len(t.compute_us) > 1]
        n_dev = sum(len(p) for p in per_rank)
        ss = sum((x - statistics.fmean(p)) ** 2 for p in per_rank for x in p)
        cv = math.sqrt(ss / n_dev) / compute if n_dev and compute > 0 else 0.0
        if samples and not per_rank:
            msg = (f"one {'ProfilerStep' if has_steps else 'window'} per rank: the step-to-step spread of compute "
                   f"cannot be measured, so compute_cv is 0 (the rank-to-rank difference of one step is mostly "
                   f"waiting and phase, not compute jitter); set compute_cv by hand if it is known")
            if has_steps:
                warnings.append(f"{names[0]}: {msg}")
            else:
                notes.append(msg)
    if not has_steps and any(t.steps for t in traces):
        raise ParseError("some rank files have ProfilerStep markers and others do not; profile every rank the same "
                         "way", source=names[0])
    steps_obs = min(len(t.steps) for t in traces)
    if has_steps and len({len(t.steps) for t in traces}) > 1:
        warnings.append(f"{names[0]}: rank files hold different numbers of ProfilerSteps "
                        f"({sorted({len(t.steps) for t in traces})}); counts are per step of each rank")
    if compute_note:
        notes.append(compute_note)
    elif has_steps:
        notes.append("compute_time_s = ProfilerStep duration minus the exposed transfer part of the NCCL kernels "
                     "(time spent waiting for the slowest peer counts as compute), mean over steps and ranks; "
                     "compute_cv = step-to-step spread within each rank")
    if wait_pairs and any(w > 0 for w in waited_us):
        notes.append(f"NCCL kernels waited for peers {statistics.fmean(waited_us) * 1e-3:.3f} ms per step per rank "
                     f"on average ({wait_pairs} collective(s) paired across ranks; wait = kernel time beyond the "
                     f"shortest kernel of the same call on any traced rank): counted as compute, not communication")
        if partial_wait_groups:
            notes.append("not every rank of group(s) " + ", ".join(sorted(disp[k] for k in partial_wait_groups))
                         + " is traced: the last rank to arrive may be missing, so waiting may be under-counted")
    elif trace_label == "Kineto" and any(t.window_len_us for t in traces) and not wait_pairs:
        notes.append("waiting for peers cannot be told apart from transfer with one rank (or ranks whose "
                     "collectives do not pair up): the whole NCCL kernel time is treated as communication; upload "
                     "every rank's trace to count the waiting as compute")
    if has_steps:
        window = sum(t.window_us for t in traces)
        busy = sum(t.busy_us for t in traces)
        if window > 0:
            notes.append(f"GPU compute-kernel busy time: {busy / window:.1%} of the step time "
                         f"({busy / max(sum(len(t.steps) for t in traces), 1) * 1e-3:.3f} ms per step)")
    elif not compute_note:
        notes.append("no ProfilerStep markers: one request window per trace; compute_time_s = GPU activity span "
                     "minus exposed NCCL time")
    if groups:
        notes.append("process-group roles inferred from the collectives they carry: "
                     + ", ".join(f"{g.name}={g.role}" for g in groups))
    ranks_present = sorted(t.rank for t in traces if t.rank is not None)
    if len(traces) > 1 or (world and world > 1):
        notes.append(f"ranks traced: {_ranges(ranks_present) or 'unknown'} of world size {world}")
    gpu = _compute_gpu(traces, notes)
    job = Job(
        name=job_name, kind="training" if has_steps else "inference", world_size=world, groups=tuple(groups),
        ops=tuple(ops), compute_time_s=compute, compute_cv=min(cv, 10.0), steps_observed=steps_obs if has_steps else 0,
        notes=tuple(notes), compute_gpu=gpu)
    try:
        validate_job(job, f"job {job_name!r}")
    except FabricError as err:
        raise ParseError(f"the trace does not make a valid job: {err}", source=names[0]) from err
    facts = [(f"{trace_label} ranks", _ranges(ranks_present) or "unknown"), (f"{trace_label} world size", str(world))]
    if traces[0].backend:
        facts.append(("distributed backend", traces[0].backend))
    if has_steps:       # what a rollout check compares with the evaluator's prediction (fabric.calibrate.rollout)
        durations = [(s1 - s0) * 1e-6 for t in traces for s0, s1 in t.steps]
        facts.append((MEASURED_STEP_FACT, f"{statistics.fmean(durations):.9g}"))
    return Workload(jobs=(job,), sources=tuple(names), unparsed=tuple(unparsed), warnings=tuple(warnings),
                    facts=tuple(facts), name=job_name)


def _round_count(x: float) -> float:
    r = round(x)
    return float(r) if abs(x - r) < 1e-9 else round(x, 9)


def _ranges(xs: list[int]) -> str:
    if not xs:
        return ""
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ",".join(out)


def _check_consistent(traces: list[RankTrace], rank_hint: str = "distributedInfo.rank") -> None:
    """Raise ParseError when files that look like one job's ranks cannot be merged."""
    names = ", ".join(t.name for t in traces)
    missing = [t.name for t in traces if t.rank is None]
    if missing:
        raise ParseError(f"cannot merge rank files ({names}): {missing[0]} does not say its rank ({rank_hint}); "
                         f"upload it on its own or fix it", source=missing[0], line=rank_hint)
    worlds = {t.world_size for t in traces}
    if len(worlds) > 1:
        detail = ", ".join(f"{t.name}: {t.world_size}" for t in traces)
        raise ParseError(f"these files look like rank files of one job (same name pattern) but disagree on "
                         f"world_size ({detail}); they come from different jobs: upload them separately or "
                         f"rename them", source=traces[0].name, line="distributedInfo.world_size")
    seen: dict[int, str] = {}
    for t in traces:
        if t.rank in seen:
            raise ParseError(f"{seen[t.rank]} and {t.name} both claim rank {t.rank}: they belong to different "
                             f"jobs or are duplicates; upload one job's rank files at a time",
                             source=t.name, line="distributedInfo.rank")
        seen[t.rank] = t.name
    backends = {t.backend for t in traces if t.backend}
    if len(backends) > 1:
        raise ParseError(f"rank files disagree on the distributed backend ({', '.join(sorted(backends))})",
                         source=traces[0].name, line="distributedInfo.backend")
    # the world-spanning process group must be described the same way by every rank that records it
    sigs = {}
    for t in traces:
        for key, pg in t.pg_config.items():
            if pg.get("size") == t.world_size:
                sigs.setdefault(key, set()).add((pg.get("size"), pg.get("ranks")))
    for key, s in sigs.items():
        if len(s) > 1:
            raise ParseError(f"rank files disagree on the members of process group {key!r}; they come from "
                             f"different jobs", source=traces[0].name, line="distributedInfo.pg_config")

"""Parser for ASTRA-sim 1.0 text workloads and their SimAI/AICB dialect.

Format (ASTRA-sim examples/text_converter/text_workloads/README; SimAI astra-sim-alibabacloud Workload.cc):

- line 1: the parallelism policy and options: ``DATA``, ``MICRO``, ``MODEL``, ``HYBRID_TRANSFORMER
  model_parallel_NPU_group: N``, ``HYBRID_DLRM [N]``, ``HYBRID_DATA_MODEL``, ``HYBRID_MODEL_DATA``,
  ``HYBRID_CUSTOMIZED``, ``DISTRIBUTED_INFERENCE`` and SimAI's ``HYBRID_TRANSFORMER_FWD_IN_BCKWD
  model_parallel_NPU_group: N ep: N pp: N vpp: N ga: N all_gpus: N checkpoints: N checkpoint_initiates: N
  [pp_comm BYTES]``;
- line 2: the number of layer lines;
- one line per layer, 12 whitespace-separated fields: ``name reserved fwd_compute fwd_comm fwd_bytes ig_compute
  ig_comm ig_bytes wg_compute wg_comm wg_bytes update_delay`` (HYBRID_CUSTOMIZED adds the layer's own policy).

Groups follow the simulators' rules. HYBRID_TRANSFORMER(_FWD_IN_BCKWD): a bare fwd/ig comm type runs in the
model-parallel (TP) group of ``model_parallel_NPU_group`` ranks, a bare wg type in the data-parallel group
(``all_gpus / (tp x pp)`` ranks); ``*_EP`` types in the EP group (``ep`` ranks) and ``*_DP_EP`` in the
expert-data-parallel group (``dp / ep`` ranks), as SimAI's Workload.cc and Layer.cc do. DATA, MICRO and HYBRID_DLRM
put every collective on all ranks; MODEL and DISTRIBUTED_INFERENCE put fwd/ig on all ranks;
HYBRID_DATA_MODEL/HYBRID_MODEL_DATA split the ranks into a model group and a data group of sizes the file does not
state (pass ``model_parallel_size``). ``pp_comm`` becomes a PP send/recv of that many bytes, twice (activations
forward, gradients backward) per micro-batch (``ga``).

Units: communication sizes are bytes. Compute fields are clock ticks: ASTRA-sim's README calls them cycles, and
both ASTRA-sim 1.0 and SimAI run their event queue in ticks of ``CLOCK_PERIOD`` = 1 ns (``Common.hh``: CLOCK_PERIOD
1, FREQ 1000 ticks per microsecond; SimAI's ns-3 frontend schedules ``NanoSeconds(delta)``). So the default clock is
1 GHz (one cycle = 1 ns); override ``clock_hz`` for an ASTRA-sim 1.0 workload written for another clock.
A file names no world size unless it has ``all_gpus``; otherwise pass ``world_size`` or a default is assumed and a
warning says so. Zero-byte collectives are skipped (counted in the facts). Identical (layer, phase, kind, bytes,
group) entries are merged into one op whose count is the number of occurrences.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePath

from fabric.errors import ParseError
from fabric.workload.model import MAX_OP_BYTES, MAX_RANKS, CommOp, Job, ProcessGroup, UnparsedComm, Workload
from fabric.workload.parsers import nccl_tests

__all__ = ["FORMAT", "POLICIES", "DEFAULT_CLOCK_HZ", "DEFAULT_WORLD_SIZE", "sniff", "parse", "AstraHeader",
           "parse_header"]

FORMAT = "astra_text"

#: Parallelism policies of ASTRA-sim 1.0 / SimAI (Workload::decode_parallelsim).
POLICIES = (
    "DATA", "HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM", "HYBRID_DLRM_ENHANCED",
    "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_CUSTOMIZED", "MICRO", "DISTRIBUTED_INFERENCE",
)
#: One tick = 1 ns in ASTRA-sim 1.0 and SimAI (CLOCK_PERIOD 1 in Common.hh).
DEFAULT_CLOCK_HZ = 1e9
#: World size assumed when the file does not state one and the caller gives none (shown as a warning).
DEFAULT_WORLD_SIZE = 16

_COMM_BASE = {"ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather", "REDUCESCATTER": "reduce_scatter",
              "ALLTOALL": "all_to_all", "BROADCAST": "broadcast"}
_NOT_MODELLED = ("ALLREDUCEALLTOALL",)
#: Policies whose collectives span every rank (Workload::decode_involved_dimensions).
_ALL_RANK_POLICIES = ("DATA", "MICRO", "HYBRID_DLRM", "HYBRID_DLRM_ENHANCED", "MODEL", "DISTRIBUTED_INFERENCE")
_INT_KEYS = ("model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "all_gpus", "pp_comm", "checkpoints",
             "checkpoint_initiates", "DLRM_LAST_BOTTOM_LAYER")


@dataclass(frozen=True)
class AstraHeader:
    """The first line of a workload: policy and its numeric options (absent ones are ``None``)."""

    policy: str
    options: dict

    def get(self, key: str) -> int | None:
        return self.options.get(key)

    @property
    def simai(self) -> bool:
        """True for SimAI/AICB's dialect (it adds ep/pp/vpp/ga/all_gpus/pp_comm)."""
        return any(k in self.options for k in ("ep", "pp", "vpp", "ga", "all_gpus", "pp_comm"))


def _tokens(line: str) -> list[str]:
    return line.split()


def parse_header(line: str, source: str = "<text>", lineno: int = 1) -> AstraHeader:
    """Parse line 1 (policy and ``key: value`` options); ParseError on an unknown policy or a non-numeric value."""
    toks = _tokens(line)
    if not toks:
        raise ParseError("empty first line; expected a parallelism policy such as DATA or HYBRID_TRANSFORMER",
                         source=source, line=lineno)
    policy = toks[0]
    if policy not in POLICIES:
        raise ParseError(f"unknown parallelism policy {policy!r}; expected one of {', '.join(POLICIES)}",
                         source=source, line=lineno)
    opts: dict[str, int] = {}
    i = 1
    while i < len(toks):
        key = toks[i].rstrip(":")
        if key in _INT_KEYS and i + 1 < len(toks):
            val = toks[i + 1]
            if not re.fullmatch(r"\d+", val):
                raise ParseError(f"option {key} = {val!r} is not a whole number", source=source, line=lineno)
            opts[key] = int(val)
            i += 2
            if key in ("checkpoints", "checkpoint_initiates"):
                i += opts[key]          # followed by that many layer indices
            continue
        if policy.startswith("HYBRID_DLRM") and i == 1 and re.fullmatch(r"\d+", toks[i]):
            opts["DLRM_LAST_BOTTOM_LAYER"] = int(toks[i])     # ASTRA-sim 1.0 writes the bare number
            i += 1
            continue
        raise ParseError(f"unexpected token {toks[i]!r} in the header", source=source, line=lineno)
    return AstraHeader(policy=policy, options=opts)


def _comm(token: str, phase: str, source: str, line: int) -> tuple[str | None, str]:
    """(fabric kind or None for NONE, group key) of a comm-type token of a phase (fwd/ig/wg)."""
    if token == "NONE":
        return None, ""
    if token.startswith(_NOT_MODELLED):
        return "unmodelled", token
    for base in sorted(_COMM_BASE, key=len, reverse=True):
        if token.startswith(base):
            suffix = token[len(base):]
            if suffix == "":
                return _COMM_BASE[base], ("dp" if phase == "wg" else "mp")
            if suffix == "_EP":
                return _COMM_BASE[base], "ep"
            if suffix == "_DP_EP":
                return _COMM_BASE[base], "dp_ep"
            break
    raise ParseError(f"unknown communication type {token!r} in the {phase} field; expected NONE, ALLREDUCE, "
                     "ALLGATHER, REDUCESCATTER, ALLTOALL or BROADCAST, optionally with _EP or _DP_EP",
                     source=source, line=line)


def _uint(tok: str, what: str, source: str, line: int, *, allow_negative: bool = False) -> int:
    if not re.fullmatch(r"-?\d+" if allow_negative else r"\d+", tok):
        raise ParseError(f"{what} {tok!r} is not a whole number", source=source, line=line)
    return int(tok)


@dataclass
class _Sizes:
    world: int
    mp: int
    dp: int
    ep: int
    dp_ep: int
    pp: int


def _sizes(h: AstraHeader, source: str, world_size: int | None, model_parallel_size: int | None,
           warnings: list[str]) -> _Sizes:
    mp = h.get("model_parallel_NPU_group")
    if h.policy in ("HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA") and mp is None:
        mp = model_parallel_size
        if mp is None:
            mp = min(8, world_size or DEFAULT_WORLD_SIZE)
            warnings.append(f"{source}: {h.policy} does not state the model-parallel group size; assumed {mp} "
                            "(pass model_parallel_size)")
    mp = mp or 1
    pp = h.get("pp") or 1
    world = h.get("all_gpus") or world_size
    if world is None:
        world = max(DEFAULT_WORLD_SIZE, mp * pp)
        world = int(math.ceil(world / (mp * pp)) * mp * pp)
        warnings.append(f"{source}: the file does not state the world size; assumed {world} ranks "
                        "(pass world_size)")
    if world_size is not None and h.get("all_gpus") is not None and world_size != h.get("all_gpus"):
        warnings.append(f"{source}: all_gpus {h.get('all_gpus')} in the file overrides world_size {world_size}")
    if not 0 < world <= MAX_RANKS:
        raise ParseError(f"world size {world} is out of range", source=source, line=1)
    if mp < 1 or world % (mp * pp) != 0:
        raise ParseError(f"all_gpus/world size {world} is not a multiple of model_parallel_NPU_group x pp "
                         f"= {mp} x {pp}", source=source, line=1)
    dp = world // (mp * pp)
    ep = h.get("ep") or 1
    if dp % ep != 0:
        raise ParseError(f"ep {ep} does not divide the data-parallel size {dp} (= all_gpus / (tp x pp))",
                         source=source, line=1)
    return _Sizes(world=world, mp=mp, dp=dp, ep=ep, dp_ep=dp // ep, pp=pp)


def _groups(h: AstraHeader, s: _Sizes) -> dict[str, ProcessGroup]:
    """Group key -> ProcessGroup, ranks laid out Megatron-style (TP fastest, then DP with EP inside it, then PP)."""
    p = h.policy
    if p in _ALL_RANK_POLICIES:
        role = {"DATA": "dp", "MODEL": "tp", "DISTRIBUTED_INFERENCE": "tp"}.get(p, "world")
        g = ProcessGroup(name="world", size=s.world, role=role, rank_start=0, rank_stride=1, role_source="inferred")
        return {"mp": g, "dp": g, "ep": g, "dp_ep": g, "world": g}
    groups = {
        "world": ProcessGroup(name="world", size=s.world, role="world", rank_start=0, rank_stride=1,
                              role_source="inferred"),
        "mp": ProcessGroup(name="tp", size=s.mp, role="tp", rank_start=0, rank_stride=1, role_source="inferred"),
        "dp": ProcessGroup(name="dp", size=s.dp, role="dp", rank_start=0, rank_stride=s.mp,
                           role_source="inferred"),
        "ep": ProcessGroup(name="ep", size=s.ep, role="ep", rank_start=0, rank_stride=s.mp, role_source="inferred"),
        "dp_ep": ProcessGroup(name="dp_ep", size=s.dp_ep, role="dp", rank_start=0, rank_stride=s.mp * s.ep,
                              role_source="inferred"),
        "pp": ProcessGroup(name="pp", size=s.pp, role="pp", rank_start=0, rank_stride=s.mp * s.dp,
                           role_source="inferred"),
    }
    if p == "HYBRID_MODEL_DATA":
        groups["mp"], groups["dp"] = (
            ProcessGroup(name="tp", size=s.mp, role="tp", rank_start=0, rank_stride=s.dp, role_source="inferred"),
            ProcessGroup(name="dp", size=s.dp, role="dp", rank_start=0, rank_stride=1, role_source="inferred"))
    return groups


def _parse_one(fname: str, text: str, jname: str, clock_hz: float, world_size: int | None,
               model_parallel_size: int | None, wg_overlap_fraction: float):
    warnings: list[str] = []
    lines = text.splitlines()
    idx = [i for i, ln in enumerate(lines) if ln.strip()]
    if not idx:
        raise ParseError("empty file; expected an ASTRA-sim text workload", source=fname)
    h = parse_header(lines[idx[0]], fname, idx[0] + 1)
    if len(idx) < 2:
        raise ParseError("missing line 2 (the number of layers)", source=fname, line=idx[0] + 2)
    n_line = idx[1] + 1
    declared = _uint(lines[idx[1]].strip().split()[0] if lines[idx[1]].split() else "", "layer count", fname, n_line)
    if len(lines[idx[1]].split()) != 1:
        raise ParseError("line 2 must hold only the number of layers", source=fname, line=n_line)
    layer_idx = idx[2:]
    if len(layer_idx) < declared:
        last = layer_idx[-1] + 1 if layer_idx else n_line
        raise ParseError(f"line 2 declares {declared} layers but the file has only {len(layer_idx)} layer lines "
                         "(truncated?)", source=fname, line=last)
    if len(layer_idx) > declared:
        raise ParseError(f"line 2 declares {declared} layers but more lines follow", source=fname,
                         line=layer_idx[declared] + 1)
    sizes = _sizes(h, fname, world_size, model_parallel_size, warnings)
    groups = _groups(h, sizes)
    n_fields = 13 if h.policy == "HYBRID_CUSTOMIZED" else 12
    agg: dict[tuple, float] = {}
    order: list[tuple] = []
    used: set[str] = set()
    ticks = 0
    zero_bytes = 0
    type_counts: Counter = Counter()
    unparsed: Counter = Counter()
    for i in layer_idx:
        lineno = i + 1
        toks = _tokens(lines[i])
        if len(toks) != n_fields:
            raise ParseError(f"layer line has {len(toks)} fields; expected {n_fields} (name reserved fwd_compute "
                             "fwd_comm fwd_bytes ig_compute ig_comm ig_bytes wg_compute wg_comm wg_bytes "
                             "update_delay)", source=fname, line=lineno)
        name = toks[0]
        _uint(toks[1], "reserved field", fname, lineno, allow_negative=True)
        if h.policy == "HYBRID_CUSTOMIZED" and toks[12] not in POLICIES:
            raise ParseError(f"layer policy {toks[12]!r} is not one of {', '.join(POLICIES)}", source=fname,
                             line=lineno)
        for phase, (c, t, b) in (("fwd", (2, 3, 4)), ("ig", (5, 6, 7)), ("wg", (8, 9, 10))):
            comp = _uint(toks[c], f"{phase} compute time", fname, lineno)
            nbytes = _uint(toks[b], f"{phase} communication size", fname, lineno)
            if comp > 10 ** 15 or nbytes > MAX_OP_BYTES:
                raise ParseError(f"{phase} value out of range", source=fname, line=lineno)
            ticks += comp
            kind, gkey = _comm(toks[t], phase, fname, lineno)
            if kind is None:
                continue
            type_counts[toks[t]] += 1
            if kind == "unmodelled":
                unparsed[toks[t]] += 1
                continue
            if nbytes == 0:
                zero_bytes += 1
                continue
            if h.policy == "HYBRID_CUSTOMIZED" and toks[12] in _ALL_RANK_POLICIES:
                gkey = "world"
            group = groups[gkey]
            used.add(gkey)
            overlap = wg_overlap_fraction if phase == "wg" else 0.0
            key = (f"{name}.{phase}", kind, nbytes, group.name, overlap)
            if key not in agg:
                order.append(key)
                agg[key] = 0.0
            agg[key] += 1.0
        _uint(toks[11], "update delay", fname, lineno)
    ops = [CommOp(kind=k[1], bytes=k[2], group=k[3], count_per_step=agg[k], overlap_fraction=k[4], name=k[0])
           for k in order]
    pp_comm = h.get("pp_comm") or 0
    ga = h.get("ga") or 1
    if sizes.pp > 1 and pp_comm > 0:
        ops.append(CommOp(kind="send_recv", bytes=pp_comm, group="pp", count_per_step=2.0 * ga,
                          name="pp activations (fwd) and gradients (bwd)"))
        used.add("pp")
    elif sizes.pp > 1:
        warnings.append(f"{fname}: pp {sizes.pp} but no pp_comm size; pipeline send/recv left out")
    job_groups: dict[str, ProcessGroup] = {}
    for gkey in ("mp", "dp", "ep", "dp_ep", "pp", "world"):
        if gkey in used or (gkey == "mp" and h.policy.startswith("HYBRID_TRANSFORMER")):
            g = groups.get(gkey)
            if g is not None:
                job_groups.setdefault(g.name, g)
    if not job_groups:
        g = groups.get("world") or groups["dp"]
        job_groups[g.name] = g
    compute_s = ticks / clock_hz
    tick_note = (f"compute fields read as ticks of {1e9 / clock_hz:g} ns (clock {clock_hz / 1e9:g} GHz; "
                 "SimAI and ASTRA-sim 1.0 tick = 1 ns)")
    notes = [f"{'SimAI' if h.simai else 'ASTRA-sim 1.0'} text workload, policy {h.policy}", tick_note]
    if wg_overlap_fraction == 0.0 and any(o.name.endswith(".wg") for o in ops):
        notes.append("weight-gradient collectives are non-blocking in ASTRA-sim (they overlap the rest of the "
                     "backward pass); overlap_fraction is left at 0 (pessimistic) unless wg_overlap_fraction is set")
    job = Job(name=jname, kind="training", world_size=sizes.world, groups=tuple(job_groups.values()),
              ops=tuple(ops), compute_time_s=compute_s, notes=tuple(notes))
    facts = [("policy", h.policy), ("dialect", "SimAI/AICB" if h.simai else "ASTRA-sim 1.0"),
             ("layers declared", str(declared)), ("world size", str(sizes.world))]
    for k in _INT_KEYS:
        if h.get(k) is not None:
            facts.append((k, str(h.get(k))))
    if h.policy.startswith("HYBRID_TRANSFORMER") or h.simai:
        facts += [("tp group", str(sizes.mp)), ("dp group", str(sizes.dp)), ("ep group", str(sizes.ep)),
                  ("dp_ep group", str(sizes.dp_ep)), ("pp group", str(sizes.pp))]
    facts.append(("comm types", ", ".join(f"{k}: {v}" for k, v in sorted(type_counts.items()))))
    facts.append(("zero-byte collectives skipped", str(zero_bytes)))
    facts.append(("compute ticks", str(ticks)))
    facts.append(("compute time s", f"{compute_s:.6g}"))
    unp = [UnparsedComm(source=fname, name=t, count=c, total_time_s=0.0,
                        reason="hybrid all-reduce + all-to-all collective is not modelled by fabric")
           for t, c in unparsed.items()]
    return job, facts, warnings, unp


def sniff(head: bytes, name: str) -> bool:
    """True when line 1 starts with an ASTRA-sim parallelism policy and line 2 is a whole number."""
    text = head.decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()][:3]
    if len(lines) < 2:
        return False
    first = lines[0].split()
    second = lines[1].split()
    return bool(first) and first[0] in POLICIES and len(second) == 1 and second[0].isascii() and second[0].isdigit()


def parse(files: list[tuple[str, bytes]], *, clock_hz: float = DEFAULT_CLOCK_HZ, world_size: int | None = None,
          model_parallel_size: int | None = None, wg_overlap_fraction: float = 0.0) -> Workload:
    """Parse ASTRA-sim/SimAI text workloads; each file becomes its own training job (see the module docstring).

    ``clock_hz``: ticks per second of the compute fields (default 1 GHz = the simulators' 1 ns tick).
    ``world_size``: ranks when the file has no ``all_gpus``. ``model_parallel_size``: model group size of
    HYBRID_DATA_MODEL/HYBRID_MODEL_DATA. ``wg_overlap_fraction``: share of weight-gradient collectives hidden by
    the backward pass (the simulators issue them non-blocking; the default 0 counts them fully exposed).
    """
    if not files:
        raise ParseError("no files given")
    if not (math.isfinite(clock_hz) and clock_hz > 0):
        raise ParseError(f"clock_hz must be a positive number, got {clock_hz!r}")
    if not 0.0 <= wg_overlap_fraction <= 1.0:
        raise ParseError(f"wg_overlap_fraction must be within 0..1, got {wg_overlap_fraction!r}")
    jobs, facts, warnings, unparsed = [], [], [], []
    multi = len(files) > 1
    for (fname, data), jname in zip(files, nccl_tests.unique_job_names(files)):
        text = data.decode("utf-8", errors="replace")
        job, f, w, u = _parse_one(fname, text, jname, clock_hz, world_size, model_parallel_size,
                                  wg_overlap_fraction)
        jobs.append(job)
        facts.extend(((f"{fname}: {k}" if multi else k), v) for k, v in f)
        warnings.extend(w)
        unparsed.extend(u)
    wl = Workload(jobs=tuple(jobs), sources=tuple(f for f, _ in files), unparsed=tuple(unparsed),
                  facts=tuple(facts), warnings=tuple(warnings),
                  name=jobs[0].name if len(jobs) == 1 else PurePath(files[0][0]).stem)
    return nccl_tests.checked(wl, files[0][0] if len(files) == 1 else None)

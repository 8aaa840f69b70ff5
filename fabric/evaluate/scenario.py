"""What-if scenarios: failures, a slow switch, background load, a shifted job mix, a bigger cluster, a fragmented
cluster."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import yaml

from fabric.errors import FabricError, WorkloadError
from fabric.workload.model import Job, Workload

__all__ = ["Scenario", "SCENARIO_PRESETS", "load_scenario", "scenario_from_dict", "scale_workload", "shift_job_mix"]


class ScenarioError(FabricError):
    """A scenario description is invalid."""


@dataclass(frozen=True)
class Scenario:
    """Conditions an evaluation runs under (all default to the healthy baseline).

    ``failed_links`` leaf-spine links and ``failed_spines`` spine switches are down (chosen at random from the
    seed); ``slow_switches`` spines run at ``slow_factor`` of their capacity; ``background_load`` is the share of
    every network link used by other tenants; ``comm_scale``/``compute_scale`` shift the job mix (bytes and
    compute of every job scaled); ``checkpoint_bytes``/``checkpoint_period_s`` add a checkpoint burst (whole-job
    bytes written every period) to each training job; ``gpu_scale`` evaluates a cluster that many times bigger
    with data parallelism grown to match (weak scaling). ``link_failure_prob`` makes component faults part of the
    Monte Carlo: in each sampled launch every leaf-spine link is down with this probability.

    ``fragmentation`` is the state the scheduler finds the cluster in, not a choice of the design: the share of the
    cluster's nodes that are not where the design's placement rule (``packed``, ``rail_aligned``) expects them,
    because earlier tenants came and went. That share of node slots, drawn at random from the seed, trade places at
    random; at 1 every job gets whole nodes drawn at random among all of them (what the old placement
    ``scattered`` did). Ranks stay consecutive inside a node, so jobs smaller than a node stay on one.
    """

    name: str = "baseline"
    failed_links: int = 0
    failed_spines: int = 0
    slow_switches: int = 0
    slow_factor: float = 0.5
    background_load: float = 0.0
    comm_scale: float = 1.0
    compute_scale: float = 1.0
    checkpoint_bytes: float = 0.0
    checkpoint_period_s: float = 0.0
    gpu_scale: int = 1
    link_failure_prob: float = 0.0
    #: switches down by name (``spine3``, ``core0``, ``spine2@p1`` as the fabric labels them; a leaf only where
    #: every NIC on it has another port on another leaf, a dual-ToR NIC: fabric.evaluate.dualtor; otherwise its
    #: servers would leave the job), and links down by their ends (``leaf0-spine1``: one of the cables between them)
    fail_switches: tuple = ()
    fail_links: tuple = ()
    fragmentation: float = 0.0

    def __post_init__(self):
        def bad(field, msg):
            raise ScenarioError(f"scenario field '{field}': {msg}")

        for f in ("failed_links", "failed_spines", "slow_switches", "gpu_scale"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                bad(f, f"expected a whole number >= 0, got {v!r}")
        if self.gpu_scale < 1 or self.gpu_scale > 64:
            bad("gpu_scale", f"must be between 1 and 64, got {self.gpu_scale}")
        for f, lo, hi in (("slow_factor", 0.01, 1.0), ("background_load", 0.0, 0.95), ("comm_scale", 0.0, 1e3),
                          ("compute_scale", 0.0, 1e3), ("checkpoint_bytes", 0.0, 1e18),
                          ("checkpoint_period_s", 0.0, 1e9), ("link_failure_prob", 0.0, 0.5),
                          ("fragmentation", 0.0, 1.0)):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
                bad(f, f"must be a number in [{lo:g}, {hi:g}], got {v!r}")
        for f in ("fail_switches", "fail_links"):
            v = getattr(self, f)
            if isinstance(v, (list, str)):
                v = (v,) if isinstance(v, str) else tuple(v)
                object.__setattr__(self, f, v)
            if not isinstance(v, tuple) or not all(isinstance(x, str) and x.strip() for x in v):
                bad(f, f"expected a list of names such as {'spine0' if f == 'fail_switches' else 'leaf0-spine1'}, "
                       f"got {v!r}")
        if self.checkpoint_bytes and not self.checkpoint_period_s:
            bad("checkpoint_period_s", "a checkpoint burst needs a period > 0")

    def to_dict(self) -> dict:
        return asdict(self)


SCENARIO_PRESETS = {
    "baseline": Scenario(),
    "fail-spine": Scenario(name="fail-spine", failed_spines=1),
    "fail-link": Scenario(name="fail-link", failed_links=1),
    "slow-switch": Scenario(name="slow-switch", slow_switches=1, slow_factor=0.5),
    "checkpoint-burst": Scenario(name="checkpoint-burst", checkpoint_bytes=2e12, checkpoint_period_s=600.0),
    "background-30": Scenario(name="background-30", background_load=0.3),
    "job-mix-shift": Scenario(name="job-mix-shift", comm_scale=1.5),
    "bigger-cluster": Scenario(name="bigger-cluster", gpu_scale=2),
    "flaky-links": Scenario(name="flaky-links", link_failure_prob=0.002),
    "fragmented": Scenario(name="fragmented", fragmentation=1.0),
}


def scenario_from_dict(d: dict) -> Scenario:
    """A validated scenario from its JSON/YAML dict; unknown fields are errors."""
    if not isinstance(d, dict):
        raise ScenarioError(f"a scenario must be an object of fields, got {type(d).__name__}")
    known = {f.name for f in fields(Scenario)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ScenarioError(f"unknown scenario field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return Scenario(**d)


def load_scenario(spec: str) -> Scenario:
    """A preset name, a JSON/YAML file, or inline JSON."""
    if spec in SCENARIO_PRESETS:
        return SCENARIO_PRESETS[spec]
    text = None
    p = Path(spec)
    if spec.lstrip().startswith("{"):
        text = spec
    elif p.exists():
        if p.stat().st_size > 1_000_000:
            raise ScenarioError(f"scenario file {p} is larger than 1 MB")
        text = p.read_text(encoding="utf-8", errors="replace")
    else:
        raise ScenarioError(f"no scenario preset or file named {spec!r}; presets: {', '.join(SCENARIO_PRESETS)}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ScenarioError(f"{spec}: not valid JSON/YAML ({' '.join(str(err).split())})") from err
    try:
        return scenario_from_dict(data)
    except TypeError as err:
        raise ScenarioError(f"{spec}: {err}") from err


# ------------------------------------------------------------------ what a scenario does to a workload


def scale_workload(workload: Workload, factor: int) -> Workload:
    """Weak scaling: every training/inference job's data-parallel degree (and world) grows ``factor`` times."""
    if factor == 1:
        return workload
    jobs = []
    for job in workload.jobs:
        if job.kind == "storage":
            jobs.append(job)
            continue
        if job.serving is not None:      # checked first: a service's world group is its replicas, not data parallelism
            raise WorkloadError(
                f"job {job.name!r} is a serving job, which weak scaling (--scaling, the bigger-cluster scenario) "
                f"cannot grow: it adds data-parallel ranks to a training step at a fixed work per GPU, while a "
                f"service grows by replicas that each take a share of the requests. Evaluate a larger service "
                f"instead: fabric synth --preset NAME --gpus N at the larger size (more replicas), with the job's "
                f"request_rate_per_s set to the load it must carry; fabric evaluate's latency-versus-load curve "
                f"shows this service's headroom")
        dp = [g for g in job.groups if g.role == "dp"] or [g for g in job.groups if g.size == job.world_size]
        if not dp:
            raise WorkloadError(f"job {job.name!r} cannot be scaled: it has no data-parallel or world group")
        names = {g.name for g in dp}
        groups = []
        for g in job.groups:
            if g.name in names or g.size == job.world_size:
                groups.append(replace(g, size=g.size * factor, ranks=None))
            else:
                groups.append(g)
        jobs.append(replace(job, world_size=job.world_size * factor, groups=tuple(groups)))
    return workload.with_jobs(jobs)


def shift_job_mix(workload: Workload, scenario: Scenario) -> Workload:
    jobs = []
    for job in workload.jobs:
        if job.kind == "storage":
            jobs.append(job)
            continue
        ops = tuple(replace(o, bytes=int(round(o.bytes * scenario.comm_scale)),
                            per_rank_bytes=None if o.per_rank_bytes is None else tuple(
                                int(round(b * scenario.comm_scale)) for b in o.per_rank_bytes))
                    for o in job.ops) if scenario.comm_scale != 1.0 else job.ops
        jobs.append(replace(job, ops=ops, compute_time_s=job.compute_time_s * scenario.compute_scale))
    if scenario.checkpoint_bytes:
        for job in list(jobs):
            if job.kind == "training":
                jobs.append(Job(name=f"{job.name}/checkpoint", kind="storage", world_size=job.world_size,
                                burst_bytes=int(scenario.checkpoint_bytes),
                                burst_period_s=scenario.checkpoint_period_s, burst_target=job.name))
    return workload.with_jobs(jobs)

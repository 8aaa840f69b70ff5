"""The audit of a set of per-rank Kineto traces: one job, one or several sizes (see docs/audit.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fabric.audit.compare import Comparison, compare_run, predict
from fabric.audit.hotlinks import HotLinks, compare_links
from fabric.audit.exposed import CollectiveExposure, exposure_by_collective
from fabric.audit.scaling import RULE_TEXT, ScalingPoint, SizePoint, scaling, verdict
from fabric.audit.stats import distribution
from fabric.audit.steps import RankStep, rank_steps
from fabric.audit.stragglers import StepStraggler, Straggler, stragglers
from fabric.audit.traces import RunTraces, load_traces, read_paths
from fabric.errors import FabricError, ParseError

__all__ = ["RankSummary", "SizeAudit", "Audit", "audit_runs", "audit_files", "audit_paths"]


@dataclass(frozen=True)
class RankSummary:
    """Means over one rank's traced steps (seconds)."""

    rank: int
    steps: int
    step_s: float
    comm_s: float
    exposed_s: float
    wait_s: float

    @property
    def wait_share(self) -> float:
        return self.wait_s / self.step_s if self.step_s > 0 else 0.0


@dataclass(frozen=True)
class SizeAudit:
    """The audit of one job size."""

    world_size: int
    files: tuple[str, ...]
    ranks_traced: tuple[int, ...]
    step_s: dict                      # distribution of the (rank, step) step times: p50 p95 p99 mean min max n
    records: tuple[RankStep, ...]
    per_rank: tuple[RankSummary, ...]
    step_stragglers: tuple[StepStraggler, ...]
    stragglers: tuple[Straggler, ...]
    collectives: tuple[CollectiveExposure, ...]
    exposed_share: float              # mean exposed collective time / mean step time
    wait_share: float                 # mean wait / mean step time
    notes: tuple[str, ...]

    def point(self) -> SizePoint:
        """What the scaling rule needs of this size."""
        n = len(self.records)
        mean = lambda xs: sum(xs) / n  # noqa: E731
        step = mean([r.step_s for r in self.records])
        exposed = mean([r.exposed_s for r in self.records])
        wait = mean([r.wait_s for r in self.records])
        return SizePoint(world_size=self.world_size, step_p50_s=self.step_s["p50"], step_mean_s=step,
                         compute_s=step - exposed, wait_s=wait, exposed_transfer_s=exposed - wait)


@dataclass(frozen=True)
class Audit:
    """Audit of every size given; ``flagged`` is the scaling rule's verdict (see :mod:`fabric.audit.scaling`)."""

    sizes: tuple[SizeAudit, ...]
    scaling_mode: str
    scaling: tuple[ScalingPoint, ...]
    verdict: str
    flagged: bool
    evidence: tuple[str, ...]
    rule: str = RULE_TEXT
    comparisons: tuple[Comparison, ...] = ()   # measured vs predicted per job size (with a design)
    links: HotLinks | None = None               # measured vs predicted hot links (with counters and a mapping)
    links_world_size: int | None = None         # the job size the link comparison is for
    congestion: tuple = ()                      # predicted ECN/PFC per tier (an estimate) of the largest fitting size

    def to_dict(self) -> dict:
        """JSON-ready form (seconds, fractions)."""
        d = asdict(self)
        for s, sd in zip(self.sizes, d["sizes"]):
            for rs, rd in zip(s.per_rank, sd["per_rank"]):
                rd["wait_share"] = rs.wait_share
        return d


def _size_audit(run: RunTraces) -> SizeAudit:
    recs = rank_steps(run)
    if not recs:
        raise ParseError(f"no step and no GPU activity in the {run.world_size}-rank traces",
                         source=run.ranks[0].name if run.ranks else None)
    per_step, ranked = stragglers(recs)
    per_rank = []
    for rank in sorted({r.rank for r in recs}):
        rs = [r for r in recs if r.rank == rank]
        k = len(rs)
        per_rank.append(RankSummary(rank=rank, steps=k, step_s=sum(r.step_s for r in rs) / k,
                                    comm_s=sum(r.comm_s for r in rs) / k, exposed_s=sum(r.exposed_s for r in rs) / k,
                                    wait_s=sum(r.wait_s for r in rs) / k))
    n = len(recs)
    step_mean = sum(r.step_s for r in recs) / n
    notes = list(run.notes)
    if len(run.ranks) < 2:
        notes.append("one rank traced: no communication wait or straggler can be measured")
    return SizeAudit(
        world_size=run.world_size, files=tuple(t.name for t in run.ranks),
        ranks_traced=tuple(sorted({r.rank for r in recs})), step_s=distribution([r.step_s for r in recs]),
        records=tuple(recs), per_rank=tuple(per_rank), step_stragglers=tuple(per_step), stragglers=tuple(ranked),
        collectives=tuple(exposure_by_collective(run)),
        exposed_share=(sum(r.exposed_s for r in recs) / n) / step_mean if step_mean > 0 else 0.0,
        wait_share=(sum(r.wait_s for r in recs) / n) / step_mean if step_mean > 0 else 0.0,
        notes=tuple(notes))


def audit_runs(runs: list[RunTraces], *, scaling_mode: str = "weak", design=None, catalog=None, seed: int = 0,
               samples: int | None = None, counters=None, port_map=None) -> Audit:
    """The audit of loaded runs (one per job size); with ``design``, measured vs predicted for every size that fits
    on it; with ``counters`` (:class:`~fabric.audit.counters.Counters`) and ``port_map`` (raw mapping file as
    (name, bytes)), measured vs predicted hot links of the largest size that fits."""
    sizes = [_size_audit(r) for r in runs]
    pts = scaling([s.point() for s in sizes], scaling_mode)
    text, flagged, evidence = verdict(pts, [s.world_size for s in sizes])
    comps = []
    links = links_size = None
    if counters is not None and (design is None or port_map is None):
        raise FabricError("link counters need the installed design (--design) and a port -> link mapping "
                          "(--mapping)")
    if design is not None:
        fits = [(r, s) for r, s in zip(runs, sizes) if r.world_size <= design.gpus]
        if not fits:
            raise FabricError(f"design {design.name!r} has {design.gpus} GPUs: no traced job size fits on it "
                              f"(sizes {', '.join(str(s.world_size) for s in sizes)}); give the installed design "
                              f"(or --gpus)")
        for r, s in fits:
            workload, ev = predict(r, design, catalog=catalog, seed=seed, samples=samples)
            comps.append(compare_run(r, s.step_s, s.stragglers[0].rank if s.stragglers else None, design, ev))
        if counters is not None:
            links = _links(fits[-1], workload, ev, design, catalog, seed, counters, port_map)
            links_size = fits[-1][0].world_size
        congestion = _congestion(workload, design, catalog, seed)
    return Audit(sizes=tuple(sizes), scaling_mode=scaling_mode, scaling=tuple(pts), verdict=text, flagged=flagged,
                 evidence=tuple(evidence), comparisons=tuple(comps), links=links, links_world_size=links_size,
                 congestion=congestion if design is not None else ())


def _congestion(workload, design, catalog, seed) -> tuple:
    from fabric.audit.congestion import congestion_estimate

    try:
        return tuple(congestion_estimate(design, workload, catalog=catalog, seed=seed).values())
    except FabricError:          # e.g. a dragonfly: no per-link loads
        return ()


def _links(fit, workload, ev, design, catalog, seed, counters, port_map) -> HotLinks:
    from fabric.audit.linkload import predicted_link_loads
    from fabric.audit.portmap import read_port_map
    from fabric.audit.utilisation import measure_links
    from fabric.topology import build_fabric

    fabric = build_fabric(design, catalog)
    pmap = read_port_map(port_map[0], port_map[1], fabric)
    measured = measure_links(counters, pmap, fabric)
    op_p50 = {}
    for o in ev.ops:
        op_p50[(o.kind, o.bytes)] = o.time_p50_s
    predicted = predicted_link_loads(design, workload, catalog=catalog, seed=seed,
                                     step_p50_s=ev.step_time_s["p50"], op_p50_s=op_p50)
    return compare_links(measured, predicted, measured_step=fit[1].step_s, predicted_step=ev.step_time_s)


def audit_files(files: list[tuple[str, bytes]], *, scaling_mode: str = "weak", **compare_kw) -> Audit:
    """The audit of (name, raw bytes) per-rank Kineto files (.gz too); ``compare_kw`` as :func:`audit_runs`."""
    return audit_runs(load_traces(files), scaling_mode=scaling_mode, **compare_kw)


def audit_paths(paths, *, scaling_mode: str = "weak", **compare_kw) -> Audit:
    """The audit of per-rank Kineto files on disk."""
    return audit_files(read_paths(paths), scaling_mode=scaling_mode, **compare_kw)



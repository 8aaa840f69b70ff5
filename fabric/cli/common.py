"""Helpers shared by CLI subcommands: reading workloads and designs the same way everywhere."""

from __future__ import annotations

from fabric.errors import DesignError, FabricError, ParseError

__all__ = ["load_workload_files", "load_design_arg", "check_samples", "catalog_arg"]

#: The Monte Carlo samples a command accepts per evaluation
MIN_SAMPLES, MAX_SAMPLES = 16, 100_000


def check_samples(samples: int, error: type[FabricError] = FabricError) -> None:
    """Refuse a ``--samples`` outside 16..100,000 with ``error`` naming the flag and the value."""
    if samples < MIN_SAMPLES or samples > MAX_SAMPLES:
        raise error(f"--samples must be between {MIN_SAMPLES} and {MAX_SAMPLES:,}, got {samples}")


def catalog_arg(path: str | None):
    """The hardware catalog of ``--catalog FILE``, or the built-in one."""
    from fabric.catalog import default_catalog, load_catalog

    return load_catalog(path) if path else default_catalog()


def load_workload_files(paths: list[str]):
    """Parse trace/workload files into one workload; any failed file is an error naming it."""
    from fabric.workload.ingest import ingest_paths

    result = ingest_paths(paths)
    if not result.ok or result.workload is None:
        raise ParseError("; ".join(result.errors) or "no workload could be read from the given files")
    return result.workload


def load_design_arg(spec: str, gpus: int | None, catalog):
    """A design file, or ``preset:NAME`` / a preset name (sized with ``gpus``)."""
    from pathlib import Path

    from fabric.design import load_design
    from fabric.reference.presets import PRESETS, preset_design

    name = spec[len("preset:"):] if spec.startswith("preset:") else spec
    if name in PRESETS and not Path(spec).exists():
        return preset_design(name, gpus)
    if spec.startswith("preset:"):
        raise DesignError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    design = load_design(spec, catalog=catalog)
    if gpus is not None:
        design = design.replace(gpus=gpus)
    return design


def workload_arg(args):
    """One workload from the -w files, or a robust objective over several -w groups and --scenarios."""
    from pathlib import Path

    from fabric.errors import FabricError
    from fabric.evaluate import load_scenario
    from fabric.search.robust import RobustObjective

    groups = args.workload
    if getattr(args, "per_job", False):
        return _per_job_objective(args, groups)
    if len(groups) > 1 and not args.robust:
        raise FabricError(f"{len(groups)} workloads (-w given {len(groups)} times): choose how to combine them with "
                          f"--robust worst or --robust mean")
    if not args.robust:
        if args.weights or args.scenarios:
            raise FabricError("--weights and --scenarios only apply with --robust")
        return load_workload_files(groups[0])
    if args.scenario != "baseline":
        raise FabricError("with --robust give the scenarios as --scenarios a,b,... (every design is judged under "
                          "each), not --scenario")
    weights = _weights(args.weights, len(groups), "workload(s)") if args.weights else [1.0] * len(groups)
    names, used = [], set()
    for g in groups:
        n = Path(g[0]).name.split(".")[0] or "workload"
        k, base = 2, n
        while n in used:
            n, k = f"{base}-{k}", k + 1
        used.add(n)
        names.append(n)
    scenarios = tuple(load_scenario(x.strip()) for x in (args.scenarios or "baseline").split(",") if x.strip())
    return RobustObjective(tuple((n, load_workload_files(g), w) for n, g, w in zip(names, groups, weights)),
                           scenarios, mode=args.robust)



def _weights(text: str, n: int, what: str, *, count: bool = True) -> list[float]:
    """``--weights`` as ``n`` numbers; FabricError naming ``what`` they weigh otherwise."""
    from fabric.errors import FabricError

    try:
        weights = [float(x) for x in text.split(",")]
    except ValueError:
        raise FabricError(f"--weights {text!r}: expected numbers separated by commas") from None
    if len(weights) != n:
        raise FabricError(f"--weights gives {len(weights)} weight(s) for {f'{n} ' if count else ''}{what}")
    return weights


def _per_job_objective(args, groups):
    """``--per-job``: the jobs of one -w workload sharing the cluster, judged job by job (``--robust`` combines
    them, ``--weights`` in job order)."""
    from fabric.errors import FabricError
    from fabric.evaluate import load_scenario
    from fabric.search.robust import job_mix_objective

    if len(groups) != 1:
        raise FabricError("--per-job judges the jobs of one workload: give one -w")
    if not args.robust:
        raise FabricError("--per-job needs --robust worst or --robust mean (how the jobs' slowdowns combine)")
    if args.scenario != "baseline":
        raise FabricError("with --per-job give the scenarios as --scenarios a,b,..., not --scenario")
    wl = load_workload_files(groups[0])
    jobs = [j.name for j in wl.jobs if j.kind != "storage"]
    weights = dict(zip(jobs, _weights(args.weights, len(jobs), f"the workload's {len(jobs)} jobs "
                                                               f"({', '.join(jobs)})", count=False))) \
        if args.weights else None
    scenarios = tuple(load_scenario(x.strip()) for x in (args.scenarios or "baseline").split(",") if x.strip())
    return job_mix_objective(wl, weights, mode=args.robust, scenarios=scenarios)


def plan_objective(args, workload, catalog):
    """The plan objective of ``--plan-space auto`` (None for fixed); errors for combinations it does not take."""
    from fabric.errors import FabricError

    if args.plan_space == "fixed":
        if args.model:
            raise FabricError("--model only applies with --plan-space auto or joint")
        return None
    if args.robust:
        raise FabricError(f"--plan-space {args.plan_space} judges one training workload; it does not combine with "
                          f"--robust")
    from fabric.plans.basis import basis_from_workload
    from fabric.search.plan_space.inner import PlanObjective
    from fabric.search.plan_space.joint import JointObjective

    basis = basis_from_workload(workload, model=args.model, catalog=catalog)
    return PlanObjective(basis) if args.plan_space == "auto" else JointObjective(basis)



def warn_calibration(path, *, design=None, constraints=None, catalog=None) -> None:
    """Print a warning for each way the calibration's measured system differs from the design (or the search)."""
    if not path:
        return
    import sys

    from fabric.calibrate import load_profile
    from fabric.calibrate.applicability import calibration_mismatches, search_mismatches

    meta = load_profile(path).metadata
    system, transport = meta.get("system"), meta.get("transport")
    lines = (calibration_mismatches(system, design, transport=transport, catalog=catalog) if design is not None
             else search_mismatches(system, constraints, transport=transport))
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)



def calibration_arg(path):
    """The transport overrides of a calibration profile file (None without one)."""
    if not path:
        return None
    from fabric.calibrate import load_profile

    return load_profile(path).overrides

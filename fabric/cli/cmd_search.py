"""``fabric search``: the Pareto front of network cost versus p99 step time for a workload."""

from __future__ import annotations

import argparse
import sys

from fabric.cli.common import catalog_arg, plan_objective, workload_arg

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "search",
        help="search designs for the Pareto front of cost vs p99 step time",
        description=(
            "Search the design space (hardware: topology family, switch and NIC models, NICs per GPU, "
            "oversubscription, planes, transport, storage isolation, in-network reduction, uplink speed; free "
            "policy: routing and queue pairs, placement rule, PXN) with NSGA-II for the Pareto front of network "
            "capex versus p99 step time, under the given constraints. The human baselines (fat tree 1:1 and 2:1 of "
            "the fastest NIC on the switch of its generation, a rail-optimized SuperPOD-style design) are always evaluated and compared; a front "
            "design that is a baseline's hardware with a better free policy is named a free upgrade. A fragmented "
            "cluster is a condition, not a choice: --scenario fragmented."
        ),
        epilog=("examples:\n  fabric search -w sample_traces/llama3-70b.json --gpus 1024 --budget-evals 3000 --out out/\n"
                "  fabric search -w w.json --constraints limits.yaml --budget-seconds 60 --workers 2 --out out/\n"
                "  fabric search -w w.json --constraints small.yaml --exhaustive --out out/\n"
                "  fabric search -w llama.json -w moe.json --robust worst --scenarios baseline,fail-spine --out out/"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workload", "-w", required=True, nargs="+", action="append", metavar="FILE",
                   help="workload or trace file(s); repeat -w for several workloads (a robust search, --robust)")
    p.add_argument("--robust", choices=["worst", "mean"],
                   help="optimise over every -w workload and --scenarios case: the worst or the weighted-mean p99 "
                        "relative to the fat-tree baseline (fabric.search.robust); needed with several -w")
    p.add_argument("--weights", metavar="W1,W2,...", help="weights of the -w workloads for --robust mean (default "
                                                          "equal); with --per-job, of the workload's jobs in order")
    p.add_argument("--per-job", action="store_true",
                   help="the jobs of one -w workload share the cluster at once and are judged job by job, combined "
                        "by --robust (fabric.search.robust.job_mix_objective; a mixed cluster)")
    p.add_argument("--scenarios", metavar="S1,S2,...",
                   help="scenario presets every design is judged under with --robust (default baseline)")
    p.add_argument("--plan-space", choices=["fixed", "auto", "joint"], default="fixed",
                   help="fixed (default): every design at the workload's own parallelism plan; auto: every design "
                        "at its best plan (TP/PP/DP/EP/CP, micro-batches, ZeRO, rank order; docs/plans.md), the "
                        "front saying which plan each design needs and what the given plan costs it; joint: the "
                        "plan's genes searched beside the design's (one evaluation per design and plan)")
    p.add_argument("--model", metavar="NAME", help="with --plan-space: the workload's model when fabric does not "
                                                   "recognise it (llama3-70b, mixtral-8x7b)")
    p.add_argument("--constraints", "-c", metavar="FILE", help="constraints (JSON/YAML; see docs/search.md)")
    p.add_argument("--max-gpus-lost", type=float, metavar="N|SHARE",
                   help="blast radius: the most GPUs the worst single switch failure may take out of the job, a "
                        "count (64) or a share of the cluster below 1 (0.125); overrides the constraints file's "
                        "max_gpus_lost_on_single_failure (default: no limit; the front shows the figure)")
    p.add_argument("--max-failure-slowdown", type=float, metavar="SHARE",
                   help="the p99 under the worst single failure may be at most this much slower than the healthy "
                        "p99 (0.25 = +25 %%; every design is then evaluated under its failures, about 2x the time); "
                        "overrides max_p99_slowdown_under_failure (default: no limit; the front shows the figure)")
    p.add_argument("--gpus", type=int, help="GPU count (overrides the constraints file; default: the workload's)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--budget-evals", type=int, help="stop after this many distinct evaluations (default 3000)")
    budget.add_argument("--budget-seconds", type=float, help="stop after this many seconds")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same front)")
    p.add_argument("--pop-size", type=int, default=40, help="population size (default 40)")
    p.add_argument("--samples", type=int, default=256, help="Monte Carlo samples per evaluation (default 256)")
    p.add_argument("--scenario", default="baseline", help="scenario to evaluate every design under")
    p.add_argument("--cost-objective", choices=["network_capex", "cost_per_step"],
                   help="what to minimize beside p99: network capex (default) or the cost of a training step with "
                        "GPU time counted (fabric.cost.economics; life, price and PUE from the constraints file)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, help="evaluate on this many local worker processes")
    where.add_argument("--scheduler", metavar="ADDR",
                       help="evaluate on a Dask cluster (tcp://host:8786), or 'local' for a LocalCluster")
    p.add_argument("--exhaustive", action="store_true", help="evaluate every design of the (small) space")
    p.add_argument("--resume", metavar="STATE",
                   help="save the search state here and resume from it if present: a search that stopped on its "
                        "budget without converging goes on with a larger --budget-evals (default: the state is saved "
                        "as OUT/state.json, replacing one left there)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--calibration", metavar="FILE",
                   help="calibration profile from 'fabric calibrate --out' (fitted transport parameters)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="write evaluations.csv, pareto.csv, baselines.csv and summary.json here")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=run)


def _convergence_line(res, args, state_path) -> str:
    """"converged (...)" or "not converged: continue with ... --resume STATE --budget-evals N"."""
    from fabric.search.convergence import saved_evaluations

    if res.converged:
        return f"converged: {res.stopped_because.removeprefix('converged (').removesuffix(')')}."
    if res.stopped_because == "cancelled":
        return "not converged: the search was cancelled."
    more = args.budget_evals or 3000
    if not state_path.is_file():
        return "not converged: the budget ended before the first generation; give a larger budget."
    if args.budget_seconds:
        how = f"--resume {state_path} --budget-seconds {args.budget_seconds:g} (the time budget counts afresh)"
    else:
        how = f"--resume {state_path} --budget-evals {saved_evaluations(state_path) + more}"
    return f"not converged ({res.convergence_rule} not met): continue with the same command and {how}."


def _recommendation(res, objective, cons, catalog, scenario, args, overrides) -> dict:
    """summary.json's ``context`` (the line and key every figure was computed in) and ``recommendation``: the design
    the dashboard recommends by the same rule (fabric.search.recommend), its design file and its record in the
    search's context (fabric.review), so a script reads the answer a review sees."""
    from pathlib import Path

    from fabric.design import design_to_dict
    from fabric.review import design_record, prepare_context
    from fabric.search.recommend import recommend

    label = ", ".join(Path(g[0]).name for g in args.workload)
    ctx = prepare_context(objective, cons, catalog=catalog, scenario=scenario, seed=args.seed, samples=args.samples,
                          transport_overrides=overrides, label=label)
    out = {"context": {"line": ctx.describe(), "key": ctx.key}}
    advice = recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s)
    if advice.record is None or ctx.kind == "joint":
        out["recommendation"] = {"rule": advice.rule, "design": None, "record": advice.record}
        return out
    from fabric.review.brief import design_of_row

    design = design_of_row(advice.record, cons, ctx.catalog)
    record = design_record(design, ctx, row=advice.record)
    out["recommendation"] = {"rule": advice.rule, "design": design_to_dict(design), "record": record.to_dict()}
    return out


def gpus_needed(workload) -> int | None:
    """GPUs the workload's jobs take at once (the largest workload's of a robust mix), None without compute jobs."""
    parts = getattr(workload, "workloads", None)
    if parts:
        needs = [gpus_needed(item[1]) for item in parts]
        return max((n for n in needs if n), default=None)
    sizes = [j.world_size for j in workload.jobs if j.kind != "storage"]
    return sum(sizes) if sizes else None


def _sets_gpus(path) -> bool:
    """True when the constraints file names a GPU count (else the workload sizes the cluster)."""
    if not path:
        return False
    import json
    from pathlib import Path

    import yaml

    text = Path(path).read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text) if str(path).lower().endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return True                       # load_constraints has already said what is wrong with it
    return isinstance(data, dict) and "gpus" in data


def run(args) -> int:
    import dataclasses
    from fabric.errors import FabricError
    from fabric.evaluate import load_scenario
    from fabric.search import Constraints, exhaustive_search, load_constraints, make_runner, run_search

    catalog = catalog_arg(args.catalog)
    workload = workload_arg(args)
    objective = plan_objective(args, workload, catalog)
    cons = load_constraints(args.constraints) if args.constraints else None
    need = gpus_needed(workload)
    gpus = args.gpus or (cons.gpus if cons and _sets_gpus(args.constraints) else None) or need
    if gpus is None:
        raise FabricError("the workload has no training or inference job; nothing to design for")
    if need and gpus < need:
        raise FabricError(f"--gpus {gpus:,} is fewer than the {need:,} GPUs the workload needs")
    gpn = cons.gpus_per_node if cons else 8
    if gpus % gpn:
        gpus = -(-gpus // gpn) * gpn
    cons = dataclasses.replace(cons, gpus=gpus) if cons else Constraints(gpus=gpus)
    if args.cost_objective:
        cons = dataclasses.replace(cons, cost_objective=args.cost_objective)
    if args.max_gpus_lost is not None:
        lost = args.max_gpus_lost
        cons = dataclasses.replace(cons, max_gpus_lost_on_single_failure=int(lost) if lost >= 1 and lost == int(lost)
                                   else lost)
    if args.max_failure_slowdown is not None:
        cons = dataclasses.replace(cons, max_p99_slowdown_under_failure=args.max_failure_slowdown)
    from fabric.search import DesignSpace

    space = DesignSpace(cons, catalog)
    if cons.nic_models and space.excluded_nics and not args.quiet:
        left_out = space.excluded_nics
        sys.stderr.write(f"note: left out NIC(s) {', '.join(left_out)}: {next(iter(left_out.values()))}\n")
    for p, why in space.unbuildable_planes().items():
        if not args.quiet:
            sys.stderr.write(f"note: planes {p} cannot be built: {why}; the search repairs such designs to fewer "
                             f"planes\n")
    scenario = load_scenario(args.scenario)
    from fabric.cli.common import calibration_arg, warn_calibration

    overrides = calibration_arg(args.calibration)
    warn_calibration(args.calibration, constraints=cons)
    runner = make_runner(args.workers, args.scheduler)

    def progress(p):
        if args.quiet:
            return
        total = f"/{p.budget_evals:,}" if p.budget_evals else ""
        sys.stderr.write(f"\rgeneration {p.generation:4d}  evaluations {p.evaluations:6,d}{total}  "
                         f"front {len(p.front):3d}  hypervolume {p.hypervolume:7.4f}  {p.elapsed_s:6.1f} s")
        sys.stderr.flush()

    if objective is not None:
        workload = objective
    if args.exhaustive:
        res = exhaustive_search(workload, cons, seed=args.seed, runner=runner, scenario=scenario,
                                samples=args.samples, catalog=catalog, callback=progress,
                                transport_overrides=overrides)
    else:
        from pathlib import Path

        budget_evals = args.budget_evals if args.budget_evals or args.budget_seconds else 3000
        state_path = Path(args.resume) if args.resume else Path(args.out) / "state.json"
        if not args.resume:
            state_path.unlink(missing_ok=True)      # a fresh search: not the one an earlier run left in OUT
        res = run_search(workload, cons, budget_evals=budget_evals, budget_seconds=args.budget_seconds,
                         seed=args.seed, pop_size=args.pop_size, runner=runner, scenario=scenario,
                         samples=args.samples, catalog=catalog, callback=progress, state_path=state_path,
                         transport_overrides=overrides)
    if not args.quiet:
        sys.stderr.write("\n")
    out = res.write(args.out, extra=_recommendation(res, workload, cons, catalog, scenario, args, overrides))
    for line in res.summary_lines():
        print(line)
    if not args.exhaustive:
        print(_convergence_line(res, args, state_path))
    from fabric.search.robust import RobustObjective, robust_lines

    if objective is not None:
        from fabric.plans.report import front_plan_lines, given_plan_name

        for line in front_plan_lines(res.front, given_plan_name(objective.basis)):
            print(line)
    if isinstance(workload, RobustObjective):
        import json as _json

        lines = robust_lines(res)
        for line in lines:
            print(line)
        (out / "robust.json").write_text(_json.dumps(
            {"objective": workload.name, "lines": lines,
             "front": [{"design": r["design"], "cost_usd": r["cost_usd"], "robust_slowdown": r.get("robust_slowdown"),
                        "p99_by_case_s": r.get("p99_by_case")} for r in res.front]}, indent=2, default=float))
    print(f"results in {out}/ (evaluations.csv, pareto.csv, baselines.csv, summary.json)")
    return 0 if res.feasible else 3

"""``fabric evaluate``: p50/p95/p99 step time of a workload on a design, with breakdown and hot spots."""

from __future__ import annotations

import argparse
import json

from fabric.cli.common import calibration_arg, catalog_arg, check_samples, warn_calibration
from fabric.evaluate.engine import DEFAULT_SAMPLES

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="step-time distribution (p50/p95/p99) of a workload on a design",
        description=(
            "Evaluate a workload on a design: Monte Carlo over ECMP hash outcomes, compute jitter, checkpoint "
            "bursts and faults gives the p50/p95/p99 step time, the bandwidth-optimal lower bound, the per-op "
            "times, the hottest link groups, and the design's cost and power."
        ),
        epilog=("examples:\n  fabric evaluate --workload sample_traces/llama3-70b.json --design fat-tree --gpus 1024\n"
                "  fabric evaluate --workload w.json --design my.yaml --scenario fail-spine --json"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workload", "-w", required=True, nargs="+", action="append", metavar="FILE",
                   help="workload or trace file(s), any supported format (.gz too); repeat -w for a job mix "
                        "(--robust), as fabric search takes it")
    p.add_argument("--robust", choices=["worst", "mean"],
                   help="the context of a robust search: every -w workload and --scenarios case, combined as the "
                        "worst or weighted-mean slowdown against the fat-tree baseline (fabric search --robust)")
    p.add_argument("--weights", metavar="W1,W2,...", help="weights of the -w workloads for --robust (with "
                                                          "--per-job, of the workload's jobs in order)")
    p.add_argument("--per-job", action="store_true",
                   help="judge the jobs of one -w workload job by job (a mixed cluster), combined by --robust")
    p.add_argument("--scenarios", metavar="S1,S2,...", help="scenario presets of the --robust cases")
    p.add_argument("--plan-space", choices=["fixed", "auto"], default="fixed",
                   help="fixed (default): the workload's own parallelism plan; auto: the design at its best plan of "
                        "the shortlist fabric search --plan-space auto ranks for the constraints' space")
    p.add_argument("--model", metavar="NAME", help="with --plan-space auto: the workload's model when fabric does "
                                                   "not recognise it")
    p.add_argument("--constraints", "-c", metavar="FILE",
                   help="the search's constraints (JSON/YAML): the space whose baselines set a robust mix's "
                        "references and whose probes rank the plan shortlist, and the limits each figure is held "
                        "to; default: the design's own cluster")
    p.add_argument("--design", "-d", required=True, metavar="FILE|PRESET",
                   help="design file (.json/.yaml) or preset name (fabric build --list-presets)")
    p.add_argument("--gpus", type=int, help="resize the design to this many GPUs")
    p.add_argument("--scenario", "-s", default="baseline",
                   help="scenario preset (baseline, fail-spine, fail-link, slow-switch, checkpoint-burst, "
                        "background-30, job-mix-shift, bigger-cluster, flaky-links, fragmented: the job's nodes "
                        "drawn at random, a fragmented cluster), a JSON/YAML file or inline JSON")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                   help=f"Monte Carlo samples (default {DEFAULT_SAMPLES}, as every page of the dashboard)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same result)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--calibration", metavar="FILE",
                   help="calibration profile from 'fabric calibrate --out' (fitted transport parameters)")
    p.add_argument("--scaling", action="store_true",
                   help="also report step throughput at N, 2N and 4N GPUs relative to linear (weak scaling)")
    p.add_argument("--life-years", type=float, default=4.0,
                   help="amortization of servers and network for the cost per step (default 4)")
    p.add_argument("--usd-per-kwh", type=float, default=0.08, help="electricity price (default 0.08 USD/kWh)")
    p.add_argument("--pue", type=float, default=1.3, help="facility power / IT power (default 1.3)")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--fixes", action="store_true",
                   help="with --json, also the cheapest single changes and the best free policy judged in the "
                        "context (the record's fixes, as the Design page and the brief show them; one evaluation "
                        "per change tried)")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.cli.common import plan_objective, workload_arg
    from fabric.cli.common import load_design_arg
    from fabric.evaluate import load_scenario
    from fabric.review import design_record, prepare_context

    catalog = catalog_arg(args.catalog)
    if args.robust and args.scenario != "baseline":
        from fabric.errors import FabricError

        raise FabricError("with --robust give the scenarios as --scenarios a,b,... (every case is judged under "
                          "each), not --scenario")
    workload = workload_arg(args)
    design = load_design_arg(args.design, args.gpus, catalog)
    scenario = load_scenario(args.scenario)
    check_samples(args.samples)
    overrides = calibration_arg(args.calibration)
    warn_calibration(args.calibration, design=design, catalog=catalog)
    objective = plan_objective(args, workload, catalog) or workload
    cons = _constraints_for(args, design)
    ctx = prepare_context(objective, cons, catalog=catalog, scenario=scenario, seed=args.seed, samples=args.samples,
                          transport_overrides=overrides, label=_label(args))
    record = design_record(design, ctx)       # every figure below: one record in one context (fabric.review)
    ev = record.evaluation
    workload = record.primary.workload
    from fabric.evaluate import scaling_efficiency
    from fabric.evaluate.innetwork import in_network_lines

    scaling = scaling_efficiency(design, workload, seed=args.seed, samples=args.samples, catalog=catalog,
                                 scenario=record.primary.scenario, transport_overrides=overrides) \
        if args.scaling else None
    from fabric.cost.economics import economics

    eco = economics(ev, design, catalog=catalog, params=cons.economics())
    warnings = _scaling_warnings(scaling)
    res = record.failures["primary"]
    from fabric.evaluate.whatif import not_applicable
    from fabric.topology import build_fabric

    why = not_applicable(scenario, build_fabric(design, catalog), workload)
    if args.json:
        from fabric.review.figures import figure_texts

        out = ev.to_dict()
        out["context"] = {"line": ctx.describe(), "key": ctx.key}
        out["scenario_not_applicable"] = why
        out["economics"] = eco
        out["resilience"] = res
        # the headline figures as every page, the brief and the report show them (the record's: fabric.review)
        out["figures"] = dict(record.figures)
        out["figure_texts"] = figure_texts({k: v for k, v in record.figures.items() if v is not None})
        from fabric.evaluate.explain import explain_step

        out["explanation"] = explain_step(ev)
        out["in_network"] = in_network_lines(ev.ops)
        if args.fixes:
            record.fixes                                # noqa: B018  (computed into the record below)
        out["record"] = record.to_dict()
        if scaling is not None:
            out["scaling"] = scaling
            out["scaling_warnings"] = warnings
        print(json.dumps(out, indent=2, default=float))
        return 0
    print(f"context: {ctx.describe()}")
    if record.robust:
        print(f"robust p99 step {record.p99_s * 1e3:,.2f} ms over {len(record.cases)} cases: "
              + "; ".join(f"{c.name} {c.figures['p99_s'] * 1e3:,.2f} ms" for c in record.cases)
              + f" (the figures below are {record.primary.name}'s)")
    if record.plan:
        print(f"plan: {record.plan['plan']} (best of {len(record.plan['tried'])} shortlisted plans)")
    st = ev.step_time_s
    ms = lambda x: f"{x * 1e3:,.2f} ms"  # noqa: E731
    scen = f"scenario {ev.scenario}" + (f" (not applicable: {why}; the figures are the healthy fabric's)"
                                        if why else "")
    print(f"{design.name} | {workload.name} | {scen} | {ev.samples} samples, seed {ev.seed}")
    serving_only = all(j.get("kind") != "training" for j in ev.jobs.values())
    label = "one request unloaded (critical path, no queueing)" if serving_only else "step time"
    print(f"{label}  p50 {ms(st['p50'])}  p95 {ms(st['p95'])}  p99 {ms(st['p99'])}  mean {ms(st['mean'])}")
    for name, m in ev.serving.items():
        for line in serving_lines(name, m):
            print(line)
    comm = {k: v for k, v in ev.lower_bound_split_s.items() if k != "compute"}
    bound_by = (f"communication bound by {ev.lower_bound_by}: "
                + ", ".join(f"{k} {ms(v)}" for k, v in sorted(comm.items(), key=lambda kv: -kv[1]))
                if comm else "no communication exposed")
    print(f"lower bound {ms(ev.lower_bound_s)} (compute {ms(ev.compute_s)}; {bound_by}); p99 is "
          f"{st['p99'] / ev.lower_bound_s:.2f}x the bound" if ev.lower_bound_s > 0 else "")
    print(f"network capex ${ev.cost_usd:,.0f}, power {ev.power_w / 1e3:,.1f} kW")
    print(f"cost per step ${eco['usd_per_step']:,.2f} (cluster ${eco['usd_per_hour']:,.0f}/h over "
          f"{args.life_years:g} years, PUE {args.pue:g}, ${args.usd_per_kwh:g}/kWh); GPUs wait on the network "
          f"{eco['gpu_idle_fraction_network']:.1%} of the p99 step (${eco['idle_usd_per_step']:,.2f} per step)")
    print("\nops (time per call; exposed = its share of the p99 step; bound = bandwidth-optimal time, and what "
          "binds it):")
    for o in ev.ops:
        print(f"  {o.kind:15s} {o.group:10s} {o.bytes / 1e6:10.2f} MB x{o.count_per_step:<8g} {o.algorithm:18s} "
              f"p50 {ms(o.time_p50_s):>12s}  p99 {ms(o.time_p99_s):>12s}  exposed {ms(o.exposed_in_p99_sample_s)}"
              f"  bound {ms(o.lower_bound_s)} ({o.bound_by})")
    if ev.hot_links:
        print("\nhottest link groups (utilization in the p99 sample / mean):")
        for h in ev.hot_links[:5]:
            print(f"  {h['links']:20s} e.g. {h['example']:10s} x{h['groups']:<5d} {h['p99_sample_utilization']:6.1%}"
                  f" / {h['mean_utilization']:6.1%}  ops: {', '.join(h['ops'][:3])}")
    if in_network_lines(ev.ops):
        print("\nin-network reduction (SHARP aggregation trees, docs/evaluator.md):")
        for line in in_network_lines(ev.ops):
            print(f"  {line}")
    if scaling:
        print("\nscaling (weak: data parallelism grows with the cluster):")
        for row in scaling:
            print(f"  {row['gpus']:8,d} GPUs  p50 {ms(row['step_p50_s']):>12s}  efficiency {row['efficiency_p50']:6.1%}"
                  f"  (p99 {row['efficiency_p99']:6.1%})  network ${row['cost_usd']:,.0f}")
    for note in ev.notes:
        print(f"note: {note}")
    from fabric.evaluate.explain import explain_step

    print(explain_step(ev)["sentence"])
    print(_resilience_line(res))
    for w in warnings:
        print(f"warning: {w}")
    return 0


def _constraints_for(args, design):
    """The constraints of the context: the file's (``--constraints``), at the design's cluster, or the design's own
    cluster (its GPU count, GPUs per server and GPU model) with every other field at its default, as ``fabric search
    --gpus N`` starts."""
    import dataclasses

    from fabric.search import Constraints, load_constraints

    fields = dict(gpus=design.gpus, gpus_per_node=design.gpus_per_node, gpu_model=design.gpu_model)
    if args.constraints:
        return dataclasses.replace(load_constraints(args.constraints), **fields)
    return Constraints(**fields)


def _label(args) -> str:
    from pathlib import Path

    groups = args.workload
    return ", ".join(Path(g[0]).name for g in groups)


def serving_lines(name: str, m: dict) -> list[str]:
    """The request-level latency of serving job ``name`` (fabric.evaluate.serving) as text lines."""
    ms = lambda x: f"{x * 1e3:,.1f} ms"  # noqa: E731
    t, p = m["ttft_s"], m["tpot_s"]
    budgets = ", ".join(f"{k} {ms(v)}" for k, v in (("TTFT", m["ttft_slo_s"]), ("TPOT", m["tpot_slo_s"]))
                        if v is not None)
    out = [f"\nserving {name}: {m['request_rate_per_s']:,.3g} requests/s, {m['load']:.0%} of the "
           f"{m['capacity_rps']:,.3g} it sustains ({m['replicas']} {m['mode']} replicas; "
           f"{m['requests_simulated']:,} requests simulated)",
           f"  time to first token  p50 {ms(t['p50'])}  p95 {ms(t['p95'])}  p99 {ms(t['p99'])}",
           f"  time per output token p50 {ms(p['p50'])}  p95 {ms(p['p95'])}  p99 {ms(p['p99'])}"]
    if m.get("slo_attainment") is not None:
        out.append(f"  SLO attainment {m['slo_attainment']:.1%} of requests within {budgets}")
    for key, what in (("p99_split_ttft_s", "p99 TTFT"), ("p99_split_tpot_s", "p99 TPOT")):
        sp = m[key]
        out.append(f"  {what}: " + ", ".join(f"{k[:-2]} {ms(v)}" for k, v in sp.items()))
    iso = m.get("isolated")
    if iso:
        names = ", ".join(c["name"] + f" ({c['active_fraction']:.1%} of the time)" for c in m["competitors"])
        out.append(f"  shares links with {names}; isolated (design field serving_class) its p99 TTFT would be "
                   f"{ms(iso['ttft_p99_s'])} ({ms(t['p99'] - iso['ttft_p99_s'])} less), p99 TPOT "
                   f"{ms(iso['tpot_p99_s'])} ({ms(p['p99'] - iso['tpot_p99_s'])} less)")
    else:
        out.append(f"  isolation: {m['isolation']}")
    if m.get("note"):
        out.append(f"  warning: {m['note']}")
    curve = m.get("latency_vs_load")
    if curve:
        out.append("  latency vs load:  " + "  ".join(f"{r['load']:.0%}: TTFT p99 {ms(r['ttft_p99_s'])} / TPOT p99 "
                                                      f"{ms(r['tpot_p99_s'])}" for r in curve[::2]))
    return out


def _resilience_line(r: dict) -> str:
    """The single-failure findings (fabric.failures.text, as the Design page and the brief say them)."""
    from fabric.failures.text import resilience_lines

    from fabric.units import time_text

    return "\n".join(f"resilience: {line}" for line in resilience_lines(r, time_text))


#: Scaling efficiency below this from N to the largest size tested is flagged (practitioners' alarm at 4x growth:
#: facts.md section 11).
SCALING_ALARM = 0.80


def _scaling_warnings(rows) -> list[str]:
    """A warning when the p99 scaling efficiency at the largest size falls below :data:`SCALING_ALARM`."""
    if not rows:
        return []
    last = rows[-1]
    if last["efficiency_p99"] < SCALING_ALARM:
        return [f"scaling efficiency from {rows[0]['gpus']:,} to {last['gpus']:,} GPUs is {last['efficiency_p99']:.0%} "
                f"at p99, below {SCALING_ALARM:.0%}: the network will not keep up with the cluster's growth"]
    return []

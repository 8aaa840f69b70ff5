"""Search quality on a space with issue 17's axes: GPU systems (scale-up domains), planes, a rack power limit.

The space (enumerable: every distinct design is evaluated once for the ground truth): an MoE plan whose expert-
parallel group is 64 (Mixtral-8x7B-style, 64 fine-grained experts, EP 64) on 1,152 GPUs; B200 HGX-8 nodes, GB200
NVL72 racks or NVL36x2 rack pairs; Clos, rail-optimized or rail-only; three switches, three NICs (one a 4 x 200G
multi-plane NIC), 1/2/4 planes, 1:1/2:1/4:1 at each tier, ECMP or adaptive routing, 1 or 4 QPs, RoCE or
InfiniBand, PXN, storage isolation and in-network reduction on or off; racks limited to 100 kW (NVL72's ~120 kW
racks break it: the constraint is active).

Exhaustive search gives the true front. NSGA-II and random search then run at the same budget (<= 10 % of the
distinct designs, counting the last generation) with the same Monte Carlo seed as the exhaustive run, so equal
designs get equal objectives. Reported per seed: hypervolume as a share of the exhaustive front's, and how many
of the exact front designs each run evaluated.

Hypervolume reference point. A hypervolume only says how close a front is to the true one when the reference
point sits just beyond the true front: the standard choice (e.g. Ishibuchi et al., "How to specify a reference
point in hypervolume calculation", EMO 2017) is the front's nadir plus a margin. Primary figures use 1.1 x the
exhaustive front's nadir (worst cost and worst p99 among front designs, normalised by the first baseline).
Also shown, for comparison with docs/search.md's older table, the exhaustive run's own reference (1.1 x the worst
of every feasible design): there the box far from the front dominates and any run near the corner scores ~99 %.

Both searches count only designs of the space (the genetic search runs without seeding the human baselines, so
it starts from random genomes too).

Part B (``--part b``): the whole space of issue 17's axes at 4,608 GPUs, far too large to enumerate: every family,
switch and NIC of the catalog, NICs per GPU 0.5/1/2, five oversubscriptions per tier, 1/2/4/8 planes, three
routings, four queue-pair counts, three transports, both placement rules, 1x/2x uplinks and the three GPU systems
(149,299,200 genomes) for the same MoE workload and rack limit, with a p99 target (``--p99-target``, default 0.5 s;
0 for none). The reference front is the best known: a genetic search of ``--reference-evals`` evaluations, polished
by a Pareto local search until no one-gene change of a front design improves it (1-opt), and the non-dominated
designs of everything evaluated (that and every run below). The genetic search and random search then get 10 % of
the reference run's evaluations each. Hypervolume with the best-known front's nadir x 1.1 as reference and, in
brackets, range-normalised (front from ideal to nadir on [0, 1], reference 1 + 1/(N - 1): Ishibuchi et al. 2018).

Part limits (``--part limits``): part A's space with a budget and/or p99 target a user would set.

Part mixed (``--part mixed``, issue 37): a mixed cluster of 4,096 H100 (an MoE training job whose expert all-to-all
crosses servers, a dense Llama-3-70B training job, Llama-3-70B online serving, weighted 0.4 / 0.4 / 0.2 and judged
job by job) with designs of regions allowed (:mod:`fabric.search.region_genes`); the same comparison as part B
(targets: GA >= 99 %, random < 90 % in every seed), then the designs of regions on the best-known front against the
cheapest uniform design at their p99, and the other way round.

Run: python benchmarks/bench_search_quality.py [--part a|b|both|limits|mixed] [--seeds 5] [--samples 256]
     [--reference-evals 8000] [--p99-target 0.5]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from fabric.search import Constraints, exhaustive_search, random_search, run_search  # noqa: E402
from fabric.search.result import hypervolume  # noqa: E402
from fabric.workload.presets import preset_workload  # noqa: E402

#: The figures of docs/ measure the genetic search at a fixed budget: it runs to the budget (not stopping on
#: convergence) and the recommendation's neighbourhood check (evaluations beyond the budget) is left out, so
#: searches compared at one budget spend the same (docs/search.md "Convergence").
FIXED_BUDGET = dict(stop_on_convergence=False, check_neighbourhood=False)

GPUS = 1152
SPACE = dict(gpus=GPUS, gpu_models=("b200", "gb200-nvl72", "gb200-nvl36x2"),
             families=("clos", "rail_optimized", "rail_only"),
             switch_models=("eth-51t-64x800", "eth-25t-64x400", "ib-xdr-144x800"),
             nic_models=("nic-eth-400", "nic-cx8-4x200", "nic-cx8-800"), nics_per_gpu=(1.0,),
             oversubscriptions=(1.0, 2.0, 4.0), planes=(1, 2, 4), routings=("ecmp", "adaptive"), qps=(1, 4),
             transports=("roce", "infiniband"), placements=("packed",), uplink_speed_factors=(1.0,),
             rack_power_w=100_000.0)
POP = 40
#: Part B: the whole space of the new axes (everything the catalog has, every ratio, planes up to 8) at 4,608 GPUs
#: (64 NVL72 racks' worth, 576 HGX-8 nodes)
GPUS_B = 4608
FULL = dict(gpus=GPUS_B, gpu_models=("b200", "gb200-nvl72", "gb200-nvl36x2"), nics_per_gpu=(0.5, 1.0, 2.0),
            oversubscriptions=(1.0, 1.5, 2.0, 3.0, 4.0), planes=(1, 2, 4, 8), qps=(1, 2, 4, 8),
            uplink_speed_factors=(1.0, 2.0), rack_power_w=100_000.0)


def workload(gpus: int = GPUS):
    return preset_workload("mixtral-8x7b", gpus=gpus, experts=64, ffn_hidden=1792, tp=1, ep=64)


def _points(records, norm):
    feas = [r for r in records if r["feasible"] and r.get("genome") is not None]
    return np.array([[r["cost_usd"], r["p99_s"]] for r in feas]) / np.asarray(norm) if feas else np.zeros((0, 2))


def _hv(records, norm, ref) -> float:
    F = _points(records, norm)
    return hypervolume(F, np.asarray(ref)) if F.size else 0.0


def _front(records) -> list:
    from fabric.search.result import pareto_mask

    feas = [r for r in records if r["feasible"] and r.get("genome") is not None]
    if not feas:
        return []
    mask = pareto_mask(np.array([[r["cost_usd"], r["p99_s"]] for r in feas]))
    return [r for r, k in zip(feas, mask) if k]


def _hv_range(records, ideal, nadir, r) -> float:
    """Hypervolume with both objectives scaled so the best-known front spans [0, 1] (ideal to nadir)."""
    feas = [x for x in records if x["feasible"] and x.get("genome") is not None]
    if not feas:
        return 0.0
    F = (np.array([[x["cost_usd"], x["p99_s"]] for x in feas]) - ideal) / np.where(nadir > ideal, nadir - ideal, 1.0)
    return hypervolume(F, np.full(2, r))


def part_b(seeds: int, samples: int, reference_evals: int, p99_target_s: float | None) -> None:
    wl, cons = workload(GPUS_B), Constraints(**FULL, p99_target_s=p99_target_s)
    limit = "no p99 target" if p99_target_s is None else f"p99 target {p99_target_s:g} s"
    _compare(wl, cons, f"B. whole space at {GPUS_B:,} GPUs, 100 kW racks, {limit}", seeds, samples, reference_evals,
             random_below=0.95)


class _Joined:
    """The records of a genetic search and of the Pareto local search that polished its front, as one run."""

    def __init__(self, *runs):
        self.records = list({r["key"]: r for run in runs for r in run.records}.values())
        self.evaluations = len(self.records)


def _compare(wl, cons, title: str, seeds: int, samples: int, reference_evals: int, *, random_below: float,
             budget: int | None = None, polish_evals: int = 0):
    """The best-known front (a long genetic search polished by Pareto local search, and everything evaluated) and,
    per seed, a genetic search and a random search at 10 % of the reference run's evaluations: hypervolumes."""
    from fabric.search.local import pareto_local_search
    from fabric.search.space import DesignSpace

    space = DesignSpace(cons, None, wl)
    t0 = time.perf_counter()
    ref_run = run_search(wl, cons, budget_evals=reference_evals, seed=1000, pop_size=POP, samples=samples,
                         eval_seed=0, seed_baselines=False, **FIXED_BUDGET)
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    polish = pareto_local_search(wl, cons, [r["genome"] for r in ref_run.front if r.get("genome") is not None],
                                 samples=samples, eval_seed=0)
    t_pol = time.perf_counter() - t0
    norm = np.asarray(ref_run.normalisation)
    if budget is None:
        budget = reference_evals // 10 - 2 * POP  # the last generation and the baselines' may add up to 2 x POP
    runs = []
    for s in range(seeds):
        t = time.perf_counter()
        ga = run_search(wl, cons, budget_evals=budget - polish_evals, seed=s, pop_size=POP, samples=samples, eval_seed=0,
                        reference_point=ref_run.reference_point, normalisation=ref_run.normalisation,
                        seed_baselines=False, **FIXED_BUDGET)
        if polish_evals:   # the front's one-gene neighbourhood with the rest of the budget (one round)
            pls = pareto_local_search(wl, cons, [r["genome"] for r in ga.front if r.get("genome") is not None],
                                      max_rounds=1, samples=samples, eval_seed=0)
            ga = _Joined(ga, pls)
        t_ga = time.perf_counter() - t
        t = time.perf_counter()
        n_ga = len({r["key"] for r in ga.records if r.get("genome") is not None})
        rnd = random_search(wl, cons, budget_evals=n_ga, seed=s, samples=samples, eval_seed=0)
        runs.append((s, ga, rnd, t_ga, time.perf_counter() - t))
    everything = {r["key"]: r for res in [ref_run, polish] + [x for _, g, r, _, _ in runs for x in (g, r)]
                  for r in res.records}
    best = _front(everything.values())
    keys = {r["key"] for r in best}
    F = _points(best, norm)
    ref = 1.1 * F.max(axis=0)
    full = _hv(best, norm, ref)
    P = np.array([[r["cost_usd"], r["p99_s"]] for r in best])
    ideal, nadir = P.min(axis=0), P.max(axis=0)
    r_ish = 1.0 + 1.0 / max(len(best) - 1, 1)
    full_rng = _hv_range(best, ideal, nadir, r_ish)
    feasible = sum(1 for r in everything.values() if r["feasible"])
    print(f"{title}: {space.size:,} genomes; reference genetic "
          f"search {ref_run.evaluations:,} evaluations ({t_ref:.0f} s), then Pareto local search from its front: "
          f"{polish.evaluations:,} designs in {polish.generations} rounds ({t_pol:.0f} s), {polish.stopped_because}")
    print(f"   {len(everything):,} distinct designs evaluated in all ({feasible:,} feasible); best-known front "
          f"{len(best)} designs, ${ideal[0] / 1e6:.2f}-{nadir[0] / 1e6:.2f} M, p99 {ideal[1]:.4f}-{nadir[1]:.4f} s; "
          f"the reference run alone reaches {_hv(ref_run.records, norm, ref) / full:.2%}")
    for r in sorted(best, key=lambda x: x["cost_usd"]):
        print(f"     ${r['cost_usd'] / 1e6:6.2f} M  p99 {r['p99_s']:.4f} s  {r['gpu_model']}, "
              + (r["design"] if r["family"] == "regions" else
                 f"{r['family']}, {r['switch_model']}, {r['nic_model']} x {r['nics_per_gpu']:g}, "
                 f"{int(r['planes'])} plane(s), {r['tiers']} tiers, {r['routing']}"))
    print(f"   budget {budget:,} evaluations per run (the last generation may add up to {POP}; <= 10 % of the "
          f"reference run's); hypervolume in % of the best-known front's: reference at its nadir x 1.1 "
          f"[and range-normalised, reference {r_ish:.3f} (Ishibuchi et al. 2018)]")
    print(f"   {'seed':>4s} {'GA evals':>8s} {'GA HV %':>17s} {'random HV %':>17s} {'GA on best front':>16s} "
          f"{'random on it':>12s} {'GA s':>5s} {'rnd s':>5s}")
    rows = []
    for s, ga, rnd, t_ga, t_rn in runs:
        g = [r for r in ga.records if r.get("genome") is not None]
        q = [r for r in rnd.records if r.get("genome") is not None]
        row = (_hv(g, norm, ref) / full, _hv(q, norm, ref) / full, len(keys & {r["key"] for r in g}),
               len(keys & {r["key"] for r in q}), _hv_range(g, ideal, nadir, r_ish) / full_rng,
               _hv_range(q, ideal, nadir, r_ish) / full_rng, len(g))
        rows.append(row)
        print(f"   {s:4d} {len(g):8,d} {row[0]:8.2%} [{row[4]:6.2%}] {row[1]:8.2%} [{row[5]:6.2%}] {row[2]:>8d} of "
              f"{len(best):<4d} {row[3]:>5d} of {len(best):<4d} {t_ga:5.0f} {t_rn:5.0f}", flush=True)
    for k, name in ((0, "nadir x 1.1"), (4, "range-normalised")):
        ga_hv, rn_hv = [r[k] for r in rows], [r[k + 1] for r in rows]
        print(f"   {name}: GA {min(ga_hv):.2%}-{max(ga_hv):.2%} (mean {np.mean(ga_hv):.2%}), random "
              f"{min(rn_hv):.2%}-{max(rn_hv):.2%} (mean {np.mean(rn_hv):.2%}); targets: GA >= 99 % in every seed: "
              f"{all(h >= 0.99 for h in ga_hv)}, random < {random_below:.0%} in every seed: "
              f"{all(h < random_below for h in rn_hv)}")
    print(f"   GA evaluations <= 10 % of the reference run's: "
          f"{all(r[6] <= 0.10 * ref_run.evaluations for r in rows)}", flush=True)
    return everything, best


#: Issue 37's mixed cluster: 4,096 H100 shared by an MoE training job whose expert all-to-all crosses servers
#: (Mixtral-8x7B, TP 2 x EP 8: each expert group spans two servers), a dense Llama-3-70B training job and
#: Llama-3-70B online serving, judged job by job (fabric.search.robust.job_mix_objective, weighted mean).
MIXED = dict(gpus=4096, families=("clos", "rail_optimized", "regions"),
             switch_models=("ib-ndr-64x400", "eth-51t-64x800"), nic_models=("nic-cx7-400", "nic-eth-400"),
             oversubscriptions=(1.0, 1.5, 2.0, 3.0, 4.0), planes=(1, 2), qps=(1, 4))


def mixed_objective():
    """The mixed cluster's workload (fabric.workload.mixed) and its job-by-job objective."""
    from fabric.search.robust import job_mix_objective
    from fabric.workload.mixed import mixed_cluster_weights, mixed_cluster_workload

    wl = mixed_cluster_workload()
    return wl, job_mix_objective(wl, mixed_cluster_weights(), mode="mean")


def part_mixed(seeds: int, samples: int, reference_evals: int, p99_target_s: float | None = None,
               budget: int | None = None, polish: int = 0) -> None:
    """Issue 37, item 5: the mixed cluster with designs of regions allowed (and a robust p99 target)."""
    wl, obj = mixed_objective()
    cons = Constraints(**MIXED, p99_target_s=p99_target_s)
    limit = "no p99 target" if p99_target_s is None else f"robust p99 target {p99_target_s:g} s"
    everything, best = _compare(obj, cons, "Mixed cluster (issue 37): 4,096 H100, MoE + dense training + serving, "
                                f"regions allowed, {limit}" + ("; the genetic search's front polished by one round "
                                                               "of Pareto local search" if polish else ""),
                                seeds, samples, reference_evals, random_below=0.90, budget=budget,
                                polish_evals=polish)
    feas = [r for r in everything.values() if r["feasible"]]
    region = [r for r in best if r["family"] == "regions"]
    print(f"   designs of regions on the best-known front: {len(region)} of {len(best)}")
    for r in sorted(region, key=lambda x: x["cost_usd"]):
        uni = [u for u in feas if u["family"] != "regions" and u["p99_s"] <= r["p99_s"] * 1.005]
        u = min(uni, key=lambda x: x["cost_usd"]) if uni else None
        print(f"     {r['design']}: ${r['cost_usd'] / 1e6:.2f} M, {r['power_w'] / 1e3:.0f} kW, robust p99 "
              f"{r['p99_s']:.4f} s, per job " + ", ".join(f"{k.split('|')[0]} {v:.3f} s" for k, v in
                                                        r["p99_by_case"].items()))
        if u is not None:
            print(f"       cheapest uniform design at this p99 or better: {u['design']}: ${u['cost_usd'] / 1e6:.2f} M "
                  f"({u['cost_usd'] / r['cost_usd'] - 1:+.1%}), {u['power_w'] / 1e3:.0f} kW, robust p99 "
                  f"{u['p99_s']:.4f} s, per job " + ", ".join(f"{k.split('|')[0]} {v:.3f} s" for k, v in
                                                            u["p99_by_case"].items()))
    uniform_best = [r for r in best if r["family"] != "regions"]
    for u in sorted(uniform_best, key=lambda x: x["cost_usd"])[:3]:
        reg = [r for r in feas if r["family"] == "regions" and r["p99_s"] <= u["p99_s"] * 1.005]
        g = min(reg, key=lambda x: x["cost_usd"]) if reg else None
        if g is not None:
            print(f"     uniform {u['design']} (${u['cost_usd'] / 1e6:.2f} M, p99 {u['p99_s']:.4f} s): the cheapest "
                  f"design of regions at its p99 costs ${g['cost_usd'] / 1e6:.2f} M ({g['cost_usd'] / u['cost_usd'] - 1:+.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["a", "b", "both", "limits", "mixed"], default="both",
                    help="limits: part A's space with a budget and/or p99 target at quantiles of the feasible designs")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--reference-evals", type=int, default=8_000)
    ap.add_argument("--p99-target", type=float, default=0.5,
                    help="part B's p99 step target in seconds (0: none); 0.5 s asks for rack-scale-domain step times")
    ap.add_argument("--mixed-p99-target", type=float, default=0.0,
                    help="part mixed: a robust p99 target in seconds (0: none)")
    ap.add_argument("--mixed-budget", type=int, default=0,
                    help="part mixed: evaluations per run (0: 10 %% of the reference run's, less two populations)")
    ap.add_argument("--polish", type=int, default=0,
                    help="part mixed: evaluations of the run's budget kept for one round of Pareto local search from "
                         "the genetic search's front (random search gets as many evaluations as both used)")
    args = ap.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores", flush=True)
    if args.part in ("a", "both"):
        part_a(args.seeds, args.samples)
    if args.part in ("b", "both"):
        part_b(args.seeds, args.samples, args.reference_evals, args.p99_target or None)
    if args.part == "limits":
        part_limits(args.seeds, args.samples)
    if args.part == "mixed":
        part_mixed(args.seeds, args.samples, args.reference_evals, args.mixed_p99_target or None,
                   args.mixed_budget or None, args.polish)


def part_limits(seeds: int, samples: int) -> None:
    """Part A's space with the limits a user would set: a budget (USD) and a p99 target at quantiles of the
    feasible designs' cost and p99. The exact front is that of the designs meeting the limits (from the exhaustive
    records); each run is judged against it (reference 1.1 x its nadir). Runs after the exhaustive one hit the
    in-process evaluation cache, so they cost little."""
    from fabric.search.result import pareto_mask

    wl = workload()
    ex = exhaustive_search(wl, Constraints(**SPACE), samples=samples)
    n, norm = ex.evaluations, np.asarray(ex.normalisation)
    feas = [r for r in ex.records if r["feasible"] and r.get("genome") is not None]
    cost, p99 = np.array([r["cost_usd"] for r in feas]), np.array([r["p99_s"] for r in feas])
    budget = n // 10 - POP
    print(f"space: {n:,} distinct designs, {len(feas):,} feasible; budget {budget} evaluations per run")
    for bq, pq in [(None, None), (None, 0.5), (0.5, None), (0.5, 0.5), (None, 0.25), (0.5, 0.1)]:
        b = None if bq is None else float(np.quantile(cost, bq))
        p = None if pq is None else float(np.quantile(p99, pq))
        cons = Constraints(**SPACE, budget_usd=b, p99_target_s=p)
        ok = [r for r in feas if (b is None or r["cost_usd"] <= b) and (p is None or r["p99_s"] <= p)]
        F = _points(ok, norm)
        mask = pareto_mask(F)
        front = [r for r, k in zip(ok, mask) if k]
        keys, ref = {r["key"] for r in front}, 1.1 * F[mask].max(axis=0)
        full = _hv(front, norm, ref)
        rows = []
        for s in range(seeds):
            ga = run_search(wl, cons, budget_evals=budget, seed=s, pop_size=POP, samples=samples, eval_seed=0,
                            reference_point=ex.reference_point, normalisation=ex.normalisation,
                            seed_baselines=False, **FIXED_BUDGET)
            rnd = random_search(wl, cons, budget_evals=ga.evaluations, seed=s, samples=samples, eval_seed=0)
            g = [r for r in ga.records if r.get("genome") is not None]
            q = [r for r in rnd.records if r.get("genome") is not None]
            rows.append((len(g), _hv(g, norm, ref) / full, _hv(q, norm, ref) / full, len(keys & {r["key"] for r in g}),
                         len(keys & {r["key"] for r in q})))
        lim = (f"budget {'-' if b is None else f'${b / 1e6:.1f} M'}, p99 target "
               f"{'-' if p is None else f'{p:.3f} s'}")
        print(f"{lim}: {len(ok):,} feasible, exact front {len(front)}; per seed GA evals / GA HV / random HV "
              f"(front designs found GA, random): " + "; ".join(
                  f"{e} / {a:.2%} / {c:.2%} ({x}, {y})" for e, a, c, x, y in rows)
              + f"; mean GA {np.mean([r[1] for r in rows]):.2%}, random {np.mean([r[2] for r in rows]):.2%}",
              flush=True)


def part_a(seeds: int, samples: int) -> None:
    wl, cons = workload(), Constraints(**SPACE)
    t0 = time.perf_counter()
    ex = exhaustive_search(wl, cons, samples=samples)
    t_ex = time.perf_counter() - t0
    n = ex.evaluations
    norm = np.asarray(ex.normalisation)
    front = [r for r in ex.front if r.get("genome") is not None]
    front_keys = {r["key"] for r in front}
    F = _points(front, norm)
    ref_front = 1.1 * F.max(axis=0)                 # the true front's nadir plus 10 %
    ref_all = np.asarray(ex.reference_point)        # the exhaustive run's: 1.1 x the worst feasible design
    full_front, full_all = _hv(front, norm, ref_front), _hv(front, norm, ref_all)
    feas = sum(1 for r in ex.records if r["feasible"])
    rack = sum(1 for r in ex.records if r["buildable"] and r["violations"].get("rack_power", 0) > 0)
    kinds = sorted({r["gpu_model"] for r in front})
    print(f"space: {n:,} distinct designs ({feas:,} feasible, {rack:,} over the 100 kW rack limit), exhaustive "
          f"{t_ex:.0f} s; exact front {len(front)} designs (systems {', '.join(kinds)}; planes "
          f"{sorted({int(r['planes']) for r in front})})")
    budget = n // 10 - POP           # the last generation may add up to one population past the budget
    print(f"budget {budget:,} evaluations per run (<= {(budget + POP) / n:.1%} of the space with the last "
          f"generation); hypervolume in % of the exhaustive front's, reference at its nadir x 1.1 "
          f"[and at 1.1 x the worst feasible design]")
    print(f"{'seed':>4s} {'GA evals':>9s} {'GA HV %':>17s} {'random HV %':>17s} {'GA exact front':>15s} "
          f"{'random exact':>13s} {'GA s':>6s} {'rnd s':>6s}")
    rows = []
    for s in range(seeds):
        t = time.perf_counter()
        ga = run_search(wl, cons, budget_evals=budget, seed=s, pop_size=POP, samples=samples, eval_seed=0,
                        reference_point=ex.reference_point, normalisation=ex.normalisation, seed_baselines=False,
                        **FIXED_BUDGET)
        t_ga = time.perf_counter() - t
        t = time.perf_counter()
        rnd = random_search(wl, cons, budget_evals=ga.evaluations, seed=s, samples=samples, eval_seed=0)
        t_rn = time.perf_counter() - t
        ga_recs = [r for r in ga.records if r.get("genome") is not None]
        rn_recs = [r for r in rnd.records if r.get("genome") is not None]
        row = dict(seed=s, ga_evals=len(ga_recs), rn_evals=len(rn_recs),
                   ga=_hv(ga_recs, norm, ref_front) / full_front, rn=_hv(rn_recs, norm, ref_front) / full_front,
                   ga_all=_hv(ga_recs, norm, ref_all) / full_all, rn_all=_hv(rn_recs, norm, ref_all) / full_all,
                   ga_found=len(front_keys & {r["key"] for r in ga_recs}),
                   rn_found=len(front_keys & {r["key"] for r in rn_recs}))
        rows.append(row)
        print(f"{s:4d} {row['ga_evals']:5,d} ({row['ga_evals'] / n:.1%}) {row['ga']:7.2%} [{row['ga_all']:6.2%}] "
              f"{row['rn']:7.2%} [{row['rn_all']:6.2%}] {row['ga_found']:>7d} of {len(front):<4d} "
              f"{row['rn_found']:>5d} of {len(front):<4d} {t_ga:6.0f} {t_rn:6.0f}", flush=True)
    ga_hv, rn_hv = [r["ga"] for r in rows], [r["rn"] for r in rows]
    print(f"GA: {min(ga_hv):.2%}-{max(ga_hv):.2%} (mean {np.mean(ga_hv):.2%}) of the exact front's hypervolume, "
          f"{min(r['ga_found'] for r in rows)}-{max(r['ga_found'] for r in rows)} of {len(front)} exact front "
          f"designs; random at the same budget: {min(rn_hv):.2%}-{max(rn_hv):.2%} (mean {np.mean(rn_hv):.2%}), "
          f"{min(r['rn_found'] for r in rows)}-{max(r['rn_found'] for r in rows)} found")
    print(f"targets: GA >= 99 % in every seed: {all(h >= 0.99 for h in ga_hv)}; random < 95 % in every seed: "
          f"{all(h < 0.95 for h in rn_hv)}; GA evaluations <= 10 %: "
          f"{all(r['ga_evals'] <= 0.10 * n for r in rows)}")


if __name__ == "__main__":
    main()

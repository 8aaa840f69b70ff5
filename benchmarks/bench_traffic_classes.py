"""Policies per traffic class (issue 37, item 3): what a serving class's priority and a class routed its own way do to
the serving tail and to training on shared links.

The case: Llama-3-70B-style training (256 GPUs) beside disaggregated Llama-3-70B serving (256 GPUs; each request's
320 MiB KV cache crosses the scale-out network) on a 3:1 Clos of 64 x 400G InfiniBand switches, ECMP with 1 queue
pair, on a fragmented cluster (the scenario ``fragmented``) so that both jobs cross the same leaf uplinks. Printed per
policy: the training job's p99 step, the service's p99 TTFT and TPOT and its SLO attainment.

Run: python benchmarks/bench_traffic_classes.py [--samples 256]
"""

from __future__ import annotations

import argparse

from fabric.design import Design
from fabric.evaluate import evaluate, load_scenario
from fabric.workload.ingest import combine_workloads
from fabric.workload.presets import preset_workload

POLICIES = (
    ("shared (no class)", {}),
    ("class, strict priority", {"serving_class": True}),
    ("class, weighted 0.8", {"serving_class": True, "serving_priority": "weighted", "serving_weight": 0.8}),
    ("class, weighted 0.6", {"serving_class": True, "serving_priority": "weighted", "serving_weight": 0.6}),
    ("serving routed adaptive", {"serving_routing": "adaptive"}),
    ("everything adaptive", {"routing": "adaptive"}),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=256)
    args = ap.parse_args()
    wl = combine_workloads([preset_workload("llama3-70b", gpus=256), preset_workload("llama3-70b-disagg", gpus=256)])
    base = Design(name="shared", gpus=512, family="clos", oversubscription=(3.0, 1.0))
    sc = load_scenario("fragmented")
    print(f"{'policy':26s} {'training p99 s':>15s} {'TTFT p99 ms':>12s} {'TPOT p99 ms':>12s} {'SLO met':>8s}")
    for name, kw in POLICIES:
        ev = evaluate(base.replace(**kw), wl, sc, samples=args.samples)
        s = next(iter(ev.serving.values()))
        att = s.get("slo_attainment")
        print(f"{name:26s} {ev.jobs['llama3-70b']['step_time_s']['p99']:15.4f} {s['ttft_s']['p99'] * 1e3:12.2f} "
              f"{s['tpot_s']['p99'] * 1e3:12.3f} {'' if att is None else f'{att:.1%}':>8s}")


if __name__ == "__main__":
    main()

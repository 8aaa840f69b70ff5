"""Per-flow ECMP against switch-computed paths on the small RoCE testbed of the Tolly report (issue 36, item 4).

The testbed as the issue describes it: 8 servers x 8 H100, 8 x 400GE per server, four leaves and two spines with
8 x 400GE between each leaf-spine pair, NCCL's ring all-reduce of 4 GB with NCCL's default queue pairs (1) and
channels (2 per NIC: ``fabric.evaluate.channels``). Published busbw: 389.06 GB/s with switch-computed paths (NSLB),
253.32 GB/s with per-flow hashing (ratio 1.536). fabric builds it from the catalog's 32 x 400GE switch (16 down, 16
up per leaf; two spines of 32 ports, so 8 cables per leaf-spine pair) and prints busbw = 2 (n - 1) / n x size / time
for ECMP, computed paths and adaptive routing, with what sets the ECMP time: how many flows leave each leaf and the
busiest uplink's flows.

Run: python benchmarks/bench_testbed_ecmp.py [--samples 256]
"""

from __future__ import annotations

import argparse

from fabric.design import Design
from fabric.evaluate import evaluate
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

SIZE = 4 * 2 ** 30
PUBLISHED = {"ecmp": 253.32, "computed": 389.06}


def testbed(routing: str) -> Design:
    return Design(name=f"testbed-{routing}", family="clos", gpus=64, gpu_model="h100-sxm", nic_model="nic-eth-400",
                  switch_model="eth-12t-32x400", transport="roce", routing=routing, qps_per_connection=1,
                  oversubscription=(1.0, 1.0), placement="packed")


def workload() -> Workload:
    group = ProcessGroup(name="world", size=64, role="dp", rank_start=0, rank_stride=1)
    op = CommOp(kind="all_reduce", bytes=SIZE, group="world", count_per_step=1.0)
    return Workload(jobs=(Job(name="nccl-tests", kind="training", world_size=64, groups=(group,), ops=(op,),
                              compute_time_s=0.0),))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=256)
    args = ap.parse_args()
    wl = workload()
    for routing in ("ecmp", "computed", "adaptive"):
        d = testbed(routing)
        fab = build_fabric(d)
        ev = evaluate(d, wl, samples=args.samples, algorithms={"all_reduce": "ring"})
        op = ev.ops[0]
        bus = {q: 2 * 63 / 64 * SIZE / getattr(op, q) / 1e9 for q in ("time_p50_s", "time_p99_s")}
        pub = PUBLISHED.get(routing)
        print(f"{routing:9s} switches {fab.switch_counts()}: busbw p50 {bus['time_p50_s']:.1f} GB/s, p99 "
              f"{bus['time_p99_s']:.1f}" + (f"; published {pub:.2f} ({bus['time_p50_s'] / pub - 1:+.1%})" if pub else ""))
        if routing == "ecmp":
            for h in ev.hot_links[:2]:
                print(f"    {h['links']}: {h['groups']} groups of {h['links_per_group']} links, busiest link in the "
                      f"p99 sample at {h['p99_sample_utilization']:.0%}, mean {h['mean_utilization']:.0%}")
            for q in (2, 4):        # more flows per NIC pair: more balls on the same uplinks, a smaller busiest share
                op_q = evaluate(d.replace(qps_per_connection=q), wl, samples=args.samples,
                                algorithms={"all_reduce": "ring"}).ops[0]
                print(f"    with {q} queue pairs per connection ({2 * q} flows per NIC pair): busbw p50 "
                      f"{2 * 63 / 64 * SIZE / op_q.time_p50_s / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()

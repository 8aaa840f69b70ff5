"""Per-flow ECMP against switch-computed paths on the small RoCE testbed of the Tolly report (issue 36, item 4).

The testbed as the issue describes it: 8 servers x 8 H100, 8 x 400GE per server, four leaves and two spines with
8 x 400GE between each leaf-spine pair, NCCL's ring all-reduce of 4 GB with NCCL's default queue pairs (1) and
channels (16 on an 8-NIC Hopper node, 2 per NIC: ``fabric.evaluate.channels``). Published busbw: 389.06 GB/s with
switch-computed paths (NSLB), 253.32 GB/s with per-flow hashing (ratio 1.536).

The description fixes the switches and cables but not which server port goes to which leaf, and that decides
which ring flows cross the spines. fabric builds the three ways 64 ports fit on four 16-port-down leaves (the
catalog's 32 x 400GE switch, 16 down and 16 up, two spines of 32 ports: 8 cables per leaf-spine pair):

- ``rail groups``: rail-optimized in units of 4 servers, each leaf takes 4 rails of one unit (rails 0-3 of servers
  0-3 on leaf 0, rails 4-7 on leaf 1, the same for servers 4-7 on leaves 2-3: ``rails_per_leaf: 4,
  nodes_per_su: 4``). The ring's hops 3 -> 4 and 7 -> 0 cross the spines: 8 flows per leaf each way.
- ``top of rack``: two whole servers per leaf (family ``clos``). Hops 1 -> 2, 3 -> 4, 5 -> 6, 7 -> 0 cross:
  16 flows per leaf each way.
- ``2 rails x 8 servers``: each leaf takes 2 rails of every server (``rails_per_leaf: 2``). A ring stays on its
  rail, so no ring flow crosses a spine and hashing cannot matter: this reading cannot show any gap.

busbw = 2 (n - 1) / n x size / time at the median and 99th-percentile launch (a launch is one hash draw: every
iteration of nccl-tests reuses the same queue pairs), with what sets the ECMP time.

Run: python benchmarks/bench_testbed_ecmp.py [--samples 256]
"""

from __future__ import annotations

import argparse

import numpy as np

from fabric.design import Design
from fabric.evaluate import evaluate
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

SIZE = 4 * 2 ** 30
PUBLISHED = {"ecmp": 253.32, "computed": 389.06}
LAYOUTS = {
    "rail groups": {"family": "rail_optimized", "rails_per_leaf": 4, "nodes_per_su": 4},
    "top of rack": {"family": "clos"},
    "2 rails x 8 servers": {"family": "rail_optimized", "rails_per_leaf": 2},
}


def testbed(routing: str, layout: str = "rail groups") -> Design:
    """The Tolly testbed under one reading of its cabling (``LAYOUTS``) and one routing policy."""
    return Design(name=f"testbed-{layout}-{routing}", gpus=64, gpu_model="h100-sxm", nic_model="nic-eth-400",
                  switch_model="eth-12t-32x400", transport="roce", routing=routing, qps_per_connection=1,
                  oversubscription=(1.0, 1.0), placement="packed", **LAYOUTS[layout])


def workload() -> Workload:
    """nccl-tests' all_reduce_perf of 4 GB over all 64 GPUs."""
    group = ProcessGroup(name="world", size=64, role="dp", rank_start=0, rank_stride=1)
    op = CommOp(kind="all_reduce", bytes=SIZE, group="world", count_per_step=1.0)
    return Workload(jobs=(Job(name="nccl-tests", kind="training", world_size=64, groups=(group,), ops=(op,),
                              compute_time_s=0.0),))


def busbw_gbs(design: Design, wl: Workload, samples: int) -> dict:
    """Bus bandwidth in GB/s at the median and 99th-percentile launch, and the evaluation."""
    ev = evaluate(design, wl, samples=samples, algorithms={"all_reduce": "ring"})
    op = ev.ops[0]
    return {"p50": 2 * 63 / 64 * SIZE / op.time_p50_s / 1e9, "p99": 2 * 63 / 64 * SIZE / op.time_p99_s / 1e9,
            "ev": ev}


def crossing_flows(design: Design) -> int:
    """Ring flows leaving the busiest leaf for another leaf, from the built fabric: on every channel GPU r of node
    i sends to GPU r of node i + 1 through their NICs (a rail), and NCCL opens 2 channels per NIC."""
    fab = build_fabric(design)
    nics = fab.gpu_nics[:, 0] - fab.nic_base
    leaf = fab.nic_ports[nics, 0].reshape(-1, design.gpus_per_node)        # [node, rail] -> leaf switch node
    nxt = np.roll(leaf, -1, axis=0)
    crossing = leaf != nxt
    out = np.bincount(leaf[crossing], minlength=int(leaf.max()) + 1) * 2
    return int(out.max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=256)
    args = ap.parse_args()
    wl = workload()
    for layout in LAYOUTS:
        print(f"{layout}:")
        for routing in ("ecmp", "computed", "adaptive"):
            d = testbed(routing, layout)
            fab = build_fabric(d)
            bus = busbw_gbs(d, wl, args.samples)
            pub = PUBLISHED.get(routing)
            print(f"  {routing:9s} switches {fab.switch_counts()}: busbw p50 {bus['p50']:.1f} GB/s, p99 "
                  f"{bus['p99']:.1f}" + (f"; published {pub:.2f} ({bus['p50'] / pub - 1:+.1%})" if pub else ""))
            if routing == "ecmp":
                print(f"    ring flows leaving the busiest leaf for another: {crossing_flows(d)} over "
                      f"{fab.structure.get('leaf_up')} uplinks (a NIC's 2 channels each need half its port, so "
                      f"a link slows the ring only when it carries 3 or more)")
                for h in bus["ev"].hot_links[:2]:
                    print(f"    {h['links']}: {h['groups']} groups of {h['links_per_group']} links, busiest link "
                          f"in the p99 sample at {h['p99_sample_utilization']:.0%}, mean {h['mean_utilization']:.0%}")


if __name__ == "__main__":
    main()

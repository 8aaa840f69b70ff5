"""Issue 34, item 9: blast radius, not only partition.

- the NVLink detour: a GPU whose own NIC lost its rail leaf sends through its server's other NICs (NCCL's PXN path),
  evaluated against hand-computed loads and step times (2 servers x 8 GPUs x 8 rails, one rail leaf down);
- GPUs lost on the worst single switch failure, counted by hand at 1,024 GPUs for rail-only, rail-optimized and a
  top-of-rack fat tree, with and without the detour; the SuperPOD-style baseline at 256 GPUs survives;
- the limits (GPUs lost as a count or a share, the p99 slowdown under the worst failure) exclude designs, are
  worded, read from a limits file and the command line;
- the front, the baselines and the recommendation carry the figures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fabric.design import Design
from fabric.evaluate import Scenario, evaluate
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

ROOT = Path(__file__).resolve().parent.parent


def _sample(name):
    from fabric.workload.model import load_workload_json

    return load_workload_json((ROOT / "sample_traces" / name).read_text())


def _pairs_exchange(size: int) -> Workload:
    """16 GPUs in 2 servers: GPU r of server 0 all-reduces with GPU r of server 1 (8 rail-aligned pairs)."""
    g = ProcessGroup("dp", 2, "dp", rank_start=0, rank_stride=8)
    return Workload(jobs=(Job("j", world_size=16, groups=(g,), ops=(CommOp("all_reduce", size, "dp"),),
                              compute_time_s=0.0),))


TWO_SERVERS = [Design(name="rail-opt pxn", family="rail_optimized", gpus=16, pxn=True, routing="adaptive"),
               Design(name="rail-opt", family="rail_optimized", gpus=16, pxn=False, routing="adaptive"),
               Design(name="rail-only", family="rail_only", gpus=16, routing="adaptive")]


# ------------------------------------------------------------------ the detour, by hand

@pytest.mark.parametrize("design", TWO_SERVERS, ids=lambda d: d.name)
def test_a_rail_leaf_down_loads_the_surviving_nics_eight_sevenths(design):
    # 2 servers x 8 GPUs, NIC r of both servers on rail leaf r. GPU r of server 0 exchanges 1 byte per op byte with
    # GPU r of server 1. leaf3 down: NIC 3 of both servers is dead, so GPU 3's byte leaves through the 7 other NICs
    # of its server (1/7 each) and arrives on the 7 other NICs of the other server: every surviving NIC carries its
    # own byte and 1/7: 8/7. GPU 3 sends its byte over NVLink before the network and GPU 11 receives it over NVLink
    # after it: 1 + 1 = 2 bytes per op byte of NVLink hops in series.
    from fabric.evaluate.network_models import switch_labels
    from fabric.evaluate.flows import NetPhase
    from fabric.evaluate.network import NetworkModel, phase_load

    fab = build_fabric(design)
    assert fab.design.nics_per_node == 8 and fab.n_gpus == 16
    src = np.r_[np.arange(8), np.arange(8) + 8]
    dst = np.r_[np.arange(8) + 8, np.arange(8)]
    phase = NetPhase(src, dst, np.ones(16), 1)
    healthy = phase_load(phase, NetworkModel.build(fab), qps=1, pxn=design.pxn, routing=design.routing)
    model = NetworkModel.build(fab, failed_switches=[switch_labels(fab)["leaf3"]])
    assert model.dead_nic is not None and np.flatnonzero(model.dead_nic).tolist() == [3, 11]
    failed = phase_load(phase, model, qps=1, pxn=design.pxn, routing=design.routing)
    assert healthy.nic_max == pytest.approx(1.0) and healthy.forward_nvlink == 0.0
    assert failed.nic_max == pytest.approx(8 / 7, rel=1e-12)
    assert failed.forward_nvlink == pytest.approx(2.0, rel=1e-12)
    if design.pxn or design.family == "rail_only":
        assert failed.hops == 1 and not failed.classes      # PXN keeps each part on one rail: leaf-local
    else:
        assert failed.hops == 3                             # the spines join a dead rail's parts to other rails


@pytest.mark.parametrize("size", [64 << 20, 256 << 20])
def test_the_step_under_a_rail_leaf_failure_by_hand(size):
    # The same exchange as a 2-rank ring all-reduce of S bytes (each rank sends S, NIC-bound): the failure adds a
    # seventh of the NIC time and the two NVLink hops, S (1/(7 B_nic) + 2/B_nvlink), plus one NVLink latency per
    # network step (2 steps), with B_nic = 400 Gb/s x the transport's efficiency and B_nvlink = 450 GB/s x its.
    from fabric.evaluate.transport import profile_for

    d = TWO_SERVERS[0]
    prof = profile_for(d)
    wl = _pairs_exchange(size)
    healthy = evaluate(d, wl, Scenario(), samples=32).step_time_s["p99"]
    failed = evaluate(d, wl, Scenario(name="leaf3 down", fail_switches=("leaf3",)), samples=32).step_time_s["p99"]
    b_nic = 400e9 / 8 * prof.bandwidth_efficiency
    b_nv = 3600e9 / 8 * prof.nvlink_efficiency
    want = size * (1 / (7 * b_nic) + 2 / b_nv) + 2 * prof.nvlink_alpha_s
    assert failed - healthy == pytest.approx(want, rel=1e-9)


def test_a_top_of_rack_leaf_still_cannot_be_failed_in_the_evaluator():
    from fabric.errors import DesignError

    with pytest.raises(DesignError, match="holding every NIC port of its servers"):
        evaluate(Design(gpus=256), _sample("mixtral-8x7b.json"), Scenario(name="x", fail_switches=("leaf0",)),
                 samples=16)


# ------------------------------------------------------------------ GPUs lost, by hand, at 1,024 GPUs

def test_gpus_lost_by_hand_at_1024_gpus():
    from fabric.failures.resilience import failure_analysis
    from fabric.search import Constraints, DesignSpace
    from fabric.search.baselines import baseline_designs

    # rail-only 3:1 on 64-port switches, one 400G NIC per GPU: a rail leaf has 48 downlinks, so rail r of the 128
    # servers takes 3 leaves (48 + 48 + 32). leaf0 holds NIC 0 of servers 0-47: GPU 0 of 48 servers has no NIC of
    # its own. Without the detour those 48 servers leave the job (384 of 1,024 GPUs: the issue's figure); with it
    # they send through their 7 other NICs and nobody leaves.
    rail_only = build_fabric(Design(family="rail_only", gpus=1024, oversubscription=(3.0, 1.0)))
    old, new = failure_analysis(rail_only, detour=False), failure_analysis(rail_only)
    assert (old["servers_out_on_worst_switch_failure"], old["gpus_lost_on_worst_switch_failure"]) == (48, 384)
    assert (new["gpus_lost_on_worst_switch_failure"], new["gpus_detoured_on_single_failure"],
            new["servers_detoured_on_single_failure"]) == (0, 48, 48)
    # the SuperPOD-style baseline: 128 servers and the management node's slot in units of 32 slots; a rail leaf
    # holds rail r of one unit: 32 servers (the first unit holds 31 and the UFM slot). Without the detour 32 x 8 =
    # 256 GPUs leave; with it 0, and GPU r of 32 servers detours
    pod = baseline_designs(DesignSpace(Constraints(gpus=1024)))[2]
    assert pod.family == "rail_optimized" and pod.nodes_per_su == 32 and pod.reserved_node_slots == 1
    old, new = failure_analysis(build_fabric(pod), detour=False), failure_analysis(build_fabric(pod))
    assert (old["servers_out_on_worst_switch_failure"], old["gpus_lost_on_worst_switch_failure"]) == (32, 256)
    assert (new["gpus_lost_on_worst_switch_failure"], new["gpus_detoured_on_single_failure"]) == (0, 32)
    # a top-of-rack fat tree 1:1 on 64-port switches: a leaf has 32 downlinks, 4 whole servers of 8 NICs; all
    # their NICs are on it, so no detour helps: 4 x 8 = 32 GPUs leave, detour or not. At 2:1, 42 downlinks hold 5
    # whole servers: 40 GPUs
    for ratio, lost in ((1.0, 32), (2.0, 40)):
        fab = build_fabric(Design(gpus=1024, oversubscription=(ratio, ratio)))
        for detour in (True, False):
            r = failure_analysis(fab, detour=detour)
            assert r["gpus_lost_on_worst_switch_failure"] == lost and r["gpus_detoured_on_single_failure"] == 0


def test_the_superpod_baseline_at_256_gpus_survives_with_the_detour():
    # 32 servers and the UFM slot: 33 slots, a first unit of 31 servers and a second of 1. A rail leaf of the first
    # unit holds one NIC of 31 of the 32 servers: without the detour more than half of the servers leave for one GPU
    # each, which the rule does not survive (the flag the issue reports); with it they send through their 7 other
    # NICs. The evaluator then runs the job with that leaf down: slower, never partitioned.
    from fabric.failures.resilience import failure_analysis, failure_p99, resilience
    from fabric.search import Constraints, DesignSpace
    from fabric.search.baselines import baseline_designs
    from fabric.search.records import evaluate_record

    pod = baseline_designs(DesignSpace(Constraints(gpus=256)))[2]
    fab = build_fabric(pod)
    old = failure_analysis(fab, detour=False)
    assert not old["survives_single_failure"] and old["server_loss"]["collateral_servers"] == 31
    new = failure_analysis(fab)
    assert new["survives_single_failure"] and new["gpus_lost_on_worst_switch_failure"] == 0
    assert (new["detour_switch"], new["gpus_detoured_on_single_failure"]) == ("leaf0", 31)
    wl = _sample("mixtral-8x7b.json")
    rec = evaluate_record(pod, wl, Scenario(), 0, 64, None, Constraints(gpus=256))
    assert rec["feasible"] and rec["survives_single_failure"] and rec["gpus_lost_on_worst_switch_failure"] == 0
    r = resilience(pod, wl, samples=64)
    assert r["worst_leaf"] == "leaf0" and not r["worst_leaf_failure_partitions"]
    assert r["worst_leaf_failure_p99_s"] > r["healthy_p99_s"]                 # the 7 NICs carry 8/7: slower
    direct = evaluate(pod, wl, Scenario(name="leaf0 down", fail_switches=("leaf0",)), samples=64)
    assert r["worst_leaf_failure_p99_s"] == pytest.approx(direct.step_time_s["p99"], rel=1e-12)
    assert failure_p99(r) == max(r["worst_leaf_failure_p99_s"], r["worst_switch_failure_p99_s"],
                                 r["worst_link_failure_p99_s"])


# ------------------------------------------------------------------ limits

def test_limits_are_validated_and_read_from_a_file(tmp_path):
    from fabric.search import Constraints, load_constraints
    from fabric.search.constraints import ConstraintError

    c = Constraints(gpus=1024, max_gpus_lost_on_single_failure=0.125)
    assert c.gpus_lost_limit() == 128 and c.gpus_lost_limit(256) == 32 and not c.needs_failure_p99
    assert Constraints(max_gpus_lost_on_single_failure=64).gpus_lost_limit() == 64
    assert Constraints(max_gpus_lost_on_single_failure=0).gpus_lost_limit() == 0
    assert Constraints(max_p99_slowdown_under_failure=0.25).needs_failure_p99
    assert Constraints(failure_p99_for_every_design=True).needs_failure_p99
    for bad in ({"max_gpus_lost_on_single_failure": 12.5}, {"max_gpus_lost_on_single_failure": -1},
                {"max_gpus_lost_on_single_failure": True}, {"max_p99_slowdown_under_failure": -0.1},
                {"max_p99_slowdown_under_failure": float("inf")}, {"failure_p99_for_every_design": "yes"}):
        with pytest.raises(ConstraintError, match=next(iter(bad))):
            Constraints(**bad)
    f = tmp_path / "limits.yaml"
    f.write_text("gpus: 1024\nmax_gpus_lost_on_single_failure: 0.0625\nmax_p99_slowdown_under_failure: 0.1\n")
    got = load_constraints(f)
    assert got.gpus_lost_limit() == 64 and got.max_p99_slowdown_under_failure == 0.1


def test_a_gpus_lost_limit_excludes_a_design_and_says_why():
    from fabric.review.brief import constraint_lines
    from fabric.search import Constraints
    from fabric.search.records import evaluate_record
    from fabric.search.recommend import violation_text

    wl = _sample("mixtral-8x7b.json")
    fat = Design(name="fat tree", gpus=256)                     # a leaf: 4 servers, 32 GPUs out
    pod = Design(name="rail", family="rail_optimized", gpus=256)   # a rail leaf: nobody out (detour)
    for limit in (16, 1 / 16):                                  # 16 GPUs, or a sixteenth of 256
        c = Constraints(gpus=256, max_gpus_lost_on_single_failure=limit)
        rec = evaluate_record(fat, wl, Scenario(), 0, 32, None, c)
        assert rec["gpus_lost_on_worst_switch_failure"] == 32
        assert not rec["feasible"] and rec["violations"]["gpus_lost"] == pytest.approx((32 - 16) / 256)
        assert violation_text(rec) == ("the worst single switch failure takes 32 of 256 GPUs out of the job, 16 over "
                                       "the limit")
        ok = evaluate_record(pod, wl, Scenario(), 0, 32, None, c)
        assert ok["feasible"] and ok["violations"]["gpus_lost"] == pytest.approx(-16 / 256)
    lines = " ".join(constraint_lines(Constraints(gpus=256, max_gpus_lost_on_single_failure=16,
                                                  max_p99_slowdown_under_failure=0.25)))
    assert "at most 16 GPUs out of the job on the worst single switch failure" in lines
    assert "p99 under the worst single failure at most 25.0% over the healthy p99" in lines
    lines = " ".join(constraint_lines(Constraints(gpus=256, max_gpus_lost_on_single_failure=0.125)))
    assert "at most 12.5% of the GPUs (32) out of the job on the worst single switch failure" in lines


def test_a_slowdown_limit_excludes_a_design_the_failure_slows():
    from fabric.failures.resilience import resilience
    from fabric.search import Constraints
    from fabric.search.records import evaluate_record
    from fabric.search.recommend import violation_text

    wl = _sample("mixtral-8x7b.json")
    d = Design(name="rail-only 2:1", family="rail_only", gpus=256, oversubscription=(2.0, 1.0))
    r = resilience(d, wl, samples=32)
    slow = max(v for v in (r["worst_switch_failure_p99_s"], r["worst_link_failure_p99_s"],
                           r["worst_leaf_failure_p99_s"]) if v is not None) / r["healthy_p99_s"] - 1
    assert slow > 0.01
    tight = Constraints(gpus=256, max_p99_slowdown_under_failure=slow / 2)
    rec = evaluate_record(d, wl, Scenario(), 0, 32, None, tight)
    assert rec["p99_failure_slowdown"] == pytest.approx(slow, rel=1e-12) and rec["worst_failure"]
    assert not rec["feasible"]
    assert rec["violations"]["p99_failure_slowdown"] == pytest.approx((1 + slow) / (1 + slow / 2) - 1, rel=1e-9)
    assert violation_text(rec).startswith(f"the worst single failure slows the p99 by {slow:+.1%}")
    loose = evaluate_record(d, wl, Scenario(), 0, 32, None, Constraints(gpus=256, max_p99_slowdown_under_failure=2 * slow))
    assert loose["feasible"]


def test_a_search_under_the_limits_keeps_only_designs_within_them():
    from fabric.search import Constraints, run_search

    wl = _sample("mixtral-8x7b.json")
    c = Constraints(gpus=256, max_gpus_lost_on_single_failure=16, max_p99_slowdown_under_failure=0.05)
    res = run_search(wl, c, budget_evals=120, seed=0, samples=32)
    assert res.front
    for r in res.front:
        assert r["gpus_lost_on_worst_switch_failure"] <= 16, r["design"]
        assert r["p99_failure_s"] <= r["p99_s"] * 1.05 * (1 + 1e-12), r["design"]
    # every record was evaluated under its failures (the limit needs it), each judged by both limits
    assert all("p99_failure_s" in r for r in res.records if r["buildable"])
    assert all({"gpus_lost", "p99_failure_slowdown"} <= set(r["violations"]) for r in res.records)


# ------------------------------------------------------------------ the front, the baselines, the recommendation

def test_the_front_and_the_recommendation_show_the_blast_radius():
    from fabric.failures.resilience import failure_p99, resilience
    from fabric.search import Constraints, run_search
    from fabric.search.recommend import blast_radius_text, recommend, seconds_text
    from fabric.search.designs import design_from_record

    wl = _sample("mixtral-8x7b.json")
    c = Constraints(gpus=256)
    assert not c.needs_failure_p99                  # no failure limit: figured after the search, front and baselines
    res = run_search(wl, c, budget_evals=80, seed=0, samples=32)
    assert res.front
    for r in res.front + [b for b in res.baselines if b["buildable"]]:
        assert {"gpus_lost_on_worst_switch_failure", "gpus_detoured_on_single_failure", "p99_failure_s",
                "p99_failure_slowdown", "worst_failure"} <= set(r), r["design"]
    star = recommend(res.front, res.baselines).record
    # the figure is the evaluated one: the same as resilience() of the design at the search's seed and samples
    d = design_from_record(star, gpus=256)
    want = failure_p99(resilience(d, wl, seed=0, samples=32, healthy_p99_s=star["p99_s"]), star["p99_s"])
    assert star["p99_failure_s"] == pytest.approx(want, rel=1e-12)
    assert star["p99_failure_slowdown"] == pytest.approx(want / star["p99_s"] - 1, rel=1e-12)
    text = blast_radius_text(star)
    lost = star["gpus_lost_on_worst_switch_failure"]
    assert text.startswith(f"The worst single switch failure takes {lost:,} of 256 GPUs out of the job" if lost else
                           "No single switch failure takes a GPU out of the job")
    which = f" ({star['worst_failure']})" if star["worst_failure"] else ""
    assert text.endswith(f"p99 under the worst single failure{which} {seconds_text(star['p99_failure_s'])} "
                         f"({star['p99_failure_slowdown']:+.1%}).")
    assert res.summary_lines()[-1] == f"the recommended design, '{star['design']}': {text[0].lower()}{text[1:]}"
    front = res.front_frame()
    cols = list(front.columns)
    assert cols.index("gpus_lost_on_worst_switch_failure") < cols.index("switch_usd")    # beside the objectives
    pod = next(b for b in res.baselines if "SuperPOD" in b["design"])
    assert pod["feasible"] and pod["gpus_lost_on_worst_switch_failure"] == 0 and pod["worst_failure"] == "leaf0"


def test_blast_radius_text_by_hand():
    from fabric.search.recommend import blast_radius_text

    rec = {"buildable": True, "gpus": 1024, "gpus_lost_on_worst_switch_failure": 32,
           "gpus_detoured_on_single_failure": 0, "p99_s": 2.0, "p99_failure_s": 5.24, "p99_failure_slowdown": 1.62,
           "worst_failure": "spine0"}
    assert blast_radius_text(rec) == ("The worst single switch failure takes 32 of 1,024 GPUs out of the job; p99 "
                                      "under the worst single failure (spine0) 5.24 s (+162.0%).")
    rec = {"buildable": True, "gpus": 1024, "gpus_lost_on_worst_switch_failure": 0,
           "gpus_detoured_on_single_failure": 48, "p99_s": 2.0}
    assert blast_radius_text(rec) == ("No single switch failure takes a GPU out of the job; one takes 48 GPUs' own "
                                      "NICs away, which carry on through their servers' other NICs over NVLink.")
    assert blast_radius_text({"buildable": False}) == ""


def test_the_command_line_takes_the_limits(tmp_path, capsys):
    import pandas as pd

    from fabric.cli.main import main

    out = tmp_path / "out"
    code = main(["search", "-w", str(ROOT / "sample_traces" / "mixtral-8x7b.json"), "--budget-evals", "40",
                 "--samples", "16", "--quiet", "--max-gpus-lost", "0.125", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "the recommended design, '" in text and "out of the job" in text
    front = pd.read_csv(out / "pareto.csv")
    assert (front["gpus_lost_on_worst_switch_failure"] <= 32).all()
    assert {"p99_failure_s", "p99_failure_slowdown", "worst_failure"} <= set(front.columns)
    import json

    assert json.loads((out / "summary.json").read_text())["constraints"]["max_gpus_lost_on_single_failure"] == 0.125
    assert main(["search", "-w", str(ROOT / "sample_traces" / "mixtral-8x7b.json"), "--budget-evals", "40",
                 "--quiet", "--max-failure-slowdown", "-1", "--out", str(out)]) == 2
    assert "max_p99_slowdown_under_failure" in capsys.readouterr().err


def test_the_failure_figures_made_on_two_workers_are_the_ones_made_here():
    # after the generations the front's and baselines' failure figures are made on the runner's workers while they
    # are up (fabric.search.run._prefetch_failure_figures): the same figures as one process makes
    from fabric.search import Constraints, run_search
    from fabric.search.runners import ProcessRunner

    wl = _sample("mixtral-8x7b.json")
    c = Constraints(gpus=256)
    kw = dict(budget_evals=60, seed=0, samples=16, stop_on_convergence=False, check_neighbourhood=False)
    here = run_search(wl, c, **kw)
    there = run_search(wl, c, runner=ProcessRunner(2, warm_start=False), **kw)
    cols = ("key", "p99_s", "p99_failure_s", "p99_failure_slowdown", "worst_failure")
    rows = lambda res: [tuple(r.get(k) for k in cols) for r in res.front + res.baselines]  # noqa: E731
    assert rows(here) == rows(there)
    assert sum(1 for r in there.front + there.baselines if "p99_failure_s" in r) >= 3

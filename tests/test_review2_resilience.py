"""Issue 24, items 1 and 15: one single-failure rule for the search, the Design page, the brief and the CLI;
what-ifs that cannot apply say so; the vectorized switch classes equal a plain loop. Issue 34: the rule with the
NVLink detour (a GPU whose own NIC lost its switch sends through its server's other NICs) and without it.

The rule (fabric.failures.rule) is checked here against an independent brute force on the full cabling: every
switch, every switch-to-switch cable and every NIC cable removed one at a time, GPUs cut off read from the cables
each GPU's NICs have left, and connectivity from networkx components of the surviving switches.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from fabric.design import Design
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS

ROOT = Path(__file__).resolve().parent.parent
RAIL_ONLY = Design(name="x", family="rail_only", switch_model="ib-ndr-64x400", nic_model="nic-cx6-200",
                   nics_per_gpu=0.5, gpus=1024, gpu_model="h100-sxm", gpus_per_node=8, oversubscription=(1.0, 1.0),
                   routing="ecmp", transport="infiniband", placement="packed")
#: one switch for the whole cluster (256 GPUs on a 144 x 800G switch split into 288 x 400G ports): its failure takes
#: every server out of the job, detour or not
ONE_SWITCH = Design(name="one switch", gpus=256, switch_model="ib-xdr-144x800", tiers=1)


def _sample(name):
    from fabric.workload.model import load_workload_json

    return load_workload_json((ROOT / "sample_traces" / name).read_text())


# ------------------------------------------------------------------ an independent brute force of the rule

def brute_force(fab, detour: bool = True) -> dict:
    """The rule by exhaustion on the full cabling (no code shared with fabric.failures.rule): returns whether
    the design survives, whether some failure partitions the GPUs still in the job, the most GPUs one switch
    failure takes out of the job (whole servers of the GPUs it leaves without a cable) and the most GPUs one switch
    failure leaves without a cable of their own while their server keeps one (they detour over NVLink).
    ``detour``: a GPU uses every NIC cable of its server (issue 34), else only its own NICs' cables."""
    kinds = fab.link_kind.tolist()
    a, b = fab.link_a.tolist(), fab.link_b.tolist()
    nic_leaf = LINK_KINDS.index("nic-leaf")
    is_switch = lambda x: fab.switch_base <= x < fab.switch_base + fab.n_switches  # noqa: E731
    sw_links = [i for i, k in enumerate(kinds) if is_switch(a[i]) and is_switch(b[i])]
    nic_cables: dict[int, list[int]] = {}          # NIC node -> its cable ids
    for i, k in enumerate(kinds):
        if k == nic_leaf:
            nic = a[i] if not is_switch(a[i]) else b[i]
            nic_cables.setdefault(nic, []).append(i)
    npn = fab.design.nics_per_node
    per_rail = fab.family == "rail_only"
    servers = sorted(set(fab.gpu_node.tolist()))

    def endpoint(i):                               # (switch, class) of a NIC cable
        nic, sw = (a[i], b[i]) if is_switch(b[i]) else (b[i], a[i])
        plane = int(fab.node_plane[sw])
        return sw, ((nic - fab.nic_base) % npn, plane) if per_rail else plane

    def keeps_a_port(server, dead):
        return any(not dead(i) for g in range(fab.n_gpus) if int(fab.gpu_node[g]) == server
                   for n in fab.gpu_nics[g].tolist() for i in nic_cables[n])

    server_nics: dict[int, set] = {}
    for g in range(fab.n_gpus):
        server_nics.setdefault(int(fab.gpu_node[g]), set()).update(fab.gpu_nics[g].tolist())

    def usable(g):                                 # the NICs GPU g can send through
        return sorted(server_nics[int(fab.gpu_node[g])]) if detour else fab.gpu_nics[g].tolist()

    def outcome(dead_switch=None, dead_link=None):
        dead = lambda i: i == dead_link or dead_switch in (a[i], b[i])  # noqa: E731
        own_cut = [g for g in range(fab.n_gpus)
                   if all(dead(i) for n in fab.gpu_nics[g].tolist() for i in nic_cables[n])]
        cut_gpus = [g for g in range(fab.n_gpus) if all(dead(i) for n in usable(g) for i in nic_cables[n])]
        detoured = len(set(own_cut) - set(cut_gpus))
        out = {int(fab.gpu_node[g]) for g in cut_gpus}
        h = nx.MultiGraph()
        h.add_nodes_from(x for x in range(fab.switch_base, fab.switch_base + fab.n_switches) if x != dead_switch)
        h.add_edges_from((a[i], b[i]) for i in sw_links if not dead(i))
        comp = {x: c for c, nodes in enumerate(nx.connected_components(h)) for x in nodes}
        seen: dict = {}
        split = False
        for g in range(fab.n_gpus):
            if int(fab.gpu_node[g]) in out:
                continue
            for n in fab.gpu_nics[g].tolist():
                for i in nic_cables[n]:
                    if dead(i):
                        continue
                    sw, cls = endpoint(i)
                    split |= seen.setdefault(cls, comp[sw]) != comp[sw]
        gpus_out = sum(1 for g in range(fab.n_gpus) if int(fab.gpu_node[g]) in out)
        collateral = sum(1 for s in out if keeps_a_port(s, dead))
        loss = len(servers) >= 2 and (len(out) == len(servers) or 2 * collateral > len(servers))
        return split, loss, gpus_out, detoured

    splits, loss, worst, moved = False, False, 0, 0
    for s in range(fab.switch_base, fab.switch_base + fab.n_switches):
        sp, lo, g_out, det = outcome(dead_switch=s)
        splits, loss, worst, moved = splits or sp, loss or lo, max(worst, g_out), max(moved, det)
    for i in sw_links + [i for c in nic_cables.values() for i in c]:
        sp, lo, _, _ = outcome(dead_link=i)
        splits, loss = splits or sp, loss or lo
    return {"survives": not (splits or loss), "partitions": splits, "gpus_out": worst, "gpus_detoured": moved}


CASES = [Design(gpus=64, gpus_per_node=1, tiers=2), Design(gpus=256), Design(gpus=64, family="rail_optimized"),
         Design(gpus=512, family="rail_optimized"), Design(gpus=256, family="rail_only"),
         Design(gpus=128, family="dragonfly", gpus_per_node=4),
         Design(gpus=256, nic_model="nic-2x200-dual", switch_model="eth-25t-64x400", transport="roce", planes=2),
         Design(gpus=128, gpus_per_node=1, tiers=3, oversubscription=(2.0, 2.0)),
         Design(gpus=256, switch_model="ib-xdr-144x800"),
         Design(gpus=128, family="rail_only", nic_model="nic-cx6-200", nics_per_gpu=0.5, tiers=2),
         Design(gpus=128, family="rail_optimized", nic_model="nic-cx6-200", nics_per_gpu=2),
         # 2 uneven top-of-rack leaves (18 + 14 servers): a leaf takes its own servers, more than half, and is
         # survived; the SuperPOD at 256 GPUs (33 slots with the management node: leaves of 31 + 1 servers) loses
         # 31 servers for one GPU each, which is not
         Design(gpus=256, switch_model="ib-xdr-144x800", tiers=2),
         Design(gpus=256, family="rail_optimized", nodes_per_su=32, reserved_node_slots=1)]


@pytest.mark.parametrize("design", CASES, ids=lambda d: f"{d.family}-{d.gpus}-{d.planes}p-{d.nics_per_gpu}-"
                                                       f"{d.switch_model}-t{d.tiers}")
@pytest.mark.parametrize("detour", [True, False], ids=["detour", "no-detour"])
def test_the_rule_equals_brute_force(design, detour):
    from fabric.failures.resilience import failure_analysis

    fab = build_fabric(design)
    got = failure_analysis(fab, detour=detour)
    want = brute_force(fab, detour=detour)
    assert (got["survives_single_failure"], got["partitions_on_single_failure"],
            got["gpus_lost_on_worst_switch_failure"]) == (want["survives"], want["partitions"], want["gpus_out"])
    assert got["gpus_detoured_on_single_failure"] == want["gpus_detoured"]


def test_rail_only_by_hand():
    # 1,024 GPUs in 128 servers of 8; 0.5 NIC per GPU: 4 NICs per server, NIC r serving GPUs 2r and 2r+1, cabled
    # to the switch of rail r, which holds NIC r of all 128 servers (one tier, no uplinks). Failing rail r's
    # switch leaves GPUs 2r, 2r+1 of every server without a NIC of their own: 2 x 128 = 256 GPUs. With the detour
    # they send through the server's 3 other NICs over NVLink: no server leaves the job, the design survives.
    from fabric.failures.resilience import failure_analysis

    fab = build_fabric(RAIL_ONLY)
    assert fab.n_switches == 4 and fab.tiers == 1
    r = failure_analysis(fab)
    assert r["detour"] is True
    assert (r["gpus_cut_off_on_worst_switch_failure"], r["servers_out_on_worst_switch_failure"],
            r["gpus_lost_on_worst_switch_failure"]) == (0, 0, 0)
    assert (r["gpus_detoured_on_single_failure"], r["servers_detoured_on_single_failure"]) == (2 * 128, 128)
    assert r["server_loss_switch_count"] == 0 and r["server_loss"] is None
    assert r["survives_single_failure"] is True and r["partitions_on_single_failure"] is False
    assert r["min_uplink_switches"] is None                  # no uplinks at all, not "0 uplink switches"
    assert r["gpus_lost_on_worst_nic_cable_failure"] == 0    # a NIC cable: the other 3 NICs carry on
    from fabric.failures.text import uplinks_value, verdict_text

    assert uplinks_value(r) == "none"
    v = verdict_text(r)
    assert v.startswith("Survives any single failure") and "no single switch takes a GPU out of the job" in v
    assert "leaf0 takes the own NICs of 256 GPUs in 128 servers away" in v
    # without the detour (the rule before issue 34): every server has a GPU cut off and leaves the job, 1,024 GPUs
    # out, each of the 4 rail switches does it, all 128 servers as collateral damage (each keeps 3 NICs)
    old = failure_analysis(fab, detour=False)
    assert old["gpus_cut_off_on_worst_switch_failure"] == 2 * 128
    assert old["servers_out_on_worst_switch_failure"] == 128
    assert old["gpus_lost_on_worst_switch_failure"] == 1024
    assert old["server_loss_switch_count"] == 4
    assert old["server_loss"]["collateral_servers"] == 128
    assert old["survives_single_failure"] is False and old["partitions_on_single_failure"] is False
    assert old["gpus_detoured_on_single_failure"] == 0 and old["gpus_lost_on_worst_nic_cable_failure"] == 8
    v = verdict_text(old)
    assert v.startswith("Does not survive a single failure") and "every server leaves the job" in v
    assert "1,024 of 1,024 GPUs" in v and "256 GPUs, 2 in each of 128 servers" in v


def test_one_switch_does_not_survive_detour_or_not():
    from fabric.failures.resilience import failure_analysis
    from fabric.failures.text import verdict_text

    fab = build_fabric(ONE_SWITCH)
    assert fab.n_switches == 1
    for detour in (True, False):
        r = failure_analysis(fab, detour=detour)
        assert not r["survives_single_failure"] and r["gpus_lost_on_worst_switch_failure"] == 256
        assert r["gpus_detoured_on_single_failure"] == 0
        assert "every server leaves the job (256 of 256 GPUs)" in verdict_text(r)


def test_deployable_designs_stay_feasible():
    # the fat-tree 1:1 baselines, the SuperPOD at 1,016 GPUs (16 spines), dual-plane and multiplane presets
    from fabric.reference.presets import preset_design
    from fabric.failures.resilience import failure_analysis
    from fabric.search import Constraints, DesignSpace
    from fabric.search.baselines import baseline_designs

    for gpus in (256, 1024):
        c = Constraints(gpus=gpus)
        for d in baseline_designs(DesignSpace(c)):          # the SuperPOD-like baseline too, at 256 GPUs as well
            assert failure_analysis(build_fabric(d))["survives_single_failure"], (gpus, d.name)
    for name in ("dgx-h100-superpod", "alibaba-hpn", "meta-roce-zone", "fat-tree", "gb200-nvl72-superpod",
                 "hyperscale-multiplane"):
        r = failure_analysis(build_fabric(preset_design(name)))
        assert r["survives_single_failure"], name
    sp = failure_analysis(build_fabric(preset_design("dgx-h100-superpod")))
    # a rail leaf of the 1,016-GPU SuperPOD holds rail r of one 32-node unit: its 32 servers' GPU r (32 GPUs) send
    # through their 7 other NICs; nobody leaves the job (without the detour: 32 servers, 256 GPUs)
    assert (sp["min_uplink_switches"], sp["servers_out_on_worst_switch_failure"],
            sp["gpus_lost_on_worst_switch_failure"]) == (16, 0, 0)
    assert (sp["gpus_detoured_on_single_failure"], sp["servers_detoured_on_single_failure"]) == (32, 32)
    old = failure_analysis(build_fabric(preset_design("dgx-h100-superpod")), detour=False)
    assert (old["servers_out_on_worst_switch_failure"], old["gpus_lost_on_worst_switch_failure"]) == (32, 256)


def test_the_search_constraint_rejects_a_design_one_switch_takes_down():
    from fabric.evaluate import Scenario
    from fabric.search import Constraints
    from fabric.search.records import evaluate_record
    from fabric.search.recommend import violation_text

    wl = _sample("llama3-70b-online.json")
    rec = evaluate_record(ONE_SWITCH, wl, Scenario(), 0, 32, None, Constraints(gpus=256))
    assert rec["buildable"] and not rec["feasible"] and rec["violations"]["partition"] > 0
    assert rec["gpus_lost_on_worst_switch_failure"] == 256
    assert "does not survive a single switch or cable failure" in violation_text(rec)
    off = evaluate_record(ONE_SWITCH, wl, Scenario(), 0, 32, None, Constraints(gpus=256, survive_single_failure=False))
    assert off["feasible"]
    # the rail-only design rides a rail switch failure out (detour): feasible under the default rule
    ok = evaluate_record(RAIL_ONLY, wl, Scenario(), 0, 32, None, Constraints(gpus=1024))
    assert ok["feasible"] and ok["survives_single_failure"]
    assert (ok["gpus_lost_on_worst_switch_failure"], ok["gpus_detoured_on_single_failure"]) == (0, 256)


def test_serving_search_front_survives_every_single_failure():
    # the review's search (Llama-3-70B online serving on 1,024 GPUs) recommended the rail-only design above
    from fabric.search import Constraints, run_search

    res = run_search(_sample("llama3-70b-online.json"), Constraints(gpus=1024), budget_evals=200, seed=0,
                     samples=32)
    assert res.front
    from fabric.search.designs import design_from_record

    for r in res.front:
        d = design_from_record(r, gpus=1024)
        assert brute_force_small(d), r["design"]


def brute_force_small(design) -> bool:
    """The brute-force verdict of ``design`` (fabrics of this test size)."""
    return brute_force(build_fabric(design))["survives"]


def test_evaluated_failures_agree_with_the_rule():
    # resilience() evaluates switches and cables above the leaves; none it tries may be a partition the rule missed
    from fabric.failures.resilience import failure_analysis, resilience

    wl = _sample("mixtral-8x7b.json")
    for d in (Design(gpus=256, oversubscription=(2.0, 1.0)), Design(gpus=512, family="rail_optimized"),
              Design(gpus=256, nic_model="nic-2x200-dual", switch_model="eth-25t-64x400", transport="roce",
                     planes=2), RAIL_ONLY):
        r = resilience(d, wl, samples=16)
        assert r["survives_single_failure"] == failure_analysis(build_fabric(d))["survives_single_failure"]
        assert not r["worst_switch_failure_partitions"] and not r["worst_link_failure_partitions"]


# ------------------------------------------------------------------ one verdict on the page, the brief, the CLI

def _evaluate_cli(args) -> str:
    import contextlib
    import io

    from fabric.cli.main import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(args) == 0
    return buf.getvalue()


def test_cli_says_the_same_verdict(tmp_path):
    import json
    from dataclasses import asdict

    path = tmp_path / "one_switch.json"
    path.write_text(json.dumps(asdict(ONE_SWITCH)))
    wl = str(ROOT / "sample_traces" / "llama3-70b-online.json")
    text = _evaluate_cli(["evaluate", "-w", wl, "-d", str(path), "--samples", "16"])
    assert "resilience: Does not survive a single failure" in text and "256 of 256 GPUs" in text
    assert "Uplink switches per leaf: none" in text and "partitions the fabric" not in text
    data = json.loads(_evaluate_cli(["evaluate", "-w", wl, "-d", str(path), "--samples", "16", "--json"]))
    res = data["resilience"]
    assert res["survives_single_failure"] is False and res["gpus_lost_on_worst_switch_failure"] == 256
    assert res["worst_switch"] is None and res["min_uplink_switches"] is None
    head = _evaluate_cli(["evaluate", "-w", wl, "-d", str(path), "--samples", "16", "-s", "fail-spine"])
    assert head.splitlines()[0].startswith("context: ")                   # the context line first (issue 34)
    assert "scenario fail-spine (not applicable: this design has no spines" in head.splitlines()[1]
    # the rail-only design rides a rail switch failure out: the CLI says so and evaluates it
    ro = tmp_path / "rail_only.json"
    ro.write_text(json.dumps(asdict(RAIL_ONLY)))
    text = _evaluate_cli(["evaluate", "-w", wl, "-d", str(ro), "--samples", "16"])
    assert "resilience: Survives any single failure" in text
    assert "leaf0 takes the own NICs of 256 GPUs in 128 servers away" in text
    assert "resilience: Worst leaf failure whose servers carry on through their other NICs (leaf0): p99" in text
    res = json.loads(_evaluate_cli(["evaluate", "-w", wl, "-d", str(ro), "--samples", "16", "--json"]))["resilience"]
    assert res["survives_single_failure"] is True and res["gpus_lost_on_worst_switch_failure"] == 0
    assert res["gpus_detoured_on_single_failure"] == 256 and res["worst_leaf"] == "leaf0"
    assert res["worst_leaf_failure_p99_s"] >= res["healthy_p99_s"]


def test_brief_says_the_same_verdict():
    from fabric.review.brief import brief_sections, review_brief
    from fabric.evaluate import Scenario
    from fabric.search import Constraints
    from fabric.search.records import evaluate_record

    wl = _sample("llama3-70b-online.json")
    c = Constraints(gpus=256, survive_single_failure=False)      # so that the one-switch design can be proposed
    rec = evaluate_record(ONE_SWITCH, wl, Scenario(), 0, 32, None, c)
    from fabric.review import prepare_context

    b = review_brief([rec], [], prepare_context(wl, c, samples=32))
    lines = dict(brief_sections(b))
    res = lines["Resilience"]
    assert res[0].startswith("Does not survive a single failure") and "256 of 256 GPUs" in res[0]
    assert any(x.startswith("Uplink switches per leaf: none") for x in res)
    assert not any("partitions the fabric" in x for x in res)
    whatif = {x.split(":")[0]: x for x in lines["What if"]}
    assert whatif["fail-spine"].startswith("fail-spine: not applicable: this design has no spines")
    assert whatif["slow-switch"].startswith("slow-switch: not applicable")
    assert whatif["checkpoint-burst"].startswith("checkpoint-burst: not applicable: the workload has no training")
    assert "+0.0%" not in " ".join(lines["What if"])


def test_design_page_shows_the_constraint_verdict():
    from streamlit.testing.v1 import AppTest

    from fabric.search.designs import design_genes
    from fabric.ui_support.urlstate import encode_genes

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    # the dashboard's serving sample (the review's Llama-3-70B online serving on 1,024 GPUs): the rail-only design
    # survives a rail switch failure through the NVLink detour, and the page says it as the rule does
    at.query_params.update({"evals": "60", "wl": "sample:llama3-70b-serving.json", "gpus": "1024",
                            "design": encode_genes(design_genes(RAIL_ONLY))})
    at.run()
    at.switch_page("pages/design.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]                # the link was read as it is
    assert "sample llama3-70b-serving.json" in " ".join(c.value for c in at.caption)
    from fabric.failures.resilience import failure_analysis
    from fabric.failures.text import verdict_text

    verdict = verdict_text(failure_analysis(build_fabric(RAIL_ONLY)))
    assert verdict in " ".join(x.value for x in at.success)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["GPUs out of the job (of 1,024)"] == "0"
    assert metrics["Uplink switches per leaf"] == "none"
    assert all(v != "partitions" for k, v in metrics.items() if k.startswith("p99, worst"))
    infos = " ".join(i.value for i in at.info)
    assert "fail-spine: not applicable: this design has no spines" in infos
    assert "slow-switch: not applicable" in infos
    assert "checkpoint-burst: not applicable: the workload has no training job" in infos
    tables = [d.value for d in at.dataframe]
    assert not any("fail-spine" in set(t.get("scenario", [])) for t in tables)


# ------------------------------------------------------------------ what-ifs that cannot apply

def test_scenario_applicability():
    from fabric.evaluate import SCENARIO_PRESETS as P
    from fabric.evaluate.whatif import not_applicable

    serving, training = _sample("llama3-70b-online.json"), _sample("mixtral-8x7b.json")
    rail_only = build_fabric(RAIL_ONLY)
    clos = build_fabric(Design(gpus=1024))
    dfly = build_fabric(Design(gpus=128, family="dragonfly", gpus_per_node=4))
    for name in ("fail-spine", "slow-switch", "fail-link", "flaky-links"):
        assert "no spines" in (not_applicable(P[name], rail_only, training) or "") or \
            "no leaf-spine cables" in (not_applicable(P[name], rail_only, training) or ""), name
        assert not_applicable(P[name], dfly, training), name
        assert not_applicable(P[name], clos, training) is None, name
    assert "no training job" in not_applicable(P["checkpoint-burst"], clos, serving)
    assert not_applicable(P["checkpoint-burst"], clos, training) is None
    for name in ("baseline", "job-mix-shift", "background-30"):
        assert not_applicable(P[name], rail_only, serving) is None


# ------------------------------------------------------------------ item 15: the vectorized switch classes

def classes_by_loop(fab, per_tier: int = 3) -> list[str]:
    """Switch classes the plain way: per switch above the leaves, the sorted cable counts of its switch neighbours;
    one switch per distinct pattern (its lowest id), most cables first, ``per_tier`` per tier; as labels."""
    from collections import Counter

    sw0, ns = fab.switch_base, fab.n_switches
    cables = Counter()
    for x, y, k in zip(fab.link_a.tolist(), fab.link_b.tolist(), fab.link_kind.tolist()):
        if sw0 <= x < sw0 + ns and sw0 <= y < sw0 + ns:
            cables[(min(x, y), max(x, y))] += 1
    pattern: dict[int, list[int]] = {s: [] for s in range(sw0, sw0 + ns)}
    for (x, y), c in cables.items():
        pattern[x].append(c)
        pattern[y].append(c)
    out = []
    for t in sorted({int(fab.node_tier[s]) for s in pattern} - {0}):
        first: dict[tuple, int] = {}
        for s in sorted(s for s in pattern if int(fab.node_tier[s]) == t):
            first.setdefault(tuple(sorted(pattern[s])), s)
        ranked = sorted(first.items(), key=lambda kv: (-sum(kv[0]), kv[1]))[:per_tier]
        out += [fab.node_label(s) for _, s in ranked]
    return out


@pytest.mark.parametrize("design", [
    Design(gpus=1024), Design(gpus=128, gpus_per_node=1, tiers=3, oversubscription=(2.0, 2.0)),
    Design(gpus=2048, family="rail_optimized", tiers=3, oversubscription=(1.0, 3.0)),
    Design(gpus=1016, family="rail_optimized", nodes_per_su=32, reserved_node_slots=1, routing="adaptive",
           placement="rail_aligned"),
    Design(gpus=4096, family="rail_optimized", gpu_model="b200", nic_model="nic-cx8-4x200",
           switch_model="eth-51t-64x800", planes=2, tiers=3, oversubscription=(1.0, 7.0), transport="roce"),
    Design(gpus=256, nic_model="nic-2x200-dual", switch_model="eth-25t-64x400", transport="roce", planes=2),
    Design(gpus=1024, family="rail_only", tiers=2, oversubscription=(3.0, 1.0)),
    Design(gpus=128, family="dragonfly", gpus_per_node=4)], ids=lambda d: f"{d.family}-{d.gpus}-{d.planes}p")
def test_vectorized_switch_classes_equal_a_plain_loop(design):
    from fabric.failures.resilience import _switch_classes
    from fabric.failures.rule import _switch_graph

    fab = build_fabric(design)
    pairs, mult = _switch_graph(fab)
    got = [fab.node_label(int(s) + fab.switch_base) for s in _switch_classes(fab, pairs, mult)]
    assert got == classes_by_loop(fab)


def test_cabling_patterns_are_told_apart():
    # a hand-made pattern: leaf0's bundle to spine1 is one cable thinner, so spine1 stands apart from spine0
    from dataclasses import replace

    from fabric.failures.resilience import _switch_classes
    from fabric.failures.rule import _switch_graph

    fab = build_fabric(Design(gpus=64, gpus_per_node=1, tiers=2))
    ls = np.flatnonzero((fab.link_kind == LINK_KINDS.index("leaf-spine")) & (fab.link_a == fab.switch_base)
                        & (fab.link_b == fab.switch_base + fab.n_switches - 1))
    keep = np.ones(fab.n_links, bool)
    keep[ls[0]] = False
    cut = replace(fab, **{k: getattr(fab, k)[keep] for k in ("link_a", "link_b", "link_kind", "link_medium",
                                                             "link_capacity_bps", "link_reach_m")})
    pairs, mult = _switch_graph(cut)
    got = [cut.node_label(int(s) + cut.switch_base) for s in _switch_classes(cut, pairs, mult)]
    assert got == ["spine0", "spine1"] == classes_by_loop(cut)

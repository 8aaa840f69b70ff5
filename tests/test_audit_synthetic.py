"""A synthetic cluster run with one slow link, read back by the audit (issue 26 stage 4).

fabric writes the traces and counters from a known design (256-GPU fat tree) and workload with the link
leaf2-spine1 running at 10 % of its speed; the audit must name that link first among the measured hot links,
attribute the step's excess to it, and agree with the prediction within 10 % everywhere else.
"""

from __future__ import annotations

import pytest

from fabric.audit import audit_files
from fabric.audit.counters import read_counters
from fabric.audit.synthetic import synthetic_run
from fabric.reference.presets import preset_design
from fabric.workload.model import CommOp, Job, ProcessGroup

SLOW = "leaf2-spine1"


def _job():
    return Job("syn", world_size=256, groups=(ProcessGroup("dp", 256, "dp"), ProcessGroup("ep", 8, "ep")),
               ops=(CommOp("all_reduce", 256 << 20, "dp", 1.0), CommOp("all_to_all", 16 << 20, "ep", 2.0)),
               compute_time_s=0.05)


@pytest.fixture(scope="module")
def design():
    return preset_design("fat-tree", 256)


def _audit(design, slow_factor):
    run = synthetic_run(design, _job(), slow_link=SLOW, slow_factor=slow_factor)
    counters = read_counters("counters.csv", run.counters_csv.encode())
    return run, audit_files(list(run.traces), design=design, samples=64, counters=counters,
                            port_map=("map.csv", run.mapping_csv.encode()))


def test_slow_link_named_first_tail_attributed_rest_agrees(design):
    run, a = _audit(design, 0.1)
    h = a.links
    assert h.rows[0].name == SLOW
    assert h.rows[0].speed_bps == pytest.approx(0.1 * h.rows[0].design_bps)
    assert h.attributed_link == SLOW
    # the slowed all_reduce: its kernel time in the traces minus the model's p50 time of it
    (comp,) = a.comparisons
    ar = next(r for r in comp.rows if r.kind == "all_reduce")
    excess = ar.measured_s - ar.predicted_s
    assert excess > 0.001
    assert h.attributed_s == pytest.approx(excess, rel=0.10)
    step = next(r for r in comp.rows if r.what == "step p50")
    assert step.measured_s - step.predicted_s == pytest.approx(excess, rel=0.10)
    assert "of it at this link" in h.attribution
    # everything else: the model's traffic and the other collective within 10 %
    for r in h.rows[1:]:
        assert abs(r.bytes_ratio - 1.0) <= 0.10, r
    a2a = next(r for r in comp.rows if r.kind == "all_to_all")
    assert abs(a2a.ratio - 1.0) <= 0.10
    # ECN marks and pauses only where the slow link is
    tiers = {t.tier: t for t in h.tiers}
    assert tiers["leaf->spine"].ecn_per_s > 0 and tiers["leaf->spine"].pause_per_s > 0
    assert tiers["spine->leaf"].ecn_per_s == 0 and tiers["spine->leaf"].pause_per_s == 0
    # idle samples before and after the run are not busy windows: 6 steps sampled once per step
    assert h.rows[0].partial == ""


def test_healthy_run_attributes_nothing_and_agrees(design):
    run, a = _audit(design, 1.0)
    h = a.links
    assert h.attributed_link is None and h.attribution == ""
    assert all(abs(r.bytes_ratio - 1.0) <= 0.10 for r in h.rows)
    assert all(abs(r.measured_utilisation / r.predicted_utilisation - 1.0) <= 0.10 for r in h.rows)
    (comp,) = a.comparisons
    assert all(abs(r.ratio - 1.0) <= 0.10 for r in comp.rows if r.kind != "tail")


def test_cli_reads_the_synthetic_run_back(design, tmp_path, capsys):
    from fabric.cli.main import main

    run = synthetic_run(design, _job(), slow_link=SLOW, slow_factor=0.1, ranks=(0, 1))
    traces = []
    for name, data in run.traces:
        p = tmp_path / name.split("/")[-1]
        p.write_bytes(data)
        traces.append(str(p))
    (tmp_path / "c.csv").write_text(run.counters_csv)
    (tmp_path / "m.csv").write_text(run.mapping_csv)
    rc = main(["audit", *traces, "-d", "fat-tree", "--gpus", "256", "--samples", "64",
               "--counters", str(tmp_path / "c.csv"), "--mapping", str(tmp_path / "m.csv")])
    out = capsys.readouterr().out
    assert rc == 0
    hot = out.split("== measured vs predicted hot links")[1].splitlines()
    assert hot[2].split()[0] == SLOW and "runs at 10% of design speed" in hot[2]
    assert f"step tail: {SLOW} runs at" in out
    assert main(["audit", *traces, "-d", "fat-tree", "--gpus", "256", "--counters", str(tmp_path / "c.csv")]) == 2
    assert "--mapping" in capsys.readouterr().err


def test_cli_writes_a_synthetic_run(tmp_path, capsys):
    from pathlib import Path

    from fabric.cli.main import main

    ex = Path(__file__).resolve().parent.parent / "examples"
    common = ["-d", str(ex / "leaf-spine-32.json"), "--catalog", str(ex / "packet-catalog.json")]
    out = tmp_path / "run"
    assert main(["audit", "--write-synthetic", "--out", str(out), *common, "-w", str(ex / "all_to_all-4MB-x32.json"),
                 "--slow-link", "spine1-leaf3"]) == 0
    assert "SYNTHETIC: spine1-leaf3 runs at 0.1 of its speed" in capsys.readouterr().out
    traces = sorted(str(p) for p in out.glob("*.json"))
    assert len(traces) == 4
    assert main(["audit", *traces, *common, "--counters", str(out / "counters.csv"), "--mapping",
                 str(out / "mapping.csv"), "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert d["links"]["rows"][0]["name"] == "spine1-leaf3"
    assert d["links"]["attributed_link"] == "spine1-leaf3"
    assert main(["audit", "--write-synthetic", "--out", str(out), *common]) == 2
    assert "needs --design and --workload" in capsys.readouterr().err

"""GPU economics against hand computations: cost per step, network idle share, payback of network spend."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.reference.presets import preset_design
from fabric.cost.economics import EconomicsParams, economics
from fabric.errors import FabricError
from fabric.evaluate import evaluate
from fabric.workload.model import load_workload_json

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def mixtral():
    return load_workload_json((ROOT / "sample_traces" / "mixtral-8x7b.json").read_text())


def test_cost_per_step_equals_the_hand_computation(mixtral):
    d = preset_design("fat-tree", 256)
    ev = evaluate(d, mixtral, samples=64)
    e = economics(ev, d)
    # H100 server row: $290,000 and 10.2 kW for 8 GPUs; 4 years; $0.08/kWh; PUE 1.3
    life_s = 4 * 365.25 * 86400
    capex = 256 * 290_000 / 8 + ev.cost_usd
    # the servers' 10.2 kW includes their NICs, which the network's power counts too: 256 ConnectX-7 at 25 W once
    assert ev.cost_by_category["nic"]["power_w"] == 256 * 25
    watts = 256 * 10_200 / 8 + ev.power_w - 256 * 25
    assert e["power_w"] == pytest.approx(watts, rel=1e-12)
    from fabric.cost.bom import bill_of_materials
    from fabric.facility.rackpower import it_power_w
    from fabric.topology import build_fabric

    assert e["power_w"] == pytest.approx(it_power_w(bill_of_materials(build_fabric(d))), rel=1e-12)
    per_s = capex / life_s + watts * 1.3 * 0.08 / 3.6e6
    assert e["server_capex_usd"] == 9_280_000
    assert e["usd_per_hour"] == pytest.approx(per_s * 3600, rel=1e-12)
    assert e["usd_per_step"] == pytest.approx(per_s * ev.step_time_s["p99"], rel=1e-12)
    net_share = (ev.cost_usd / life_s + ev.power_w * 1.3 * 0.08 / 3.6e6) / per_s
    assert e["network_usd_per_step"] == pytest.approx(e["usd_per_step"] * net_share, rel=1e-12)
    b = ev.p99_breakdown
    # the scale-out network's exposed time (NVLink traffic is inside the servers) over the p99 sample's step
    exposed = b["network_s"] + b["interference_s"]
    step99 = b["compute_s"] + sum(b["ops"].values()) + b["interference_s"]
    assert e["gpu_idle_fraction_network"] == pytest.approx(exposed / step99, rel=1e-12)
    assert 0 < e["gpu_idle_fraction_network"] < 1
    # a dearer electricity bill and a shorter life raise the cost per step by exactly their terms
    e2 = economics(ev, d, params=EconomicsParams(life_years=2, electricity_usd_per_kwh=0.16, pue=1.5))
    per_s2 = capex / (life_s / 2) + watts * 1.5 * 0.16 / 3.6e6
    assert e2["usd_per_step"] == pytest.approx(per_s2 * ev.step_time_s["p99"], rel=1e-12)


def test_payback_of_a_faster_dearer_network(mixtral):
    cheap = preset_design("fat-tree", 256).replace(oversubscription=(4.0, 4.0), switch_model="ib-ndr-64x400")
    fast = preset_design("fat-tree", 256).replace(switch_model="ib-ndr-64x400")
    ev_c, ev_f = evaluate(cheap, mixtral, samples=64), evaluate(fast, mixtral, samples=64)
    e = economics(ev_f, fast, reference=ev_c)
    extra = ev_f.cost_usd - ev_c.cost_usd
    saved = ev_c.step_time_s["p99"] - ev_f.step_time_s["p99"]
    assert extra > 0 and saved > 0
    server_per_s = 9_280_000 / (4 * 365.25 * 86400) + (326_400 - 256 * 25) * 1.3 * 0.08 / 3.6e6
    assert e["payback_days"] == pytest.approx(extra / (server_per_s * saved / ev_c.step_time_s["p99"]) / 86400,
                                              rel=1e-12)
    assert e["extra_network_capex_usd"] == pytest.approx(extra) and e["p99_saved_s"] == pytest.approx(saved)
    # the other way round nothing is bought back
    assert economics(ev_c, cheap, reference=ev_f)["payback_days"] is None


def test_parameters_are_checked():
    for bad in ({"life_years": 0}, {"pue": 0.8}, {"electricity_usd_per_kwh": -1}, {"life_years": float("nan")}):
        with pytest.raises(FabricError, match="economics parameter"):
            EconomicsParams(**bad)


def test_search_can_minimize_cost_per_step(mixtral):
    from fabric.search import Constraints, run_search
    c = Constraints(gpus=256, cost_objective="cost_per_step", life_years=5.0)
    res = run_search(mixtral, c, budget_evals=120, seed=0, samples=32)
    feas = [r for r in res.records if r["feasible"] and r.get("in_space", True)]
    # every record carries the cost per step of fabric.cost.economics under the constraints' parameters
    r = feas[0]
    life_s = 5 * 365.25 * 86400
    # IT power: the servers' 326.4 kW (NICs included) and the network without its NICs, the record's it_power_w
    assert 326_400 < r["it_power_w"] < 326_400 + r["power_w"]
    per_s = (9_280_000 + r["cost_usd"]) / life_s + r["it_power_w"] * 1.3 * 0.08 / 3.6e6
    assert r["usd_per_step"] == pytest.approx(per_s * r["p99_s"], rel=1e-9)
    # the front is the non-dominated set in (cost per step, p99), not in (network capex, p99)
    outside = {b["key"] for b in res.baselines if not b.get("in_space", True)}
    pool = [x for x in feas if x["key"] not in outside]
    assert res.front
    for f in res.front:
        assert not any(x["usd_per_step"] <= f["usd_per_step"] and x["p99_s"] <= f["p99_s"]
                       and (x["usd_per_step"] < f["usd_per_step"] or x["p99_s"] < f["p99_s"]) for x in pool)
    with pytest.raises(FabricError, match="cost_objective"):
        Constraints(gpus=256, cost_objective="tco")
    with pytest.raises(FabricError, match="pue"):
        Constraints(gpus=256, pue=0.9)


def test_evaluate_json_carries_economics_and_scaling_alarm(capsys):
    import json

    from fabric.cli.cmd_evaluate import _scaling_warnings
    from fabric.cli.main import main

    assert main(["evaluate", "-w", str(ROOT / "sample_traces" / "mixtral-8x7b.json"), "-d", "fat-tree", "--gpus",
                 "256", "--samples", "16", "--json"]) == 0
    eco = json.loads(capsys.readouterr().out)["economics"]
    assert {"usd_per_step", "gpu_idle_fraction_network", "usd_per_hour", "idle_usd_per_step"} <= set(eco)
    rows = [{"gpus": 256, "efficiency_p99": 1.0}, {"gpus": 1024, "efficiency_p99": 0.79}]
    assert "79% at p99, below 80%" in _scaling_warnings(rows)[0]
    assert _scaling_warnings([{"gpus": 256, "efficiency_p99": 1.0}, {"gpus": 1024, "efficiency_p99": 0.8}]) == []

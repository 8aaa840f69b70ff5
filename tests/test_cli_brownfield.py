"""`fabric upgrade` and `fabric plan-growth` from the command line: JSON output, limits honoured, errors as one line."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from fabric.cli.main import main

W = "sample_traces/mixtral-8x7b.json"


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    p = tmp_path_factory.mktemp("up") / "installed.json"
    rc, out, _ = _run(["build", "--preset", "fat-tree", "--gpus", "512", "--json"])
    assert rc == 0
    data = json.loads(out)
    data["design_spec"]["oversubscription"] = [2.0, 1.0]          # the installed fabric is the 2:1 one
    data["design_spec"]["name"] = "installed 2:1"
    p.write_text(json.dumps(data))
    return p


def test_upgrade_json_respects_the_budget_and_names_the_match(tmp_path):
    yaml = tmp_path / "two.yaml"
    yaml.write_text("name: two\nfamily: clos\ngpus: 512\ngpu_model: h100-sxm\ngpus_per_node: 8\n"
                    "nic_model: nic-cx7-400\nswitch_model: ib-ndr-64x400\noversubscription: [2.0, 1.0]\n")
    rc, out, err = _run(["upgrade", "--existing", str(yaml), "-w", W, "--match", "fat-tree", "--budget-usd",
                         "300000", "--samples", "32", "--moves", "leaf_uplinks,policy", "--json"])
    assert rc == 0, err
    d = json.loads(out)
    assert d["match"]["design"].startswith("Full-bisection fat tree") and d["match"]["new_cost_usd"] > 300_000
    assert d["limits"]["budget_usd"] == 300_000
    assert d["front"] and all(u["added_usd"] <= 300_000 for u in d["front"] + d["offers"])
    # 64 servers, 5 per 2:1 leaf (40 down, 20 up): 13 leaves; 13 x 20 = 260 uplinks over 64-port spines: 5 spines
    # (each leaf sends 4 to each, 52 ports used per spine)
    assert d["installed"]["switches"] == {"leaf": 13, "spine": 5}
    rc, text, _ = _run(["upgrade", "--existing", str(yaml), "-w", W, "--samples", "32", "--moves", "policy"])
    assert rc == 0 and "installed: two [" in text and "512 GPUs" in text and "front (net cost vs p99)" in text


def test_upgrade_refuses_items_that_do_not_cover_the_design(installed):
    # the 1:1 build's items have more switches than the 2:1 design needs, but no active copper: 2:1 leaves hold 5
    # servers and a rack 4, so servers of a leaf span two racks and need the 5 m cables the 1:1 build never lists
    rc, out, err = _run(["upgrade", "--existing", str(installed), "-w", W, "--samples", "32", "--json"])
    assert rc == 2 and out == ""
    assert "its items list 0 cable acc-400-5m but its design_spec needs" in err and "Traceback" not in err


def test_plan_growth_json_and_errors():
    rc, out, err = _run(["plan-growth", "--stages", "256,512,1024", "-w", W, "--samples", "32", "--json"])
    assert rc == 0, err
    d = json.loads(out)
    assert [s["gpus"] for s in d["stages"]] == [256, 512, 1024]
    assert d["discarded_usd"] == 0 and d["roles_kept"]
    assert all(v[0] == v[1] for v in d["first_stage_switches_in_use"].values())
    assert d["total_usd"] <= d["scratch_total_usd"]
    rc, _, err = _run(["plan-growth", "--stages", "1024,512", "-w", W])
    assert rc == 2 and "more GPUs than the one before" in err and "Traceback" not in err
    rc, _, err = _run(["plan-growth", "--stages", "256,512", "-w", W, "--p99-target-ms", "900"])
    assert rc == 2 and "one target > 0 per stage (2)" in err
    rc, _, err = _run(["upgrade", "--existing", "missing.yaml", "-w", W])
    assert rc == 2 and "installed fabric missing.yaml: file not found" in err


def test_upgrade_min_free_ports_flag_bounds_every_offer(tmp_path):
    # 512 GPUs at 2:1 (13 leaves of 40 down + 20 up: 4 free ports each; 5 spines of 52: 12 free)
    yaml = tmp_path / "two.yaml"
    yaml.write_text("name: two\nfamily: clos\ngpus: 512\ngpu_model: h100-sxm\ngpus_per_node: 8\n"
                    "nic_model: nic-cx7-400\nswitch_model: ib-ndr-64x400\noversubscription: [2.0, 1.0]\n")
    rc, out, err = _run(["upgrade", "--existing", str(yaml), "-w", W, "--samples", "32", "--moves",
                         "leaf_uplinks", "--min-free-ports", "4", "--json"])
    assert rc == 0, err
    d = json.loads(out)
    assert d["limits"]["min_free_ports"] == 4
    assert d["installed"]["free_ports"]["leaf"]["fewest_free"] == 4
    assert d["front"] and all(u["fewest_free_ports"] >= 4 for u in d["front"] + d["offers"])
    rc, out, err = _run(["upgrade", "--existing", str(yaml), "-w", W, "--samples", "32", "--min-free-ports", "-1"])
    assert rc == 2 and "min_free_ports" in err and "Traceback" not in err

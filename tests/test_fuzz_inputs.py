"""Fuzzing the non-trace inputs: design, constraints and scenario dicts, catalog override files, CLI arguments.

Only the documented error family (FabricError and subclasses) may escape the API; the CLI only exits with 0, 2
(bad input) or 3 (no feasible design), never with a traceback.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.errors import FabricError
from tests.conftest import fuzz_deadline, fuzz_examples

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c,
                                                                                      max_size=4), max_leaves=8)
DESIGN_KEYS = ["name", "family", "gpus", "gpu_model", "gpus_per_node", "scale_up_size", "nics_per_gpu",
               "nic_model", "switch_model", "tiers", "oversubscription", "planes", "nodes_per_su",
               "reserved_node_slots", "routing", "qps_per_connection", "transport", "placement", "pxn",
               "storage_isolation", "in_network_reduction", "endpoint_cabling", "nic_speed_gbps", "storage_routing",
               "dragonfly_terminals", "uplink_gbps", "spines", "bogus"]
GOOD = {"family": ["clos", "rail_optimized", "rail_only", "dragonfly"], "gpus": [8, 64, 256, 0, -8, 10**9],
        "oversubscription": [1, 2, [1, 3], {"leaf": 2}, 0.5], "routing": ["ecmp", "spray", "adaptive"],
        "transport": ["infiniband", "roce", "tcp", "uec", "spray_ethernet"], "planes": [1, 2, 3],
        "placement": ["packed", "rail_aligned", "scattered"],
        "tiers": [None, 1, 2, 3, "auto"], "spines": [None, 1, 2, 4, 64, 0],
        "uplink_gbps": [None, 800, 200, 300, [400, 800], {"leaf": 200}, {"core": 1}, 0, -1]}


def _key_value(k):
    return st.sampled_from(GOOD[k]) | VALUES if k in GOOD else VALUES


design_dicts = st.lists(st.sampled_from(DESIGN_KEYS), max_size=8, unique=True).flatmap(
    lambda ks: st.fixed_dictionaries({k: _key_value(k) for k in ks}))


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(d=design_dicts)
def test_fuzz_design_dicts_build_or_fail_cleanly(d):
    from fabric.cost import bill_of_materials
    from fabric.design import design_from_dict
    from fabric.topology import build_fabric

    try:
        design = design_from_dict(d)
        if design.gpus <= 4096:
            bill_of_materials(build_fabric(design))
    except FabricError:
        pass


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(d=st.dictionaries(st.sampled_from(["gpus", "budget_usd", "families", "max_oversubscription",
                                          "oversubscriptions", "qps", "planes", "switch_models", "p99_target_s",
                                          "cable_count", "nope"]), VALUES, max_size=5))
def test_fuzz_constraints_and_scenarios(d):
    from fabric.evaluate import scenario_from_dict
    from fabric.search import constraints_from_dict

    for fn in (constraints_from_dict, scenario_from_dict):
        try:
            fn(d)
        except FabricError:
            pass


CATALOG_TABLES = ["switches", "nics", "transceivers", "cables", "gpus", "routers"]


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.dictionaries(st.sampled_from(CATALOG_TABLES),
                            st.lists(st.dictionaries(st.sampled_from(
                                ["model", "ports", "port_speed_gbps", "price_usd", "power_w", "latency_ns",
                                 "source", "vendor", "fabric", "kind"]), VALUES, max_size=6), max_size=3),
                            max_size=3),
       fmt=st.sampled_from(["json", "yaml", "csv"]))
def test_fuzz_catalog_override_files(tmp_path, rows, fmt):
    import yaml

    from fabric.catalog import load_catalog

    path = tmp_path / f"cat.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(rows, default=str))
    elif fmt == "yaml":
        path.write_text(yaml.safe_dump(json.loads(json.dumps(rows, default=str))))
    else:
        lines = ["table,model,price_usd,power_w"]
        for t, rs in rows.items():
            for r in rs:
                lines.append(f"{t},{r.get('model', '')},{r.get('price_usd', '')},{r.get('power_w', '')}")
        path.write_text("\n".join(lines))
    try:
        load_catalog(path)
    except FabricError:
        pass


ARGS = st.lists(st.sampled_from(["build", "catalog", "parse", "synth", "evaluate", "search", "--preset",
                                 "fat-tree", "--gpus", "-1", "64", "abc", "--json", "--table", "gpus", "--catalog",
                                 "/nonexistent", "--workload", "--design", "--samples", "0", "--list-presets",
                                 "--budget-evals", "--out", "/tmp/fabric-fuzz-out", "--scenario", "fail-spine",
                                 "--dp", "--tp", "x", "--help"]), max_size=7)


@settings(max_examples=fuzz_examples(150), deadline=fuzz_deadline(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(argv=ARGS)
def test_fuzz_cli_arguments(argv, capsys):
    from fabric.cli.main import main

    if "search" in argv and "--budget-evals" not in argv:
        argv = argv + ["--budget-evals", "10"]
    try:
        rc = main(argv)
    except SystemExit as exc:        # argparse: --help exits 0, usage errors exit 2
        rc = exc.code
    capsys.readouterr()
    assert rc in (0, 2, 3)

"""Tests of the hardware catalog: defaults, SI conversion, selection helpers, overrides, errors and the CLI."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from fabric.catalog import TABLE_NAMES, Catalog, default_catalog, load_catalog
from fabric.cli import main as cli_main
from fabric.errors import CatalogError, DesignError


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return default_catalog()


def changed_cells(a: Catalog, b: Catalog) -> set[tuple[str, str, str]]:
    """(table, model, column) of every edge-unit cell that differs between two catalogs (added rows: column '*')."""
    out = set()
    for table in TABLE_NAMES:
        rows_a = {r["model"]: r for r in a.rows(table)}
        for row in b.rows(table):
            old = rows_a.get(row["model"])
            if old is None:
                out.add((table, row["model"], "*"))
                continue
            out |= {(table, row["model"], col) for col in row if row[col] != old[col]}
    return out


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- defaults ------------------------------------------------------------------------------------------------


def test_defaults_load_with_a_source_on_every_row(cat):
    tables = cat.tables()
    assert set(tables) == set(TABLE_NAMES)
    for name, frame in tables.items():
        assert len(frame) >= 5, name
        assert frame["source"].map(lambda s: isinstance(s, str) and len(s.strip()) > 10).all(), name
        assert frame["model"].is_unique


def test_default_model_ids(cat):
    assert {"ib-ndr-64x400", "eth-51t-64x800", "ib-hdr-40x200", "eth-25t-64x400", "ib-xdr-144x800",
            "eth-12t-32x400"} <= set(cat.models("switches"))
    assert {"nic-cx7-400", "nic-cx6-200", "nic-cx8-800", "nic-2x200-dual", "nic-eth-400"} <= set(cat.models("nics"))
    assert {"h100-sxm", "h200-sxm", "b200", "gb200-nvl72", "a100-sxm-80gb"} <= set(cat.models("gpus"))


def test_estimates_are_labelled(cat):
    assert "estimate" in cat.switch("ib-xdr-144x800").source
    assert "estimate" in cat.nic("nic-eth-400").source


def test_qm9700_class_in_si(cat):
    sw = cat.switch("ib-ndr-64x400")
    assert (sw.fabric, sw.ports, sw.port_speed_bps) == ("infiniband", 64, 400e9)
    assert sw.radix_at(400e9) == 64
    assert sw.price_usd == 42_000 and sw.power_w == 750
    assert math.isclose(sw.latency_s, 130e-9)
    assert cat.tables()["switches"].set_index("model").loc["ib-ndr-64x400", "latency_ns"] == 130


def test_gpu_units(cat):
    h100 = cat.gpu("h100-sxm")
    assert h100.scale_up_bps == 3600e9  # NVLink4: 450 GB/s per direction
    assert h100.scale_up_domain_max == 8 and cat.gpu("gb200-nvl72").scale_up_domain_max == 72
    assert math.isclose(h100.bf16_flops, 989e12)
    assert 25_000 <= h100.price_usd <= 30_000 and 270_000 <= h100.server_price_usd <= 317_000


# -- radix and selection -------------------------------------------------------------------------------------


def test_radix_at_breakout(cat):
    sw = cat.switch("eth-51t-64x800")
    assert sw.radix_at(800e9) == 64
    assert sw.radix_at(400e9) == 128
    assert sw.radix_at(100e9) == 512
    assert sw.radix_at(50e9) == 512  # at most 8 lanes per port
    assert sw.radix_at(1600e9) == 0
    assert sw.radix_at(300e9) == 64  # not a whole multiple: no breakout, one slower link per port
    with pytest.raises(DesignError):
        sw.radix_at(0)


def test_transceiver_for_picks_twin_port_on_switch_side(cat):
    t = cat.transceiver_for(400e9, 30, "switch")
    assert t.model == "osfp-2x400-sr8-switch" and t.ports_per_module == 2
    assert cat.transceiver_for(400e9, 30, "nic").model == "osfp-400-sr4-nic"
    assert cat.transceiver_for(400e9, 200, "switch").model == "osfp-2x400-dr8-switch"
    assert cat.transceiver_for(400e9, 200, "nic").medium == "singlemode"


def test_transceiver_for_compares_price_per_port(cat):
    tables = cat.tables()
    single = dict(tables["transceivers"].iloc[0])
    single.update(model="cheap-single", side="any", ports_per_module=1, price_usd=700)
    tables["transceivers"] = pd.concat([tables["transceivers"], pd.DataFrame([single])], ignore_index=True)
    # $700 a module beats the twin's $1,250 a module, but not its $625 a port
    assert Catalog.from_tables(tables).transceiver_for(400e9, 30, "switch").model == "osfp-2x400-sr8-switch"
    tables["transceivers"].loc[tables["transceivers"]["model"] == "cheap-single", "price_usd"] = 600
    assert Catalog.from_tables(tables).transceiver_for(400e9, 30, "switch").model == "cheap-single"


def test_transceiver_for_nothing_fits(cat):
    with pytest.raises(CatalogError, match=r"400 Gb/s over 5000 m"):
        cat.transceiver_for(400e9, 5000, "switch")
    with pytest.raises(CatalogError, match="side"):
        cat.transceiver_for(400e9, 10, "tor")


def test_cable_for(cat):
    assert cat.cable_for("dac", 400e9, 1).model == "dac-400-2m"
    assert cat.cable_for("fibre", 400e9, 40).model == "mmf-50m"
    assert cat.cable_for("fibre", 800e9, 300).model == "smf-500m"
    with pytest.raises(CatalogError, match=r"dac cable for 400 Gb/s over 5 m"):
        cat.cable_for("dac", 400e9, 5)


def test_unknown_model_lookup(cat):
    with pytest.raises(CatalogError, match=r"unknown switch model 'x'; known: ib-ndr-64x400, "):
        cat.switch("x")
    with pytest.raises(CatalogError, match="unknown gpu model"):
        cat.gpu("h900")
    with pytest.raises(CatalogError, match="unknown table"):
        cat.models("routers")


def test_catalog_is_read_only(cat):
    with pytest.raises(TypeError):
        cat.switches["new"] = cat.switch("ib-ndr-64x400")


# -- tables round trip ---------------------------------------------------------------------------------------


def test_tables_round_trip(cat):
    again = Catalog.from_tables(cat.tables(), source="dashboard")
    assert changed_cells(cat, again) == set() and again.source == "dashboard"
    assert {t: again.models(t) for t in TABLE_NAMES} == {t: cat.models(t) for t in TABLE_NAMES}


def test_from_tables_edit_and_errors(cat):
    tables = cat.tables()
    tables["switches"].loc[0, "price_usd"] = 40_000
    edited = Catalog.from_tables(tables)
    assert changed_cells(cat, edited) == {("switches", "ib-ndr-64x400", "price_usd")}
    tables["switches"].loc[1, "power_w"] = float("nan")
    with pytest.raises(CatalogError, match=r"switches row 2.*missing column\(s\) power_w"):
        Catalog.from_tables(tables)
    with pytest.raises(CatalogError, match="missing table"):
        Catalog.from_tables({k: v for k, v in cat.tables().items() if k != "gpus"})


# -- overrides -----------------------------------------------------------------------------------------------


def test_csv_override_changes_only_named_cells(tmp_path, cat):
    path = write(tmp_path, "prices.csv",
                 "table,model,price_usd,power_w,reach_m\n"
                 "switches,ib-ndr-64x400,38000,,\n"
                 "nics,nic-cx7-400,,22,\n"
                 "cables,mmf-30m,,,35\n")
    new = load_catalog(path)
    assert changed_cells(cat, new) == {
        ("switches", "ib-ndr-64x400", "price_usd"),
        ("nics", "nic-cx7-400", "power_w"),
        ("cables", "mmf-30m", "reach_m"),
    }
    assert new.switch("ib-ndr-64x400").price_usd == 38_000 and new.nic("nic-cx7-400").power_w == 22
    assert str(path) in new.source
    assert default_catalog().switch("ib-ndr-64x400").price_usd == 42_000  # the cached defaults are untouched


def test_json_override_and_new_model(tmp_path, cat):
    new_switch = {"model": "eth-102t-128x800", "vendor": "broadcom", "fabric": "ethernet", "ports": 128,
                  "port_speed_gbps": 800, "price_usd": 120000, "power_w": 2000, "latency_ns": 600,
                  "source": "test row"}
    path = write(tmp_path, "o.json", json.dumps({
        "switches": [{"model": "eth-51t-64x800", "latency_ns": 500}, new_switch],
        "gpus": [{"model": "h100-sxm", "price_usd": 25000}],
    }))
    new = load_catalog(path)
    assert changed_cells(cat, new) == {
        ("switches", "eth-51t-64x800", "latency_ns"), ("switches", "eth-102t-128x800", "*"),
        ("gpus", "h100-sxm", "price_usd"),
    }
    assert math.isclose(new.switch("eth-51t-64x800").latency_s, 500e-9)
    assert new.switch("eth-102t-128x800").radix_at(400e9) == 256


def test_yaml_override_and_replace(tmp_path, cat):
    path = write(tmp_path, "o.yaml", "nics:\n  - model: nic-cx6-200\n    price_usd: 999\n")
    assert changed_cells(cat, load_catalog(path)) == {("nics", "nic-cx6-200", "price_usd")}
    path = write(tmp_path, "r.yml",
                 "replace: true\n"
                 "gpus:\n"
                 "  - {model: my-gpu, price_usd: 10000, power_w: 500, scale_up_gbps: 0, scale_up_domain_max: 1,\n"
                 "     bf16_tflops: 100, server_gpus: 4, server_price_usd: 60000, server_power_w: 2500, nvls: no,\n"
                 "     source: estimate for a test}\n")
    new = load_catalog(path)
    assert new.models("gpus") == ["my-gpu"]
    assert new.models("switches") == cat.models("switches")


BAD_FILES = [
    ("missing-col.csv", "table,price_usd\nswitches,1\n", r"missing column\(s\) model"),
    ("unknown-col.csv", "table,model,colour\nswitches,ib-ndr-64x400,red\n", r"unknown column\(s\) colour"),
    ("negative.csv", "table,model,price_usd\nswitches,ib-ndr-64x400,-5\n",
     r"negative\.csv, line 2: table switches, model 'ib-ndr-64x400', column price_usd: must be >= 0, got '-5'"),
    ("text.csv", "table,model,power_w\nnics,nic-cx7-400,lots\n",
     r"line 2: table nics, model 'nic-cx7-400', column power_w: must be a number, got 'lots'"),
    ("ports.csv", "table,model,ports\nswitches,ib-ndr-64x400,64.5\n", r"column ports: must be a whole number"),
    ("new-partial.csv", "table,model,price_usd\nswitches,my-switch,1000\n",
     r"model 'my-switch': missing column\(s\) vendor, fabric, ports"),
    ("table.csv", "table,model,price_usd\nrouters,r1,1\n", r"unknown table 'routers'"),
    ("dup.csv", "table,model,price_usd\ngpus,h100-sxm,1\ngpus,h100-sxm,2\n",
     r"dup\.csv, line 3: table gpus: duplicate model 'h100-sxm' \(also at .*line 2\)"),
    ("wrong-table-col.csv", "table,model,reach_m\nswitches,ib-ndr-64x400,10\n",
     r"table switches, model 'ib-ndr-64x400': unknown column\(s\) 'reach_m'"),
    ("fabric.json", '{"nics": [{"model": "nic-cx7-400", "fabric": "omnipath"}]}',
     r"fabric\.json, nics entry 1: table nics, model 'nic-cx7-400', column fabric: must be one of infiniband, "
     r"ethernet, got 'omnipath'"),
    ("table.json", '{"routers": []}', r"unknown table 'routers'"),
    ("neg.yaml", "cables:\n  - {model: mmf-30m, price_usd: -1}\n", r"model 'mmf-30m', column price_usd: .*got -1"),
    ("nan.json", '{"gpus": [{"model": "b200", "power_w": "NaN"}]}', r"column power_w: must be a finite number"),
    ("bool.json", '{"gpus": [{"model": "b200", "server_gpus": true}]}', r"column server_gpus: must be a number"),
    ("dac0.json", '{"cables": [{"model": "dac-400-2m", "speed_gbps": 0}]}', r"a dac cable needs its speed"),
    ("replace.json", '{"replace": true, "nics": [{"model": "nic-cx7-400", "price_usd": 1}]}',
     r"missing column\(s\) fabric, ports"),
    ("broken.json", '{"nics": [', r"not valid JSON"),
    ("broken.yaml", "nics: [\n", r"not valid YAML"),
    ("prices.txt", "x", r"unknown catalog file type '.txt'"),
]


@pytest.mark.parametrize("name,text,message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_override_files(tmp_path, name, text, message):
    path = write(tmp_path, name, text)
    with pytest.raises(CatalogError, match=message) as info:
        load_catalog(path)
    assert name in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(CatalogError, match="not found"):
        load_catalog(tmp_path / "nope.csv")


# -- CLI -----------------------------------------------------------------------------------------------------


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """Run ``fabric ...`` with only the catalog subcommand registered (independent of the other commands)."""
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ["catalog"])

    def run(*argv):
        code = cli_main.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_cli_text(run_cli):
    code, out, err = run_cli("catalog", "--table", "switches")
    assert code == 0 and err == ""
    assert "port_speed_gbps" in out and "price_usd" in out and "ib-ndr-64x400" in out
    assert "nics" not in out.split("sources:")[0]


def test_cli_json_parses(run_cli, tmp_path):
    path = write(tmp_path, "p.csv", "table,model,price_usd\nswitches,ib-ndr-64x400,40000\n")
    code, out, _ = run_cli("catalog", "--json", "--catalog", str(path))
    data = json.loads(out)
    assert code == 0 and set(data) == set(TABLE_NAMES)
    ndr = next(r for r in data["switches"] if r["model"] == "ib-ndr-64x400")
    assert ndr["price_usd"] == 40000 and ndr["port_speed_gbps"] == 400 and ndr["latency_ns"] == 130


def test_cli_bad_file_exits_2_with_one_line(run_cli, tmp_path):
    path = write(tmp_path, "bad.csv", "table,model,price_usd\nswitches,ib-ndr-64x400,-3\n")
    code, out, err = run_cli("catalog", "--catalog", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fabric catalog: error:")
    assert "bad.csv" in err and "price_usd" in err and "'-3'" in err

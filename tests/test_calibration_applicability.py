"""A calibration fitted on another system warns when applied to a design (CLI and dashboard)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from fabric.calibrate.applicability import calibration_mismatches, search_mismatches
from fabric.cli.main import main
from fabric.reference.presets import preset_design
from fabric.search import Constraints

ROOT = Path(__file__).resolve().parent.parent

#: the SystemSpec.to_dict() form of a 2-node H100 InfiniBand measurement (8 x 400G per node)
TWO_NODES = {"ranks": 16, "gpus_per_node": 8, "gpu_model": "h100-sxm", "network": "infiniband", "nic_gbps": 3200.0,
             "nics_per_node": 8, "nodes": 2, "level": "network", "transport": "infiniband",
             "name": "2 x 8 h100-sxm, infiniband 3200 Gb/s/node"}


def test_each_difference_is_named():
    same = preset_design("fat-tree", 16)                    # 2 nodes, H100, 8 x 400G InfiniBand
    assert calibration_mismatches(TWO_NODES, same) == []
    other = same.replace(gpu_model="b200", nic_model="nic-cx8-800", transport="roce",
                         switch_model="eth-51t-64x800", gpus=1024)
    text = " | ".join(calibration_mismatches(TWO_NODES, other, transport="infiniband"))
    assert "(h100-sxm GPUs); this design uses b200" in text
    assert "over infiniband; this design uses roce" in text
    assert "3200 Gb/s of NICs per server (8 NICs); this design has 6400 Gb/s per server" in text
    assert "2 servers; this design has 128, so its latency and congestion terms are extrapolated" in text
    # 4x the measured nodes is still close enough; 5x is not
    assert calibration_mismatches(TWO_NODES, same.replace(gpus=64)) == []
    assert len(calibration_mismatches(TWO_NODES, same.replace(gpus=80))) == 1
    one = dict(TWO_NODES, ranks=8, nodes=1, level="nvlink", name="1 x 8 h100-sxm")
    assert calibration_mismatches(one, preset_design("fat-tree", 8)) == []
    assert "fits NVLink only" in calibration_mismatches(one, same)[0]
    assert calibration_mismatches(None, same) == []
    s = search_mismatches(TWO_NODES, Constraints(gpus=1024, transports=("roce",)))
    assert any("the search allows roce" in x for x in s) and any("has 128" in x for x in s)


def test_cli_warns(tmp_path, capsys):
    prof = tmp_path / "p.json"
    assert main(["calibrate", str(ROOT / "examples" / "nccl_allreduce.log"), "--out", str(prof)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "-w", str(ROOT / "sample_traces" / "mixtral-8x7b.json"), "-d", "fat-tree", "--gpus",
                 "256", "--calibration", str(prof), "--samples", "16"]) == 0
    err = capsys.readouterr().err
    assert "warning: the calibration was fitted on 1 x 8 h100-sxm: one server, so it fits NVLink only" in err


def test_dashboard_warns_and_points_nccl_uploads_to_calibrate():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["evals"] = "40"
    at.run()
    at.radio(key="wl_source").set_value("upload").run()
    log = (ROOT / "examples" / "nccl_allreduce.log").read_bytes()
    at.file_uploader(key="wl_upload").set_value(("nccl_allreduce.log", log, "text/plain")).run()
    assert not at.exception
    assert any("Calibrate" in i.value for i in at.info)
    at.session_state["calibration"] = {"overrides": {}, "sources": ["x.log"], "key": "k", "system": TWO_NODES,
                                       "transport": "infiniband"}
    at.radio(key="wl_source").set_value("sample").run()
    at.switch_page("pages/design.py").run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "Calibration: the calibration was fitted on 2 x 8 h100-sxm" in warnings and "has 32" in warnings

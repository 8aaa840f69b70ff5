"""The Calibrate page's Audit section in AppTest: uploaded traces, counters, mapping and design file give the
audit, measured vs predicted and the hot links, with the synthetic slow link first; bad uploads are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fabric.audit.synthetic import synthetic_run
from fabric.design import design_to_dict
from fabric.reference.presets import preset_design
from fabric.workload.model import CommOp, Job, ProcessGroup

ROOT = Path(__file__).resolve().parent.parent
SLOW = "leaf2-spine1"


@pytest.fixture(scope="module")
def run():
    design = preset_design("fat-tree", 256)
    job = Job("syn", world_size=256, groups=(ProcessGroup("dp", 256, "dp"), ProcessGroup("ep", 8, "ep")),
              ops=(CommOp("all_reduce", 256 << 20, "dp", 1.0), CommOp("all_to_all", 16 << 20, "ep", 2.0)),
              compute_time_s=0.05)
    r = synthetic_run(design, job, slow_link=SLOW, slow_factor=0.1, ranks=(0, 1, 2))
    return r, json.dumps(design_to_dict(design)).encode()


def page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["evals"] = "20"
    at.run()
    at.switch_page("pages/calibrate.py").run()
    assert not at.exception
    return at


def texts(els) -> str:
    return "\n".join(str(e.value) for e in els)


def test_audit_section_with_design_file_counters_and_mapping(run):
    r, design_json = run
    at = page()
    at.file_uploader(key="audit_traces").set_value([(n.split("/")[-1], d, "application/json")
                                                    for n, d in r.traces]).run()
    assert not at.exception
    assert "3 rank(s) traced" in texts(at.markdown)
    at.radio(key="audit_design_src").set_value("a design file").run()
    at.file_uploader(key="audit_design_file").set_value(("fat-tree-256.json", design_json,
                                                          "application/json")).run()
    at.file_uploader(key="audit_counters").set_value([("counters.csv", r.counters_csv.encode(), "text/csv")]).run()
    at.file_uploader(key="audit_mapping").set_value(("mapping.csv", r.mapping_csv.encode(), "text/csv")).run()
    assert not at.exception and not at.error, texts(at.error)
    assert f"Step tail: {SLOW} runs at" in texts(at.warning)
    links = next(d.value for d in at.dataframe if "link" in d.value.columns)
    assert links.iloc[0]["link"] == SLOW
    cmp_rows = next(d.value for d in at.dataframe if "usual cause" in d.value.columns)
    assert cmp_rows.iloc[0]["what"].startswith("all_reduce")       # the slowed collective disagrees most


def test_audit_section_names_bad_files(run):
    r, _ = run
    at = page()
    at.file_uploader(key="audit_traces").set_value([("broken.json", b"{nope", "application/json")]).run()
    assert not at.exception
    assert "broken.json" in texts(at.error)
    at.file_uploader(key="audit_traces").set_value([(n.split("/")[-1], d, "application/json")
                                                    for n, d in r.traces]).run()
    at.file_uploader(key="audit_counters").set_value([("counters.csv", b"timestamp,switch\n1,a\n", "text/csv")]).run()
    assert "choose one" in texts(at.error)          # counters need a design

"""In a real browser: the Calibrate page's Audit section takes uploaded per-rank traces, a design file, switch
counters and the port map of a synthetic run with one slow link, and draws the audit, measured vs predicted and
the hot links with the slow link on top. To refresh the docs' pictures:

    FABRIC_SCREENSHOTS_DIR=docs/screenshots python -m pytest tests/test_browser_audit.py
"""

from __future__ import annotations

import json

import pytest

from browser_support import VIEW, expect, idle, shot
from fabric.audit.synthetic import synthetic_run
from fabric.design import design_to_dict
from fabric.reference.presets import preset_design
from fabric.workload.model import CommOp, Job, ProcessGroup

pytestmark = pytest.mark.browser
SLOW = "leaf2-spine1"


def _files(tmp_path):
    design = preset_design("fat-tree", 256)
    job = Job("syn", world_size=256, groups=(ProcessGroup("dp", 256, "dp"), ProcessGroup("ep", 8, "ep")),
              ops=(CommOp("all_reduce", 256 << 20, "dp", 1.0), CommOp("all_to_all", 16 << 20, "ep", 2.0)),
              compute_time_s=0.05)
    run = synthetic_run(design, job, slow_link=SLOW, slow_factor=0.1, ranks=(0, 1, 2, 3))
    traces = []
    for name, data in run.traces:
        p = tmp_path / name.split("/")[-1]
        p.write_bytes(data)
        traces.append(p)
    (tmp_path / "design.json").write_text(json.dumps(design_to_dict(design)))
    (tmp_path / "counters.csv").write_text(run.counters_csv)
    (tmp_path / "mapping.csv").write_text(run.mapping_csv)
    return traces, tmp_path / "design.json", tmp_path / "counters.csv", tmp_path / "mapping.csv"


def _upload(page, label: str, files) -> None:
    box = page.get_by_test_id("stFileUploader").filter(has_text=label)
    box.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([str(f) for f in files])
    page.wait_for_timeout(500)
    idle(page, 120)


def test_audit_section_uploads_and_draws(server, browser, shots_dir, tmp_path):
    traces, design, counters, mapping = _files(tmp_path)
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(server + "/calibrate")
    idle(page)
    main = page.get_by_test_id("stMain")
    page.get_by_text("Audit a running job: measured step times and link counters against the model").click()
    _upload(page, "Per-rank traces", traces)
    expect(main).to_contain_text("4 rank(s) traced", timeout=60_000)
    expect(main).to_contain_text("scaling rule not applicable", timeout=30_000)
    expect(page.locator(".js-plotly-plot").filter(has_text="waiting for a late rank")).to_have_count(1)
    page.get_by_test_id("stRadio").filter(has_text="Installed design").get_by_text("a design file").click()
    idle(page)
    _upload(page, "Design file", [design])
    _upload(page, "Switch counters", [counters])
    _upload(page, "link mapping", [mapping])
    expect(main).to_contain_text(f"Step tail: {SLOW} runs at 320 Gb/s of its design 3200 Gb/s", timeout=90_000)
    expect(main).to_contain_text("Measured vs predicted on Full-bisection fat tree (256 GPUs)")
    links = page.locator(".js-plotly-plot").filter(has_text="measured (busy windows)")
    expect(links).to_have_count(1, timeout=30_000)
    expect(links).to_contain_text(f"{SLOW}  (slow)")
    # the slow link is the top bar: its tick label is the highest on the category axis
    ticks = links.locator(".yaxislayer-above .ytick text")
    labels = [" ".join((t.text_content() or "").split()) for t in ticks.all()]
    ys = [t.bounding_box()["y"] for t in ticks.all()]
    assert labels[ys.index(min(ys))] == f"{SLOW} (slow)", labels
    expect(page.locator(".js-plotly-plot").filter(has_text="collective (bytes per call)")).to_have_count(1)
    page.get_by_text("Hot links: measured vs predicted").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    shot(page, shots_dir, "calibrate-audit-links", anchor=None)
    ctx.close()

"""End to end in a real browser: Playwright drives Debian's Chromium against `streamlit run app.py`.

Uploads real traces (../shared/traces, or the built-in samples when absent), runs a search to completion, opens a
design, checks that the charts rendered, downloads the HTML report, follows a shared link, checks that two
browser sessions keep their uploads apart, and takes 1280x720 screenshots of every page. They go to a temporary
folder; to refresh the README's pictures run

    FABRIC_SCREENSHOTS_DIR=docs/screenshots python -m pytest tests/test_browser.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_support import ROOT, VIEW, charts_drawn, expect, idle, nav, shot, wait_for_search
from conftest import TRACES_DIR

pytestmark = pytest.mark.browser


def trace_files() -> list[Path]:
    """Real public traces when present (several jobs, one unreadable file), else the built-in samples."""
    if TRACES_DIR.is_dir():
        files = [TRACES_DIR / "kineto/hta/nccl_parser_config/nccl_data.json.gz",
                 TRACES_DIR / "simai_aicb/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv",
                 *sorted((TRACES_DIR / "kineto/param_dlrm_kineto").glob("worker*.json")),
                 TRACES_DIR / "FIELDS.md"]
        if all(f.exists() for f in files):
            return files
    return [ROOT / "sample_traces/kineto/llama3-70b.rank0.pt.trace.json.gz",
            ROOT / "sample_traces/kineto/llama3-70b.rank1.pt.trace.json.gz",
            ROOT / "sample_traces/dlrm-dcnv2.json", ROOT / "sample_traces/README.md"]


def test_upload_search_open_design_report(server, browser, shots_dir):
    ctx = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/")
    idle(page)
    assert page.get_by_role("heading", name="Workload").count() >= 1
    assert "sample mixtral-8x7b.json" in page.get_by_role("heading", level=2).first.inner_text()

    # upload real traces (one of them unreadable): every good file loads, the bad one is named with its reason
    page.get_by_text("Upload traces").click()
    idle(page)
    files = trace_files()
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([str(f) for f in files])
    page.get_by_text(re.compile("uploaded files")).first.wait_for(timeout=60_000)
    idle(page)
    bad = files[-1].name
    assert page.get_by_test_id("stAlertContentError").filter(has_text=bad).count() == 1
    charts_drawn(page, 3)
    shot(page, shots_dir, "workload-upload")
    shot(page, shots_dir, "workload", anchor="Collectives per step")
    assert "wl=upload" in page.url

    # the search starts on the first visit, reports progress while it runs, and finishes within seconds
    page.get_by_test_id("stTopNavLink").filter(has_text=re.compile("^Search$")).first.click()
    page.get_by_text(re.compile(r"Search running: generation")).first.wait_for(timeout=30_000)
    status = wait_for_search(page)
    assert "Search finished" in status, status
    pareto = page.locator(".js-plotly-plot").first
    assert pareto.locator(".scatterlayer .point").count() > 10           # the front, baselines, other designs
    assert page.get_by_text(re.compile(r"designs on the front after")).count() == 1
    shot(page, shots_dir, "search")

    # download the front as CSV
    with page.expect_download() as dl:
        page.get_by_role("button", name="Front (CSV)").click()
    csv = Path(dl.value.path()).read_text()
    assert csv.startswith("design,family,switch_model")

    # open the recommended design (the selector defaults to it)
    page.get_by_role("button", name="Open design").click()
    page.get_by_role("heading", name="Topology").wait_for(timeout=60_000)
    idle(page)
    charts_drawn(page, 5)
    assert page.get_by_test_id("stMetric").count() == 13       # 6 headline + 4 single failures + 3 cost per step
    assert "design=" in page.url
    shot(page, shots_dir, "design-step-time", anchor="Step-time distribution")
    shot(page, shots_dir, "design-what-if", anchor="Scaling efficiency")

    # the one-file report is the design's record with its charts drawn in (static SVG, no script, small)
    with page.expect_download() as dl:
        page.get_by_role("button", name="Report (one HTML file)").click()
    html = Path(dl.value.path()).read_text()
    assert html.count("<svg") >= 2 and "<script" not in html and len(html) < 300_000
    assert "Step-time distribution" in html and "Context: " in html

    # compare: the fat-tree baseline against the recommended design by default
    nav(page, "Compare")
    picks = page.get_by_test_id("stMultiSelect").first.inner_text()
    assert "baseline: fat tree 1:1" in picks and "recommended:" in picks
    charts_drawn(page, 1)
    shot(page, shots_dir, "compare")

    nav(page, "Constraints")
    shot(page, shots_dir, "constraints")

    # clicking a point of the front opens that design
    nav(page, "Search")
    before = page.url
    page.locator(".js-plotly-plot").first.locator(".scatterlayer .trace").nth(2).locator(".point").first \
        .click(force=True)
    page.get_by_role("heading", name="Topology").wait_for(timeout=60_000)
    idle(page)
    assert "/design?" in page.url and page.url != before
    assert not errors, errors
    ctx.close()


def test_a_shared_link_reproduces_the_view(server, browser, shots_dir):
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    link = (server + "/design?wl=sample%3Adlrm-dcnv2.json&families=clos%2Crail_optimized&budget_usd=4000000"
            "&design=rail_optimized%2Cib-ndr-64x400%2Cnic-cx7-400%2C1%2C1%2C1%2C1%2Cadaptive%2C1%2Cinfiniband"
            "%2Crail_aligned%2C0%2C0%2C0")
    page.goto(link)
    idle(page)
    main = page.get_by_test_id("stMain")
    for text in ("sample dlrm-dcnv2.json", "256 GPUs",
                 "Genes: rail_optimized ib-ndr-64x400 nic-cx7-400 1:1 adaptive infiniband rail_aligned"):
        expect(main).to_contain_text(text, timeout=30_000)
    charts_drawn(page, 5)
    shot(page, shots_dir, "design-topology", anchor="Topology")
    nav(page, "Constraints")
    expect(main).to_contain_text("Constraints valid", timeout=30_000)
    budget = page.get_by_label("Network budget (million USD)")
    assert float(budget.input_value()) == pytest.approx(4.0)
    assert "budget_usd=4000000" in page.url and "families=clos" in page.url
    ctx.close()


def test_two_sessions_keep_their_uploads_apart(server, browser, tmp_path):
    """Two browser sessions at once, each with its own upload: neither sees the other's workload."""
    a_file = tmp_path / "alpha-dlrm.json"
    a_file.write_bytes((ROOT / "sample_traces/dlrm-dcnv2.json").read_bytes())
    b_file = tmp_path / "beta-llama.json"
    b_file.write_bytes((ROOT / "sample_traces/llama3-70b.json").read_bytes())
    pages = []
    for f in (a_file, b_file):
        ctx = browser.new_context(viewport=VIEW)
        page = ctx.new_page()
        page.goto(server + "/")
        idle(page)
        page.get_by_text("Upload traces").click()
        idle(page)
        pages.append((ctx, page, f))
    for _, page, f in pages:                       # both upload before either is checked
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(f))
    for _, page, f in pages:
        page.get_by_role("heading", name=re.compile(f"uploaded {re.escape(f.name)}")).wait_for(timeout=60_000)
        idle(page)
    (ca, pa, fa), (cb, pb, fb) = pages
    for page, mine, other, gpus in ((pa, fa, fb, "256"), (pb, fb, fa, "1,024")):
        nav(page, "Constraints")
        expect(page.get_by_test_id("stMain")).to_contain_text(f"The workload needs {gpus} GPUs", timeout=30_000)
        nav(page, "Workload")
        expect(page.get_by_test_id("stMain")).to_contain_text(f"uploaded {mine.name}", timeout=30_000)
        assert other.name not in page.get_by_test_id("stMain").inner_text()
    ca.close()
    cb.close()

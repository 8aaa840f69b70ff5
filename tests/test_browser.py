"""End to end in a real browser: Playwright drives Debian's Chromium against `streamlit run app.py`.

Uploads real traces (../shared/traces, or the built-in samples when absent), runs a search to completion, opens a
design, checks that the charts rendered, downloads the HTML report, follows a shared link, checks that two
browser sessions keep their uploads apart, and takes 1280x720 screenshots of every page. They go to a temporary
folder; to refresh the README's pictures run

    FABRIC_SCREENSHOTS_DIR=docs/screenshots python -m pytest tests/test_browser.py
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import TRACES_DIR

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("FABRIC_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
VIEW = {"width": 1280, "height": 720}
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def expect(locator):
    """Playwright's auto-waiting assertions (imported late: the module must load without playwright)."""
    from playwright.sync_api import expect as _expect

    return _expect(locator)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """The dashboard on 127.0.0.1 on a free port, for this module's tests."""
    if shutil.which("streamlit") is None and not (Path(sys.executable).parent / "streamlit").exists():
        pytest.skip("streamlit command not found")
    port = _free_port()
    exe = Path(sys.executable).parent / "streamlit"
    cmd = [str(exe) if exe.exists() else "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
                pytest.fail(f"the dashboard did not start: {err[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


def idle(page, timeout: float = 60) -> None:
    """Wait until the page has its title, the script run ended, and every plotly chart is drawn (the counts stay
    the same over two polls: charts are briefly removed on every rerun)."""
    page.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout * 1000)
    page.wait_for_selector(IDLE, timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        now = (page.locator(IDLE).count(), page.locator("[data-testid='stPlotlyChart']").count(),
               page.locator(".js-plotly-plot").count())
        if now[0] and now[2] >= now[1] and now == last:
            break
        last = now
        time.sleep(0.3)
    page.wait_for_selector(IDLE, timeout=timeout * 1000)
    assert page.get_by_test_id("stException").count() == 0, page.get_by_test_id("stException").first.inner_text()


def charts_drawn(page, n: int) -> None:
    """Exactly ``n`` plotly charts drawn (waits for them)."""
    expect(page.locator(".js-plotly-plot")).to_have_count(n, timeout=30_000)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(n, timeout=30_000)


def nav(page, title: str) -> None:
    page.get_by_test_id("stTopNavLink").filter(has_text=re.compile(f"^{re.escape(title)}$")).first.click()
    page.wait_for_timeout(300)
    idle(page)


@pytest.fixture(scope="module")
def shots_dir(tmp_path_factory) -> Path:
    """Where screenshots go: FABRIC_SCREENSHOTS_DIR (relative to the repository) or a temporary folder."""
    target = os.environ.get("FABRIC_SCREENSHOTS_DIR")
    return (ROOT / target) if target else tmp_path_factory.mktemp("screenshots")


def shot(page, folder: Path, name: str, anchor: str | None = None) -> None:
    """A 1280x720 screenshot, scrolled so that ``anchor`` (a heading) is at the top."""
    if anchor is not None:
        page.get_by_role("heading", name=anchor).first.scroll_into_view_if_needed()
        page.get_by_role("heading", name=anchor).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(400)
    page.mouse.move(2, 700)                  # no hover toolbars or tooltips in the picture
    page.wait_for_timeout(300)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))
    assert (folder / f"{name}.png").stat().st_size > 20_000          # a real picture, not a blank page


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


def wait_for_search(page, timeout: float = 90) -> str:
    page.get_by_text(re.compile(r"Search (finished|cancelled|failed)")).first.wait_for(timeout=timeout * 1000)
    idle(page)
    return page.get_by_text(re.compile(r"Search (finished|cancelled|failed)")).first.inner_text()


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
    assert page.get_by_test_id("stMetric").count() == 6
    assert "design=" in page.url
    shot(page, shots_dir, "design-step-time", anchor="Step-time distribution")
    shot(page, shots_dir, "design-what-if", anchor="Scaling efficiency")

    # the one-file report has its charts and plotly.js inline
    with page.expect_download() as dl:
        page.get_by_role("button", name="Report (one HTML file)").click()
    html = Path(dl.value.path()).read_text()
    assert html.count("Plotly.newPlot") >= 4 and not re.search(r"<script[^>]+src=", html)

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

"""The dashboard under load and faults, in a real browser (Playwright, Debian's Chromium):

- five browser sessions at once, each uploading a different trace and running a search: each one gets the front
  an independent ``run_search`` on its own trace gives, sees only its own upload, the server runs at most
  ``max_concurrent_searches`` searches at a time (the fifth waits in the queue), its memory stays bounded, and no
  worker process is left afterwards;
- the Cancel button and a closed tab release a search's worker processes;
- a search interrupted by a server crash (the server and its workers killed) resumes from its saved state when
  its link is opened on the restarted server, and ends with the front of an undisturbed run.

``benchmarks/bench_sessions.py`` runs the same sessions several rounds over and prints the figures.
"""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from browser_support import (ROOT, VIEW, Dashboard, download_text, expect, free_port, go_to_search, is_search_worker,
                             open_with_upload, wait_for_search, wait_for_upload, wait_until)

pytestmark = pytest.mark.browser

#: (name uploaded under, built-in sample it copies): five different traces, four JSON workloads and a Kineto rank
SESSION_TRACES = [("s1-mixtral.json", "mixtral-8x7b.json"), ("s2-llama3.json", "llama3-70b.json"),
                  ("s3-dlrm.json", "dlrm-dcnv2.json"), ("s4-serving.json", "llama3-70b-serving.json"),
                  ("s5-kineto.pt.trace.json.gz", "kineto/llama3-70b.rank0.pt.trace.json.gz")]
DEFAULT_EVALS, SEED, SAMPLES = 300, 0, 256
#: the server's process tree (streamlit, at most four searches' drivers and workers, the multiprocessing helper)
#: stays below this; measured about 1.0 GiB at peak on the development machine (docs/reliability.md)
PEAK_RSS_LIMIT_BYTES = 2 * 2 ** 30


def reference_front(trace: Path, *, budget_evals: int = DEFAULT_EVALS, seed: int = SEED) -> pd.DataFrame:
    """The front an independent in-process search of ``trace`` gives, sized the way the dashboard sizes it."""
    from fabric.search import Constraints, run_search
    from fabric.ui_support.workload_view import cluster_gpus
    from fabric.workload.ingest import ingest

    workload = ingest([(trace.name, trace.read_bytes())]).workload
    res = run_search(workload, Constraints(gpus=cluster_gpus(workload, 8)), budget_evals=budget_evals, seed=seed,
                     samples=SAMPLES)
    return res.front_frame()


def assert_same_front(csv_text: str, expected: pd.DataFrame) -> None:
    got = pd.read_csv(io.StringIO(csv_text))
    assert sorted(got["design"]) == sorted(expected["design"])
    got, expected = got.sort_values("design"), expected.sort_values("design")
    assert got["p99_s"].to_numpy() == pytest.approx(expected["p99_s"].to_numpy(), rel=1e-9)
    assert got["cost_usd"].to_numpy() == pytest.approx(expected["cost_usd"].to_numpy(), rel=1e-9)


class TreeWatch:
    """Samples the server's process-tree memory and its number of search workers in the background."""

    def __init__(self, dash: Dashboard, period_s: float = 0.25):
        self.dash, self.period_s = dash, period_s
        self.peak_rss_bytes = self.peak_workers = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_rss_bytes = max(self.peak_rss_bytes, self.dash.tree_rss_bytes())
            self.peak_workers = max(self.peak_workers, len(self.dash.search_workers()))
            self._stop.wait(self.period_s)

    def __enter__(self) -> "TreeWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def session_files(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("uploads")
    out = []
    for name, sample in SESSION_TRACES:
        (folder / name).write_bytes((ROOT / "sample_traces" / sample).read_bytes())
        out.append(folder / name)
    return out


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    """A server of its own (searches saved in a private folder; an unwatched search is cancelled after 15 s)."""
    dash = Dashboard(free_port(), env={"FABRIC_STATE_DIR": str(tmp_path_factory.mktemp("state")),
                                       "FABRIC_LIMIT_SEARCH_ABANDON_AFTER_S": "15"}).start()
    yield dash
    dash.stop()


def test_five_sessions_each_get_their_own_correct_front(dashboard, browser, session_files, tmp_path):
    expected = {f.name: reference_front(f) for f in session_files}
    with TreeWatch(dashboard) as watch:
        t0 = time.monotonic()
        sessions = [open_with_upload(browser, dashboard.url, f) for f in session_files]   # all upload at once
        for (_, page), f in zip(sessions, session_files):
            wait_for_upload(page, f)
        for _, page in sessions:
            go_to_search(page)                                       # five searches started back to back
        try:
            statuses = [wait_for_search(page, timeout=300) for _, page in sessions]
        except Exception:
            for i, (_, page) in enumerate(sessions):          # what each page showed, for the failure report
                page.screenshot(path=str(tmp_path / f"session{i + 1}.png"), full_page=True)
            print(f"screenshots of the sessions: {tmp_path}")
            raise
        wall_s = time.monotonic() - t0
        for (ctx, page), f, status in zip(sessions, session_files, statuses):
            assert "Search finished" in status, (f.name, status)
            main = page.get_by_test_id("stMain").inner_text()
            assert f"uploaded {f.name}" in main
            others = [g.name for g in session_files if g != f and g.name in main]
            assert not others, f"{f.name}'s page shows {others}"
            assert_same_front(download_text(page, "Front (CSV)"), expected[f.name])
        for ctx, _ in sessions:
            ctx.close()
        wait_until(lambda: not dashboard.search_workers(), 30, "the search workers to end")
    assert "ScriptRunContext" not in dashboard.log.read_text(errors="replace")   # no worker ran the app
    print(f"5 sessions: {wall_s:.1f} s, peak server tree RSS {watch.peak_rss_bytes / 2 ** 20:.0f} MiB, "
          f"peak workers {watch.peak_workers}")
    # max_concurrent_searches = 4 (the fifth queued), each a driver process and its worker (search_process.py)
    assert 1 <= watch.peak_workers <= 2 * 4
    assert watch.peak_rss_bytes < PEAK_RSS_LIMIT_BYTES


def _running_search(browser, url: str, evals: int = 20_000):
    """A session whose search is running with its workers up and will not end during the test: a budget too big
    to spend, and a p99 target no design meets (a search without a feasible front never meets the convergence
    rule, which otherwise stops the sample's search after about 1,400 evaluations)."""
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(f"{url}/search?evals={evals}&p99_target_s=0.001")
    page.get_by_text(re.compile(r"Search running: generation [1-9]")).first.wait_for(timeout=60_000)
    return ctx, page


def test_cancel_button_releases_the_workers(dashboard, browser):
    ctx, page = _running_search(browser, dashboard.url)
    workers = wait_until(dashboard.search_workers, 30, "a search worker")
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_text(re.compile(r"Search cancelled: generation"))).to_be_visible(timeout=30_000)
    t0 = time.monotonic()
    wait_until(lambda: not set(workers) & set(dashboard.search_workers()), 30, "the cancelled search's workers")
    print(f"workers gone {time.monotonic() - t0:.2f} s after the cancelled state showed")
    ctx.close()


def test_closing_the_tab_mid_search_releases_the_workers(dashboard, browser):
    ctx, page = _running_search(browser, dashboard.url)
    workers = wait_until(dashboard.search_workers, 30, "a search worker")
    ctx.close()                                                 # nobody watches the search any more
    t0 = time.monotonic()
    wait_until(lambda: not set(workers) & set(dashboard.search_workers()), 15 + 45,
               "the abandoned search's workers (search_abandon_after_s = 15)")
    print(f"workers gone {time.monotonic() - t0:.1f} s after the tab closed")
    assert time.monotonic() - t0 >= 10                          # not before the abandon time had passed


def test_a_search_interrupted_by_a_server_crash_resumes_after_a_restart(browser, tmp_path):
    evals = 3000
    expected = reference_front(ROOT / "sample_traces/mixtral-8x7b.json", budget_evals=evals)
    port, state = free_port(), tmp_path / "state"
    dash = Dashboard(port, env={"FABRIC_STATE_DIR": str(state)}).start()
    try:
        ctx = browser.new_context(viewport=VIEW)
        page = ctx.new_page()
        page.goto(f"{dash.url}/search?evals={evals}")
        status = page.get_by_text(re.compile(r"Search running: generation ([4-9]|\d\d)"))
        status.first.wait_for(timeout=120_000)
        generation_seen = int(re.search(r"generation (\d+)", status.first.inner_text()).group(1))
        link = page.url
        assert "search=" in link
        workers = dash.search_workers()
        assert workers
        dash.kill()                                             # the server and its workers die at once
        assert not [p for p in workers if is_search_worker(p)]
        ctx.close()
    finally:
        dash.stop()
    dash = Dashboard(port, env={"FABRIC_STATE_DIR": str(state)}).start()
    try:
        ctx = browser.new_context(viewport=VIEW, accept_downloads=True)
        page = ctx.new_page()
        page.goto(link)                                         # the same link, on the restarted server
        resumed = page.get_by_text(re.compile(r"at generation (\d+) after a server restart")).first
        resumed.wait_for(timeout=60_000)
        status = wait_for_search(page, timeout=300)
        assert "Search finished" in status, status
        at = int(re.search(r"at generation (\d+)", status).group(1))
        final = int(re.search(r"generation (\d+),", status).group(1))
        assert generation_seen <= at < final      # saved at least as far as the page had shown; not from scratch
        assert f"{evals:,} designs evaluated" in status or "designs evaluated (budget 3,000)" in status
        assert_same_front(download_text(page, "Front (CSV)"), expected)
        ctx.close()
    finally:
        dash.stop()

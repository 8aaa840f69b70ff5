"""Helpers for the browser tests: start and stop the dashboard server, watch its processes, drive pages.

The server runs in a process group of its own so that a test can kill it together with its search workers, the
way a crashed or restarted server loses them. Processes are read from /proc (Linux), with no extra package.
"""

from __future__ import annotations

import os
import re
import importlib.util
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("FABRIC_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
VIEW = {"width": 1280, "height": 720}
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
SEARCH_ENDED = re.compile(r"Search (finished|cancelled|failed)")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def expect(locator):
    """Playwright's auto-waiting assertions (imported late: the module must load without playwright)."""
    from playwright.sync_api import expect as _expect

    return _expect(locator)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dashboard_command() -> list[str]:
    """How ``scripts/run_dashboard.sh`` starts the server: ``scripts/serve.py`` (``streamlit run app.py`` with the
    libraries imported first)."""
    if importlib.util.find_spec("streamlit") is None:
        pytest.skip("streamlit is not installed")
    return [sys.executable, str(ROOT / "scripts" / "serve.py")]


# ------------------------------------------------------------------ processes, from /proc


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a live process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), rest[0]


def descendants(pid: int) -> list[int]:
    """Live (not zombie) processes below ``pid``."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None and st[1] != "Z":
                parents.setdefault(st[0], []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_search_worker(pid: int) -> bool:
    """True for a live multiprocessing worker: spawned (``spawn_main``) or forked by the fork server (a child of
    the fork server process, whose command line it shares)."""
    line = cmdline(pid)
    if "spawn_main" in line:
        return True
    st = _stat(pid)
    return "forkserver" in line and st is not None and "forkserver" in cmdline(st[0])


def rss_bytes(pid: int) -> int:
    """Resident memory of one process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


# ------------------------------------------------------------------ the dashboard server


@dataclass
class Dashboard:
    """One dashboard server (``scripts/serve.py``, i.e. ``streamlit run app.py``) on 127.0.0.1, in its own process
    group."""

    port: int
    env: dict = field(default_factory=dict)
    #: Streamlit's file watcher for this server; None leaves it to .streamlit/config.toml (as the README's command)
    file_watcher: str | None = "none"
    proc: subprocess.Popen | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> "Dashboard":
        cmd = [*_dashboard_command(), "--server.headless", "true", "--server.address", "127.0.0.1",
               "--server.port", str(self.port), "--browser.gatherUsageStats", "false"]
        if self.file_watcher is not None:
            cmd += ["--server.fileWatcherType", self.file_watcher]
        # the server's log goes to a file: a pipe nobody reads would fill up and block the server when it logs
        self.log = Path(tempfile.mkstemp(prefix=f"fabric-dashboard-{self.port}-", suffix=".log")[1])
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **self.env}, stdout=log, stderr=log,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"the dashboard did not start: {self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the server's log."""
        return self.log.read_text(errors="replace")[-chars:] if self.log and self.log.exists() else ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def search_workers(self) -> list[int]:
        """The server's live search worker processes: forks of its multiprocessing fork server
        (fabric.search.runners.worker_context), or, where there is none, processes spawned with ``spawn_main``."""
        return [p for p in descendants(self.pid) if is_search_worker(p)]

    def tree_rss_bytes(self) -> int:
        """Resident memory of the server and every process below it."""
        return sum(rss_bytes(p) for p in [self.pid, *descendants(self.pid)])

    def kill(self) -> None:
        """SIGKILL the server and its whole process group (workers included), as a crash would."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)

    def stop(self) -> None:
        """Stop the server politely, then make sure nothing of its group is left."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        if self.log is not None:
            self.log.unlink(missing_ok=True)


def wait_until(pred, timeout: float, what: str, poll: float = 0.2):
    """Poll ``pred`` until it returns something true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


# ------------------------------------------------------------------ pages


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


def wait_for_search(page, timeout: float = 90) -> str:
    """Wait for the search on the page to end; returns its status line."""
    page.get_by_text(SEARCH_ENDED).first.wait_for(timeout=timeout * 1000)
    idle(page)
    return page.get_by_text(SEARCH_ENDED).first.inner_text()


def download_text(page, button: str) -> str:
    """Click a download button and return the downloaded file's text."""
    with page.expect_download() as dl:
        page.get_by_role("button", name=button).click()
    return Path(dl.value.path()).read_text()


# ------------------------------------------------------------------ one browser session of the load test


def open_with_upload(browser, url: str, trace: Path, query: str = ""):
    """A new browser session on the dashboard (the Workload page, with ``query`` such as ``seed=3``) that uploads
    ``trace``; returns (context, page) once the upload is chosen (call :func:`wait_for_upload` before reading the
    page)."""
    ctx = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = ctx.new_page()
    page.goto(url + "/" + (f"?{query}" if query else ""))
    idle(page)
    page.get_by_text("Upload traces").click()
    idle(page)
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(trace))
    return ctx, page


def wait_for_upload(page, trace: Path, timeout: float = 120) -> None:
    page.get_by_role("heading", name=re.compile(f"uploaded {re.escape(trace.name)}")).wait_for(timeout=timeout * 1000)
    idle(page, timeout)


def go_to_search(page) -> None:
    """Open the Search page (the first visit starts a search on the session's inputs) without waiting for it."""
    page.get_by_test_id("stTopNavLink").filter(has_text=re.compile("^Search$")).first.click()

"""How much the dashboard logs while it sits idle: total lines and file-watcher ("Inotify ...") lines.

Run: python benchmarks/bench_idle_log.py [--minutes 10] [--repo DIR] [--venv-activity SECONDS]
                                         [--watcher auto|watchdog|poll|none] [--no-browser]

It starts the dashboard exactly as ``bash scripts/run_dashboard.sh`` does (the script itself, in ``--repo``, default
this checkout, with its ``.venv`` inside the project folder as on a developer's machine; it sets the environment up
first if needed), on a free port of 127.0.0.1, opens the app once (a headless Chromium page load through Playwright
when both are available, which runs app.py; otherwise HTTP GETs of ``/`` and ``/_stcore/health``), then idles for
``--minutes`` and counts the server's log lines.

While it idles, another process uses the same environment every ``--venv-activity`` seconds (default 30; 0 turns
it off): ``.venv/bin/python`` importing the dashboard's libraries, as running the CLI or the tests from the same
checkout does. Each such run opens thousands of files inside ``.venv``, and a watcher on the project folder gets an
inotify event for each. (Measured here, such runs alone do not overflow the queue; the server's own imports when the
app first runs do, and each overflow makes watchdog walk the whole folder again.) ``--watcher`` passes ``--server.fileWatcherType`` to the script to compare with
Streamlit's default (``auto``); without it the shipped ``.streamlit/config.toml`` decides.

Prints: the command, the start time, the log lines up to the app's opening and while idle (the shutdown's own
lines are not counted), the watcher lines, the server's CPU seconds while idle, and the first watcher line seen.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--no-first-run"]
WATCHER_LINE = re.compile(r"inotify|watchdog|watcher|queue overflow", re.IGNORECASE)
ACTIVITY = "import numpy, pandas, plotly.graph_objects, networkx, pymoo, yaml, streamlit, dask.distributed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 2.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode("utf-8", "replace")
    except OSError:
        return None


def wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float) -> float:
    """Seconds until /_stcore/health answers ``ok``; raises when the server dies or the time runs out."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"the dashboard exited with code {proc.returncode} before answering")
        if (get(f"http://127.0.0.1:{port}/_stcore/health") or "").strip() == "ok":
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise RuntimeError(f"no answer from /_stcore/health within {timeout_s:.0f} s")


def start_dashboard(repo: Path, port: int, log_path: Path, extra: list[str], env: dict | None = None):
    """``bash scripts/run_dashboard.sh`` in ``repo`` on ``port`` in its own process group, output to ``log_path``."""
    cmd = ["bash", "scripts/run_dashboard.sh", "--server.port", str(port), "--server.address", "127.0.0.1", *extra]
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, cwd=repo, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    log.close()
    return cmd, proc


def stop(proc: subprocess.Popen) -> None:
    """End the server's process group (started by us) and wait for it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def open_app(port: int, use_browser: bool) -> str:
    """Open the app once; returns how."""
    base = f"http://127.0.0.1:{port}"
    if use_browser and Path(CHROMIUM).exists():
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            pass
        else:
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
                page = b.new_page(viewport={"width": 1280, "height": 720})
                page.goto(base + "/", timeout=60_000)
                page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']",
                                       timeout=120_000)
                page.wait_for_timeout(2000)
                b.close()
            return "headless Chromium page load (app.py ran)"
    get(base + "/", timeout=10)
    get(base + "/_stcore/health", timeout=10)
    return "HTTP GET of / and /_stcore/health"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children that were waited for (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def server_pid(proc: subprocess.Popen) -> int:
    """The streamlit process: run_dashboard.sh execs it, so it is the script's own pid."""
    return proc.pid


def activity_loop(python: Path, every_s: float, stop_event: threading.Event, counter: list) -> None:
    while not stop_event.wait(every_s):
        subprocess.run([str(python), "-c", ACTIVITY], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        counter[0] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="idle time after opening the app (default 10)")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to run scripts/run_dashboard.sh in")
    ap.add_argument("--venv-activity", type=float, default=30.0, metavar="SECONDS",
                    help="another process imports the dashboard's libraries from .venv this often (0: never)")
    ap.add_argument("--watcher", choices=("auto", "watchdog", "poll", "none"),
                    help="pass --server.fileWatcherType to the script (default: the shipped config decides)")
    ap.add_argument("--no-browser", action="store_true", help="open the app with HTTP GETs only")
    args = ap.parse_args(argv)

    repo = args.repo.resolve()
    venv = Path(os.environ.get("FABRIC_VENV", ".venv"))
    venv = venv if venv.is_absolute() else repo / venv
    extra = ["--server.fileWatcherType", args.watcher] if args.watcher else []
    port = free_port()
    log_path = Path(tempfile.mkdtemp(prefix="fabric-idle-")) / "dashboard.log"
    cmd, proc = start_dashboard(repo, port, log_path, extra)
    stop_event = threading.Event()
    runs = [0]

    def read() -> list[str]:
        return log_path.read_text(errors="replace").splitlines()

    try:
        start_s = wait_healthy(port, proc, timeout_s=1800)
        time.sleep(2.0)
        n0 = len(read())
        how = open_app(port, not args.no_browser)
        time.sleep(2.0)
        n1 = len(read())
        pid = server_pid(proc)
        cpu0 = cpu_seconds(pid)
        if args.venv_activity > 0:
            threading.Thread(target=activity_loop, args=(venv / "bin" / "python", args.venv_activity, stop_event,
                                                         runs), daemon=True).start()
        t0 = time.perf_counter()
        end = t0 + args.minutes * 60
        while time.perf_counter() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"the dashboard exited with code {proc.returncode} while idle")
            time.sleep(min(5.0, max(0.0, end - time.perf_counter())))
        idle_s = time.perf_counter() - t0
        cpu1 = cpu_seconds(pid)
        alive = (get(f"http://127.0.0.1:{port}/_stcore/health") or "").strip() == "ok"
        lines = read()                  # before the shutdown's own lines
    finally:
        stop_event.set()
        stop(proc)
    phases = {"start": lines[:n0], "opening the app": lines[n0:n1], "idle": lines[n1:]}
    watcher = [ln for ln in lines if WATCHER_LINE.search(ln)]
    print(f"command:                 (cd {repo} && {' '.join(cmd)})")
    print(f"environment:             {venv} ({'inside' if venv.is_relative_to(repo) else 'outside'} the project)")
    print(f"start to /_stcore/health: {start_s:.1f} s")
    print(f"app opened by:           {how}")
    print(f"idle:                    {idle_s / 60:.1f} min; other process used .venv {runs[0]} times "
          f"(every {args.venv_activity:g} s)" if args.venv_activity > 0 else
          f"idle:                    {idle_s / 60:.1f} min; no other process used .venv")
    for name, part in phases.items():
        w = sum(1 for ln in part if WATCHER_LINE.search(ln))
        print(f"log lines, {name + ':':<17s}{len(part):5d}  (watcher/Inotify lines {w})")
    print(f"log lines, total:           {len(lines):5d}  (watcher/Inotify lines {len(watcher)})")
    print(f"server CPU while idle:   {cpu1 - cpu0:.1f} s")
    print(f"server answered at end:  {'yes' if alive else 'NO'}")
    if watcher:
        print(f"first watcher line:      {watcher[0][:200]}")
    print(f"log file:                {log_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time to the first front: how long after opening the Search page the first Pareto front appears.

Starts the dashboard the way ``scripts/run_dashboard.sh`` does (``streamlit run app.py``, a fresh server each
run, so the first visit pays every import and cache fill), opens ``/search`` in headless Chromium (a new browser
session, the built-in sample workload, the default 300-evaluation budget) and measures from the navigation start:

- first front: the live Pareto chart shows front designs (the first generation has been evaluated);
- finished: the page says "Search finished" and draws the final front.

Each run also reports the server's start time (process start to ``/_stcore/health`` answering). Repeat with
``--runs``; a second visit in the same server (``--warm``) shows what a user sees once the server has served
one search.

``--plans auto`` opens ``/search?plans=auto`` instead: every design judged at its best parallelism plan
(docs/plans.md), so the search first ranks the plan shortlist on its probe designs.

Run: python benchmarks/bench_first_front.py [--runs 3] [--warm] [--plans auto]
(needs Debian's chromium and playwright, like the browser tests)
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import CHROMIUM, IDLE, LAUNCH_ARGS, VIEW, Dashboard, free_port  # noqa: E402

FRONT_POINTS = "[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point"


def visit(browser, url: str, timeout_s: float = 120, query: str = "") -> tuple[float, float]:
    """(seconds to the first front, seconds to the finished search) of one new session opening the Search page."""
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    t0 = time.monotonic()
    page.goto(url + "/search" + query, wait_until="commit")
    page.wait_for_selector(FRONT_POINTS, timeout=timeout_s * 1000)
    first = time.monotonic() - t0
    page.get_by_text(re.compile(r"Search finished")).first.wait_for(timeout=timeout_s * 1000)
    page.wait_for_selector(IDLE, timeout=timeout_s * 1000)
    page.wait_for_selector(FRONT_POINTS, timeout=timeout_s * 1000)
    done = time.monotonic() - t0
    ctx.close()
    return first, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh servers to start, one first visit each")
    ap.add_argument("--warm", action="store_true", help="also time a second visit on each server")
    ap.add_argument("--file-watcher", default=None,
                    help="Streamlit's server.fileWatcherType (default: what .streamlit/config.toml says, as the "
                         "README's dashboard command runs it)")
    ap.add_argument("--plans", choices=["fixed", "auto"], default="fixed",
                    help="the plan space of the search (auto: every design at its best plan)")
    args = ap.parse_args()
    query = "?plans=auto" if args.plans == "auto" else ""
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        for run in range(1, args.runs + 1):
            state = tempfile.mkdtemp(prefix="fabric-bench-first-front-")
            t0 = time.monotonic()
            dash = Dashboard(free_port(), env={"FABRIC_STATE_DIR": state}, file_watcher=args.file_watcher).start()
            start_s = time.monotonic() - t0
            try:
                first, done = visit(browser, dash.url, query=query)
                warm = visit(browser, dash.url, query=query) if args.warm else (float("nan"), float("nan"))
            finally:
                dash.stop()
            rows.append((start_s, first, done, *warm))
            print(f"run {run}: server start {start_s:5.2f} s | first visit: first front {first:5.2f} s, finished "
                  f"{done:5.2f} s" + (f" | second visit: first front {warm[0]:5.2f} s, finished {warm[1]:5.2f} s"
                                      if args.warm else ""), flush=True)
        browser.close()
    med = [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]
    print(f"plan space {args.plans}; median of {len(rows)}: server start {med[0]:.2f} s, first front {med[1]:.2f} s, finished {med[2]:.2f} s"
          + (f"; second visit first front {med[3]:.2f} s, finished {med[4]:.2f} s" if args.warm else ""))


if __name__ == "__main__":
    main()

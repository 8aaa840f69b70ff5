"""Concurrent dashboard sessions: wall time, server memory and worker processes over several rounds.

Starts the dashboard (``streamlit run app.py``) in a process group of its own, then for each round opens N
headless-Chromium sessions at once; each uploads a different trace (copies of the built-in samples), opens the
Search page (which starts a search of the default budget, with a new seed each round so that it evaluates new
designs rather than reading the server's cache) and waits for it to finish. Every session's front is
checked against an independent in-process ``run_search`` of the same trace. Prints, per round: wall time, the
server process tree's peak resident memory (server + search workers), its memory after the round, and the most
search workers alive at once; at the end, whether any worker outlived its search.

A server that leaks would show the after-round memory growing round over round.

Run: python benchmarks/bench_sessions.py [--sessions 5] [--rounds 3]
(needs Debian's chromium and playwright, like the browser tests)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import (CHROMIUM, LAUNCH_ARGS, Dashboard, download_text, free_port,  # noqa: E402
                             go_to_search, open_with_upload, wait_for_search, wait_for_upload)
from test_browser_load import SESSION_TRACES, TreeWatch, assert_same_front, reference_front  # noqa: E402

MIB = 2 ** 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=5, help="browser sessions at once (1-5)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not 1 <= args.sessions <= len(SESSION_TRACES):
        ap.error(f"--sessions must be between 1 and {len(SESSION_TRACES)}")
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="fabric-bench-sessions-"))
    files = []
    for name, sample in SESSION_TRACES[:args.sessions]:
        (work / name).write_bytes((ROOT / "sample_traces" / sample).read_bytes())
        files.append(work / name)
    dash = Dashboard(free_port(), env={"FABRIC_STATE_DIR": str(work / "state")}).start()
    time.sleep(2)
    print(f"server idle: {dash.tree_rss_bytes() / MIB:.0f} MiB")
    print(f"{'round':>5} {'sessions':>8} {'wall s':>7} {'peak MiB':>9} {'after MiB':>9} {'peak workers':>12} "
          f"{'fronts':>7}")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            for rnd in range(1, args.rounds + 1):
                seed = rnd - 1              # a new seed each round: new designs to evaluate, not cache hits
                expected = {f.name: reference_front(f, seed=seed) for f in files}
                with TreeWatch(dash) as watch:
                    t0 = time.monotonic()
                    sessions = [open_with_upload(browser, dash.url, f, query=f"seed={seed}" if seed else "")
                                for f in files]
                    for (_, page), f in zip(sessions, files):
                        wait_for_upload(page, f)
                    for _, page in sessions:
                        go_to_search(page)
                    statuses = [wait_for_search(page, timeout=600) for _, page in sessions]
                    wall = time.monotonic() - t0
                    good = 0
                    for (ctx, page), f, status in zip(sessions, files, statuses):
                        if "Search finished" in status:
                            assert_same_front(download_text(page, "Front (CSV)"), expected[f.name])
                            good += 1
                        ctx.close()
                    time.sleep(3)
                print(f"{rnd:>5} {len(files):>8} {wall:>7.1f} {watch.peak_rss_bytes / MIB:>9.0f} "
                      f"{dash.tree_rss_bytes() / MIB:>9.0f} {watch.peak_workers:>12} {good:>3}/{len(files)}")
            browser.close()
        left = dash.search_workers()
        print(f"search workers alive after the last round: {len(left)}")
    finally:
        dash.stop()


if __name__ == "__main__":
    main()

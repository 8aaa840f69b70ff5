"""Set-up cost of the two commands: environment sizes and dashboard start times, first and later.

Run: python benchmarks/bench_setup.py [--starts 3] [--keep] [--no-test-env]

In a temporary ``git clone`` of this repository (HEAD; uncommitted changes are not in it) on this machine (pip's
configured index and cache, as a user's pip would use):

1. first start: ``bash scripts/run_dashboard.sh`` with no ``.venv`` (it creates the environment and installs the
   dashboard's packages) until ``/_stcore/health`` answers ``ok``; then the server is stopped;
2. the dashboard environment's size (``du -sh .venv``);
3. later starts (``--starts``, default 3): the same command again, pip skipped by the set-up stamp;
4. unless ``--no-test-env``: ``bash scripts/setup.sh test`` (what ``scripts/run_tests.sh`` runs first) adds the test
   and ns-3 extras: its time, the full environment's size, the time of a second ``setup.sh test`` (pip skipped), and
   for comparison what the old set-up ran on every start (``pip install --upgrade pip`` then
   ``pip install -e ".[test,packet]"`` on the installed environment).

``--keep`` leaves the clone (with its ``.venv``) in place and prints its path, e.g. for
``python benchmarks/bench_idle_log.py --repo PATH``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_idle_log import free_port, start_dashboard, stop, wait_healthy  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def du(path: Path) -> tuple[str, int]:
    """``du -sh`` text and the size in bytes."""
    human = subprocess.run(["du", "-sh", str(path)], capture_output=True, text=True, check=True).stdout.split()[0]
    kib = int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])
    return human, kib * 1024


def dashboard_start(clone: Path, log: Path) -> float:
    """Seconds from ``bash scripts/run_dashboard.sh`` to ``/_stcore/health`` answering; the server is stopped."""
    port = free_port()
    t0 = time.perf_counter()
    _, proc = start_dashboard(clone, port, log, [])
    try:
        wait_healthy(port, proc, timeout_s=1800)
        return time.perf_counter() - t0
    except RuntimeError:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise
    finally:
        stop(proc)


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3, help="later dashboard starts to time (default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary clone and print its path")
    ap.add_argument("--no-test-env", action="store_true", help="skip the test environment's figures")
    args = ap.parse_args(argv)

    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="fabric-setup-bench-"))
    clone = tmp / "fabric"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    venv = clone / ".venv"
    rows: list[tuple[str, str]] = []
    try:
        first = dashboard_start(clone, tmp / "first.log")
        rows.append(("first start of run_dashboard.sh (creates .venv, pip install -e .) to health ok", f"{first:.1f} s"))
        size, _ = du(venv)
        rows.append(("dashboard environment (du -sh .venv)", size))
        later = [dashboard_start(clone, tmp / f"start{i}.log") for i in range(args.starts)]
        rows.append((f"later starts (pip skipped) to health ok, {args.starts} runs",
                     f"median {statistics.median(later):.1f} s ({', '.join(f'{t:.1f}' for t in later)})"))
        if not args.no_test_env:
            t_test = timed(["bash", "scripts/setup.sh", "test"], clone)
            rows.append(("bash scripts/setup.sh test on the dashboard environment (adds test, packet)", f"{t_test:.1f} s"))
            size, _ = du(venv)
            rows.append(("full test environment (du -sh .venv)", size))
            t_skip = timed(["bash", "scripts/setup.sh", "test"], clone)
            rows.append(("bash scripts/setup.sh test again (pip skipped)", f"{t_skip:.2f} s"))
            py = str(venv / "bin" / "python")
            t0 = time.perf_counter()
            subprocess.run([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], cwd=clone, check=True)
            subprocess.run([py, "-m", "pip", "install", "--quiet", "-e", ".[test,packet]"], cwd=clone, check=True)
            rows.append(("old set-up on every start: pip install -e .[test,packet] on an installed environment",
                         f"{time.perf_counter() - t0:.1f} s"))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"clone of {REPO} at {head}; python {sys.version.split()[0]} for the benchmark itself")
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.keep:
        print(f"kept: {clone}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

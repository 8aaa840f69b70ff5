"""Memory of the dashboard's server process while a 131,072-GPU search starts (issue 39 item 6).

Each mode runs in a fresh process standing for the server: it imports what the dashboard imports, starts the fork
server as app.py does, then starts a dashboard search (:class:`fabric.ui_support.jobs.SearchJob`, one worker
process, the Llama-3-70B preset at 131,072 GPUs on H100 and B200 with 1/2/4/8 planes allowed) and samples its own
resident memory (``VmRSS``) every 0.2 s for ``--seconds`` seconds, then cancels the search. Modes:

- ``thread`` (before): the search driven on a thread of the server, which shares the evaluations with the worker;
- ``process`` (after): the search driven from a process of its own (fabric.ui_support.search_process).

Printed per mode: the server's resident memory before the search, its most during the start (``VmHWM`` too), the
rise, and the most the whole process tree (server, driver, workers) held at a sample.

Run: python benchmarks/bench_server_memory.py [--seconds 25] [--gpus 131072]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _status_kib(pid: int | str, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kib(root: int) -> int:
    """Resident memory of ``root`` and every process below it (Linux /proc)."""
    from procfs import process_stats

    children: dict = {}
    for pid, fields in process_stats().items():
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _status_kib(pid, "VmRSS")
        todo += children.get(pid, [])
    return total


def child(mode: str, seconds: float, gpus: int) -> dict:
    from fabric.search import Constraints
    from fabric.search.runners import start_fork_server
    from fabric.ui_support.jobs import SearchJob
    from fabric.workload.presets import preset_workload

    import pages._common  # noqa: F401  (what the dashboard's server has imported)

    start_fork_server()
    wl = preset_workload("llama3-70b", gpus=gpus)
    cons = Constraints(gpus=gpus, gpu_models=("h100-sxm", "b200"), planes=(1, 2, 4, 8))
    time.sleep(1.0)
    me = os.getpid()
    before = _status_kib(me, "VmRSS")
    job = SearchJob(wl, cons, budget_evals=300, seed=0, workers=1, isolated=(mode == "process"))
    t0 = time.monotonic()
    job.start()
    most, tree_most, gen_at = before, 0, None
    while time.monotonic() - t0 < seconds:
        job.touch()
        most = max(most, _status_kib(me, "VmRSS"))
        tree_most = max(tree_most, _tree_rss_kib(me))
        snap = job.snapshot()
        if gen_at is None and snap.generation >= 1:
            gen_at = time.monotonic() - t0
        if not snap.running:
            break
        time.sleep(0.2)
    job.cancel()
    job.wait(120)
    return {"mode": mode, "rss_before_mib": before / 1024, "rss_most_mib": most / 1024,
            "hwm_mib": _status_kib(me, "VmHWM") / 1024, "tree_most_mib": tree_most / 1024,
            "first_generation_s": gen_at, "state": job.snapshot().state,
            "generation": job.snapshot().generation, "error": job.snapshot().error[:300]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=25.0, help="how long to follow the start of the search")
    ap.add_argument("--gpus", type=int, default=131_072)
    ap.add_argument("--child", choices=["thread", "process"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.seconds, args.gpus)))
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.gpus:,} GPUs, the first "
          f"{args.seconds:g} s of a search with one worker process", flush=True)
    for mode in ("thread", "process"):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, "--seconds",
                              str(args.seconds), "--gpus", str(args.gpus)], env=env, cwd=root, capture_output=True,
                             text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"benchmark child failed:\n{out.stderr}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        gen = "no generation yet" if r["first_generation_s"] is None else \
            f"first generation at {r['first_generation_s']:.1f} s"
        print(f"{'before (driver on a server thread)' if mode == 'thread' else 'after (driver in its own process)'}: "
              f"server {r['rss_before_mib']:,.0f} MiB before, at most {r['rss_most_mib']:,.0f} MiB during the "
              f"start (+{r['rss_most_mib'] - r['rss_before_mib']:,.0f} MiB; VmHWM {r['hwm_mib']:,.0f} MiB); "
              f"process tree at most {r['tree_most_mib']:,.0f} MiB; {gen}, {r['generation']} generations, "
              f"{r['state']}{'; ' + r['error'] if r['error'] else ''}")


if __name__ == "__main__":
    main()

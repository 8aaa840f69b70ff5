"""``fabric evaluate --json`` on 131,072-GPU multi-plane fabrics: the whole CLI call and where its time goes.

Cases (``--cases``, default all):

- ``2plane-rail`` (issue 24, item 15; target <= 2 s wall): ``benchmarks/data/rail_2plane_131k.json``, 131,072 B200
  GPUs, one 800G NIC per GPU run as 4 x 200G ports, 2 in each of 2 planes, rail-optimized 51.2T pods, 3 tiers,
  7:1 above the pods, RoCE, ECMP, with the Mixtral-8x7B sample (``sample_traces/mixtral-8x7b.json``);
- ``hyperscale-multiplane`` (issue 24, item 15; <= 2 s): the preset at 131,072 GPUs (4 planes of 200G, one port
  per plane), the same Mixtral sample;
- ``2plane-rail-llama3`` (issue 34, item 16; <= 1.5 s): the ``2plane-rail`` design with the workload of
  ``fabric synth --preset llama3-70b --gpus 131072`` (made once, untimed, in a temporary folder), whose data-parallel
  rings put 524,160 flows on the NIC ports: the per-port classes (``fabric.evaluate.ports.port_classes``) were
  1.45 s of a 2.7 s call.

All with 256 samples (the CLI default). Each case runs the real command ``repeats`` times in a fresh process (wall
from launch to exit, and the CPU seconds it used: on a shared machine the wall time includes waiting for a core,
the CPU time does not); then once in a fresh process that runs the command in-process with a timer around the
per-port classes (wall of the call, and the port classes' share of it); then once more in a fresh process that
does the command's steps with a timer around each: imports (what the CLI loads before it starts), evaluation (the
context, the record's evaluation, economics and explanation), resilience (the record's failures: the single-failure
rule on the cabling, then the switch classes and the evaluated switch and cable failures above the leaves and leaf
failures the servers ride out). Set ``PYTHONPATH`` to the checkout to measure (the commands run outside it).

Run: python benchmarks/bench_cli_evaluate.py [--repeats 3] [--cases 2plane-rail,hyperscale-multiplane,2plane-rail-llama3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
MIXTRAL = str(ROOT / "sample_traces" / "mixtral-8x7b.json")
RAIL_2PLANE = str(ROOT / "benchmarks" / "data" / "rail_2plane_131k.json")
#: name: (design arguments, workload: a file, or ("synth", preset, GPUs) made with ``fabric synth``, target wall s)
CASES = {
    "2plane-rail": (["-d", RAIL_2PLANE], MIXTRAL, 2.0),
    "hyperscale-multiplane": (["-d", "hyperscale-multiplane", "--gpus", "131072"], MIXTRAL, 2.0),
    "2plane-rail-llama3": (["-d", RAIL_2PLANE], ("synth", "llama3-70b", 131072), 1.5),
}


def _workload(name: str, folder: str) -> str:
    """The case's workload file (a ``synth`` workload is written into ``folder`` on first use)."""
    w = CASES[name][1]
    if isinstance(w, str):
        return w
    _, preset, gpus = w
    path = os.path.join(folder, f"{preset}-{gpus}.json")
    if not os.path.exists(path):
        subprocess.run([sys.executable, "-m", "fabric.cli.main", "synth", "--preset", preset, "--gpus", str(gpus),
                        "--out", path], check=True, stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    return path


def _cli(args: list[str], workload: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``fabric evaluate --json`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fabric.cli.main", "evaluate", "--json", "-w", workload, *args],
                   check=True, stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())   # fabric from PYTHONPATH
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class _Timer:
    """Wall and CPU seconds of a step (CPU: what the step costs whatever else the machine runs)."""

    def __enter__(self):
        self.t, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t, time.process_time() - self.c


def child_ports(name: str, workload: str) -> dict:
    """The whole command in this process, with a timer around the per-port classes (run in a fresh process)."""
    import contextlib
    import io

    t0, c0 = time.perf_counter(), time.process_time()
    from fabric.cli.main import main
    from fabric.evaluate import ports

    real = ports.port_classes
    spent = {"wall": 0.0, "cpu": 0.0, "calls": 0}

    def timed(*a, **kw):
        t, c = time.perf_counter(), time.process_time()
        try:
            return real(*a, **kw)
        finally:
            spent["wall"] += time.perf_counter() - t
            spent["cpu"] += time.process_time() - c
            spent["calls"] += 1

    ports.port_classes = timed                  # fabric.evaluate.network looks it up at each call
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["evaluate", "--json", "-w", workload, *CASES[name][0]])
    ports.port_classes = real
    return {"rc": rc, "call_s": time.perf_counter() - t0, "call_cpu_s": time.process_time() - c0,
            "port_classes_s": spent["wall"], "port_classes_cpu_s": spent["cpu"], "port_classes_calls": spent["calls"]}


def child(name: str, workload: str) -> dict:
    """The command's steps, each timed (run in a fresh process): as ``fabric evaluate --json`` makes them, one record
    in one context (:func:`fabric.review.design_record`), whose failures share its evaluation's ``reuse``."""
    imports = _Timer().__enter__()
    from fabric.cli.main import build_parser

    build_parser()
    from fabric.cli.common import load_design_arg, load_workload_files
    from fabric.cost.economics import economics
    from fabric.evaluate import Scenario
    from fabric.evaluate.explain import explain_step
    from fabric.failures.resilience import failure_analysis
    from fabric.review import design_record, prepare_context
    from fabric.search import Constraints
    from fabric.topology import build_fabric

    imports.__exit__()
    args = CASES[name][0]
    spec = args[1]
    gpus = int(args[3]) if len(args) > 2 else None
    with _Timer() as evaluation:
        wl = load_workload_files([workload])
        design = load_design_arg(spec, gpus, None)
        cons = Constraints(gpus=design.gpus, gpus_per_node=design.gpus_per_node, gpu_model=design.gpu_model)
        ctx = prepare_context(wl, cons, scenario=Scenario(), seed=0, samples=256, label=Path(workload).name)
        record = design_record(design, ctx)
        ev = record.evaluation
        economics(ev, design, params=cons.economics())
        explain_step(ev)
    with _Timer() as res_t:
        res = record.failures["primary"]
    with _Timer() as rule:                   # the rule alone, again (the fabric is built and cached by now)
        failure_analysis(build_fabric(design))
    out = {}
    for key, t in (("imports", imports), ("evaluation", evaluation), ("resilience", res_t), ("rule", rule)):
        out[f"{key}_s"], out[f"{key}_cpu_s"] = t.wall, t.cpu
    import fabric

    out["fabric"] = str(Path(fabric.__file__).parent.parent)
    fab = build_fabric(design)
    out.update(design=design.name, switches=int(fab.n_switches), links=int(fab.n_links),
               survives=bool(res.get("survives_single_failure", not res["partitions_on_single_failure"])),
               switches_tried=res["switches_tried"], links_tried=res["links_tried"],
               leaves_tried=res.get("leaves_tried", []))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", "--designs", default=",".join(CASES))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-ports", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.workload)))
        return 0
    if a.child_ports:
        print(json.dumps(child_ports(a.child_ports, a.workload)))
        return 0
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        for name in a.cases.split(","):
            args, _, target = CASES[name]
            workload = _workload(name, folder)
            runs = [_cli(args, workload) for _ in range(a.repeats)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]

            def sub(flag, name=name, workload=workload):
                return json.loads(subprocess.run([sys.executable, __file__, flag, name, "--workload", workload],
                                                 check=True, cwd=tempfile.gettempdir(), capture_output=True,
                                                 text=True).stdout)

            pc = sub("--child-ports")
            parts = sub("--child")
            med = statistics.median(walls)
            ok &= med <= target
            print(f"{name}: {parts['design']} ({parts['switches']:,} switches, {parts['links']:,} links), workload "
                  f"{Path(workload).name}; fabric from {parts['fabric']}")
            print(f"  fabric evaluate --json, whole process: wall {', '.join(f'{w:.2f}' for w in walls)} s "
                  f"(median {med:.2f} s, target <= {target:g} s); CPU {', '.join(f'{c:.2f}' for c in cpus)} s")
            print(f"  per-port classes (one process running the command): {pc['port_classes_s']:.3f} s wall, "
                  f"{pc['port_classes_cpu_s']:.3f} s CPU in {pc['port_classes_calls']} calls, of a "
                  f"{pc['call_s']:.2f} s call ({pc['call_cpu_s']:.2f} s CPU, imports included)")
            cpu = {k: parts[f"{k}_cpu_s"] for k in ("imports", "evaluation", "resilience", "rule")}
            print(f"  steps, CPU s (one fresh process): imports {cpu['imports']:.2f}, evaluation "
                  f"{cpu['evaluation']:.2f}, resilience {cpu['resilience']:.2f} (the single-failure rule "
                  f"{cpu['rule']:.2f}; the switch classes and the evaluated failures "
                  f"{cpu['resilience'] - cpu['rule']:.2f}: {', '.join(parts['switches_tried'])}; "
                  f"{', '.join(parts['links_tried'])}; {', '.join(parts['leaves_tried']) or 'no leaf'}); wall s: imports {parts['imports_s']:.2f}, evaluation "
                  f"{parts['evaluation_s']:.2f}, resilience {parts['resilience_s']:.2f}")
            print(f"  survives a single failure: {parts['survives']}")
    print("targets met" if ok else "target NOT met (see the wall times above; the CPU times show the work itself)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

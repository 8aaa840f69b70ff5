"""Dedicated fuzz run: every fuzz target with N generated inputs each and a per-input time bound.

Runs the fuzz tests in a child pytest with ``FABRIC_FUZZ_EXAMPLES`` and ``FABRIC_FUZZ_DEADLINE_S`` set, then prints
the wall time, the child's peak resident memory, the slowest targets and pytest's verdict. An input slower than the
deadline fails its test (hypothesis ``DeadlineExceeded``), so "0 failed" means no input hung.

    python benchmarks/run_fuzz.py --examples 10000 --deadline-s 10
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ_FILES = ["tests/test_ingest.py", "tests/test_parse_kineto.py", "tests/test_parse_chakra.py",
              "tests/test_parse_pytorch_et.py", "tests/test_parse_nccl.py", "tests/test_parse_astra.py",
              "tests/test_workload_model.py",
              "tests/test_synth.py", "tests/test_fuzz_inputs.py"]
# the hypothesis-driven targets in those files (the others there are example-based and run once)
FUZZ_SELECT = "fuzz or never_raises or closed_form_for_any_plan or round_trips_through_native"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=10_000, help="generated inputs per target (default 10000)")
    ap.add_argument("--deadline-s", type=float, default=10.0, help="time bound per input in seconds (default 10)")
    args = ap.parse_args(argv)
    env = dict(os.environ, FABRIC_FUZZ_EXAMPLES=str(args.examples), FABRIC_FUZZ_DEADLINE_S=str(args.deadline_s))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", FUZZ_SELECT, "--durations=0",
           "--hypothesis-seed=0", *FUZZ_FILES]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out = proc.stdout
    durations = re.findall(r"^\s*([\d.]+)s call\s+(\S+)$", out, flags=re.M)
    print(f"fuzz run: {args.examples:,} inputs per target, {args.deadline_s:g} s bound per input")
    print(f"targets run: {len(durations)}; wall time {wall:.0f} s; peak RSS of the test process {peak_mib:.0f} MiB")
    for secs, node in sorted(durations, key=lambda d: -float(d[0])):
        print(f"  {float(secs):8.1f} s  {node}")
    tail = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    print("pytest:", tail[-1] if tail else out[-2000:])
    if proc.returncode != 0:
        print(out[-6000:], proc.stderr[-2000:], sep="\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())

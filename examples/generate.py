"""Regenerate the generated example inputs in ``examples/``: ``python examples/generate.py [--check] [--out DIR]``.

Written by fabric's own code (the hand-written examples, ``my_design.yaml``, ``prices.csv`` and ``limits.yaml``, are
not touched):

- ``nccl_allreduce.log``: nccl-tests output of an 8 x H100 node, SYNTHETIC (``fabric.calibrate.synthetic``: the
  evaluator's times under made-up transport parameters with 2 % seeded noise; the file's first line says so);
- ``packet-catalog.json``, ``leaf-spine-32.json``, ``all_to_all-4MB-x32.json``: the first case of the packet-level
  comparison (``fabric.validate.scenarios``, docs/validation-packet.md): 10 Gb/s test hardware, a 1:1 leaf-spine of
  32 single-GPU hosts with ECMP, and one 4 MB all-to-all over the 32 ranks.

``--check`` compares instead of writing and exits 1 when a file is missing or differs (the nccl-tests numbers are
compared to 0.5 %, the rest exactly).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:            # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

EXAMPLES = Path(__file__).resolve().parent


def _json(obj) -> str:
    return json.dumps(obj, indent=1) + "\n"


def files() -> dict[str, str]:
    """File name -> content of every generated example."""
    from fabric.calibrate.synthetic import synthetic_nccl_tests
    from fabric.design import design_to_dict
    from fabric.validate.scenarios import VALIDATION_CATALOG, one_op_workload, validation_design
    from fabric.workload.model import workload_to_dict

    return {
        "nccl_allreduce.log": synthetic_nccl_tests("all_reduce", ranks=8, gpu_model="h100-sxm", noise=0.02, seed=0),
        "packet-catalog.json": _json(VALIDATION_CATALOG),
        "leaf-spine-32.json": _json(design_to_dict(validation_design(1, routing="ecmp", hosts=32))),
        "all_to_all-4MB-x32.json": _json(workload_to_dict(one_op_workload("all_to_all", 4_000_000, 32))),
    }


_NUM = re.compile(r"^-?\d+(\.\d+)?$")


def same(name: str, a: str, b: str) -> bool:
    """Equal, or for the nccl-tests log equal up to 0.5 % (0.02 absolute) in each number."""
    if a == b:
        return True
    if not name.endswith(".log"):
        return False
    la, lb = a.splitlines(), b.splitlines()
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        tx, ty = x.split(), y.split()
        if len(tx) != len(ty):
            return False
        for u, v in zip(tx, ty):
            if u == v:
                continue
            if not (_NUM.match(u) and _NUM.match(v)):
                return False
            fu, fv = float(u), float(v)
            if abs(fu - fv) > max(0.02, 0.005 * max(abs(fu), abs(fv))):
                return False
    return True


def check(out: Path = EXAMPLES) -> list[str]:
    """Names of generated examples under ``out`` that are missing or out of date."""
    return [n for n, text in files().items()
            if not (out / n).is_file() or not same(n, (out / n).read_text(encoding="utf-8"), text)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=EXAMPLES, help="folder (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if anything differs")
    args = ap.parse_args(argv)
    if args.check:
        bad = check(args.out)
        for n in bad:
            print(f"out of date: {n}", file=sys.stderr)
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files().items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.out / name} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

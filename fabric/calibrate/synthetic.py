"""Synthetic nccl-tests output written from fabric's own evaluator: an example input for ``fabric calibrate``.

:func:`synthetic_nccl_tests` returns the text of one nccl-tests run (``all_reduce_perf -b 8 -e 1G -f 2`` style, the
new table layout with ``redop``, ``root`` and ``#wrong`` columns) on one node of ``ranks`` GPUs. Every time in it is
**computed, not measured**: the p50 the evaluator predicts for the point (:func:`fabric.calibrate.evaluate_points`
on :func:`fabric.calibrate.system_design` of the node, the same path ``fabric calibrate`` predicts with) under the
transport parameters ``truth`` (default :data:`DEFAULT_TRUTH`, a system slower than fabric's defaults), times a
seeded log-normal factor (``noise``, default 2 %) drawn per row and placement. The file's first line says so and
names the parameters, so calibrating it shows what the fit recovers.

Command line: ``python -m fabric.calibrate.synthetic [--kind all_reduce] [--ranks 8] [--gpu-model h100-sxm]
[--noise 0.02] [--seed 0] [--out FILE]`` (stdout without ``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from fabric.catalog.devices import DEVICE_NAMES
from fabric.errors import FabricError

__all__ = ["DEFAULT_TRUTH", "DEFAULT_SIZES", "DEVICE_NAMES", "synthetic_times", "render_nccl_tests",
           "synthetic_nccl_tests", "main"]

#: Transport parameters of the made-up system behind the default numbers (fabric's defaults for an 8 x H100 node:
#: nvlink_efficiency 0.80, nvlink_alpha_s 1 us, op_overhead_s 0).
DEFAULT_TRUTH = {"nvlink_efficiency": 0.70, "nvlink_alpha_s": 2e-6, "op_overhead_s": 12e-6}
#: 8 B to 1 GiB, doubling (nccl-tests ``-b 8 -e 1G -f 2``): at least 3 sizes in each of calibrate's regimes.
DEFAULT_SIZES = tuple(2 ** k for k in range(3, 31))
#: nccl-tests columns per kind: (elements per size: 1 or ranks, redop)
_KINDS = {"all_reduce": (False, "sum"), "all_gather": (True, "none"), "reduce_scatter": (True, "sum"),
          "all_to_all": (True, "none")}
_DTYPE, _DTYPE_BYTES = "float", 4


def _check(kind: str, ranks: int, gpu_model: str, sizes) -> None:
    if kind not in _KINDS:
        raise FabricError(f"synthetic nccl-tests: kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if not 2 <= ranks <= 8:
        raise FabricError(f"synthetic nccl-tests: one node of 2 to 8 GPUs, got {ranks} ranks")
    if gpu_model not in DEVICE_NAMES:
        raise FabricError(f"synthetic nccl-tests: gpu model must be one of {', '.join(DEVICE_NAMES)}, got {gpu_model!r}")
    per = _DTYPE_BYTES * (ranks if _KINDS[kind][0] else 1)
    bad = [s for s in sizes if s <= 0 or s % per]
    if bad:
        raise FabricError(f"synthetic nccl-tests: sizes must be positive multiples of {per} B for {kind} on {ranks} "
                          f"ranks, got {bad[:3]}")


def synthetic_times(kind: str = "all_reduce", *, ranks: int = 8, gpu_model: str = "h100-sxm",
                    sizes=DEFAULT_SIZES, truth: dict | None = None, samples: int = 16, seed: int = 0) -> np.ndarray:
    """The evaluator's p50 time (s) of each size under ``truth`` (noise-free)."""
    from fabric.calibrate.data import Point
    from fabric.calibrate.model import evaluate_points
    from fabric.calibrate.system import SystemSpec, system_design

    _check(kind, ranks, gpu_model, sizes)
    system = SystemSpec(ranks=ranks, gpus_per_node=ranks, gpu_model=gpu_model)
    design, catalog = system_design(system)
    points = [Point(kind, int(s), ranks, 0.0) for s in sizes]
    return evaluate_points(design, catalog, points, DEFAULT_TRUTH if truth is None else truth, samples=samples,
                           seed=seed)


def _time_cell(us: float) -> str:
    # nccl-tests prints 2 decimals below 100 us, 1 below 10 ms, none above
    return f"{us:7.0f}" if us >= 1e4 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


def render_nccl_tests(kind: str, ranks: int, gpu_model: str, sizes, oop_s, ip_s, *, note: str = "",
                      host: str = "node01") -> str:
    """nccl-tests stdout for measured (or computed) out-of-place and in-place times per size."""
    from fabric.evaluate.collectives import bus_factor

    _check(kind, ranks, gpu_model, sizes)
    per_rank, redop = _KINDS[kind]
    factor = bus_factor(kind, ranks)
    lines = [f"# {note}"] if note else []
    lines += [f"# nThread 1 nGpus {ranks} minBytes {min(sizes)} maxBytes {max(sizes)} step: 2(factor) warmup iters: 5 "
              "iters: 20 agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Group  0 Pid   4242 on {host:>10s} device {r:2d} [0x{0x18 + 0x10 * r:02x}] "
              f"{DEVICE_NAMES[gpu_model]}" for r in range(ranks)]
    lines += ["#", f"# Collective test starting: {kind}_perf",
              "#" + " " * 62 + "out-of-place                       in-place",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
              "  (GB/s)"]
    busbws = []
    for size, t_oop, t_ip in zip(sizes, oop_s, ip_s):
        count = size // (_DTYPE_BYTES * (ranks if per_rank else 1))
        cells = []
        for t in (t_oop, t_ip):
            algbw = size / t / 1e9
            busbws.append(algbw * factor)
            cells.append(f"{_time_cell(t * 1e6)} {algbw:7.2f} {algbw * factor:7.2f}      0")
        lines.append(f"{size:12d}  {count:12d}  {_DTYPE:>8s}  {redop:>6s}  {-1:6d}  {cells[0]}  {cells[1]}")
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):.4f}", "#", ""]
    return "\n".join(lines)


def synthetic_nccl_tests(kind: str = "all_reduce", *, ranks: int = 8, gpu_model: str = "h100-sxm",
                         sizes=DEFAULT_SIZES, truth: dict | None = None, noise: float = 0.02, seed: int = 0) -> str:
    """nccl-tests text of the evaluator's times under ``truth`` with seeded noise (see the module doc)."""
    truth = dict(DEFAULT_TRUTH if truth is None else truth)
    if not (isinstance(noise, (int, float)) and 0 <= noise < 1):
        raise FabricError(f"synthetic nccl-tests: noise must be in [0, 1), got {noise!r}")
    sizes = tuple(int(s) for s in sizes)
    base = synthetic_times(kind, ranks=ranks, gpu_model=gpu_model, sizes=sizes, truth=truth, seed=seed)
    rng = np.random.default_rng(seed)
    jitter = np.exp(rng.normal(0.0, noise, size=(2, len(sizes)))) if noise else np.ones((2, len(sizes)))
    values = ", ".join(f"{k} {v:g}" for k, v in sorted(truth.items()))
    note = (f"SYNTHETIC, NOT A MEASUREMENT: written by fabric.calibrate.synthetic from fabric's evaluator "
            f"({values}; log-normal noise {noise:.0%}, seed {seed})")
    return render_nccl_tests(kind, ranks, gpu_model, sizes, base * jitter[0], base * jitter[1], note=note)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fabric.calibrate.synthetic", description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="all_reduce", choices=sorted(_KINDS))
    ap.add_argument("--ranks", type=int, default=8, help="GPUs of the one node (2-8, default 8)")
    ap.add_argument("--gpu-model", default="h100-sxm", choices=sorted(DEVICE_NAMES))
    ap.add_argument("--truth", metavar="JSON", help=f"transport parameters (default {json.dumps(DEFAULT_TRUTH)})")
    ap.add_argument("--noise", type=float, default=0.02, help="log-normal sigma of the noise (default 0.02)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", metavar="FILE", help="write here (default stdout)")
    args = ap.parse_args(argv)
    try:
        truth = json.loads(args.truth) if args.truth else None
        text = synthetic_nccl_tests(args.kind, ranks=args.ranks, gpu_model=args.gpu_model, truth=truth,
                                    noise=args.noise, seed=args.seed)
    except (FabricError, ValueError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``fabric audit``: measured step times, stragglers, exposed communication and scaling from per-rank traces."""

from __future__ import annotations

import argparse
import json

from fabric.cli.common import catalog_arg, check_samples, load_design_arg
from fabric.evaluate.engine import DEFAULT_SAMPLES

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "audit",
        help="audit a running job from its per-rank Kineto traces: is the network the suspect?",
        description=(
            "Read per-rank PyTorch profiler (Kineto) traces of one job (several ranks, several steps; optionally "
            "the same job at several sizes, told apart by distributedInfo.world_size) and report the measured "
            "step-time distribution (p50/p95/p99), per-rank communication wait, stragglers, exposed communication "
            "per collective and the scaling efficiency N -> 4N, with the rule 'network is the primary suspect when "
            "N -> 4N efficiency is below 80 % (75-80 %: borderline)' and its evidence."
        ),
        epilog=("examples:\n  fabric audit run8/worker*.json run32/worker*.json\n"
                "  fabric audit worker*.json --design installed.yaml"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="per-rank Kineto trace files (.json, .json.gz)")
    p.add_argument("--scaling", choices=("weak", "strong"), default="weak",
                   help="weak: the per-GPU batch is the same at every size (default); strong: the global batch is")
    p.add_argument("--design", "-d", metavar="FILE|PRESET",
                   help="the installed design (file or preset name): the same workload is evaluated on it and "
                        "measured vs predicted is shown per collective and for the step tail")
    p.add_argument("--gpus", type=int, help="resize the design to this many GPUs")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                   help=f"Monte Carlo samples of the prediction (default {DEFAULT_SAMPLES})")
    p.add_argument("--seed", type=int, default=0, help="random seed of the prediction")
    p.add_argument("--json", action="store_true", help="print the audit as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.audit import audit_paths
    from fabric.audit.text import audit_lines

    design = catalog = None
    if args.design:
        check_samples(args.samples)
        catalog = catalog_arg(args.catalog)
        design = load_design_arg(args.design, args.gpus, catalog)
    a = audit_paths(args.traces, scaling_mode=args.scaling, design=design, catalog=catalog, seed=args.seed,
                    samples=args.samples)
    if args.json:
        print(json.dumps(a.to_dict(), indent=2))
    else:
        print("\n".join(audit_lines(a)))
    return 0

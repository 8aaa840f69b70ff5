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
                "  fabric audit worker*.json --design installed.yaml\n"
                "  fabric audit --mapping-template -d installed.yaml --out mapping.csv\n"
                "  fabric audit worker*.json -d installed.yaml --counters scrape*.prom --mapping mapping.csv"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("traces", nargs="*", metavar="TRACE", help="per-rank Kineto trace files (.json, .json.gz)")
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
    p.add_argument("--counters", nargs="+", metavar="FILE",
                   help="per-port switch counters over time: Prometheus text (with timestamps), a Prometheus "
                        "range-query JSON (matrix) or the CSV timestamp,switch,port,bytes,ecn_marks,pause_frames,"
                        "drops[,speed_bps] (docs/audit.md); needs --design and --mapping")
    p.add_argument("--mapping", metavar="FILE",
                   help="port -> link CSV switch,port,link (link named as the fabric does: leaf3-spine1)")
    p.add_argument("--mapping-template", action="store_true",
                   help="write a port -> link mapping template of --design to --out FILE (every link direction, one "
                        "row per cable, switch and port to fill in) and stop")
    p.add_argument("--write-synthetic", action="store_true",
                   help="write a synthetic cluster run of --workload on --design with one slow link (per-rank "
                        "traces, counters.csv, mapping.csv: fabric.audit.synthetic) to the folder --out DIR, to try "
                        "the audit on, and stop")
    p.add_argument("--out", metavar="PATH", help="where --mapping-template and --write-synthetic write")
    p.add_argument("--workload", "-w", nargs="+", metavar="FILE",
                   help="with --write-synthetic: the workload whose first training job runs (any supported format)")
    p.add_argument("--slow-link", metavar="LINK",
                   help="with --write-synthetic: the link that runs slow (e.g. leaf1-spine0; default: the link the "
                        "model loads most)")
    p.add_argument("--slow-factor", type=float, default=0.1,
                   help="with --write-synthetic: the slow link's share of its design speed (default 0.1)")
    p.add_argument("--json", action="store_true", help="print the audit as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.audit import audit_paths
    from fabric.audit.text import audit_lines

    from fabric.errors import FabricError

    design = catalog = None
    if args.design:
        check_samples(args.samples)
        catalog = catalog_arg(args.catalog)
        design = load_design_arg(args.design, args.gpus, catalog)
    if (args.mapping_template or args.write_synthetic) and not args.out:
        raise FabricError("--mapping-template and --write-synthetic write to --out PATH")
    if args.mapping_template:
        return _template(args.out, design, catalog)
    if args.write_synthetic:
        return _synthetic(args, design, catalog)
    if not args.traces:
        raise FabricError("give the per-rank trace files (or --mapping-template --out FILE with --design)")
    counters = port_map = None
    if args.counters:
        from fabric.audit.counters import read_counter_files
        from fabric.audit.traces import read_paths

        if not args.design or not args.mapping:
            raise FabricError("--counters needs --design (the installed design) and --mapping (port -> link)")
        counters = read_counter_files(read_paths(args.counters))
        port_map = read_paths([args.mapping])[0]
    elif args.mapping:
        raise FabricError("--mapping is for --counters: give the counter files too")
    a = audit_paths(args.traces, scaling_mode=args.scaling, design=design, catalog=catalog, seed=args.seed,
                    samples=args.samples, counters=counters, port_map=port_map)
    if args.json:
        print(json.dumps(a.to_dict(), indent=2))
    else:
        print("\n".join(audit_lines(a)))
    return 0


def _template(path: str, design, catalog) -> int:
    from fabric.audit.portmap import mapping_template
    from fabric.errors import FabricError
    from fabric.topology import build_fabric

    if design is None:
        raise FabricError("--mapping-template needs --design")
    text = mapping_template(build_fabric(design, catalog))
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as err:
        raise FabricError(f"{path}: cannot write the mapping template ({err.strerror or err})") from None
    print(f"wrote {path}: {text.count(chr(10)) - 1} port row(s) to fill in (switch, port)")
    return 0


def _synthetic(args, design, catalog) -> int:
    import dataclasses
    from pathlib import Path

    from fabric.audit.linkload import predicted_link_loads
    from fabric.audit.synthetic import synthetic_run
    from fabric.cli.common import load_workload_files
    from fabric.errors import FabricError
    from fabric.workload.model import Workload

    if design is None or not args.workload:
        raise FabricError("--write-synthetic needs --design and --workload")
    wl = load_workload_files(args.workload)
    job = next((j for j in wl.jobs if j.kind == "training"), None)
    if job is None:
        raise FabricError("--write-synthetic: the workload has no training job")
    job = dataclasses.replace(job, compute_cv=0.0)
    link = args.slow_link
    if link is None:
        loads = predicted_link_loads(design, Workload((job,)), catalog=catalog).links.values()
        top = max(loads, key=lambda ll: (ll.bytes_per_step / ll.capacity_bps, ll.name), default=None)
        if top is None or top.bytes_per_step <= 0:
            raise FabricError("--write-synthetic: the job puts no traffic on the design's switch links; give "
                              "--slow-link or a larger job")
        link = top.name
    run = synthetic_run(design, job, slow_link=link, slow_factor=args.slow_factor, catalog=catalog,
                        samples=args.samples)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, data in run.traces:
            (out / name.split("/")[-1]).write_bytes(data)
        (out / "counters.csv").write_text(run.counters_csv, encoding="utf-8")
        (out / "mapping.csv").write_text(run.mapping_csv, encoding="utf-8")
    except OSError as err:
        raise FabricError(f"{out}: cannot write the synthetic run ({err.strerror or err})") from None
    print(f"wrote {len(run.traces)} rank trace(s), counters.csv and mapping.csv to {out} (SYNTHETIC: {link} runs "
          f"at {args.slow_factor:g} of its speed; step {run.step_s * 1e3:.4g} ms, predicted p50 "
          f"{run.predicted_step_p50_s * 1e3:.4g} ms)")
    return 0

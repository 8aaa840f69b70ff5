"""``fabric parse``: read trace files, print what fabric understood, optionally save the native workload JSON.

Every file is read and reported. If any file fails, the per-file errors go to stderr, nothing is written, and the
command exits 2 with a one-line message naming the file: a partial workload is never presented as complete
(drop the bad file from the command line to go on with the others).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from fabric.errors import FabricError, ParseError
from fabric.workload.ingest import SNIFF_ORDER, ingest_paths
from fabric.workload.model import dump_workload_json
from fabric.workload.summary import format_summary, summarize

__all__ = ["register", "run"]


def register(subparsers) -> None:
    """Add the ``parse`` subcommand."""
    parser = subparsers.add_parser(
        "parse",
        help="read communication traces (Kineto, Chakra, nccl-tests, NCCL logs, ASTRA-sim, AICB) into a workload",
        description=(
            "Read trace files, detect each one's format from its content (gzip is decompressed), and print the "
            "workload fabric understood: jobs, process groups with their inferred roles, communication ops per "
            "step (kind, bytes, count, overlap with compute), a message-size histogram, compute time per step, "
            "and any communication that could not be turned into ops. Rank files of one job (same file name up "
            "to the numbers in it) are merged. Formats: " + ", ".join(SNIFF_ORDER) + ". If any file fails, "
            "every error is printed and the exit code is 2."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="trace files (.json, .json.gz, .et, .log, .txt, .csv)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of text")
    parser.add_argument("--out", metavar="WORKLOAD_JSON",
                        help="also write the parsed workload in fabric's native JSON (schema fabric.workload/1)")
    parser.add_argument("--scale-to", type=int, metavar="N",
                        help="grow the traced job to N GPUs (a whole multiple of its ranks) along --grow, keeping "
                             "every rank's work and message sizes (e.g. a 2-rank trace for a 1,024-GPU design; also "
                             "sets the world size of a Chakra ET, which does not record it)")
    parser.add_argument("--grow", default="dp", choices=["dp", "pp", "ep", "cp", "tp", "world"],
                        help="the parallelism dimension --scale-to grows (default dp: data parallelism)")
    parser.add_argument("--job", metavar="NAME", help="the job --scale-to grows (default: the largest training job)")
    parser.add_argument("--serving", metavar="FILE|JSON",
                        help="a serving trace (no ProfilerStep markers, read as an inference job): the request "
                             "structure the trace cannot tell, as a YAML/JSON file or inline JSON, e.g. "
                             "'{\"decode_steps_in_trace\": 64, \"request_rate_per_s\": 20, \"decode_batch\": 32, "
                             "\"output_tokens\": 256, \"tpot_slo_s\": 0.2}' (keys: docs/serving.md)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Ingest the files; print the summary or fail with exit code 2."""
    result = ingest_paths(args.files)
    failed = [f for f in result.files if not f.ok]
    if failed:
        for f in result.files:
            status = f"ok ({f.format}: {', '.join(f.jobs)})" if f.ok else f"FAILED: {f.error}"
            print(f"  {f.name}: {status}" if f.ok else f"  {status}", file=sys.stderr)
        first = failed[0].error or f"{failed[0].name}: could not be read"
        more = f" (and {len(failed) - 1} more file(s) failed, listed above)" if len(failed) > 1 else ""
        raise ParseError(f"{first}{more}; nothing was written")
    if result.workload is None:  # pragma: no cover - no files means argparse already refused
        raise FabricError("no workload could be read")
    workload = result.workload
    if args.scale_to is not None:
        from fabric.workload.scale import scale_to

        workload = scale_to(workload, args.scale_to, grow=args.grow, job=args.job)
    elif args.job is not None or args.grow != "dp":
        raise FabricError("--grow and --job only apply with --scale-to N")
    if args.serving:
        from fabric.workload.serving import attach_serving

        workload = attach_serving(workload, _load_spec(args.serving), source="--serving")
    summary = summarize(workload)
    summary["files"] = [{"name": f.name, "format": f.format, "jobs": list(f.jobs)} for f in result.files]
    if args.out:
        _write(args.out, dump_workload_json(workload))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(format_summary(summary))
        print()
        for f in result.files:
            print(f"read {f.name} as {f.format} -> {', '.join(f.jobs)}")
        if args.out:
            print(f"wrote {args.out}")
    return 0


def _load_spec(spec: str) -> dict:
    """Inline JSON, or a YAML/JSON file (at most 1 MB)."""
    from pathlib import Path

    import yaml

    text = spec
    if not spec.lstrip().startswith("{"):
        p = Path(spec)
        if not p.is_file():
            raise FabricError(f"--serving: no file {spec!r} (give a YAML/JSON file or inline JSON)")
        if p.stat().st_size > 1_000_000:
            raise FabricError(f"--serving: {spec} is larger than 1 MB")
        text = p.read_text(encoding="utf-8", errors="replace")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise FabricError(f"--serving: not valid JSON/YAML ({' '.join(str(err).split())})") from err


def _write(path: str, text: str) -> None:
    try:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as err:
        raise FabricError(f"cannot write {path}: {err.strerror or err}") from err

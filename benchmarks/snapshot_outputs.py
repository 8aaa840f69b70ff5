"""What fabric prints for a fixed set of inputs, written to a folder, so that a change that must not change behaviour
(a refactor, a speed-up) can be checked by comparing two folders.

The set: ``fabric evaluate --json`` on 22 cases (every family, failures named and sampled, in-network reduction,
PXN detours, a robust mix, the advisor's fixes, 131,072 GPUs), ``fabric parse --json`` of every real trace format
(when ``../shared/traces`` is there) and of the project's own samples, ``fabric build/plans/advise/scale/upgrade/
plan-growth --json``, a ``fabric search`` (its CSVs and ``summary.json`` with the recommendation's record) and a
review brief (its sections and HTML) made from a search's front.

Run with the checkout to snapshot as the current directory:

    python benchmarks/snapshot_outputs.py OUT_DIR            # write the outputs (a few minutes on 2 cores)
    python benchmarks/snapshot_outputs.py --compare A B      # byte-compare two snapshots; JSON differences named

Times (a search's wall seconds) are left out of the JSON files; a file that differs only in a search's wall seconds,
the snapshot folder's name or a report's date is counted apart and named; everything else is compared byte by byte.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

DATA = "benchmarks/data/snapshot"
SHARED = "../shared/traces"

EVALUATE = {
    "131k_2plane_llama3": f"-w {DATA}/llama3-131k.json -d benchmarks/data/rail_2plane_131k.json",
    "ft1024_mixtral": "-w sample_traces/mixtral-8x7b.json -d fat-tree --gpus 1024",
    "ft1024_mixtral_failspine": "-w sample_traces/mixtral-8x7b.json -d fat-tree --gpus 1024 --scenario fail-spine",
    "2plane16k_llama3": f"-w {DATA}/llama3-16k.json -d benchmarks/data/rail_2plane_131k.json --gpus 16384",
    "2plane16k_mixtral": "-w sample_traces/mixtral-8x7b.json -d benchmarks/data/rail_2plane_131k.json --gpus 16384",
    "2plane16k_llama3_leaf0": f"-w {DATA}/llama3-16k.json -d benchmarks/data/rail_2plane_131k.json --gpus 16384 "
                              '--scenario \'{"name":"leaf0-down","fail_switches":["leaf0@p0"]}\'',
    "sharp1k_failspine": f"-w {DATA}/mixtral-1k.json -d {DATA}/sharp1k.json --scenario fail-spine",
    "sharp1k_baseline": f"-w {DATA}/mixtral-1k.json -d {DATA}/sharp1k.json",
    "sharp1k_spine1": f"-w {DATA}/mixtral-1k.json -d {DATA}/sharp1k.json "
                      '--scenario \'{"name":"spine","fail_switches":["spine1"]}\'',
    "sharpB_failspine": f"-w sample_traces/mixtral-8x7b.json -d {DATA}/sharpB.json --scenario fail-spine",
    "railonly256_leaf0": f"-w sample_traces/mixtral-8x7b.json -d {DATA}/railonly256.json "
                         '--scenario \'{"name":"leaf0-down","fail_switches":["leaf0"]}\'',
    "railonly256": f"-w sample_traces/mixtral-8x7b.json -d {DATA}/railonly256.json",
    "railopt256_leaf0": f"-w sample_traces/mixtral-8x7b.json -d {DATA}/railopt256.json "
                        '--scenario \'{"name":"leaf0-down","fail_switches":["leaf0"]}\'',
    "railopt_pxn16_leaf3": f"-w {DATA}/ar16.json -d {DATA}/railopt_pxn16.json "
                           '--scenario \'{"name":"leaf3-down","fail_switches":["leaf3"]}\'',
    "hpn1024_leaf0": "-w sample_traces/mixtral-8x7b.json -d alibaba-hpn --gpus 1024 "
                     '--scenario \'{"name":"leaf0-down","fail_switches":["leaf0@p0"]}\'',
    "hpn15k_llama3": f"-w {DATA}/llama3-16k.json -d alibaba-hpn --gpus 16384",
    "superpod_failspine": "-w sample_traces/mixtral-8x7b.json -d dgx-h100-superpod --gpus 1024 --scenario fail-spine "
                          "--scaling",
    "multiplane131k_mixtral": "-w sample_traces/mixtral-8x7b.json -d hyperscale-multiplane --gpus 131072",
    "ft256_robust": "-w sample_traces/mixtral-8x7b.json -w sample_traces/llama3-70b-online.json --robust worst "
                    "-d fat-tree --gpus 256",
    "railopt256_fixes": f"-w sample_traces/mixtral-8x7b.json -d {DATA}/railopt256.json --fixes",
    "dragonfly1k": f"-w sample_traces/mixtral-8x7b.json -d {DATA}/dfly1k.json --scenario fail-link",
    "mydesign_failspine": "-w sample_traces/mixtral-8x7b.json -d examples/my_design.yaml --scenario fail-spine",
}

PARSE = {
    "sample_kineto": "sample_traces/kineto",
    "sample_mixtral": "sample_traces/mixtral-8x7b.json",
    "kineto_param_dlrm": f"{SHARED}/kineto/param_dlrm_kineto",
    "kineto_hta_nccl": f"{SHARED}/kineto/hta/nccl_parser_config",
    "kineto_hta_filter": f"{SHARED}/kineto/hta/trace_filter",
    "nccl_debug": f"{SHARED}/nccl_debug/aws_efa_eks_p4d_16rank",
    "nccl_tests": f"{SHARED}/nccl_tests/superbench",
    "chakra_json": f"{SHARED}/chakra_et/small_chakra.0.json",
    "chakra_et": f"{SHARED}/chakra_et/chakra.0.et",
    "astra_dlrm": f"{SHARED}/astra_sim/DLRM_HybridParallel.txt",
    "astra_transformer": f"{SHARED}/astra_sim/Transformer_HybridParallel.txt",
    "aicb_csv": f"{SHARED}/simai_aicb/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv",
    "aicb_text": f"{SHARED}/simai_aicb/workload_analytical.txt",
    "pytorch_et": f"{SHARED}/pytorch_et",
}

OTHER = {
    "build_superpod": "build --preset dgx-h100-superpod --gpus 1024 --json",
    "build_multiplane": "build --preset hyperscale-multiplane --json",
    "plans_llama3": "plans -d fat-tree --gpus 1024 --preset llama3-70b --top 5 --samples 64 --json",
    "advise_railopt": f"advise -w sample_traces/mixtral-8x7b.json -d {DATA}/railopt256.json --samples 64 --json",
    "scale_llama3": "scale -d fat-tree --plan llama3-70b --gpus 1024,2048,4096 --samples 64 --json",
    "upgrade_2to1": "upgrade -e examples/installed-2to1.yaml -w sample_traces/mixtral-8x7b.json --budget-usd 400000 "
                    "--samples 32 --json",
    "growth": "plan-growth --stages 256,512 -w sample_traces/mixtral-8x7b.json --samples 32 --json",
}

SEARCH = ("search -w sample_traces/mixtral-8x7b.json --gpus 256 --budget-evals 120 --seed 1 --samples 64 --quiet "
          "--out {out}")

BRIEF = """
import json, sys
from fabric.search import Constraints, run_search
from fabric.workload.presets import preset_workload
from fabric.review import prepare_context
import importlib
try:        # the brief's module before and after issue 35's layout (the snapshot compares the two)
    B = importlib.import_module("fabric.review.brief")
except ImportError:
    B = importlib.import_module("fabric." + "brief")
brief_sections, review_brief = B.brief_sections, B.review_brief
from fabric.ui_support.brief_view import brief_html
wl, c = preset_workload("mixtral-8x7b", 256), Constraints(gpus=256)
res = run_search(wl, c, budget_evals=100, seed=0, samples=64)
ctx = prepare_context(wl, c, samples=64, label="mixtral-8x7b")
b = review_brief(res.front, res.baselines, ctx)
sections = brief_sections(b)
json.dump(sections, open(sys.argv[1] + "/brief_sections.json", "w"), indent=1)
open(sys.argv[1] + "/brief.html", "w").write(brief_html(b, sections, facts=["Context: " + b["context"]]))
"""

#: summary.json keys that hold times (they differ run to run)
TIMES = ("seconds", "wall_s", "elapsed_s", "started", "finished")


def _fabric(args: str, out: Path, name: str) -> None:
    import shlex

    with open(out / f"{name}.json", "w") as fh, open(out / f"{name}.err", "w") as err:
        rc = subprocess.call([sys.executable, "-m", "fabric.cli.main", *shlex.split(args)], stdout=fh, stderr=err)
    (out / f"{name}.rc").write_text(f"{rc}\n")


def _strip_times(obj):
    if isinstance(obj, dict):
        return {k: _strip_times(v) for k, v in obj.items() if k not in TIMES}
    if isinstance(obj, list):
        return [_strip_times(v) for v in obj]
    return obj


def snapshot(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, args in EVALUATE.items():
        _fabric(f"evaluate --json {args}", out, f"evaluate_{name}")
    for name, path in PARSE.items():
        p = Path(path)
        if p.exists():   # a folder: every file in it (rank traces), in name order
            files = sorted(str(f) for f in p.rglob("*") if f.is_file()) if p.is_dir() else [path]
            _fabric("parse --json " + " ".join(files), out, f"parse_{name}")
    for name, args in OTHER.items():
        _fabric(args, out, name)
    sdir = out / "search"
    _fabric(SEARCH.format(out=sdir), out, "search_stdout")
    summary = sdir / "summary.json"
    if summary.exists():
        summary.write_text(json.dumps(_strip_times(json.loads(summary.read_text())), indent=1, sort_keys=True))
    for f in sdir.glob("state*.json"):
        f.unlink()
    subprocess.check_call([sys.executable, "-c", BRIEF, str(out)])


def compare(a: Path, b: Path) -> int:
    names = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()}
                   | {p.relative_to(b) for p in b.rglob("*") if p.is_file()})
    same, differ, masked = 0, [], []
    for n in names:
        pa, pb = a / n, b / n
        if not (pa.exists() and pb.exists()):
            differ.append(f"{n}: only in {a if pa.exists() else b}")
        elif pa.read_bytes() == pb.read_bytes():
            same += 1
        elif _masked(pa.read_bytes(), a) == _masked(pb.read_bytes(), b):
            masked.append(str(n))
        else:
            differ.append(f"{n}: differs{_json_diff(pa, pb)}")
    print(f"{same} of {len(names)} files byte-equal" + (f"; {len(masked)} equal but for run times, the output "
                                                         f"folder and the date ({', '.join(masked)})" if masked else ""))
    for d in differ:
        print("  " + d)
    return 1 if differ else 0


#: what differs between two runs of the same code: wall seconds of a search, the output folder, a report's date
_VOLATILE = (re.compile(rb"\b\d+\.\d s\b"), re.compile(rb"on \d{4}-\d\d-\d\d \d\d:\d\d UTC"))


def _masked(data: bytes, folder: Path) -> bytes:
    data = data.replace(str(folder).encode(), b"<OUT>")
    for pattern in _VOLATILE:
        data = pattern.sub(b"<T>", data)
    return data


def _json_diff(pa: Path, pb: Path) -> str:
    try:
        x, y = json.loads(pa.read_text()), json.loads(pb.read_text())
    except (ValueError, UnicodeDecodeError):
        return ""
    paths: list[str] = []

    def walk(u, v, where):
        if len(paths) >= 5:
            return
        if isinstance(u, dict) and isinstance(v, dict):
            for k in sorted(set(u) | set(v), key=str):
                walk(u.get(k), v.get(k), f"{where}.{k}")
        elif isinstance(u, list) and isinstance(v, list) and len(u) == len(v):
            for i, (p, q) in enumerate(zip(u, v)):
                walk(p, q, f"{where}[{i}]")
        elif u != v:
            paths.append(f"{where}: {str(u)[:60]} -> {str(v)[:60]}")

    walk(x, y, "")
    return (" (" + "; ".join(paths) + ")") if paths else " (same JSON, other bytes)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="folder to write the snapshot into")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two snapshot folders")
    args = ap.parse_args()
    if args.compare:
        return compare(Path(args.compare[0]), Path(args.compare[1]))
    if not args.out:
        ap.error("give an output folder or --compare A B")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    snapshot(Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

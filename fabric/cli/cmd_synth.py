"""``fabric synth``: synthesize a workload from a preset or a model shape and a parallelism plan."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from fabric.errors import FabricError, WorkloadError

__all__ = ["register", "run"]

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}

# flag (dest) -> (model/plan field, type); "count" accepts 70e9 / 70B / 7.5M
_MODEL_FLAGS = {
    "params": ("parameters", "count"), "layers": ("layers", "int"), "hidden": ("hidden", "int"),
    "ffn_hidden": ("ffn_hidden", "int"), "heads": ("heads", "int"), "kv_heads": ("kv_heads", "int"),
    "seq_len": ("seq_len", "int"), "vocab": ("vocab", "int"), "experts": ("experts", "int"),
    "top_k": ("top_k", "int"), "moe_every": ("moe_layer_every", "int"), "dtype_bytes": ("dtype_bytes", "int"),
}
_PLAN_FLAGS = {
    "dp": ("dp", "int"), "tp": ("tp", "int"), "pp": ("pp", "int"), "ep": ("ep", "int"), "cp": ("cp", "int"),
    "zero": ("zero_stage", "int"), "micro_batch": ("micro_batch", "int"), "global_batch": ("global_batch", "int"),
    "grad_accum": ("grad_accum", "int"), "virtual_stages": ("virtual_stages", "int"),
    "bucket_mb": ("bucket_bytes", "mib"),
}


def register(sub) -> None:
    p = sub.add_parser(
        "synth",
        help="synthesize a training/inference workload from a preset or a model shape and parallelism plan",
        description=(
            "Synthesize a workload (fabric's native JSON) without a trace: from a named preset (--preset, see "
            "--list-presets) or from a transformer's shape (--params --layers --hidden --ffn-hidden --heads "
            "--seq-len) and a parallelism plan (--dp --tp --pp [--ep] [--cp] [--zero]). The formulas are in "
            "docs/synthesis.md. Numbers accept SI suffixes where noted (70e9, 70B, 7.5M)."
        ),
        epilog=("examples:\n"
                "  fabric synth --list-presets\n"
                "  fabric synth --preset llama3-70b --gpus 512 --out llama.json\n"
                "  fabric synth --preset mixtral-8x7b --gpus 256 --tp 4 --out moe.json\n"
                "  fabric synth --params 8B --layers 32 --hidden 4096 --ffn-hidden 14336 --heads 32 --kv-heads 8 \\\n"
                "               --seq-len 8192 --dp 16 --tp 4 --pp 2 --global-batch 512 --gpus 128 --out 8b.json"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("what to synthesize")
    src.add_argument("--preset", metavar="NAME", help="start from a named workload (see --list-presets)")
    src.add_argument("--list-presets", action="store_true", help="list the presets with their sources and exit")
    src.add_argument("--name", help="job name (default: the preset's or 'model')")
    m = p.add_argument_group("model shape (without --preset, or to override the preset's)")
    m.add_argument("--params", metavar="N", help="total parameters, e.g. 70e9 or 70B")
    m.add_argument("--layers", metavar="L", help="transformer layers")
    m.add_argument("--hidden", metavar="H", help="hidden size")
    m.add_argument("--ffn-hidden", metavar="F", help="MLP (per-expert) hidden size")
    m.add_argument("--heads", metavar="A", help="attention heads")
    m.add_argument("--kv-heads", metavar="K", help="key/value heads (grouped-query attention; default: --heads)")
    m.add_argument("--seq-len", metavar="S", help="sequence length in tokens")
    m.add_argument("--vocab", metavar="V", help="vocabulary size (default 32000)")
    m.add_argument("--experts", metavar="E", help="experts per MoE layer (1 = dense)")
    m.add_argument("--top-k", metavar="K", help="experts per token")
    m.add_argument("--moe-every", metavar="N", help="every N-th layer is MoE (default 1)")
    m.add_argument("--dtype-bytes", metavar="B", help="bytes per weight/activation element (2 = bf16)")
    pl = p.add_argument_group("parallelism plan")
    pl.add_argument("--gpus", metavar="N", help="GPU count; the degrees must multiply to it (dp defaults to "
                                                "gpus / (tp x pp x cp))")
    pl.add_argument("--dp", metavar="D", help="data-parallel degree")
    pl.add_argument("--tp", metavar="T", help="tensor-parallel degree")
    pl.add_argument("--pp", metavar="P", help="pipeline-parallel degree")
    pl.add_argument("--ep", metavar="E", help="expert-parallel degree (within dp x cp)")
    pl.add_argument("--cp", metavar="C", help="context-parallel degree")
    pl.add_argument("--zero", metavar="S", help="ZeRO stage 0-3 (3 = FSDP)")
    pl.add_argument("--fsdp", action="store_true", default=None, help="fully sharded data parallel (= ZeRO 3)")
    pl.add_argument("--sequence-parallel", action="store_true", default=None,
                    help="Megatron sequence parallelism with TP")
    pl.add_argument("--micro-batch", metavar="B", help="sequences per micro-batch (default 1)")
    pl.add_argument("--global-batch", metavar="G", help="sequences per optimizer step")
    pl.add_argument("--grad-accum", metavar="M", help="micro-batches per step (instead of --global-batch)")
    pl.add_argument("--virtual-stages", metavar="V", help="interleaved pipeline chunks per stage")
    pl.add_argument("--bucket-mb", metavar="MB", help="gradient bucket size in MiB (default 25)")
    hw = p.add_argument_group("hardware and output")
    hw.add_argument("--gpu-tflops", metavar="X", help="dense TFLOP/s of one GPU (default 989, H100 BF16)")
    hw.add_argument("--mfu", metavar="F", help="model FLOPs utilization while computing, 0..1 (default 0.4)")
    hw.add_argument("--checkpoint-period", metavar="S", help="add a checkpoint (storage) job every S seconds")
    hw.add_argument("--out", metavar="FILE", help="where to write the workload JSON ('-' for stdout)")
    p.set_defaults(func=run)


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _convert(dest: str, raw: str, typ: str):
    text = raw.strip()
    if typ == "int":
        if not re.fullmatch(r"\d+", text):
            raise FabricError(f"{_flag(dest)} must be a whole number, got {raw!r}")
        return int(text)
    if typ == "mib":
        try:
            v = float(text)
        except ValueError:
            raise FabricError(f"{_flag(dest)} must be a number of MiB, got {raw!r}") from None
        if not v > 0:
            raise FabricError(f"{_flag(dest)} must be positive, got {raw!r}")
        return int(round(v * 2 ** 20))
    if typ == "float":
        try:
            return float(text)
        except ValueError:
            raise FabricError(f"{_flag(dest)} must be a number, got {raw!r}") from None
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([kKmMbBgGtT]?)", text)
    if not m:
        raise FabricError(f"{_flag(dest)} must be a number such as 70e9 or 70B, got {raw!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2).lower()]


def _collect(args, table: dict) -> dict:
    out = {}
    for dest, (field, typ) in table.items():
        raw = getattr(args, dest, None)
        if raw is not None:
            out[field] = _convert(dest, raw, typ)
    return out


def _list_presets() -> int:
    from fabric.workload.presets import list_presets

    for p in list_presets():
        print(f"{p.name:20s} {p.kind}, default {p.default_gpus:,} GPUs\n{'':20s} {p.description}")
        for s in p.sources:
            print(f"{'':20s} source: {s}")
    return 0


def _synthesize(args):
    from fabric.workload.presets import H100_BF16_FLOPS, preset_workload
    from fabric.workload.synth import ModelSpec, ParallelPlan, synthesize

    model_kw = _collect(args, _MODEL_FLAGS)
    plan_kw = _collect(args, _PLAN_FLAGS)
    for flag in ("fsdp", "sequence_parallel"):
        if getattr(args, flag):
            plan_kw[flag] = True
    gpus = _convert("gpus", args.gpus, "int") if args.gpus is not None else None
    syn: dict = {}
    if args.gpu_tflops is not None:
        syn["gpu_flops"] = _convert("gpu_tflops", args.gpu_tflops, "float") * 1e12
    if args.mfu is not None:
        syn["mfu"] = _convert("mfu", args.mfu, "float")
    if args.checkpoint_period is not None:
        syn["checkpoint_period_s"] = _convert("checkpoint_period", args.checkpoint_period, "float")
    if args.name:
        syn["name"] = args.name
    if args.preset:
        return preset_workload(args.preset, gpus, **model_kw, **plan_kw, **syn)
    need = [f for f in ("params", "layers", "hidden", "ffn_hidden", "heads", "seq_len") if getattr(args, f) is None]
    if need:
        raise WorkloadError("no model: give --preset NAME, or " + ", ".join(_flag(n) for n in need)
                            + " (see fabric synth --help)")
    if "dp" not in plan_kw and gpus is not None:
        denom = plan_kw.get("tp", 1) * plan_kw.get("pp", 1) * plan_kw.get("cp", 1)
        if gpus % denom:
            raise WorkloadError(f"--gpus {gpus} is not a multiple of tp x pp x cp = {denom}")
        plan_kw["dp"] = gpus // denom
    model = ModelSpec(name=args.name or "model", **model_kw)
    plan = ParallelPlan(**plan_kw)
    syn.setdefault("gpu_flops", H100_BF16_FLOPS)
    return synthesize(model, plan, gpus=gpus, **syn)


def run(args) -> int:
    from fabric.workload.model import dump_workload_json

    if args.list_presets:
        return _list_presets()
    if not args.out:
        raise FabricError("no output: pass --out FILE (or --out - for stdout)")
    wl = _synthesize(args)
    text = dump_workload_json(wl, indent=2) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as err:
        raise FabricError(f"cannot write {args.out}: {err.strerror or err}") from err
    from fabric.workload.accounting import step_unit

    for job in wl.jobs:
        if job.kind == "storage":
            print(f"  + {job.name}: {job.burst_bytes / 1e9:,.1f} GB every {job.burst_period_s:g} s")
            continue
        unit = step_unit(job)
        print(f"wrote {args.out}: {job.name} ({job.kind}), {job.world_size:,} GPUs, {len(job.ops)} ops, "
              f"{job.comm_bytes_per_step / 1e9:,.2f} GB of communication and {job.compute_time_s:.4g} s of compute "
              f"per {unit} per rank" + (" (prefill + the request's token steps)" if job.serving else ""))
    return 0

"""``fabric plans``: the parallelism plans that suit a design, best p99 step time first (docs/plans.md)."""

from __future__ import annotations

import argparse
import json

from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "plans",
        help="the parallelism plans that suit a design (TP/PP/DP/EP/CP, ZeRO, micro-batches, rank order)",
        description=(
            "Evaluate every parallelism plan of a training job that fits the model and the GPU's memory on a design "
            "and print the best ones by p99 step time, the workload's own plan beside them (with the given plan it "
            "is X %% slower) and plans refused by memory. The model comes from the workload (a synth preset, or a "
            "trace whose model fabric recognises), from --preset, or from --params --layers ... (docs/plans.md)."
        ),
        epilog=("examples:\n  fabric plans -d fat-tree --gpus 1024 -w sample_traces/llama3-70b.json\n"
                "  fabric plans -d rail-only --gpus 1024 --preset llama3-70b --json\n"
                "  fabric plans -d fat-tree --gpus 128 --params 8B --layers 32 --hidden 4096 --ffn-hidden 14336 \\\n"
                "               --heads 32 --kv-heads 8 --seq-len 8192 --global-batch 256"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--design", "-d", required=True, metavar="FILE|PRESET", help="design file or preset name")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", "-w", nargs="+", metavar="FILE", help="workload or trace file(s)")
    src.add_argument("--preset", metavar="NAME", help="a transformer training preset (llama3-70b, mixtral-8x7b)")
    src.add_argument("--params", metavar="N", help="total parameters of a model shape (70e9, 70B)")
    p.add_argument("--model", metavar="NAME", help="the workload's model when fabric does not recognise it")
    for flag in ("layers", "hidden", "ffn-hidden", "heads", "kv-heads", "seq-len", "vocab", "experts", "top-k"):
        p.add_argument(f"--{flag}", metavar="N", help=f"model shape with --params: {flag}")
    p.add_argument("--global-batch", metavar="G", help="with --params: sequences per step (default 512)")
    p.add_argument("--mfu", metavar="F", help="with --params: model FLOPs utilization of plain data parallelism "
                   "(default 0.4); every other plan is faster or slower by its kernels (fabric.workload.compute_model)")
    p.add_argument("--gpus", type=int, help="resize the design (and a preset or model shape) to this many GPUs")
    p.add_argument("--top", type=int, default=3, help="how many best plans to print (default 3)")
    p.add_argument("--scenario", "-s", default="baseline", help="scenario preset (default baseline)")
    p.add_argument("--samples", type=int, default=256, help="Monte Carlo samples per evaluation (default 256)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same result)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")
    p.set_defaults(func=run)


def _basis(args, design, catalog):
    from fabric.cli.cmd_synth import _MODEL_FLAGS, _collect, _convert
    from fabric.cli.common import load_workload_files
    from fabric.errors import FabricError
    from fabric.plans.basis import basis_from_model, basis_from_preset, basis_from_workload
    from fabric.workload.synth import ModelSpec

    if args.workload:
        return basis_from_workload(load_workload_files(args.workload), model=args.model, catalog=catalog)
    gpus = args.gpus or design.gpus
    if args.preset:
        return basis_from_preset(args.preset, gpus)
    model_kw = _collect(args, _MODEL_FLAGS)
    need = [f for f in ("layers", "hidden", "ffn_hidden", "heads", "seq_len") if f not in {
        k for k, (field, _) in _MODEL_FLAGS.items() if field in model_kw} and getattr(args, f) is None]
    if need:
        raise FabricError("a model shape needs " + ", ".join("--" + n.replace("_", "-") for n in need))
    batch = _convert("global_batch", args.global_batch, "int") if args.global_batch else 512
    mfu = _convert("mfu", args.mfu, "float") if args.mfu else 0.4
    return basis_from_model(ModelSpec(name="model", **model_kw), gpus, batch, mfu=mfu, gpu_model=design.gpu_model,
                            catalog=catalog)


def run(args) -> int:
    from fabric.cli.common import load_design_arg
    from fabric.errors import FabricError
    from fabric.evaluate import load_scenario
    from fabric.plans.best import rank_plans
    from fabric.plans.report import basis_lines, ranking_lines, space_lines

    catalog = catalog_arg(args.catalog)
    design = load_design_arg(args.design, args.gpus, catalog)
    check_samples(args.samples)
    if args.top < 1:
        raise FabricError(f"--top must be at least 1, got {args.top}")
    basis = _basis(args, design, catalog)
    if design.gpus < basis.gpus:
        raise FabricError(f"the design has {design.gpus:,} GPUs but the job needs {basis.gpus:,}; size it with "
                          f"--gpus {basis.gpus}")
    ranking = rank_plans(design, basis, scenario=load_scenario(args.scenario), seed=args.seed,
                         samples=args.samples, catalog=catalog, keep=args.top)
    if not ranking.best:
        raise FabricError(f"no plan of {basis.model.name} on {basis.gpus:,} GPUs fits {design.gpu_model}: "
                          + "; ".join(space_lines(ranking.space, catalog)))
    if args.json:
        out = ranking.to_dict()
        out["basis"] = basis_lines(basis)
        out["space"] = space_lines(ranking.space, catalog)
        out["refused"] = [{"plan": p.tp and {"tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep,
                                             "micro_batch": p.micro_batch, "order": p.order}, "reason": why}
                          for p, why in ranking.space.refused]
        print(json.dumps(out, indent=2, default=float))
        return 0
    for line in basis_lines(basis) + space_lines(ranking.space, catalog) + ranking_lines(ranking):
        print(line)
    return 0

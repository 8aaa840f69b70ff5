"""``fabric scale``: strong scaling of a training plan on a design (fixed global batch, several GPU counts)."""

from __future__ import annotations

import argparse
import json

from fabric.errors import FabricError
from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "scale",
        help="strong scaling: a fixed global batch on several GPU counts, with where the efficiency goes",
        description=(
            "Strong scaling of a transformer training plan (a preset of 'fabric synth --list-presets', with plan "
            "overrides) on a design grown to each GPU count: the global batch stays fixed, so data parallelism "
            "grows and each pipeline runs fewer micro-batches. Prints p50/p99 step time, efficiency against linear "
            "speed-up from the first count, and the p99 efficiency lost to the pipeline bubble, to stragglers and "
            "to the network. Weak scaling (data parallelism grows at fixed work per GPU) is 'fabric evaluate "
            "--scaling'."
        ),
        epilog=("examples:\n"
                "  fabric scale -d dgx-h100-superpod --plan llama3-70b --gpus 768,1536,3584\n"
                "  fabric scale -d fat-tree --plan llama3-70b --gpus 768,1536,3584 --virtual-stages 1 "
                "--global-batch 1008 --json\n"
                "  fabric scale -d my.yaml --plan mixtral-8x7b --gpus 256,512,1024 --set tp=4"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--design", "-d", required=True, metavar="FILE|PRESET",
                   help="design file (.json/.yaml) or design preset (fabric build --list-presets); it is grown to "
                        "each GPU count")
    p.add_argument("--plan", required=True, metavar="PRESET", help="transformer training preset (llama3-70b, "
                                                                   "mixtral-8x7b)")
    p.add_argument("--gpus", required=True, metavar="N1,N2,...",
                   help="GPU counts in ascending order, the first is the reference (e.g. 768,1536,3584)")
    p.add_argument("--global-batch", metavar="G|G1,G2,...",
                   help="sequences per optimizer step at every count (default: the smallest valid batch at least "
                        "the preset's own), or one per count (the efficiency is then per sequence)")
    p.add_argument("--compute", choices=["mfu", "kernels"], default="mfu",
                   help="each count's compute: the preset's MFU rule (default), or its plan's kernels on the "
                        "design's GPU (fabric.workload.compute_model, no MFU given)")
    p.add_argument("--virtual-stages", type=int, metavar="V",
                   help="interleaved pipeline schedule: model chunks per pipeline stage (1 = plain 1F1B)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a plan or model override of the preset, e.g. tp=4, pp=8, micro_batch=2, gated_mlp=false, "
                        "gemm_precision=fp8 (repeatable)")
    p.add_argument("--samples", type=int, default=256, help="Monte Carlo samples per evaluation (default 256)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same result)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=run)


def _counts(text: str) -> list[int]:
    out = []
    for part in str(text).split(","):
        part = part.strip().replace("_", "")
        if not (part.isascii() and part.isdigit()) or int(part) < 1:
            raise FabricError(f"--gpus: {part!r} is not a whole number of GPUs; give e.g. 768,1536,3584")
        out.append(int(part))
    return out


#: plan overrides whose values are names, not numbers
_TEXT_KEYS = {"order", "recompute", "gemm_precision"}


def _overrides(items: list[str]) -> dict:
    out: dict = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise FabricError(f"--set {item!r}: expected KEY=VALUE, e.g. tp=4")
        text = value.strip()
        if text.lower() in ("true", "false"):
            out[key] = text.lower() == "true"
            continue
        try:
            out[key] = int(text)
        except ValueError:
            try:
                out[key] = float(text)
            except ValueError:
                if key not in _TEXT_KEYS or not text:
                    raise FabricError(f"--set {item!r}: the value must be a number or true/false"
                                      + (f" ({', '.join(sorted(_TEXT_KEYS))} take a name)" if key not in _TEXT_KEYS
                                         else "")) from None
                out[key] = text         # the plan's checks name a wrong choice
    return out


def _batches(text: str | None):
    """``--global-batch``: None, one batch, or one per GPU count."""
    if text is None:
        return None
    out = []
    for part in str(text).split(","):
        part = part.strip().replace("_", "")
        if not (part.isascii() and part.isdigit()) or int(part) < 1:
            raise FabricError(f"--global-batch: {part!r} is not a whole number of sequences; give e.g. 3072 or "
                              f"3072,3072,2688")
        out.append(int(part))
    return out[0] if len(out) == 1 else out


def run(args) -> int:
    from fabric.cli.common import load_design_arg
    from fabric.evaluate.strong_scaling import strong_scaling

    check_samples(args.samples)
    catalog = catalog_arg(args.catalog)
    counts = _counts(args.gpus)
    design = load_design_arg(args.design, counts[0], catalog)
    rows = strong_scaling(design, args.plan, counts, overrides=_overrides(args.set),
                          global_batch=_batches(args.global_batch), virtual_stages=args.virtual_stages,
                          compute=args.compute, seed=args.seed, samples=args.samples, catalog=catalog)
    if args.json:
        print(json.dumps({"design": design.name, "plan": args.plan, "rows": rows}, indent=2, default=float))
        return 0
    first = rows[0]
    batches = sorted({r["global_batch"] for r in rows})
    batch = f"global batch {batches[0]:,} sequences" if len(batches) == 1 else \
        "global batch " + " / ".join(f"{r['global_batch']:,}" for r in rows) + " sequences (efficiency per sequence)"
    source = "each plan's kernels" if args.compute == "kernels" else "the preset's MFU"
    print(f"strong scaling of {args.plan} on {design.name}: {batch}, pipeline with {first['virtual_stages']} virtual "
          f"stage(s) per stage; compute from {source}; reference {first['gpus']:,} GPUs")
    print(f"{'GPUs':>8} {'DP':>5} {'micro-batches':>13} {'bubble':>7} {'p50 step':>10} {'p99 step':>10} "
          f"{'eff p50':>8} {'eff p99':>8} {'lost: bubble':>13} {'stragglers':>11} {'network':>8}")
    for r in rows:
        print(f"{r['gpus']:>8,} {r['dp']:>5,} {r['micro_batches']:>13,} {r['bubble_fraction']:>7.1%} "
              f"{r['step_p50_s']:>9.3f}s {r['step_p99_s']:>9.3f}s {r['efficiency_p50']:>8.1%} "
              f"{r['efficiency_p99']:>8.1%} {r['lost_bubble']:>13.1%} {r['lost_stragglers']:>11.1%} "
              f"{r['lost_network']:>8.1%}")
    print("efficiency = linear speed-up from the first count / actual; the lost shares of the p99 step add up to "
          "1 - efficiency p99")
    return 0

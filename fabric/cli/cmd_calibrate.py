"""``fabric calibrate``: fit the evaluator's transport parameters to measured collective times (issue 7)."""

from __future__ import annotations

import argparse
import json
import math
import re

from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run", "parse_regimes", "canonical_kind"]

_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1024, "m": 1e6, "mb": 1e6, "mib": 1024 ** 2, "g": 1e9,
          "gb": 1e9, "gib": 1024 ** 3}


def register(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit transport efficiency and latency to measured nccl-tests runs; report errors",
        description=(
            "Fit the evaluator's efficiency and per-step latency (NVLink for one-node measurements, the network "
            "across nodes), and a scale of both per message-size regime, to measured collective times, by relative "
            "least squares. Prints the fitted values, every point's measured and predicted time and bus bandwidth, "
            "and the geomean errors; --out saves the calibration profile (its 'overrides' are what evaluate's "
            "transport_overrides accept)."
        ),
        epilog=(
            "examples:\n"
            "  fabric calibrate nccl_allreduce.log\n"
            "  fabric calibrate superbench/*.log --holdout all_to_all --out a100.json --plot a100.html\n"
            "  fabric calibrate superbench/*.log --cross-validate\n"
            "  fabric calibrate efa-16.log --nic-gbps 400 --json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="nccl-tests output, NCCL_DEBUG logs with an nccl-tests table, or per-op CSVs with timings")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--out", metavar="PROFILE.json", help="save the calibration profile here")
    p.add_argument("--plot", metavar="PLOT.html", help="write measured vs predicted busbw (self-contained HTML)")
    p.add_argument("--gpu-model", metavar="MODEL",
                   help="catalog GPU model when the log's device name does not map to one (e.g. a100-sxm-80gb)")
    p.add_argument("--nic-gbps", type=float, metavar="G",
                   help="scale-out bandwidth per node in Gb/s, all NICs together (defaults: EFA p4d 400, EFA p5 "
                        "3200, DGX A100 1600, DGX H100 3200)")
    p.add_argument("--gpus-per-node", type=int, metavar="N", help="GPUs per node when the log lists no hosts")
    p.add_argument("--transport", choices=("efa", "infiniband", "roce"),
                   help="the network of multi-node measurements when the log does not say")
    p.add_argument("--holdout", action="append", default=[], metavar="KIND",
                   help="leave this collective out of the fit and report it out of sample (repeatable)")
    p.add_argument("--fit-on", action="append", default=[], metavar="KIND",
                   help="fit on this collective only (repeatable); the others are reported out of sample")
    p.add_argument("--cross-validate", action="store_true",
                   help="also fit on each collective alone and predict the others (a train x test error table)")
    p.add_argument("--regimes", default=None, metavar="EDGES",
                   help="upper size edges of the regimes, e.g. '64KiB,1MiB,16MiB' (the default) or 'none'")
    p.add_argument("--samples", type=int, default=16, help="Monte Carlo samples per evaluation (default 16)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same result)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.set_defaults(func=run)


def parse_regimes(text: str | None):
    """``'64KiB,1MiB,16MiB'`` -> byte edges; ``'none'`` -> () (one regime); None -> the default edges."""
    from fabric.calibrate import CalibrationError, DEFAULT_REGIME_EDGES

    if text is None:
        return DEFAULT_REGIME_EDGES
    if text.strip().lower() in ("none", "one", ""):
        return ()
    edges = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", part)
        unit = (m.group(2).lower() if m else "")
        if not m or unit not in _UNITS:
            raise CalibrationError(f"--regimes: cannot read {part.strip()!r}; give sizes like 64KiB,1MiB,16MiB "
                                   "or 'none'")
        edges.append(int(round(float(m.group(1)) * _UNITS[unit])))
    if any(e <= 0 for e in edges) or len(set(edges)) != len(edges):
        raise CalibrationError(f"--regimes: edges must be positive and distinct, got {text!r}")
    return tuple(sorted(edges))


def canonical_kind(name: str, present) -> str:
    """``allreduce`` / ``all-reduce`` / ``all_reduce`` -> the present kind it names."""
    from fabric.calibrate import CalibrationError

    key = re.sub(r"[^a-z]", "", name.lower())
    for k in present:
        if re.sub(r"[^a-z]", "", k) == key:
            return k
    raise CalibrationError(f"no measurements of {name!r}; the files hold {', '.join(present)}")


def _us(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    return f"{s * 1e3:,.2f} ms" if s < 1.0 else f"{s:,.3f} s"


def _pct(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def _print_result(res, cv) -> None:
    from fabric.calibrate.fit import format_bytes

    sysd = res.system
    print(f"system: {sysd.name} (fits {res.level} parameters; transport profile {res.transport})")
    for b in sysd.basis:
        print(f"  {b}")
    print(f"files: {', '.join(res.sources)}")
    held = [k for k in res.per_kind if k not in res.kinds_fitted]
    print(f"fitted on: {', '.join(res.kinds_fitted)}" + (f"; held out: {', '.join(held)}" if held else ""))
    print("\nfitted values (* = weakly identified: no point moves 5 % per 100 % change; kept near its prior)")
    for p in res.parameters:
        if p["name"] in ("efficiency_scale", "alpha_scale"):
            continue
        val = _us(p["value"]) if p["name"].endswith("_s") else f"{p['value']:.4f}"
        prior = _us(p["prior"]) if p["name"].endswith("_s") else f"{p['prior']:.2f}"
        star = "" if p["identified"] else " *"
        print(f"  {p['name']:22s} {val:>12s}{star}   (from {p['regime']}; profile default {prior})")
    ident = {(p["name"], p["regime"]): p["identified"] for p in res.parameters}
    print(f"\n  {'regime':18s} {'sizes':>5s} {'eff scale':>10s} {'alpha scale':>12s} {'efficiency':>11s} "
          f"{'alpha/step':>11s}")
    for r in res.regimes:
        es = f"{r['efficiency_scale']:.3f}" + ("" if ident.get(("efficiency_scale", r["regime"]), True) else "*")
        al = f"{r['alpha_scale']:.3f}" + ("" if ident.get(("alpha_scale", r["regime"]), True) else "*")
        note = "" if r["fitted"] else "  (no points: nearest fitted regime's scales)"
        print(f"  {r['regime']:18s} {r['sizes']:5d} {es:>10s} {al:>12s} {r['effective_efficiency']:11.4f} "
              f"{_us(r['effective_alpha_s']):>11s}{note}")
    print("\npoints: measured vs predicted (the evaluator's p50), bus bandwidth in GB/s")
    print(f"  {'kind':15s} {'size':>10s} {'measured':>12s} {'predicted':>12s} {'busbw meas':>10s} {'pred':>8s} "
          f"{'error':>8s}")
    for p in res.points:
        tag = "" if p.in_fit else "  (held out)"
        print(f"  {p.kind:15s} {format_bytes(p.bytes):>10s} {_us(p.measured_s):>12s} {_us(p.predicted_s):>12s} "
              f"{p.measured_busbw / 1e9:10.2f} {p.predicted_busbw / 1e9:8.2f} {p.error:+8.1%}{tag}")
    print("\nerrors (geomean error = exp(mean |ln(predicted/measured)|) - 1)")
    targets = res.targets()
    for name, summ in (("in-sample", res.in_sample), ("out-of-sample", res.out_of_sample)):
        if not summ:
            continue
        t = targets.get(name.replace("-", "_"))
        check = f"   target <= {t['target']:.0%}: {'met' if t['met'] else 'MISSED'}" if t else ""
        print(f"  {name:14s} {summ['points']:4d} points  geomean {_pct(summ['geomean_error'])}  >= 1 MB "
              f"({summ['points_ge_1mb']} points) {_pct(summ['geomean_error_ge_1mb'])}  max |error| "
              f"{_pct(summ['max_abs_error'])}{check}")
    if len(res.per_kind) > 1:
        for k, s in res.per_kind.items():
            print(f"    {k:15s} {'fitted' if s['in_fit'] else 'held out':8s} geomean {_pct(s['geomean_error'])}  "
                  f">= 1 MB {_pct(s['geomean_error_ge_1mb'])}")
    if cv is not None:
        kinds = list(dict.fromkeys(r["test"] for r in cv.rows))
        print("\ncross-validation: fit on one collective (rows), geomean error >= 1 MB per collective (columns)")
        print("  " + f"{'fit on':15s}" + "".join(f"{k:>15s}" for k in kinds))
        for tr in cv.kinds:
            cells = {r["test"]: r for r in cv.rows if r["train"] == tr}
            print("  " + f"{tr:15s}" + "".join(
                f"{_pct(cells[k]['geomean_error_ge_1mb']) + ('*' if cells[k]['in_sample'] else ''):>15s}"
                for k in kinds))
        print("  (* in sample)")
        for tr, s in cv.summary().items():
            print(f"  fit on {tr:15s} out-of-sample >= 1 MB: mean {_pct(s['mean_ge_1mb'])}, worst "
                  f"{_pct(s['worst_ge_1mb'])}  target <= {s['target']:.0%}: {'met' if s['met'] else 'MISSED'}")
    if res.notes:
        print("\nnotes:")
        for n in res.notes:
            print(f"  {n}")


def run(args) -> int:
    from fabric.calibrate import (CalibrationError, cross_validate, fit_profile, load_measurements, save_profile)
    from fabric.calibrate.profile import no_nan

    check_samples(args.samples, CalibrationError)
    catalog = catalog_arg(args.catalog)
    regimes = parse_regimes(args.regimes)
    ms = load_measurements(args.files, gpu_model=args.gpu_model, nic_gbps=args.nic_gbps,
                           gpus_per_node=args.gpus_per_node, network=args.transport, catalog=catalog)
    present = ms.kinds()
    fit_on = [canonical_kind(k, present) for k in args.fit_on] or list(present)
    held = {canonical_kind(k, present) for k in args.holdout}
    kinds = [k for k in fit_on if k not in held]
    if not kinds:
        raise CalibrationError("every collective is held out; leave at least one to fit on")
    res = fit_profile(ms, kinds=tuple(kinds), regimes=regimes, samples=args.samples, seed=args.seed,
                      catalog=catalog)
    cv = cross_validate(ms, regimes=regimes, samples=args.samples, seed=args.seed, catalog=catalog) \
        if args.cross_validate else None
    if args.out:
        save_profile(res, args.out)
    if args.plot:
        from fabric.ui_support.calibrate_view import write_plot

        write_plot(res, args.plot)
    if args.json:
        out = res.to_dict()
        if cv is not None:
            out["cross_validation"] = cv.to_dict()
        print(json.dumps(no_nan(out), indent=2, default=float))
        return 0
    _print_result(res, cv)
    if args.out:
        print(f"\nprofile written to {args.out} (use its 'overrides' as evaluate's transport_overrides)")
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0

"""Regenerate the small sample inputs in ``sample_traces/``: ``python -m fabric.workload.samples [--out DIR]``.

- one native workload JSON per preset (:mod:`fabric.workload.presets`) at its default GPU count;
- Kineto (PyTorch profiler) traces of two ranks of the dense preset, written by
  :func:`fabric.workload.kineto_writer.workload_to_kineto` (3 profiler steps, seed 0) and gzipped. To keep them
  small the dense preset runs here on 256 GPUs with 2 micro-batches per step.

Everything is deterministic: the same code writes the same files (gzip without a timestamp or file name), and a
test checks that the committed samples equal what this module produces now. ``--check`` compares without writing.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fabric.workload.model import dump_workload_json
from fabric.workload.presets import list_presets, preset_workload

__all__ = ["SAMPLES_DIR", "Sample", "samples", "render", "generate", "check", "main", "KINETO_RANKS"]

#: The committed samples, next to the ``fabric`` package in a source checkout.
SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_traces"
#: Ranks of the dense preset written as Kineto traces.
KINETO_RANKS = (0, 1)
#: Overrides of the dense preset for the Kineto samples (fewer micro-batches -> fewer events).
KINETO_PRESET = ("llama3-70b", 256, {"grad_accum": 2})


@dataclass(frozen=True)
class Sample:
    """One sample file: its name under the samples folder and a function returning its bytes."""

    filename: str
    make: Callable[[], bytes]
    description: str


def _gzip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(data)
    return buf.getvalue()


def _native(name: str) -> Callable[[], bytes]:
    def make() -> bytes:
        return (dump_workload_json(preset_workload(name), indent=2) + "\n").encode()
    return make


def _mixed() -> bytes:
    from fabric.workload.mixed import mixed_cluster_workload

    return (dump_workload_json(mixed_cluster_workload(), indent=2) + "\n").encode()


def _kineto(rank: int) -> Callable[[], bytes]:
    def make() -> bytes:
        from fabric.workload.kineto_writer import workload_to_kineto

        name, gpus, over = KINETO_PRESET
        job = preset_workload(name, gpus=gpus, **over).jobs[0]
        trace = workload_to_kineto(job, rank, steps=3, seed=0)
        return _gzip(json.dumps(trace, separators=(",", ":")).encode())
    return make


def samples() -> list[Sample]:
    """Every sample file, native ones first."""
    out = []
    for p in list_presets():
        out.append(Sample(f"{p.name}.json", _native(p.name),
                          f"native workload of preset {p.name} on {p.default_gpus} GPUs"))
    out.append(Sample("mixed-cluster.json", _mixed,
                      "native workload of the mixed cluster: MoE + dense training + online serving on 4,096 GPUs"))
    name, gpus, over = KINETO_PRESET
    for r in KINETO_RANKS:
        out.append(Sample(f"kineto/{name}.rank{r}.pt.trace.json.gz", _kineto(r),
                          f"Kineto trace of rank {r} of {name} on {gpus} GPUs ({over}), 3 steps, seed 0"))
    return out


def render(sample: Sample) -> bytes:
    """The bytes of one sample."""
    return sample.make()


def _same(a: bytes, b: bytes, gz: bool) -> bool:
    if gz:
        try:
            return gzip.decompress(a) == gzip.decompress(b)
        except (OSError, EOFError):
            return False
    return a == b


def generate(out_dir: Path | str = SAMPLES_DIR) -> list[Path]:
    """Write every sample under ``out_dir``; returns the written paths."""
    out_dir = Path(out_dir)
    written = []
    for s in samples():
        path = out_dir / s.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render(s))
        written.append(path)
    return written


def check(out_dir: Path | str = SAMPLES_DIR) -> list[str]:
    """Names of samples under ``out_dir`` that are missing or differ from what the generator produces now
    (gzip files are compared after decompression)."""
    out_dir = Path(out_dir)
    bad = []
    for s in samples():
        path = out_dir / s.filename
        if not path.is_file() or not _same(path.read_bytes(), render(s), s.filename.endswith(".gz")):
            bad.append(s.filename)
    return bad


def main(argv: list[str] | None = None) -> int:
    """Command line: regenerate (default) or ``--check`` the samples."""
    ap = argparse.ArgumentParser(prog="python -m fabric.workload.samples", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(SAMPLES_DIR), help="folder to write (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="compare with the folder instead of writing; exit 1 "
                                                          "if anything differs")
    args = ap.parse_args(argv)
    if args.check:
        bad = check(args.out)
        for b in bad:
            print(f"out of date: {b}", file=sys.stderr)
        return 1 if bad else 0
    for p in generate(args.out):
        print(f"wrote {p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

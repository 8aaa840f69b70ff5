"""Helpers shared by CLI subcommands: reading workloads and designs the same way everywhere."""

from __future__ import annotations

from fabric.errors import DesignError, FabricError, ParseError

__all__ = ["load_workload_files", "load_design_arg", "check_samples", "catalog_arg"]

#: The Monte Carlo samples a command accepts per evaluation
MIN_SAMPLES, MAX_SAMPLES = 16, 100_000


def check_samples(samples: int, error: type[FabricError] = FabricError) -> None:
    """Refuse a ``--samples`` outside 16..100,000 with ``error`` naming the flag and the value."""
    if samples < MIN_SAMPLES or samples > MAX_SAMPLES:
        raise error(f"--samples must be between {MIN_SAMPLES} and {MAX_SAMPLES:,}, got {samples}")


def catalog_arg(path: str | None):
    """The hardware catalog of ``--catalog FILE``, or the built-in one."""
    from fabric.catalog import default_catalog, load_catalog

    return load_catalog(path) if path else default_catalog()


def load_workload_files(paths: list[str]):
    """Parse trace/workload files into one workload; any failed file is an error naming it."""
    from fabric.workload.ingest import ingest_paths

    result = ingest_paths(paths)
    if not result.ok or result.workload is None:
        raise ParseError("; ".join(result.errors) or "no workload could be read from the given files")
    return result.workload


def load_design_arg(spec: str, gpus: int | None, catalog):
    """A design file, or ``preset:NAME`` / a preset name (sized with ``gpus``)."""
    from pathlib import Path

    from fabric.design import load_design
    from fabric.design.presets import PRESETS, preset_design

    name = spec[len("preset:"):] if spec.startswith("preset:") else spec
    if name in PRESETS and not Path(spec).exists():
        return preset_design(name, gpus)
    if spec.startswith("preset:"):
        raise DesignError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    design = load_design(spec, catalog=catalog)
    if gpus is not None:
        design = design.replace(gpus=gpus)
    return design

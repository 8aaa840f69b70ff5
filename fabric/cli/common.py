"""Helpers shared by CLI subcommands: reading workloads and designs the same way everywhere."""

from __future__ import annotations

from fabric.errors import DesignError, ParseError

__all__ = ["load_workload_files", "load_design_arg"]


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

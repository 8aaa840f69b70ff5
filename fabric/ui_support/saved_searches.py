"""Searches saved on the server, so a search survives a server restart and a link can reopen it.

Each dashboard search gets a random id (128 bits, hex) that goes into the page's URL (``search=<id>``). Its inputs
are written once to ``<id>.meta.json`` (workload in fabric's native JSON, or a robust objective's workloads with
their names and weights, its scenarios and mode; constraints, catalog tables when edited, budget, seed,
calibration) and its progress after every generation to ``<id>.state.json`` (the resumable state of
:func:`fabric.search.run_search`). Both are JSON: nothing is unpickled or executed when they are read back.

The folder is ``FABRIC_STATE_DIR`` or ``<system temp>/fabric-searches``. The id is the only name a request can
choose, and it must be 32 hexadecimal digits, so no request can name a file outside the folder.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fabric.errors import FabricError

__all__ = ["SavedSearch", "state_dir", "new_search_id", "is_search_id", "save_inputs", "load_inputs", "state_file",
           "prune", "workload_json", "workload_from_json"]

_ID = re.compile(r"[0-9a-f]{32}")
_VERSION = 1


def state_dir() -> Path:
    """The folder of saved searches (created if missing)."""
    folder = Path(os.environ.get("FABRIC_STATE_DIR") or Path(tempfile.gettempdir()) / "fabric-searches")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def new_search_id() -> str:
    """A fresh random search id (32 hex digits)."""
    return secrets.token_hex(16)


def is_search_id(text) -> bool:
    """True when ``text`` is a well-formed search id (and so a safe file-name stem)."""
    return isinstance(text, str) and _ID.fullmatch(text) is not None


def _path(folder: Path, search_id: str, suffix: str) -> Path:
    if not is_search_id(search_id):
        raise FabricError("not a search id: a search id is 32 hexadecimal digits")
    return Path(folder) / f"{search_id}.{suffix}.json"


def state_file(folder: Path, search_id: str) -> Path:
    """Where the search's resumable state lives."""
    return _path(folder, search_id, "state")


@dataclass(frozen=True)
class SavedSearch:
    """The inputs of a saved search, rebuilt from its JSON."""

    search_id: str
    workload: object
    constraints: object
    budget_evals: int
    seed: int
    samples: int
    pop_size: int
    catalog: object | None
    transport_overrides: dict | None
    inputs_key: str
    label: str
    generation: int          # generations already in the saved state (0 when none was saved)
    evaluations: int
    saved_at: float = 0.0    # Unix time the inputs were written


def workload_json(workload) -> dict:
    """A workload as native JSON, a :class:`~fabric.search.robust.RobustObjective` as
    ``{"robust": {"mode", "workloads": [{"name", "weight", "workload"}], "scenarios", "references"}}``, or a plan
    objective (:mod:`fabric.search.plan_space.inner`) as ``{"plans": {"mode", "model", "workload"}}``."""
    from fabric.search.robust import RobustObjective
    from fabric.workload.model import workload_to_dict

    from fabric.ui_support.plans_view import is_plan_objective, objective_json

    if is_plan_objective(workload):         # --plan-space auto: its workload and model; the shortlist is rebuilt
        return objective_json(workload)
    if isinstance(workload, RobustObjective):
        return {"robust": {"mode": workload.mode,
                           "workloads": [{"name": n, "weight": float(w), "workload": workload_to_dict(wl)}
                                         for n, wl, w in workload.workloads],
                           "scenarios": [sc.to_dict() for sc in workload.scenarios],
                           "references": workload.references}}
    return workload_to_dict(workload)


def workload_from_json(data: dict):
    """The workload or robust objective :func:`workload_json` wrote (FabricError / ValueError when malformed)."""
    from fabric.evaluate import scenario_from_dict
    from fabric.search.robust import RobustObjective
    from fabric.workload.model import workload_from_dict

    if isinstance(data, dict) and "plans" in data:
        from fabric.ui_support.plans_view import objective_from_json

        return objective_from_json(data)
    if isinstance(data, dict) and "robust" in data:
        r = data["robust"]
        if not isinstance(r, dict) or not isinstance(r.get("workloads"), list):
            raise ValueError("a robust objective needs its list of workloads")
        refs = r.get("references")
        if refs is not None and not isinstance(refs, dict):
            raise ValueError("the robust objective's references must be a mapping of case to seconds")
        if not all(isinstance(w, dict) for w in r["workloads"]):
            raise ValueError("each workload of a robust objective needs its name, weight and workload")
        return RobustObjective(
            tuple((str(w["name"]), workload_from_dict(w["workload"]), float(w["weight"])) for w in r["workloads"]),
            tuple(scenario_from_dict(sc) for sc in r.get("scenarios") or []), mode=str(r.get("mode", "worst")),
            references=None if refs is None else {str(k): float(v) for k, v in refs.items()})
    return workload_from_dict(data)


def save_inputs(folder: Path, search_id: str, *, workload, constraints, budget_evals: int, seed: int, samples: int,
                pop_size: int, catalog=None, transport_overrides: dict | None = None, inputs_key: str = "",
                label: str = "") -> Path:
    """Write a search's inputs (JSON, atomically); returns the file."""
    from fabric.catalog import default_catalog

    tables = None
    if catalog is not None and catalog is not default_catalog():
        tables = {name: frame.to_dict(orient="records") for name, frame in catalog.tables().items()}
    meta = {"version": _VERSION, "saved_at": time.time(), "workload": workload_json(workload),
            "constraints": constraints.to_dict(), "budget_evals": int(budget_evals), "seed": int(seed),
            "samples": int(samples), "pop_size": int(pop_size), "catalog_tables": tables,
            "transport_overrides": transport_overrides, "inputs_key": inputs_key, "label": label}
    path = _path(folder, search_id, "meta")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, default=str), encoding="utf-8")
    tmp.replace(path)
    return path


def load_inputs(folder: Path, search_id: str) -> SavedSearch | None:
    """The saved search ``search_id``, or None when there is none. Raises FabricError (naming the search id, not
    the server's folders) when the files are unreadable."""
    import pandas as pd

    from fabric.catalog import Catalog
    from fabric.search.constraints import constraints_from_dict

    path = _path(folder, search_id, "meta")
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("version") != _VERSION:
            raise ValueError("unknown format version")
        tables = meta.get("catalog_tables")
        catalog = None if tables is None else Catalog.from_tables(
            {name: pd.DataFrame(rows) for name, rows in tables.items()}, source=f"saved search {search_id}")
        generation, evaluations = 0, 0
        state_path = state_file(folder, search_id)
        if state_path.is_file():
            state = json.loads(state_path.read_text(encoding="utf-8"))
            generation, evaluations = int(state.get("generation", 0)), int(state.get("evaluations", 0))
        return SavedSearch(search_id=search_id, workload=workload_from_json(meta["workload"]),
                           constraints=constraints_from_dict(meta["constraints"]),
                           budget_evals=int(meta["budget_evals"]), seed=int(meta["seed"]),
                           samples=int(meta["samples"]), pop_size=int(meta["pop_size"]), catalog=catalog,
                           transport_overrides=meta.get("transport_overrides"),
                           inputs_key=str(meta.get("inputs_key", "")), label=str(meta.get("label", "")),
                           generation=generation, evaluations=evaluations,
                           saved_at=float(meta.get("saved_at", 0.0)))
    except (OSError, ValueError, KeyError, TypeError, FabricError) as err:
        reason = str(err).replace(str(folder), "<state folder>")
        raise FabricError(f"saved search {search_id} cannot be read back ({type(err).__name__}: {reason})") from None


def prune(folder: Path, *, max_age_s: float = 7 * 86400, keep: int = 500) -> int:
    """Delete saved searches untouched for ``max_age_s`` and all but the newest ``keep``; returns files deleted."""
    newest: dict[str, float] = {}
    for p in Path(folder).glob("*.json"):
        stem = p.name.split(".", 1)[0]
        if is_search_id(stem):
            try:
                newest[stem] = max(newest.get(stem, 0.0), p.stat().st_mtime)
            except FileNotFoundError:
                pass
    order = sorted(newest, key=newest.get, reverse=True)
    now = time.time()
    old = set(order[keep:]) | {s for s in order if now - newest[s] > max_age_s}
    deleted = 0
    for stem in old:
        for suffix in ("meta", "state"):
            try:
                (Path(folder) / f"{stem}.{suffix}.json").unlink()
                deleted += 1
            except FileNotFoundError:
                pass
    return deleted

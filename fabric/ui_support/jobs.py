"""A search running on a background thread, so the page that started it never freezes.

The worker thread calls :func:`fabric.search.run_search` and writes what the per-generation callback tells it into
this plain object; the page keeps the object (one per browser session) and polls :meth:`SearchJob.snapshot`. The
worker makes no UI calls. Cancelling sets a ``threading.Event`` that the search checks between generations.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field

from fabric.errors import FabricError

__all__ = ["SearchJob", "SearchSnapshot", "catalog_for_constraints"]

_CATALOGS: OrderedDict = OrderedDict()
_CATALOGS_LOCK = threading.Lock()


def catalog_for_constraints(catalog, constraints):
    """One catalog object per (catalog, constraints) pair, equal in content to ``catalog``.

    fabric's in-process evaluation cache keys records by the catalog object but not by the constraints, while a
    record carries its constraint violations; searches under other constraints must therefore not share records.
    Giving each constraint set its own catalog object keeps their cache entries apart (and lets searches with the
    same inputs, e.g. a re-run, still share them).
    """
    from fabric.catalog import default_catalog

    base = catalog if catalog is not None else default_catalog()
    key = (id(base), json.dumps(constraints.to_dict(), sort_keys=True, default=str))
    with _CATALOGS_LOCK:
        hit = _CATALOGS.get(key)
        if hit is not None and hit[0] is base:
            _CATALOGS.move_to_end(key)
            return hit[1]
        twin = copy.copy(base)
        _CATALOGS[key] = (base, twin)        # keeps ``base`` alive, so its id is not reused while listed
        while len(_CATALOGS) > 64:
            _CATALOGS.popitem(last=False)
        return twin


@dataclass(frozen=True)
class SearchSnapshot:
    """A consistent copy of a job's progress. ``state``: "running", "done", "cancelled" or "failed"."""

    state: str
    generation: int
    evaluations: int
    budget_evals: int | None
    elapsed_s: float
    hypervolume: float
    front: list
    baselines: list
    hv_history: list
    error: str = ""
    result: object | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def fraction(self) -> float:
        """Share of the evaluation budget used, 0..1."""
        if not self.budget_evals:
            return 1.0 if not self.running else 0.0
        if self.state in ("done",):
            return 1.0
        return max(0.0, min(1.0, self.evaluations / self.budget_evals))


@dataclass
class SearchJob:
    """One search of ``workload`` under ``constraints``; start it with :meth:`start`.

    ``inputs_key`` identifies the inputs the job was started with, so a page can tell when its front is stale.
    """

    workload: object
    constraints: object
    budget_evals: int = 300
    seed: int = 0
    catalog: object | None = None
    samples: int = 256
    pop_size: int = 40
    inputs_key: str = ""
    transport_overrides: dict | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _t0: float = 0.0
    _t_end: float | None = None
    _state: str = "new"
    _generation: int = 0
    _evaluations: int = 0
    _hypervolume: float = 0.0
    _front: list = field(default_factory=list)
    _baselines: list = field(default_factory=list)
    _hv_history: list = field(default_factory=list)
    _error: str = ""
    _result: object | None = None

    def start(self) -> "SearchJob":
        """Start the worker thread (once); returns the job."""
        with self._lock:
            if self._thread is not None:
                return self
            self._t0 = time.monotonic()
            self._state = "running"
            self._thread = threading.Thread(target=self._run, name="fabric-search", daemon=True)
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the search to stop after the current generation (it keeps what it found)."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the worker ends (tests and scripts); True when it has ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        with self._lock:
            return self._state == "running"

    def snapshot(self) -> SearchSnapshot:
        """A consistent copy of the progress so far."""
        with self._lock:
            end = self._t_end if self._t_end is not None else time.monotonic()
            return SearchSnapshot(
                state=self._state, generation=self._generation, evaluations=self._evaluations,
                budget_evals=self.budget_evals, elapsed_s=(end - self._t0) if self._t0 else 0.0,
                hypervolume=self._hypervolume, front=list(self._front), baselines=list(self._baselines),
                hv_history=list(self._hv_history), error=self._error, result=self._result)

    # ------------------------------------------------------------------ worker side

    def _progress(self, p) -> None:
        with self._lock:
            self._generation = p.generation
            self._evaluations = p.evaluations
            self._hypervolume = p.hypervolume
            self._front = list(p.front)
            self._baselines = list(p.baselines)
            self._hv_history.append({"generation": p.generation, "evaluations": p.evaluations,
                                     "hypervolume": p.hypervolume, "elapsed_s": p.elapsed_s})

    def _run(self) -> None:
        from fabric.search import run_search

        try:
            res = run_search(self.workload, self.constraints, budget_evals=self.budget_evals, seed=self.seed,
                             pop_size=self.pop_size, samples=self.samples,
                             catalog=catalog_for_constraints(self.catalog, self.constraints),
                             callback=self._progress, cancel=self._cancel,
                             transport_overrides=self.transport_overrides)
        except FabricError as err:
            self._finish("failed", error=" ".join(str(err).split()))
        except Exception as err:  # a bug must reach the page as a message, not kill the thread silently
            self._finish("failed", error=f"internal error: {type(err).__name__}: {err}\n{traceback.format_exc()}")
        else:
            with self._lock:
                self._front = list(res.front)
                self._baselines = list(res.baselines)
                self._evaluations = res.evaluations
                self._generation = res.generations
                self._hv_history = list(res.hv_history)
                if res.hv_history:
                    self._hypervolume = res.hv_history[-1]["hypervolume"]
            self._finish("cancelled" if res.stopped_because == "cancelled" else "done", result=res)

    def _finish(self, state: str, *, error: str = "", result=None) -> None:
        with self._lock:
            self._state = state
            self._error = error
            self._result = result
            self._t_end = time.monotonic()

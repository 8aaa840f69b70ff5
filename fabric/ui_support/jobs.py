"""A search running in the background, so the page that started it never freezes.

A thread of the server starts the search and follows it: :func:`fabric.search.run_search` runs (in a driver
process, below, or on the thread) and what its per-generation callback tells is written into this plain object; the
page keeps the object (one per browser session) and polls :meth:`SearchJob.snapshot`. Nothing here makes UI calls.
Cancelling sets an event that the search checks between generations.

On a server the search is driven from a process of its own (:mod:`fabric.ui_support.search_process`: the server
never holds a search's memory) and its evaluations run there and in worker processes (``workers``, default
``FABRIC_SEARCH_WORKERS`` or 1; 0: all on the thread, in the server process), which end when the search ends, is
cancelled, or is abandoned: a page calls :meth:`SearchJob.touch` while its browser tab is open, and a reaper
thread cancels a search untouched for ``search_abandon_after_s``. At most
``max_concurrent_searches`` run at once; later ones wait in the queue (state "queued"). A job given a
``state_dir`` saves its inputs and its progress there (:mod:`fabric.ui_support.saved_searches`), so
:meth:`SearchJob.resume` continues it after a server restart, and :meth:`SearchJob.continued` goes on with a search
that ended without converging (fabric.search.convergence), with more evaluations, from the same saved state.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
import traceback
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from fabric.errors import FabricError
from fabric.limits import current_limits

__all__ = ["SearchJob", "SearchSnapshot", "SearchAllowance", "catalog_for_constraints", "live_job", "recent_job",
           "default_search_workers", "running_jobs", "convergence_note", "PROCESS_STARTED"]

#: When this server process started (Unix time; set when the module is first imported, before any search of this
#: process is saved): a saved search written earlier was made by a server that has since restarted.
PROCESS_STARTED = time.time()
#: Searches of this process kept after they end, so that a link to a finished search shows it as it ended.
_RECENT_KEEP = 64

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
    """A consistent copy of a job's progress. ``state``: "queued", "running", "done", "cancelled" or "failed"."""

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
    resumed_from: int = 0        # generation the search continued from its saved state (0: started afresh)
    queue_position: int = 0      # searches ahead of this one while it waits (state "queued")
    after_restart: bool = False  # the saved state it continued from was written before this server started
    phase: str = ""              # "plans" while a plan search ranks its shortlist before the first generation
    continued_evals: int = 0     # evaluations a Continue added to a finished search (0: not a continuation)

    @property
    def converged(self) -> bool | None:
        """Whether the finished search met its convergence rule (None before it has a result)."""
        return None if self.result is None else bool(getattr(self.result, "converged", False))

    @property
    def can_continue(self) -> bool:
        """True when the search ended (done or cancelled) without converging: :meth:`SearchJob.continued` may go on
        from its saved state."""
        return self.state in ("done", "cancelled") and not self.converged

    @property
    def running(self) -> bool:
        """True while the search is queued or running (not yet ended)."""
        return self.state in ("queued", "running")

    @property
    def fraction(self) -> float:
        """Share of the evaluation budget used, 0..1."""
        if not self.budget_evals:
            return 1.0 if not self.running else 0.0
        if self.state in ("done",):
            return 1.0
        return max(0.0, min(1.0, self.evaluations / self.budget_evals))


def convergence_note(result) -> str:
    """What an ended search says beside "converged" / "not converged: continue": why it stopped, the rule, and
    the neighbourhood check of its recommendation."""
    from fabric.search.neighbourhood import NeighbourhoodCheck

    words = f"Stopped: {result.stopped_because}."
    if result.convergence_rule and "the rule" not in result.stopped_because:
        words += f" The rule: {result.convergence_rule}."
    if result.neighbourhood.get("rounds"):
        check = NeighbourhoodCheck(**result.neighbourhood).sentence()
        words += f" {check[:1].upper()}{check[1:]}"
    return words


def default_search_workers() -> int:
    """Worker processes per dashboard search: ``FABRIC_SEARCH_WORKERS`` (0 = evaluate in the server process)."""
    text = os.environ.get("FABRIC_SEARCH_WORKERS", "1")
    try:
        n = int(text)
    except ValueError:
        raise FabricError(f"environment variable FABRIC_SEARCH_WORKERS must be a whole number, got {text!r}")
    if n < 0:
        raise FabricError(f"environment variable FABRIC_SEARCH_WORKERS must be 0 or more, got {n}")
    return n


# ------------------------------------------------------------------ server-wide bookkeeping

_LIVE: "weakref.WeakValueDictionary[str, SearchJob]" = weakref.WeakValueDictionary()   # search id -> running job
_RECENT: OrderedDict = OrderedDict()     # search id -> job of this process, running or ended (newest last)
_ALL_RUNNING: "weakref.WeakSet[SearchJob]" = weakref.WeakSet()
_QUEUE: list = []                        # jobs waiting for a slot, in arrival order
_SLOTS_LOCK = threading.Condition()
_REAPER: threading.Thread | None = None


def live_job(search_id: str):
    """The job with ``search_id`` that is queued or running in this server process, or None."""
    job = _LIVE.get(search_id)
    return job if job is not None and job.running else None


def recent_job(search_id: str):
    """The job with ``search_id`` that this server process ran or runs (kept for a while after it ends), or None."""
    with _SLOTS_LOCK:
        return _RECENT.get(search_id)


def running_jobs() -> list:
    """Jobs queued or running in this server process (monitoring and tests)."""
    return [j for j in list(_ALL_RUNNING) if j.running]


def _active_count() -> int:
    return sum(1 for j in list(_ALL_RUNNING) if j._state == "running")


def _ensure_reaper() -> None:
    global _REAPER
    with _SLOTS_LOCK:
        if _REAPER is not None and _REAPER.is_alive():
            return
        _REAPER = threading.Thread(target=_reap_forever, name="fabric-search-reaper", daemon=True)
        _REAPER.start()


def _reap_forever() -> None:
    while True:
        time.sleep(1.0)
        reap_abandoned()


def reap_abandoned(now: float | None = None) -> list:
    """Cancel every running search whose page has not touched it for its ``abandon_after_s``; returns them."""
    now = time.monotonic() if now is None else now
    return [job for job in list(_ALL_RUNNING) if job.cancel_if_idle(now)]


@dataclass
class SearchAllowance:
    """What one browser session may still spend on searches (limit ``max_session_evaluations``)."""

    limit: int = field(default_factory=lambda: current_limits().max_session_evaluations)
    spent: int = 0

    def check(self, budget_evals: int) -> None:
        """Raise FabricError naming the limit when a search of ``budget_evals`` would exceed what is left."""
        left = self.limit - self.spent
        if budget_evals > left:
            raise FabricError(
                f"this session has {max(0, left):,} of its {self.limit:,} evaluations left "
                f"(limit max_session_evaluations, set by FABRIC_LIMIT_MAX_SESSION_EVALUATIONS on the server): "
                f"lower the evaluation budget to at most {max(0, left):,}")

    def charge(self, job) -> None:
        """Count what ``job`` evaluated (call once, when the session lets go of the job); a job that went on from a
        saved state counts only what it added (:meth:`SearchJob.spent`)."""
        if job is not None and not getattr(job, "_charged", False):
            job._charged = True
            self.spent += int(job.spent()) if hasattr(job, "spent") else int(job.snapshot().evaluations)

    def remaining(self) -> int:
        return max(0, self.limit - self.spent)


@dataclass(eq=False)
class SearchJob:
    """One search of ``workload`` under ``constraints``; start it with :meth:`start`.

    ``inputs_key`` identifies the inputs the job was started with, so a page can tell when its front is stale.
    ``workers``: worker processes for the evaluations (None: :func:`default_search_workers`; 0: in this process).
    ``state_dir`` and ``search_id``: where the job saves its inputs and progress (None: nothing is saved).
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
    workers: int | None = None
    state_dir: Path | None = None
    search_id: str = ""
    label: str = ""
    abandon_after_s: float = field(default_factory=lambda: float(current_limits().search_abandon_after_s))
    #: with worker processes, drive the search from a process of its own (fabric.ui_support.search_process), so
    #: the server never holds a search's memory; False: on this thread, sharing the evaluations with the workers
    isolated: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _runner: object | None = field(default=None, repr=False)
    _driver: object | None = field(default=None, repr=False)
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
    _resumed_from: int = 0
    _after_restart: bool = False
    _abandoned: bool = False
    _phase: str = ""
    _start_evaluations: int = 0     # evaluations already in the saved state it went on from
    _continued_evals: int = 0
    last_seen: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        from fabric.ui_support.saved_searches import is_search_id, new_search_id

        if self.workers is None:
            self.workers = default_search_workers()
        if self.state_dir is not None and not self.search_id:
            self.search_id = new_search_id()
        if self.search_id and not is_search_id(self.search_id):
            raise FabricError("not a search id: a search id is 32 hexadecimal digits")

    @classmethod
    def resume(cls, search_id: str, state_dir: Path, **kw) -> "SearchJob | None":
        """A job continuing the saved search ``search_id`` (None when nothing is saved under that id); start it
        with :meth:`start`. Raises FabricError when the saved files cannot be read back."""
        from fabric.ui_support.saved_searches import load_inputs

        saved = load_inputs(state_dir, search_id)
        if saved is None:
            return None
        job = cls(saved.workload, saved.constraints, budget_evals=saved.budget_evals, seed=saved.seed,
                  catalog=saved.catalog, samples=saved.samples, pop_size=saved.pop_size,
                  inputs_key=saved.inputs_key, transport_overrides=saved.transport_overrides, state_dir=state_dir,
                  search_id=search_id, label=saved.label, **kw)
        job._resumed_from = saved.generation
        job._after_restart = saved.saved_at < PROCESS_STARTED
        job._generation, job._evaluations = saved.generation, saved.evaluations
        job._start_evaluations = saved.evaluations
        return job

    def continued(self, extra_evals: int) -> "SearchJob":
        """A job going on with this ended search (done or cancelled, not converged) from its saved state, with
        ``extra_evals`` more evaluations than its genetic search had spent; same search id, inputs and seed, so the
        link stays valid and the front is the one a search with the larger budget would have found. Start it with
        :meth:`start`. Raises FabricError when the search is running, converged, or was not saved."""
        from fabric.search.convergence import saved_evaluations
        from fabric.ui_support.saved_searches import state_file

        snap = self.snapshot()
        if not snap.can_continue:
            raise FabricError("only a search that ended without converging can be continued"
                              + (" (this one has converged)" if snap.converged else f" (this one is {snap.state})"))
        if isinstance(extra_evals, bool) or not isinstance(extra_evals, int) or extra_evals < 1:
            raise FabricError(f"continue with a positive whole number of evaluations, got {extra_evals!r}")
        path = state_file(self.state_dir, self.search_id) if self.state_dir is not None else None
        if path is None or not path.is_file():
            raise FabricError("this search was not saved on the server, so it cannot be continued: start a new "
                              "search with a larger budget")
        done = saved_evaluations(path)
        job = SearchJob(self.workload, self.constraints, budget_evals=done + extra_evals, seed=self.seed,
                        catalog=self.catalog, samples=self.samples, pop_size=self.pop_size,
                        inputs_key=self.inputs_key, transport_overrides=self.transport_overrides,
                        workers=self.workers, state_dir=self.state_dir, search_id=self.search_id, label=self.label,
                        abandon_after_s=self.abandon_after_s)
        job._resumed_from = job._generation = snap.generation
        job._evaluations = done
        job._start_evaluations, job._continued_evals = done, extra_evals
        return job

    @property
    def continue_step(self) -> int:
        """Evaluations one Continue adds: the budget the search was started with (a continuation's own step); for
        a search cancelled before its budget, what was left of it."""
        with self._lock:
            left = self.budget_evals - self._evaluations if self._state == "cancelled" else 0
        return int(left if left > 0 else self._continued_evals or self.budget_evals)

    def spent(self) -> int:
        """Evaluations this job added to its search (all of them, unless it went on from a saved state)."""
        return max(0, int(self.snapshot().evaluations) - self._start_evaluations)

    def start(self) -> "SearchJob":
        """Start the worker thread (once); returns the job."""
        with self._lock:
            if self._thread is not None:
                return self
            self._t0 = time.monotonic()
            self.last_seen = time.monotonic()
            self._state = "queued"
            self._thread = threading.Thread(target=self._run, name="fabric-search", daemon=True)
        if self.state_dir is not None:
            self._save_inputs()
        with _SLOTS_LOCK:
            _ALL_RUNNING.add(self)
            if self.search_id:
                _LIVE[self.search_id] = self
                _RECENT[self.search_id] = self
                _RECENT.move_to_end(self.search_id)
                while len(_RECENT) > _RECENT_KEEP:
                    _RECENT.popitem(last=False)
            _QUEUE.append(self)
        _ensure_reaper()
        self._thread.start()
        return self

    def touch(self) -> None:
        """A sign of life from the page showing this job (keeps it from counting as abandoned)."""
        self.last_seen = time.monotonic()

    def cancel_if_idle(self, now: float) -> bool:
        """Cancel the search as abandoned when untouched for ``abandon_after_s`` at ``now``; True if it did."""
        if not self.running or self._cancel.is_set() or now - self.last_seen <= self.abandon_after_s:
            return False
        self._abandoned = True
        self.cancel()
        return True

    def cancel(self) -> None:
        """Ask the search to stop after the current generation (it keeps what it found); a queued search leaves
        the queue at once."""
        self._cancel.set()
        with _SLOTS_LOCK:
            _SLOTS_LOCK.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the worker ends (tests and scripts); True when it has ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        """True while queued or running."""
        with self._lock:
            return self._state in ("queued", "running")

    @property
    def abandoned(self) -> bool:
        """True when the reaper cancelled the search because no page had touched it."""
        return self._abandoned

    def worker_pids(self) -> list[int]:
        """Process ids of the search's live processes: its driver process (when isolated) and its worker processes
        (empty when evaluating in-process or ended)."""
        driver = self._driver
        if driver is not None:
            return ([driver.pid] if driver.pid else []) + list(driver.worker_pids)
        runner = self._runner
        return runner.worker_pids() if runner is not None and hasattr(runner, "worker_pids") else []

    def snapshot(self) -> SearchSnapshot:
        """A consistent copy of the progress so far."""
        with _SLOTS_LOCK:       # taken before self._lock, as everywhere (no lock-order inversion)
            position = _QUEUE.index(self) if self in _QUEUE else 0
        with self._lock:
            end = self._t_end if self._t_end is not None else time.monotonic()
            return SearchSnapshot(
                state=self._state, generation=self._generation, evaluations=self._evaluations,
                budget_evals=self.budget_evals, elapsed_s=(end - self._t0) if self._t0 else 0.0,
                hypervolume=self._hypervolume, front=list(self._front), baselines=list(self._baselines),
                hv_history=list(self._hv_history), error=self._error, result=self._result,
                resumed_from=self._resumed_from, queue_position=position, after_restart=self._after_restart,
                phase=self._phase, continued_evals=self._continued_evals)

    # ------------------------------------------------------------------ worker side

    def _save_inputs(self) -> None:
        from fabric.ui_support.saved_searches import save_inputs

        try:
            save_inputs(self.state_dir, self.search_id, workload=self.workload, constraints=self.constraints,
                        budget_evals=self.budget_evals, seed=self.seed, samples=self.samples,
                        pop_size=self.pop_size, catalog=self.catalog, transport_overrides=self.transport_overrides,
                        inputs_key=self.inputs_key, label=self.label)
        except OSError as err:   # the search still runs; it just cannot survive a restart
            self.state_dir = None
            self._error = f"the search is not saved on the server ({type(err).__name__})"

    def _wait_for_slot(self) -> bool:
        """Wait in the queue until fewer than ``max_concurrent_searches`` run; False when cancelled meanwhile."""
        limit = max(1, current_limits().max_concurrent_searches)
        with _SLOTS_LOCK:
            while True:
                if self._cancel.is_set():
                    if self in _QUEUE:
                        _QUEUE.remove(self)
                    _SLOTS_LOCK.notify_all()
                    return False
                if _QUEUE and _QUEUE[0] is self and _active_count() < limit:
                    _QUEUE.pop(0)
                    with self._lock:
                        self._state = "running"
                    _SLOTS_LOCK.notify_all()
                    return True
                _SLOTS_LOCK.wait(0.5)

    def _progress(self, p) -> None:
        if p.generation >= 2 and hasattr(self._runner, "spawn"):
            self._runner.spawn()        # the first front is on the page: start the worker processes (see _run)
        self._take_progress(p)

    def _take_progress(self, p) -> None:
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
        from fabric.search.runners import InProcessRunner, ProcessRunner
        from fabric.ui_support.saved_searches import state_file

        try:
            if not self._wait_for_slot():
                self._finish("cancelled")
                return
            catalog = catalog_for_constraints(self.catalog, self.constraints)
            if self.workers and self.isolated:
                # a plan objective's shortlist is ranked here and kept in this process for the next search of the
                # same inputs (fabric.ui_support.plans_view); the search itself runs in the driver
                self._run_driver(catalog, self._prepared(catalog))
                return
            # The first generations are evaluated here, and the worker processes start once the first front is on
            # the page, after the second generation (their start would compete with the first front and the
            # browser drawing it on a 2-core machine: a fork of the fork server costs little, a spawned
            # interpreter a second of imports); from then on the server shares the evaluations with them.
            self._runner = ProcessRunner(self.workers, share=True, autospawn=False) if self.workers \
                else InProcessRunner()
            workload = self._prepared(catalog)
            state_path = state_file(self.state_dir, self.search_id) if self.state_dir is not None else None
            res = run_search(workload, self.constraints, budget_evals=self.budget_evals, seed=self.seed,
                             pop_size=self.pop_size, samples=self.samples, runner=self._runner,
                             catalog=catalog, callback=self._progress, cancel=self._cancel, state_path=state_path,
                             transport_overrides=self.transport_overrides)
        except FabricError as err:
            self._finish("failed", error=" ".join(str(err).split()))
        except Exception as err:  # a bug must reach the page as a message, not kill the thread silently
            self._finish("failed", error=f"internal error: {type(err).__name__}: {err}\n{traceback.format_exc()}")
        else:
            self._done(res)
        finally:
            if self._runner is not None:
                self._runner.close()    # (run_search closes it too; this is for a plan phase that failed)

    def _run_driver(self, catalog, workload) -> None:
        """The search of ``workload`` (prepared) in a driver process of its own (fabric.ui_support.search_process):
        its reports applied here as the thread's own would be."""
        from fabric.ui_support.saved_searches import state_file
        from fabric.ui_support.search_process import start_driver

        args = dict(workload=workload, constraints=self.constraints, budget_evals=self.budget_evals,
                    seed=self.seed, pop_size=self.pop_size, samples=self.samples, catalog=catalog,
                    state_path=state_file(self.state_dir, self.search_id) if self.state_dir is not None else None,
                    transport_overrides=self.transport_overrides, workers=self.workers)
        self._driver = start_driver(args)
        end = ("failed", "the search process ended without a result; start the search again")
        try:
            for msg in self._driver.messages(should_cancel=self._cancel.is_set):
                if msg[0] == "progress":
                    self._take_progress(msg[1])
                elif msg[0] in ("done", "failed"):
                    end = msg
        finally:
            self._driver = None
        # the driver and its workers have ended (messages() waits for them): only now does the search give up its
        # slot, so the next queued search never runs beside a finishing one's processes
        if end[0] == "done":
            self._done(end[1])
        else:
            self._finish("failed", error=end[1])

    def _done(self, res) -> None:
        """Keep the finished search's result."""
        with self._lock:
            self._front = list(res.front)
            self._baselines = list(res.baselines)
            self._evaluations = res.evaluations
            self._generation = res.generations
            self._hv_history = list(res.hv_history)
            if res.hv_history:
                self._hypervolume = res.hv_history[-1]["hypervolume"]
        self._finish("cancelled" if res.stopped_because == "cancelled" else "done", result=res)

    def _prepared(self, catalog):
        """The workload to search: a plan objective with its plan shortlist (phase "plans" meanwhile, kept in
        the server process for the next search of the same inputs: fabric.ui_support.plans_view), else as given."""
        from fabric.ui_support.plans_view import is_plan_objective, prepared_objective

        if not is_plan_objective(self.workload):
            return self.workload
        with self._lock:
            self._phase = "plans"
        try:
            return prepared_objective(self.workload, self.constraints, catalog, seed=self.seed, samples=self.samples,
                                      transport_overrides=self.transport_overrides)
        finally:
            with self._lock:
                self._phase = ""

    def _finish(self, state: str, *, error: str = "", result=None) -> None:
        with self._lock:
            self._state = state
            self._error = error or (self._error if state != "failed" else "")
            self._result = result
            self._t_end = time.monotonic()
        with _SLOTS_LOCK:
            _SLOTS_LOCK.notify_all()

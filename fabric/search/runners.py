"""Where evaluations run: in this process, on local worker processes, or on a Dask cluster.

All three run the same pure function (:func:`fabric.search.records.evaluate_record`) on chunks of designs, so
small evaluations are not swamped by per-task overhead; results come back in submission order, so the search is
identical whichever runner it uses.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor

from fabric.errors import FabricError
from fabric.search.records import evaluate_record

__all__ = ["InProcessRunner", "ProcessRunner", "DaskRunner", "make_runner", "worker_context",
           "start_fork_server"]

_WORKER_CONTEXT: dict = {}


def _eval_chunk(designs_with_meta, workload, scenario, seed, samples, catalog, constraints, overrides=None):
    return [evaluate_record(d, workload, scenario, seed, samples, catalog, constraints, genome=g, repairs=r,
                            transport_overrides=overrides)
            for d, g, r in designs_with_meta]


def _eval_chunk_in_worker(context_id: int, context: tuple, designs_with_meta):
    """A chunk evaluated in a worker process. ``context`` (the search's, a few tens of kB) comes with every chunk;
    the worker keeps the first copy of each search's (``context_id``), so caches keyed on its objects (the catalog)
    stay warm across chunks."""
    if _WORKER_CONTEXT.get("id") != context_id:
        _WORKER_CONTEXT.clear()
        _WORKER_CONTEXT.update(id=context_id, ctx=context)
    return _eval_chunk(designs_with_meta, *_WORKER_CONTEXT["ctx"])


def _worker_ready() -> bool:
    """A no-op task: done once a worker process has started and imported fabric's evaluation."""
    return True


def _chunks(items: list, n_workers: int, min_chunk: int = 4, cases: int = 1, key=None,
            slow: bool = False) -> list[list]:
    """Designs in chunks of about equal work: at least ``min_chunk`` evaluations each (task overhead), about four
    chunks per worker (balance); a design of a robust objective is ``cases`` evaluations, so its chunks are that
    many times smaller (down to one design: a generation then ends within about one design of its last worker).
    ``key``: a chunk is extended past its size while the next item has the same key (the search sends designs
    sorted by cabling: a cabling split over two chunks is built, costed and modelled in two workers), except a
    cabling with two chunks' worth of designs or more, which is cut into chunks of about the size like any run
    (the baselines' free policies are many designs of a few cablings: one chunk each left the other workers
    idle while one evaluated them all, a second build costs far less).
    ``slow``: evaluations take long enough (tens of ms and more: 100,000-GPU fabrics) that a task's overhead does
    not count: the chunks then shrink towards the end of the batch (each about 1 / (2 x workers) of what is left,
    down to one design), so the workers end a batch within about one design of each other, not one chunk."""
    if not items:
        return []
    cases = max(1, int(cases))
    n, w = len(items), max(1, n_workers)
    size = max(math.ceil(min_chunk / cases), math.ceil(n / (4 * w * cases)), 1)

    def cut(start: int) -> int:
        """Where the chunk beginning at ``start`` ends before it is extended to the end of its cabling."""
        step = max(1, min(size, math.ceil((n - start) / (2 * w * cases)))) if slow else size
        return min(start + step, n)

    if key is None:
        out, start = [], 0
        while start < n:
            end = cut(start)
            out.append(items[start:end])
            start = end
        return out
    keys = [key(it) for it in items]
    # designs of each item's cabling (the items come sorted by key)
    run = [m for _, g in itertools.groupby(keys) for m in [len(list(g))] for _ in range(m)]
    out, start = [], 0
    while start < len(items):
        end = cut(start)
        while end < len(items) and keys[end] == keys[end - 1] and run[end] < 2 * size:
            end += 1
        out.append(items[start:end])
        start = end
    return out


def _cabling_of(item) -> str:
    """The cabling key of a (design, genome, repairs) item."""
    from fabric.topology.build import cabling_key

    return cabling_key(item[0])


def _cases(workload) -> int:
    """Evaluations one design costs: the robust objective's cases, else 1."""
    from fabric.search.robust import RobustObjective

    if isinstance(workload, RobustObjective):
        return len(workload.cases)
    return int(getattr(workload, "evaluations_per_design", 1))


class InProcessRunner:
    """Evaluate in the calling process (the default)."""

    workers = 1
    name = "in-process"

    def start(self, workload, scenario, seed, samples, catalog, constraints, overrides=None):
        self._ctx = (workload, scenario, seed, samples, catalog, constraints, overrides)

    def map(self, designs_with_meta: list) -> list[dict]:
        return _eval_chunk(designs_with_meta, *self._ctx)

    def close(self):
        pass


_CONTEXT_IDS = itertools.count(1)
#: Worker seconds per evaluation from which a batch's chunks shrink towards its end (``_chunks``' ``slow``).
SLOW_EVALUATION_S = 0.02
#: What a worker imports before its first task; a fork server started with them (:func:`start_fork_server`) makes
#: each new worker a fork of a process that has them already.
WORKER_MODULES = ("fabric.search.runners", "fabric.search.records", "fabric.search.plan_space.inner",
                  "fabric.ui_support.search_process")


def worker_context():
    """The multiprocessing context of the local workers: "forkserver" where the platform has it (a worker is a
    fork of a clean single-threaded server process, without a second of imports once that server has imported
    :data:`WORKER_MODULES`), else "spawn". Never plain "fork": the dashboard's server has threads."""
    return mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")


def start_fork_server() -> bool:
    """Start the fork server now, with :data:`WORKER_MODULES` imported in it (a long-running server, such as the
    dashboard's, calls this at start so its first search's workers start at once); False where there is none."""
    if "forkserver" not in mp.get_all_start_methods():
        return False
    from multiprocessing import forkserver

    mp.set_forkserver_preload(list(WORKER_MODULES))
    forkserver.ensure_running()
    return True


class ProcessRunner:
    """Evaluate on ``workers`` local processes (:func:`worker_context`; the search's context travels with each
    chunk, and each worker keeps its first copy).

    A new worker takes about a second to start (importing numpy, pandas and fabric) unless the fork server has them
    imported already (:func:`start_fork_server`). With ``warm_start`` (the default) the batches asked for before
    the workers are started are evaluated in this process; the workers start after the first batch that needs
    them (their start would compete with it on a small machine), or, with ``autospawn=False``, when the caller
    says so with :meth:`spawn` (the dashboard: after the second generation, once the first front is on the page);
    until every worker is up, this process shares each batch with them (it takes chunks from the back, the workers
    take them from the front as they come up: a batch no longer waits in this process alone for workers that are
    ready a second into it). With ``share``, this process also evaluates chunks of each batch alongside the
    workers (a dashboard's server, with one worker on a 2-core machine). ``in_process`` counts the evaluations made here. Evaluations are
    pure, so the results are the same wherever they run.

    If a worker process dies (killed, out of memory), the pool is rebuilt and the batch evaluated again, up to
    ``retries`` times. ``start_method`` ("spawn", ...) overrides :func:`worker_context` (a process that is itself a
    child of the fork server, the dashboard's search driver, would start a fork server of its own).
    """

    name = "processes"

    def __init__(self, workers: int, *, retries: int = 3, warm_start: bool = True, share: bool = False,
                 autospawn: bool = True, start_method: str | None = None):
        if workers < 1:
            raise FabricError(f"--workers must be at least 1, got {workers}")
        self.workers = workers
        self.retries = retries
        self.warm_start = warm_start
        self.share = share
        self.autospawn = autospawn
        #: multiprocessing start method of the workers (None: :func:`worker_context`'s)
        self.start_method = start_method
        self.restarts = 0
        self.in_process = 0
        #: worker seconds per evaluation in the last batch (0 before one): sizes the chunks (:func:`_chunks`)
        self.seconds_per_evaluation = 0.0
        self._pool = None
        self._ctx = None
        self._started: list | None = None

    def spawn(self) -> "ProcessRunner":
        """Start the worker processes now (they need no context to start; calling it again does nothing); returns
        the runner."""
        if self._pool is None:
            self._new_pool()
        if self._started is None:
            # one no-op per worker: the pool starts a process for each task that finds no idle worker
            self._started = [self._pool.submit(_worker_ready) for _ in range(self.workers)]
        return self

    def start(self, workload, scenario, seed, samples, catalog, constraints, overrides=None):
        self._ctx = (workload, scenario, seed, samples, catalog, constraints, overrides)
        self._ctx_id = next(_CONTEXT_IDS)
        self._cases = _cases(workload)
        if self._pool is None:
            self._new_pool()

    def _new_pool(self):
        # no process starts until a task is submitted: a search whose records are all cached never starts one
        ctx = worker_context() if self.start_method is None else mp.get_context(self.start_method)
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)
        self._started = None

    def ready(self) -> bool:
        """True once every worker process has started (always, without ``warm_start``)."""
        return not self.warm_start or (self._started is not None and all(f.done() for f in self._started))

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for fault-injection tests and monitoring)."""
        return list(getattr(self._pool, "_processes", {}) or {})

    def _here(self, designs_with_meta: list) -> list[dict]:
        self.in_process += len(designs_with_meta) * self._cases
        return _eval_chunk(designs_with_meta, *self._ctx)

    def map(self, designs_with_meta: list) -> list[dict]:
        from concurrent.futures.process import BrokenProcessPool

        if self._started is None and self.warm_start:
            out = self._here(designs_with_meta)
            if self.autospawn:
                self.spawn()            # after the first batch (see the class docstring)
            return out
        # workers still starting: this process shares the batch with them (they take chunks as they come up)
        share = self.share or not self.ready()
        for attempt in range(self.retries + 1):
            try:
                t = time.perf_counter()
                n_workers = self.workers + (1 if share else 0)
                chunks = _chunks(designs_with_meta, n_workers, cases=self._cases, key=_cabling_of,
                                 slow=self.seconds_per_evaluation >= SLOW_EVALUATION_S)
                out = [rec for part in self._shared_map(chunks, share) for rec in part]
                if designs_with_meta:
                    self.seconds_per_evaluation = ((time.perf_counter() - t) * n_workers
                                                   / (len(designs_with_meta) * self._cases))
                return out
            except BrokenProcessPool:
                if attempt == self.retries:
                    raise FabricError(f"local worker processes kept dying ({self.retries + 1} attempts); "
                                      f"check memory limits or run in-process") from None
                self.restarts += 1
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._new_pool()
                self.spawn()
        raise AssertionError("unreachable")

    def _shared_map(self, chunks: list, share: bool) -> list:
        """Each chunk's records, in order (see :meth:`share_map`)."""
        return self.share_map(_eval_chunk_in_worker, [(self._ctx_id, self._ctx, c) for c in chunks],
                              here=lambda args: self._here(args[2]), share=share)

    def share_map(self, fn, args_list: list, *, here=None, share: bool = True) -> list:
        """``fn(*args)`` for each of ``args_list``, in order: the workers take them from the front; with ``share``
        this process takes them from the back (``here(args)``, default ``fn(*args)``), each one no worker has
        begun, so nothing waits for a worker that has not started yet. ``fn`` must be a module-level function."""
        if self._pool is None:
            self._new_pool()
        futures = [self._pool.submit(fn, *args) for args in args_list]
        parts: list = [None] * len(args_list)
        done = [False] * len(args_list)
        if share:
            for i in range(len(args_list) - 1, -1, -1):
                if futures[i].cancel():
                    parts[i] = here(args_list[i]) if here is not None else fn(*args_list[i])
                    done[i] = True
                elif not futures[i].done():
                    break               # the workers have reached this one: the rest is theirs
        for i, f in enumerate(futures):
            if not done[i]:
                parts[i] = f.result()
        return parts

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskRunner:
    """Evaluate on a Dask cluster: ``address`` of a running scheduler, or a new ``LocalCluster`` when ``None``.

    The workload is scattered once to every worker; chunks are retried (``retries``) if a worker dies.
    """

    name = "dask"

    def __init__(self, address: str | None = None, *, n_workers: int = 2, retries: int = 3):
        self.address = address
        self.n_workers = n_workers
        self.retries = retries
        self._client = None
        self._cluster = None

    @property
    def workers(self) -> int:
        if self._client is None:
            return self.n_workers
        return max(1, len(self._client.scheduler_info().get("workers", {})))

    def start(self, workload, scenario, seed, samples, catalog, constraints, overrides=None):
        from dask.distributed import Client, LocalCluster

        try:
            if self.address:
                self._client = Client(self.address, timeout=10)
            else:
                self._cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1, processes=True,
                                             dashboard_address=None)
                self._client = Client(self._cluster)
        except (OSError, TimeoutError) as err:
            raise FabricError(f"cannot reach the Dask scheduler at {self.address}: {err}") from err
        if self._cluster is not None:
            # a local cluster may return before every worker has registered: the broadcast below reaches only the
            # workers registered, and losing the one holder of the context would cancel every chunk
            self._client.wait_for_workers(self.n_workers, timeout=60)
        self._ctx_values = [workload, scenario, seed, samples, catalog, constraints, overrides]
        self._ctx = self._client.scatter(self._ctx_values, broadcast=True)
        self._cases = _cases(workload)

    def map(self, designs_with_meta: list) -> list[dict]:
        from concurrent.futures import CancelledError      # distributed's FutureCancelledError is one

        chunks = _chunks(designs_with_meta, self.workers, cases=self._cases, key=_cabling_of)
        for attempt in range(self.retries + 1):
            futures = self._client.map(_eval_chunk, chunks, *[[c] * len(chunks) for c in self._ctx],
                                       retries=self.retries, pure=False)
            try:
                parts = self._client.gather(futures)
                break
            except CancelledError:
                # the workers holding the scattered context died with it: scatter it again to those alive and
                # evaluate the batch again (records are pure functions of the design, so nothing changes)
                if attempt == self.retries:
                    raise
                self._ctx = self._client.scatter(self._ctx_values, broadcast=True)
        out = []
        for part in parts:
            out.extend(part)
        return out

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def make_runner(workers: int | None = None, scheduler: str | None = None):
    """The runner for the CLI flags: ``--scheduler`` wins, then ``--workers`` (> 1), else in-process."""
    if scheduler:
        return DaskRunner(None if scheduler == "local" else scheduler)
    if workers and workers > 1:
        return ProcessRunner(workers)
    return InProcessRunner()

"""A dashboard search driven from a process of its own, so the server process never holds a search's memory.

At 100K+ GPUs the start of a search (the design space, the baselines, their tuned policies, the first fabrics
built and evaluated) takes hundreds of MB; on a thread of the server that memory stays with the server, and
concurrent sessions stack it. :func:`start_driver` starts :func:`drive` in a fresh process of the worker context
(a fork of the fork server, which has fabric imported already: no second of imports), and :class:`Driver` reads
what it reports over a pipe: the per-generation progress, the worker processes' ids, then the result or the error.
A plan objective's shortlist is ranked before, in the server (kept there for the next search of the same inputs).
Cancelling sets an event the search checks between generations, as on a thread.
"""

from __future__ import annotations

import traceback
from types import SimpleNamespace

from fabric.errors import FabricError

__all__ = ["Driver", "start_driver", "drive"]


def drive(conn, cancel, args: dict) -> None:
    """The driver process: run the search ``args`` describes (``workload``, prepared: a plan objective comes with
    its shortlist, which the server ranked and keeps for the next search of the same inputs; ``constraints``,
    ``budget_evals``, ``seed``, ``pop_size``, ``samples``, ``catalog``, ``state_path``, ``transport_overrides``;
    ``workers``: worker processes it shares the evaluations with; ``server_pid``: it ends with its workers when that
    process is gone) and send ``("progress", progress, worker pids)`` per generation, then ``("done", result)`` or
    ``("failed", message)`` on ``conn``."""
    from fabric.search import run_search
    from fabric.search.runners import ProcessRunner

    # workers forked from this process (fabric imported: they start at once): a forkserver pool here, in a child of
    # the server's fork server, would start a fork server of its own (a third process per search), and spawned
    # workers spend a second importing. Forking is safe here: besides this thread only the server watch runs, which
    # sleeps and holds no lock, and the pool forks its workers before it starts its own thread.
    runner = ProcessRunner(int(args["workers"]), share=True, autospawn=False, start_method="fork")
    _watch_server(args.get("server_pid"), runner)

    def progress(p) -> None:
        if p.generation >= 2:
            runner.spawn()      # the first front is on the page: start the worker processes
        conn.send(("progress", SimpleNamespace(generation=p.generation, evaluations=p.evaluations,
                                               hypervolume=p.hypervolume, front=list(p.front),
                                               baselines=list(p.baselines), elapsed_s=p.elapsed_s),
                   runner.worker_pids()))

    try:
        res = run_search(args["workload"], args["constraints"], budget_evals=args["budget_evals"], seed=args["seed"],
                         pop_size=args["pop_size"], samples=args["samples"], runner=runner, catalog=args["catalog"],
                         callback=progress, cancel=cancel, state_path=args["state_path"],
                         transport_overrides=args["transport_overrides"])
        conn.send(("done", res))
    except FabricError as err:
        conn.send(("failed", " ".join(str(err).split())))
    except Exception as err:  # a bug must reach the page as a message
        conn.send(("failed", f"internal error: {type(err).__name__}: {err}\n{traceback.format_exc()}"))
    finally:
        runner.close()
        conn.close()


def _watch_server(server_pid, runner, period_s: float = 0.5) -> None:
    """End this driver and its workers at once when the server process that started it is gone (a crash: nobody
    reads the search any more, and its saved state lets a restarted server resume it)."""
    import os
    import signal
    import threading
    import time

    if not server_pid:
        return

    def watch():
        while True:
            time.sleep(period_s)
            try:
                os.kill(int(server_pid), 0)
            except ProcessLookupError:
                for pid in runner.worker_pids():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                os._exit(1)
            except OSError:
                pass

    threading.Thread(target=watch, name="fabric-search-server-watch", daemon=True).start()


class Driver:
    """A started driver process: :meth:`messages` yields what it reports until it ends."""

    def __init__(self, process, conn, cancel_event):
        self.process = process
        self._conn = conn
        self._cancel = cancel_event
        self.worker_pids: list[int] = []

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def cancel(self) -> None:
        self._cancel.set()

    def messages(self, poll_s: float = 0.2, should_cancel=None):
        """Yield the driver's messages; ends after "done" or "failed", or with a "failed" of its own when the
        process ends without saying why. ``should_cancel()`` is asked between polls; True cancels the search."""
        while True:
            if should_cancel is not None and should_cancel():
                self.cancel()
            if self._conn.poll(poll_s):
                try:
                    msg = self._conn.recv()
                except (EOFError, OSError):
                    msg = None
                if msg is not None:
                    if msg[0] == "progress":
                        self.worker_pids = list(msg[2])
                    yield msg
                    if msg[0] in ("done", "failed"):
                        break
                    continue
            if not self.process.is_alive() and not self._conn.poll(0):
                self.process.join(1.0)
                yield ("failed", f"the search process ended unexpectedly (exit code {self.process.exitcode}); "
                                 "start the search again")
                break
        self.close()

    def close(self) -> None:
        """Wait for the process to end (it ends once it has sent its result) and release the pipe."""
        self.process.join(30.0)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5.0)
        self.worker_pids = []
        self._conn.close()


def start_driver(args: dict) -> Driver:
    """Start :func:`drive` for ``args`` in a process of its own (the search workers' context)."""
    from fabric.search.runners import worker_context

    import os

    ctx = worker_context()
    args = dict(args, server_pid=os.getpid())
    recv, send = ctx.Pipe(duplex=False)
    cancel = ctx.Event()
    proc = ctx.Process(target=drive, args=(send, cancel, args), name="fabric-search-driver")
    proc.start()
    send.close()
    return Driver(proc, recv, cancel)

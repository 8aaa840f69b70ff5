"""Dashboard searches on a server: worker processes end when a search is cancelled or abandoned, searches queue
for a server-wide slot, a saved search resumes after a restart, and a session's search budget is enforced."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from fabric.errors import FabricError
from fabric.search import Constraints, run_search
from fabric.ui_support import saved_searches as saved
from fabric.ui_support.jobs import SearchAllowance, SearchJob, live_job, reap_abandoned
from fabric.workload.ingest import ingest

ROOT = Path(__file__).resolve().parent.parent
SEED, EVALS, SAMPLES = 3, 400, 64


@pytest.fixture(autouse=True)
def empty_cache():
    """Every search here evaluates for real (no records left by an earlier test)."""
    from fabric.search import GLOBAL_CACHE

    GLOBAL_CACHE.clear()
    yield
    GLOBAL_CACHE.clear()


@pytest.fixture(scope="module")
def workload():
    return ingest([("m.json", (ROOT / "sample_traces" / "mixtral-8x7b.json").read_bytes())]).workload


@pytest.fixture(scope="module")
def reference(workload):
    """The undisturbed in-process search every variant below must reproduce."""
    return run_search(workload, Constraints(gpus=256), budget_evals=EVALS, seed=SEED, samples=SAMPLES)


def _front_keys(front) -> list:
    return sorted(r["key"] for r in front)


def _wait_for(pred, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _job(workload, **kw):
    return SearchJob(workload, Constraints(gpus=256), budget_evals=EVALS, seed=SEED, samples=SAMPLES, **kw)


def test_search_in_a_worker_process_gives_the_in_process_front(workload, reference):
    job = _job(workload, workers=1).start()
    assert _wait_for(lambda: job.worker_pids())
    pids = job.worker_pids()
    assert pids and all(p != os.getpid() for p in pids)
    assert job.wait(300)
    snap = job.snapshot()
    assert snap.state == "done"
    assert _front_keys(snap.front) == _front_keys(reference.front)
    assert not any(_alive(p) for p in pids), "worker processes outlived their finished search"


def test_server_process_evaluates_nothing_when_the_search_has_its_own_driver(workload, reference):
    """issue 39 item 6: with worker processes the search is driven from a process of its own, so no evaluation
    (and none of its memory) happens in the server process; on a server thread it shares the evaluations."""
    from fabric.search import GLOBAL_CACHE

    job = _job(workload, workers=1).start()
    assert _wait_for(lambda: job.worker_pids())
    driver = job.worker_pids()[0]
    assert driver != os.getpid() and _alive(driver)
    assert job.wait(300) and job.snapshot().state == "done"
    assert _front_keys(job.snapshot().front) == _front_keys(reference.front)
    assert len(GLOBAL_CACHE) == 0               # every record was made in the driver or its worker
    assert not _alive(driver) and job.worker_pids() == []
    on_thread = _job(workload, workers=1, isolated=False).start()
    assert on_thread.wait(300) and on_thread.snapshot().state == "done"
    assert _front_keys(on_thread.snapshot().front) == _front_keys(reference.front)
    assert len(GLOBAL_CACHE) > 0                # the server thread evaluated its share


def test_cancelled_search_releases_its_worker_processes(workload):
    job = _job(workload, workers=1).start()
    assert _wait_for(lambda: job.snapshot().generation >= 1 and job.worker_pids())
    pids = job.worker_pids()
    assert all(_alive(p) for p in pids)
    t0 = time.monotonic()
    job.cancel()
    assert job.wait(60)
    assert job.snapshot().state == "cancelled"
    assert _wait_for(lambda: not any(_alive(p) for p in pids), timeout=10)
    assert time.monotonic() - t0 < 30
    assert job.worker_pids() == []
    assert job.snapshot().front, "a cancelled search keeps the front it found"


def test_abandoned_search_is_cancelled_and_releases_its_workers(workload):
    job = _job(workload, workers=1, abandon_after_s=3600).start()
    assert _wait_for(lambda: job.worker_pids())
    pids = job.worker_pids()
    assert reap_abandoned() == [] or job not in reap_abandoned()   # touched moments ago: not abandoned
    assert job.running
    # the page stopped touching it: an hour later the reaper cancels it
    cancelled = reap_abandoned(now=time.monotonic() + 3601)
    assert job in cancelled
    assert job.wait(60) and job.abandoned
    assert job.snapshot().state == "cancelled"
    assert _wait_for(lambda: not any(_alive(p) for p in pids), timeout=10)


def test_reaper_thread_cancels_an_untouched_search_on_its_own(workload):
    job = _job(workload, workers=0, abandon_after_s=0.5)
    job.budget_evals = 20_000
    job.start()
    assert job.wait(60), "the reaper did not cancel an untouched search"
    assert job.abandoned and job.snapshot().state == "cancelled"


def test_touched_search_is_not_abandoned(workload, reference):
    job = _job(workload, workers=0, abandon_after_s=1.0).start()
    while job.running:
        job.touch()
        time.sleep(0.1)
    assert not job.abandoned
    assert job.snapshot().state == "done"
    assert _front_keys(job.snapshot().front) == _front_keys(reference.front)


def test_searches_beyond_the_server_limit_wait_in_a_queue(workload, reference, monkeypatch):
    monkeypatch.setenv("FABRIC_LIMIT_MAX_CONCURRENT_SEARCHES", "1")
    first = _job(workload, workers=0).start()
    second = _job(workload, workers=0).start()
    assert _wait_for(lambda: first.snapshot().state == "running")
    snap = second.snapshot()
    assert snap.state == "queued" and snap.running
    assert snap.queue_position == 0
    assert first.wait(300) and second.wait(300)
    assert first.snapshot().state == second.snapshot().state == "done"
    assert _front_keys(second.snapshot().front) == _front_keys(reference.front)


def test_cancelling_a_queued_search_leaves_the_queue(workload, monkeypatch):
    monkeypatch.setenv("FABRIC_LIMIT_MAX_CONCURRENT_SEARCHES", "1")
    first = _job(workload, workers=0).start()
    second = _job(workload, workers=0).start()
    assert _wait_for(lambda: first.snapshot().state == "running")
    second.cancel()
    assert second.wait(10)
    assert second.snapshot().state == "cancelled" and second.snapshot().evaluations == 0
    first.cancel()
    assert first.wait(60)


def test_saved_search_resumes_where_it_stopped_with_the_same_front(workload, reference, tmp_path):
    job = _job(workload, workers=1, state_dir=tmp_path).start()
    assert saved.is_search_id(job.search_id)
    assert live_job(job.search_id) is job
    assert _wait_for(lambda: job.snapshot().generation >= 2)
    job.cancel()                                  # what a server restart leaves: the state of a finished generation
    assert job.wait(60)
    stopped = json.loads(saved.state_file(tmp_path, job.search_id).read_text())
    assert live_job(job.search_id) is None

    again = SearchJob.resume(job.search_id, tmp_path, workers=1)
    assert again.snapshot().resumed_from == stopped["generation"] >= 2
    again.start()
    assert again.wait(300)
    snap = again.snapshot()
    assert snap.state == "done"
    assert snap.generation > stopped["generation"]
    assert snap.evaluations == reference.evaluations      # nothing evaluated twice, nothing skipped
    assert _front_keys(snap.front) == _front_keys(reference.front)


def test_resume_of_unknown_or_malformed_ids(tmp_path):
    assert SearchJob.resume("0" * 32, tmp_path) is None
    for bad in ("../../etc/passwd", "0" * 31, "0" * 33, "G" * 32, "", "..", "/tmp/x", "A" * 32):
        with pytest.raises(FabricError, match="32 hexadecimal digits"):
            SearchJob.resume(bad, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_saved_search_gives_a_message_without_server_paths(tmp_path):
    sid = "ab" * 16
    (tmp_path / f"{sid}.meta.json").write_text('{"version": 1, "workload": {"jobs": 3}}')
    with pytest.raises(FabricError) as err:
        SearchJob.resume(sid, tmp_path)
    assert sid in str(err.value) and str(tmp_path) not in str(err.value)


def test_prune_keeps_the_newest_searches(tmp_path):
    ids = [f"{i:032x}" for i in range(5)]
    for age, sid in enumerate(ids):
        for suffix in ("meta", "state"):
            p = tmp_path / f"{sid}.{suffix}.json"
            p.write_text("{}")
            os.utime(p, (time.time() - age * 100, time.time() - age * 100))
    (tmp_path / "unrelated.json").write_text("{}")
    assert saved.prune(tmp_path, keep=3) == 4
    assert sorted(p.name.split(".")[0] for p in tmp_path.glob("*.meta.json")) == ids[:3]
    assert saved.prune(tmp_path, max_age_s=150) == 2      # the one 200 s old goes
    assert (tmp_path / "unrelated.json").exists()


def test_session_allowance_names_its_limit(monkeypatch, workload):
    monkeypatch.setenv("FABRIC_LIMIT_MAX_SESSION_EVALUATIONS", "1000")
    allowance = SearchAllowance()
    assert allowance.limit == 1000
    allowance.check(400)
    job = _job(workload, workers=0).start()
    assert job.wait(300)
    allowance.charge(job)
    allowance.charge(job)                       # charged once only
    n = job.snapshot().evaluations              # everything the search evaluated is charged:
    res = job.snapshot().result                 # the budget of 400, overshot by the last generation's designs,
    extra = res.neighbourhood["evaluated"] + res.tuning_evaluations   # then the check and the baselines' tuning
    assert allowance.spent == n and 400 < n - extra < 500 and n < 1000
    left = 1000 - n
    assert allowance.remaining() == left
    with pytest.raises(FabricError, match=rf"{left:,} of its 1,000 evaluations left.*max_session_evaluations"
                                          r".*FABRIC_LIMIT_MAX_SESSION_EVALUATIONS"):
        allowance.check(left + 1)
    allowance.check(left)


def test_bad_worker_setting_is_a_clear_error(monkeypatch, workload):
    monkeypatch.setenv("FABRIC_SEARCH_WORKERS", "two")
    with pytest.raises(FabricError, match="FABRIC_SEARCH_WORKERS must be a whole number"):
        SearchJob(workload, Constraints(gpus=256))


def test_a_search_that_did_not_converge_continues_with_more_evaluations_until_it_converges(workload, tmp_path):
    cons = Constraints(gpus=256)
    job = SearchJob(workload, cons, budget_evals=120, seed=SEED, samples=SAMPLES, workers=0,
                    state_dir=tmp_path).start()
    assert job.wait(120)
    snap = job.snapshot()
    assert snap.state == "done" and snap.converged is False and snap.can_continue
    assert "not converged" in snap.result.stopped_because
    assert job.continue_step == 120
    done = json.loads(saved.state_file(tmp_path, job.search_id).read_text())["evaluations"]
    more = job.continued(job.continue_step)
    assert (more.search_id, more.budget_evals, more.seed) == (job.search_id, done + 120, job.seed)
    assert more.snapshot().resumed_from == snap.generation and more.snapshot().continued_evals == 120
    more.start()
    assert live_job(job.search_id) is more and more.wait(300)
    end = more.snapshot()
    assert end.state == "done" and end.generation > snap.generation
    assert more.spent() == end.evaluations - done          # what the session is charged: the evaluations it added
    allowance = SearchAllowance(limit=10_000)
    allowance.charge(more)
    assert allowance.spent == end.evaluations - done
    assert saved.load_inputs(tmp_path, job.search_id).budget_evals == done + 120   # a restart resumes the same
    # the front is the one a search started with the larger budget finds
    from fabric.search import GLOBAL_CACHE

    GLOBAL_CACHE.clear()
    whole = run_search(workload, cons, budget_evals=done + 120, seed=SEED, samples=SAMPLES)
    assert end.evaluations == whole.evaluations and _front_keys(end.front) == _front_keys(whole.front)
    # Continue until the rule holds; then there is nothing to continue
    for _ in range(30):
        if not more.snapshot().can_continue:
            break
        assert more.continue_step == 120                     # each Continue adds the same step
        more = more.continued(more.continue_step).start()
        assert more.wait(300)
    end = more.snapshot()
    assert end.converged and end.result.stopped_because.startswith("converged (")
    with pytest.raises(FabricError, match="has converged"):
        more.continued(120)


def test_a_search_that_cannot_be_continued_says_why(workload, tmp_path):
    running = SearchJob(workload, Constraints(gpus=256), budget_evals=5000, seed=SEED, samples=SAMPLES, workers=0,
                        state_dir=tmp_path).start()
    with pytest.raises(FabricError, match="only a search that ended without converging"):
        running.continued(100)
    running.cancel()
    assert running.wait(120)
    stopped = running.snapshot()
    assert stopped.state == "cancelled" and stopped.can_continue
    assert running.continue_step == 5000 - stopped.evaluations       # a Continue goes on to the budget it had
    unsaved = SearchJob(workload, Constraints(gpus=256), budget_evals=60, seed=SEED, samples=SAMPLES,
                        workers=0).start()
    assert unsaved.wait(120) and unsaved.snapshot().can_continue
    with pytest.raises(FabricError, match="not saved on the server"):
        unsaved.continued(100)
    with pytest.raises(FabricError, match="positive whole number"):
        running.continued(0)


def test_plan_search_with_its_own_driver_keeps_the_shortlist_in_the_server(workload):
    """A plan objective's shortlist is ranked on the server's thread (phase "plans") and kept there, so the next
    search of the same inputs starts at once; the search itself runs in the driver process."""
    from fabric.search import prepare as prep
    from fabric.ui_support.plans_view import plan_objective

    prep._PREPARED.clear()
    job = SearchJob(plan_objective(workload), Constraints(gpus=256), budget_evals=60, seed=SEED, samples=SAMPLES,
                    workers=1).start()
    assert job.wait(300)
    snap = job.snapshot()
    assert snap.state == "done", snap.error
    assert snap.front and all(r.get("plan") for r in snap.front)
    assert len(prep._PREPARED) == 1                 # the shortlist, ranked here and kept for the next search

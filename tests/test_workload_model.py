"""The workload model: validation, native JSON round trip, byte conventions, and the native parser."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_deadline, fuzz_examples
from fabric.errors import FabricError, ParseError, WorkloadError
from fabric.workload.model import (
    COLLECTIVE_KINDS, ROLES, SCHEMA_VERSION, CommOp, Job, Measurement, ProcessGroup, UnparsedComm, Workload,
    dump_workload_json, load_workload_json, validate_job, workload_from_dict, workload_to_dict,
)
from fabric.workload.parsers import native


def _job(**kw):
    base = dict(name="j", world_size=8, groups=(ProcessGroup("dp", 8, "dp"), ProcessGroup("tp", 2, "tp", ranks=(0, 1))),
                ops=(CommOp("all_reduce", 1 << 20, "dp", 2.0, "bfloat16", 0.25),
                     CommOp("all_to_allv", 300, "dp", 1.0, per_rank_bytes=(100, 200, 300, 0, 0, 0, 0, 0))),
                compute_time_s=0.1, compute_cv=0.02, steps_observed=3, notes=("n",))
    base.update(kw)
    return Job(**base)


def test_bytes_per_step_and_group_lookup():
    job = _job()
    assert job.ops[0].bytes_per_step == 2.0 * (1 << 20)
    assert job.comm_bytes_per_step == 2.0 * (1 << 20) + 300
    assert job.group("tp").size == 2
    with pytest.raises(WorkloadError, match="no process group named 'pp'"):
        job.group("pp")


def test_global_ranks_from_list_or_stride():
    assert ProcessGroup("a", 3, ranks=(4, 5, 6)).global_ranks() == (4, 5, 6)
    assert ProcessGroup("a", 4, rank_start=1, rank_stride=2).global_ranks() == (1, 3, 5, 7)
    assert ProcessGroup("a", 4, rank_stride=2).global_ranks() is None


def test_native_round_trip_is_exact():
    wl = Workload(jobs=(_job(),), sources=("a.json",),
                  unparsed=(UnparsedComm("a.json", "k", 2, 0.5, "why"),),
                  measurements=(Measurement("t.log", "all_reduce", 1024, 1e-5, 8, 1e8, 1.75e8, False, "float32"),),
                  facts=(("nccl", "2.21"),), warnings=("w",), name="wl")
    text = dump_workload_json(wl)
    assert json.loads(text)["schema"] == SCHEMA_VERSION
    assert load_workload_json(text) == wl


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["jobs"][0]["ops"][0].update(kind="all_shuffle"), "jobs[0].ops[0].kind"),
    (lambda d: d["jobs"][0]["ops"][0].update(group="pp"), "jobs[0].ops[0]"),
    (lambda d: d["jobs"][0]["ops"][0].update(bytes=-1), "jobs[0].ops[0].bytes"),
    (lambda d: d["jobs"][0]["ops"][0].update(bytes=2 ** 60), "jobs[0].ops[0].bytes"),
    (lambda d: d["jobs"][0]["ops"][0].update(overlap_fraction=1.5), "overlap_fraction"),
    (lambda d: d["jobs"][0]["groups"][1].update(size=16), "jobs[0].groups[1].size"),
    (lambda d: d["jobs"][0]["groups"][1].update(ranks=[0, 1, 2]), "lists 3 ranks"),
    (lambda d: d["jobs"][0]["groups"][0].update(role="boss"), "role"),
    (lambda d: d["jobs"][0].update(kind="party"), "jobs[0].kind"),
    (lambda d: d["jobs"][0].update(colour="red"), "unknown field(s) colour"),
    (lambda d: d.update(jobs=[]), "non-empty list"),
    (lambda d: d["jobs"].append(dict(d["jobs"][0])), "duplicate job name"),
])
def test_validation_names_the_field(mutate, where):
    d = workload_to_dict(Workload(jobs=(_job(),)))
    mutate(d)
    with pytest.raises(WorkloadError, match=re.escape(where)):
        workload_from_dict(d)


def test_storage_and_inference_jobs_validate():
    validate_job(Job("ckpt", kind="storage", world_size=4, burst_bytes=10**9, burst_period_s=600.0))
    with pytest.raises(WorkloadError, match="burst_bytes"):
        validate_job(Job("ckpt", kind="storage", world_size=4))
    validate_job(Job("serve", kind="inference", world_size=2, request_rate_per_s=10.0, latency_slo_s=0.2))


def test_model_vocabularies_cover_the_parsers():
    from fabric.workload.parsers.kineto.collectives import _KINDS

    assert {k for k in _KINDS.values() if k != "recv"} <= set(COLLECTIVE_KINDS)
    assert {"dp", "tp", "pp", "ep", "world", "unknown"} <= set(ROLES)


# ---------------------------------------------------------------- the native parser


def test_native_parser_sniff_and_parse():
    wl = Workload(jobs=(_job(),))
    text = dump_workload_json(wl).encode()
    assert native.sniff(text[:65536], "x")
    assert native.sniff(b'{"schema": "fabric.workload/1", "jobs": [', "x")
    assert not native.sniff(b'{"traceEvents": []}', "x")
    assert native.parse([("w.json", text)]) == wl


def test_native_parser_combines_files_and_refuses_duplicate_job_names():
    a = dump_workload_json(Workload(jobs=(_job(name="a"),))).encode()
    b = dump_workload_json(Workload(jobs=(_job(name="b"),), warnings=("x",))).encode()
    wl = native.parse([("a.json", a), ("b.json", b)])
    assert [j.name for j in wl.jobs] == ["a", "b"] and wl.warnings == ("x",)
    with pytest.raises(ParseError, match="job name 'a' already used"):
        native.parse([("a.json", a), ("a2.json", a)])


@pytest.mark.parametrize("text, msg", [
    (b"[1, 2]", "JSON object"),
    (b'{"jobs": [{"name": "x"}], "unparsed": [5]}', "malformed entry"),
    (b'{"jobs": [{"name": "x"}], "facts": [[1, 2, 3]]}', "malformed entry"),
    (b'{"jobs": [', "invalid JSON"),
])
def test_native_parser_errors(text, msg):
    with pytest.raises(ParseError, match=msg):
        native.parse([("w.json", text)])


# ---------------------------------------------------------------- property: any valid workload round-trips

_name = st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=8)


@st.composite
def _jobs(draw):
    world = draw(st.integers(1, 64))
    n_groups = draw(st.integers(1, 3))
    groups = []
    for i in range(n_groups):
        size = draw(st.integers(1, world))
        groups.append(ProcessGroup(f"g{i}", size, draw(st.sampled_from(ROLES))))
    ops = []
    for _ in range(draw(st.integers(0, 4))):
        g = draw(st.sampled_from(groups))
        kind = draw(st.sampled_from(COLLECTIVE_KINDS))
        per_rank = None
        if kind == "all_to_allv" and draw(st.booleans()):
            per_rank = tuple(draw(st.lists(st.integers(0, 10**9), min_size=g.size, max_size=g.size)))
        ops.append(CommOp(kind, draw(st.integers(0, 10**12)), g.name, draw(st.floats(0, 1000)),
                          overlap_fraction=draw(st.floats(0, 1)), per_rank_bytes=per_rank))
    return Job(draw(_name), world_size=world, groups=tuple(groups), ops=tuple(ops),
               compute_time_s=draw(st.floats(0, 100)), compute_cv=draw(st.floats(0, 2)))


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_jobs(), min_size=1, max_size=3, unique_by=lambda j: j.name))
def test_any_valid_workload_round_trips_through_native_json(jobs):
    wl = Workload(jobs=tuple(jobs))
    assert load_workload_json(dump_workload_json(wl)) == wl
    assert native.parse([("w.json", dump_workload_json(wl).encode())]) == wl


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_native_parser_fuzz(data):
    try:
        native.parse([("f.json", b'{"schema": "fabric.workload/1", ' + data)])
    except FabricError:
        pass

"""Ingest layer: safe reading (size caps, gzip bombs, JSON depth), format detection, per-file reports, job grouping,
the ``fabric parse`` command and the workload summary."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import trace_path
from tests.conftest import fuzz_deadline, fuzz_examples
from fabric.cli.main import main
from fabric.errors import FabricError, ParseError
from fabric.limits import Limits
from fabric.workload.ingest import FileReport, IngestResult, detect_format, ingest, ingest_paths
from fabric.workload.io import load_json, read_input, stream_json_object
from fabric.workload.kineto_writer import workload_to_kineto
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload, dump_workload_json, load_workload_json
from fabric.workload.summary import format_summary, log2_bin, size_label, summarize

NCCL_DATA = "kineto/hta/nccl_parser_config/nccl_data.json.gz"


def _job(world=2, name="toy"):
    return Job(name, world_size=world, groups=(ProcessGroup("dp", world, "dp"),),
               ops=(CommOp("all_reduce", 4 << 20, "dp", 2.0, "float32", 0.5),), compute_time_s=0.01)


def _trace_bytes(job, rank, **kw) -> bytes:
    return json.dumps(workload_to_kineto(job, rank, **kw)).encode()


# ---------------------------------------------------------------- read_input


def test_read_input_passes_plain_bytes_and_inflates_gzip_by_magic_not_name():
    assert read_input("a.json", b'{"x": 1}') == b'{"x": 1}'
    assert read_input("no_extension", gzip.compress(b"hello")) == b"hello"
    assert read_input("looks.gz", b"plain text") == b"plain text"


def test_read_input_handles_multi_member_gzip():
    raw = gzip.compress(b"abc") + gzip.compress(b"def")
    assert read_input("m.gz", raw) == b"abcdef"


def test_gzip_bomb_is_stopped_at_the_cap_with_a_fix_it_message():
    # 200 MB of zeros compress to ~200 kB: a classic bomb against a 10 MB cap
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    bomb = b"".join(comp.compress(chunk) for _ in range(200)) + comp.flush()
    assert len(bomb) < 1_000_000
    with pytest.raises(ParseError) as ei:
        read_input("bomb.json.gz", bomb, Limits(max_decompressed_bytes=10_000_000))
    msg = str(ei.value)
    assert "bomb.json.gz" in msg and "max_decompressed_bytes=10,000,000" in msg
    assert "FABRIC_LIMIT_MAX_DECOMPRESSED_BYTES" in msg


def test_decompressed_size_exactly_at_the_cap_is_accepted():
    data = b"x" * 1000
    assert read_input("ok.gz", gzip.compress(data), Limits(max_decompressed_bytes=1000)) == data
    with pytest.raises(ParseError):
        read_input("ok.gz", gzip.compress(data), Limits(max_decompressed_bytes=999))


def test_corrupt_and_truncated_gzip_give_parse_errors():
    good = gzip.compress(b"some text that is long enough " * 50)
    with pytest.raises(ParseError, match="corrupt gzip"):
        read_input("cut.gz", good[: len(good) // 2])
    bad = good[:10] + bytes(b ^ 0xFF for b in good[10:30]) + good[30:]
    with pytest.raises(ParseError, match="corrupt gzip"):
        read_input("flipped.gz", bad)
    with pytest.raises(ParseError, match="after the last gzip member"):
        read_input("tail.gz", good + b"junk")


def test_upload_size_cap_names_the_limit():
    with pytest.raises(ParseError, match="max_upload_bytes=10.*FABRIC_LIMIT_MAX_UPLOAD_BYTES"):
        read_input("big.json", b"x" * 11, Limits(max_upload_bytes=10))


def test_limits_from_environment_apply(monkeypatch):
    monkeypatch.setenv("FABRIC_LIMIT_MAX_UPLOAD_BYTES", "5")
    with pytest.raises(ParseError, match="max_upload_bytes=5"):
        read_input("x", b"123456")


# ---------------------------------------------------------------- JSON


def test_load_json_reports_line_and_column_of_a_syntax_error():
    with pytest.raises(ParseError) as ei:
        load_json(b'{\n  "a": 1,\n  "b": [1, 2,\n', "t.json")
    assert ei.value.source == "t.json" and ei.value.line == 4
    assert "t.json (line 4)" in str(ei.value)


def test_load_json_rejects_deep_nesting_without_recursion_errors():
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(ParseError, match="max_json_depth"):
        load_json(deep, "deep.json")
    ok = b"[" * 64 + b"]" * 64
    assert load_json(ok, "ok.json") is not None
    with pytest.raises(ParseError, match="max_json_depth=64.*FABRIC_LIMIT_MAX_JSON_DEPTH"):
        load_json(b"[" * 65 + b"]" * 65, "d.json")


def test_load_json_rejects_non_utf8():
    with pytest.raises(ParseError, match="not UTF-8"):
        load_json(b'{"a": "\xff\xfe"}', "bin.json")


def test_stream_json_object_walks_items_and_keeps_the_header():
    seen = []
    text = '{"a": {"b": [1]}, "traceEvents": [{"x": 1}, {"x": 2},], "z": 3}'
    header = stream_json_object(text, "s.json", array_key="traceEvents", on_item=seen.append)
    assert seen == [{"x": 1}, {"x": 2}]
    assert header == {"a": {"b": [1]}, "traceEvents": 2, "z": 3}


@pytest.mark.parametrize("text, where", [
    ('{"traceEvents": [{"x": 1}, {"x"', "line 1"),
    ('{"traceEvents": [{"x": 1}\n{"x": 2}]}', "line 2"),
    ('{"traceEvents": []} extra', "extra data"),
    ('[1, 2]', "top level"),
    ('{"traceEvents": [', "truncated"),
])
def test_stream_json_object_errors_say_where(text, where):
    with pytest.raises(ParseError) as ei:
        stream_json_object(text, "s.json", array_key="traceEvents", on_item=lambda e: None)
    assert where in str(ei.value) and "s.json" in str(ei.value)


def test_stream_json_object_enforces_item_count_and_depth_limits():
    with pytest.raises(ParseError, match="max_trace_events=2.*FABRIC_LIMIT_MAX_TRACE_EVENTS"):
        stream_json_object('{"traceEvents": [1, 2, 3]}', "s", array_key="traceEvents", on_item=lambda e: None,
                           max_items=2)
    deep_item = '{"traceEvents": [{"args": ' + "[" * 80 + "]" * 80 + "}]}"
    with pytest.raises(ParseError, match="max_json_depth"):
        stream_json_object(deep_item, "s", array_key="traceEvents", on_item=lambda e: None)


# ---------------------------------------------------------------- detection and reports


def test_empty_binary_and_unknown_files_fail_alone_with_their_names():
    job = _job()
    files = [
        ("empty.json", b""),
        ("blank.txt", b"   \n\n"),
        ("junk.bin", bytes(range(256)) * 10),
        ("notes.txt", b"hello, this is a shopping list\nmilk\neggs\n"),
        ("rank0.json", _trace_bytes(job, 0)),
    ]
    res = ingest(files)
    by = {f.name: f for f in res.files}
    assert not by["empty.json"].ok and by["empty.json"].error == "empty.json: file is empty"
    assert not by["blank.txt"].ok and "empty" in by["blank.txt"].error
    assert not by["junk.bin"].ok and by["junk.bin"].error.startswith("junk.bin: binary data")
    assert not by["notes.txt"].ok and "unknown trace format" in by["notes.txt"].error
    assert by["rank0.json"].ok and by["rank0.json"].format == "kineto" and by["rank0.json"].jobs == ("rank0",)
    assert res.workload is not None and [j.name for j in res.workload.jobs] == ["rank0"]
    assert not res.ok and len(res.errors) == 4
    assert [f.name for f in res.files] == [n for n, _ in files]  # input order kept


def test_nothing_parsed_gives_no_workload():
    res = ingest([("a", b""), ("b", b"\x00\x01\x02")])
    assert res.workload is None and not res.ok and res.unparsed == ()


def test_truncated_kineto_file_fails_with_line_number_while_others_load():
    job = _job()
    full = _trace_bytes(job, 0)
    res = ingest([("cut/rank0.json", full[: len(full) // 2]), ("ok/rank0.json", full)])
    cut, ok = res.files
    assert not cut.ok and cut.format == "kineto" and "cut/rank0.json (line" in cut.error
    assert ok.ok


def test_gzip_bomb_in_ingest_is_reported_not_raised():
    bomb = gzip.compress(b"{" + b" " * 5_000_000 + b"}")
    res = ingest([("bomb.json.gz", bomb)], Limits(max_decompressed_bytes=1_000_000))
    assert not res.files[0].ok and "max_decompressed_bytes" in res.files[0].error


def test_same_job_twice_gets_unique_job_names():
    job = _job()
    data = _trace_bytes(job, 0)
    res = ingest([("a/toy_rank0.json", data), ("b/toy_rank0.json", data), ("b/toy_rank0.json", data)])
    assert all(f.ok for f in res.files)
    names = [j.name for j in res.workload.jobs]
    assert names == ["toy_rank0", "toy_rank0-2", "toy_rank0-3"]
    assert res.files[2].name == "b/toy_rank0.json (2)"


def test_rank_files_of_one_job_are_merged_and_other_files_stay_separate():
    a, b = _job(2, "a"), _job(4, "b")
    res = ingest([("run/a_rank0.json", _trace_bytes(a, 0)), ("run/a_rank1.json", _trace_bytes(a, 1)),
                  ("run/b_rank3.json", _trace_bytes(b, 3))])
    assert res.ok
    jobs = {j.name: j for j in res.workload.jobs}
    assert set(jobs) == {"a", "b_rank3"}
    assert jobs["a"].world_size == 2 and jobs["b_rank3"].world_size == 4
    assert res.files[0].jobs == res.files[1].jobs == ("a",)


def test_mixed_world_sizes_under_one_name_pattern_fail_as_a_set():
    a, b = _job(2, "a"), _job(4, "b")
    res = ingest([("run/rank0.json", _trace_bytes(a, 0)), ("run/rank1.json", _trace_bytes(b, 1)),
                  ("other.txt", b"plain words only")])
    r0, r1, _ = res.files
    assert not r0.ok and not r1.ok
    for r in (r0, r1):
        assert "disagree on world_size" in r.error and "run/rank0.json: 2" in r.error and "run/rank1.json: 4" in r.error


def test_duplicate_rank_in_one_set_is_an_error():
    a = _job(2, "a")
    res = ingest([("x1/rank0.json", _trace_bytes(a, 0)), ("x2/rank0.json", _trace_bytes(a, 0, seed=3))])
    assert all(f.ok for f in res.files)  # different directories: different jobs
    res = ingest([("x/rank0.json", _trace_bytes(a, 0)), ("x/rank00.json", _trace_bytes(a, 0, seed=3))])
    assert not any(f.ok for f in res.files)
    assert "both claim rank 0" in res.files[0].error
    res = ingest([("run1/rank0.json", _trace_bytes(a, 0)), ("run1/rank1.json", _trace_bytes(a, 1)),
                  ("run2/rank0.json", _trace_bytes(a, 0, seed=3))])
    assert res.ok and [f.jobs for f in res.files] == [("rank",), ("rank",), ("rank0",)]


def test_ingest_rejects_malformed_items_without_raising():
    res = ingest([("a",), ("b", b"")])  # type: ignore[list-item]
    assert res.files[0].error.startswith("file #1") and not res.files[1].ok


def test_detect_format_of_native_json(tmp_path):
    wl = Workload(jobs=(_job(),))
    text = dump_workload_json(wl).encode()
    assert detect_format("w.json", text) == "native"
    assert detect_format("w.json", json.dumps({"schema": "fabric.workload/1", "jobs": []}).encode()) == "native"
    res = ingest([("w.json", text)])
    assert res.ok and res.workload.jobs == wl.jobs


def test_native_file_with_a_bad_field_names_the_field():
    d = json.loads(dump_workload_json(Workload(jobs=(_job(),))))
    d["jobs"][0]["ops"][0]["kind"] = "all_shuffle"
    res = ingest([("w.json", json.dumps(d).encode())])
    assert not res.ok and "w.json" in res.errors[0] and "jobs[0].ops[0].kind" in res.errors[0]
    d["schema"] = "fabric.workload/9"
    res = ingest([("w.json", json.dumps(d).encode())])
    assert "not supported" in res.errors[0]


def test_ingest_paths_reports_unreadable_paths(tmp_path):
    p = tmp_path / "toy_rank0.json"
    p.write_bytes(_trace_bytes(_job(), 0))
    res = ingest_paths([tmp_path / "missing.json", p, tmp_path])
    assert [f.ok for f in res.files] == [False, True, False]
    assert "cannot read" in res.files[0].error and str(tmp_path / "missing.json") in res.files[0].error
    assert res.files[1].name == str(p)


def test_ingest_paths_checks_the_upload_limit_before_reading(tmp_path):
    p = tmp_path / "big.json"
    p.write_bytes(b"{}" * 100)
    res = ingest_paths([p], Limits(max_upload_bytes=50))
    assert not res.ok and "max_upload_bytes" in res.errors[0]


def test_all_real_traces_load_in_one_call(traces_dir):
    paths = sorted(p for p in traces_dir.rglob("*") if p.is_file() and p.suffix != ".md")
    res = ingest_paths(paths)
    fmt = {Path(f.name).relative_to(traces_dir).as_posix(): f for f in res.files}
    mine = {k: v for k, v in fmt.items() if k.startswith(("kineto/", "chakra_et/"))}
    assert len(mine) == 45
    for name, f in mine.items():
        assert f.ok, f.error
        assert f.format == ("kineto" if name.startswith("kineto/") else "chakra")
    # 8 DLRM ranks -> one job; 2 HTA sampled ranks -> one job; 4 x 8 ASTRA-sim ranks -> four jobs
    assert len({fmt[k].jobs for k in mine if "param_dlrm_kineto" in k}) == 1
    assert len({fmt[k].jobs for k in mine if "trace_filter" in k}) == 1
    assert len({fmt[k].jobs for k in mine if "astra_sim_microbenchmarks" in k}) == 4
    # the 8 PyTorch execution-trace ranks: detected as such (not Kineto, not Chakra) and merged into one job
    et = {k: v for k, v in fmt.items() if k.startswith("pytorch_et/")}
    assert len(et) == 8 and all(f.ok and f.format == "pytorch_et" for f in et.values())
    assert len({f.jobs for f in et.values()}) == 1
    names = [j.name for j in res.workload.jobs]
    assert len(names) == len(set(names))


# ---------------------------------------------------------------- fuzz


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.text(min_size=1, max_size=20), st.binary(max_size=400)), max_size=4))
def test_ingest_never_raises_on_arbitrary_bytes(files):
    res = ingest(files)
    assert isinstance(res, IngestResult) and len(res.files) == len(files)
    for f in res.files:
        assert isinstance(f, FileReport)
        assert f.ok or (f.error and isinstance(f.error, str))


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["traceEvents", "workload_graph", "jobs", "schema"]), _json_values, _json_values)
def test_ingest_never_raises_on_json_shaped_like_a_known_format(key, value, extra):
    doc = {key: value, "schemaVersion": 1, "x": extra}
    if key == "schema":
        doc = {"schema": "fabric.workload/1", "jobs": value}
    res = ingest([("f.json", json.dumps(doc).encode()), ("g.json.gz", gzip.compress(json.dumps(doc).encode()))])
    assert len(res.files) == 2


# ---------------------------------------------------------------- summary


def test_summary_counts_bytes_and_log2_histogram():
    job = Job("j", world_size=8, groups=(ProcessGroup("dp", 8, "dp"), ProcessGroup("ep", 8, "ep")),
              ops=(CommOp("all_reduce", 1000, "dp", 2.0), CommOp("all_reduce", 1024, "dp", 1.0),
                   CommOp("all_to_allv", 3000, "ep", 1.0, per_rank_bytes=(1000, 3000) * 4),
                   CommOp("barrier", 0, "dp", 1.0)),
              compute_time_s=0.5, notes=("hello",))
    s = summarize(Workload(jobs=(job,), warnings=("w1",)))
    j = s["jobs"][0]
    assert j["per_kind"]["all_reduce"] == {"ops": 2, "count_per_step": 3.0, "bytes_per_step": 3024.0}
    assert j["comm_bytes_per_step"] == 3024 + 3000
    assert j["comm_bytes_per_compute_second"] == pytest.approx(6024 / 0.5)
    hist = {h["bin_lo_bytes"]: h["count_per_step"] for h in j["message_size_histogram"]}
    # 1000 B x2 and the 1000 B halves of the all_to_allv (0.5) land in [512, 1024); 1024 B and 3000 B above
    assert hist == {0: 1.0, 512: 2.5, 1024: 1.0, 2048: 0.5}
    text = format_summary(s)
    assert "job 'j' (training, 8 ranks)" in text and "note: hello" in text and "w1" in text
    assert json.loads(json.dumps(s)) == s


def test_size_helpers():
    assert size_label(0) == "0 B" and size_label(1536) == "1.5 KiB" and size_label(31502336) == "30.0 MiB"
    assert [log2_bin(x) for x in (0, 1, 2, 3, 1024, 1025)] == [-1, 0, 1, 1, 10, 10]


# ---------------------------------------------------------------- CLI


def test_cli_parse_prints_summary_and_writes_native_json(tmp_path, capsys):
    job = _job(2, "toy")
    for r in range(2):
        (tmp_path / f"toy_rank{r}.json").write_bytes(_trace_bytes(job, r))
    out = tmp_path / "out" / "workload.json"
    rc = main(["parse", str(tmp_path / "toy_rank0.json"), str(tmp_path / "toy_rank1.json"), "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "job 'toy' (training, 2 ranks, 3 step(s) observed)" in text and f"wrote {out}" in text
    wl = load_workload_json(out.read_text())
    assert wl.jobs[0].ops[0].bytes == 4 << 20 and wl.jobs[0].ops[0].count_per_step == 2.0


def test_cli_parse_json_output(tmp_path, capsys):
    p = tmp_path / "toy_rank0.json"
    p.write_bytes(_trace_bytes(_job(), 0))
    assert main(["parse", str(p), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["jobs"][0]["per_kind"]["all_reduce"]["count_per_step"] == 2.0
    assert d["files"] == [{"name": str(p), "format": "kineto", "jobs": ["toy_rank0"]}]


def test_cli_parse_fails_with_exit_2_naming_the_file_and_writes_nothing(tmp_path, capsys):
    good = tmp_path / "toy_rank0.json"
    good.write_bytes(_trace_bytes(_job(), 0))
    bad = tmp_path / "broken.json"
    bad.write_bytes(b'{"traceEvents": [')
    out = tmp_path / "w.json"
    rc = main(["parse", str(good), str(bad), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    last = err.strip().splitlines()[-1]
    assert last.startswith("fabric parse: error: ") and str(bad) in last and "nothing was written" in last
    assert f"{good}: ok (kineto" in err


def test_cli_parse_real_trace(capsys):
    p = trace_path(NCCL_DATA)
    assert main(["parse", str(p)]) == 0
    text = capsys.readouterr().out
    assert "all_reduce" in text and "30.0 MiB" in text and "default_pg" in text


def test_errors_are_fabric_errors():
    assert issubclass(ParseError, FabricError)

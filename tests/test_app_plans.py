"""The dashboard's parallelism plans (issue 25, docs/plans.md) in AppTest: the plan-space switch on the Search page
changes the front, the front table's plan column and the plan sentences are the CLI's for the same search, the
Design page shows a design's three best plans with measured and derived numbers, Compare compares designs at their
own best plans, and a workload whose model is not recognised gets the model picker."""

from __future__ import annotations

from fabric.units import time_text

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
SAMPLES = ROOT / "sample_traces"
EVALS = 60


def app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["evals"] = str(EVALS)
    for k, v in params.items():
        at.query_params[k] = v
    return at


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def finish_search(at) -> None:
    job = at.session_state["search_job"]
    assert job.wait(300)
    at.run()
    ok(at)


def front_table(at):
    return next(d.value for d in at.dataframe if "cost_usd" in d.value.columns and "design" in d.value.columns)


def markdown_lines(at) -> list[str]:
    """Every bullet and paragraph of the page's markdown, unescaped (the page escapes $, _ and *)."""
    out = []
    for m in at.markdown:
        for line in str(m.value).split("\n"):
            out.append(re.sub(r"\\([$_*\\])", r"\1", line.removeprefix("- ")))
    return out


@pytest.fixture(scope="module")
def searched():
    """One session: a fixed-plan search on the sample, then the switch to auto and a plan search."""
    at = app()
    at.run()
    at.switch_page("pages/search.py").run()
    ok(at)
    finish_search(at)
    fixed = at.session_state["search_job"].snapshot().result
    fixed_table = front_table(at)
    at.radio(key="in_plan_space").set_value("auto").run()
    ok(at)
    at.button(key="start_search").click().run()
    finish_search(at)
    return at, fixed, fixed_table


def test_the_plan_space_switch_changes_the_front(searched):
    at, fixed, fixed_table = searched
    assert at.radio(key="in_plan_space").value == "auto"
    assert at.query_params.get("plans") in ("auto", ["auto"])          # the link carries the plan space
    auto = at.session_state["search_job"].snapshot().result
    assert not any(r.get("plan") for r in fixed.records)
    assert "plan" not in fixed_table.columns
    front = auto.front
    assert front and all(r.get("plan") for r in front)
    # every design is judged at its best plan: never slower than at the workload's own plan
    for r in front:
        assert r["given_plan_p99_s"] is not None and r["p99_s"] <= r["given_plan_p99_s"] + 1e-12
        assert r["given_plan_slowdown"] == pytest.approx(r["given_plan_p99_s"] / r["p99_s"] - 1)
    # the sample's own plan (TP 2 x EP 8 x DP 128, docs/synthesis.md) is not the best plan of the auto front's
    # designs, so the front moves: shorter p99s than the fixed front at the same cost or less
    assert any(r["given_plan_slowdown"] > 0.01 for r in front)
    best_fixed = min(r["p99_s"] for r in fixed.front)
    assert min(r["p99_s"] for r in front) < best_fixed
    assert {(r["design"], round(r["p99_s"], 6)) for r in front} != \
        {(r["design"], round(r["p99_s"], 6)) for r in fixed.front}


def _cli_search(tmp: Path) -> tuple[list[str], list[dict]]:
    out = subprocess.run([sys.executable, "-m", "fabric.cli.main", "search", "-w", str(SAMPLES / "mixtral-8x7b.json"),
                          "--plan-space", "auto", "--budget-evals", str(EVALS), "--seed", "0", "--out", str(tmp)],
                         capture_output=True, text=True, timeout=600, cwd=tmp.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    with open(tmp / "pareto.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return out.stdout.splitlines(), rows


def test_plan_column_and_plan_sentences_are_the_clis(searched, tmp_path):
    at, _, _ = searched
    table = front_table(at)
    assert "plan" in table.columns and "given_plan_slowdown" in table.columns
    cli_lines, cli_front = _cli_search(tmp_path / "out")
    # the same search: the same front designs
    assert sorted(table["design"]) == sorted(r["design"] for r in cli_front)
    by_name = {r["design"]: r for r in cli_front}
    for name, cell, slow in zip(table["design"], table["plan"], table["given_plan_slowdown"]):
        r = by_name[name]
        dims = [f"TP {r['plan_tp']}"] + ([f"CP {r['plan_cp']}"] if int(r["plan_cp"]) > 1 else []) + \
            [f"PP {r['plan_pp']}", f"DP {r['plan_dp']}"] + ([f"EP {r['plan_ep']}"] if int(r["plan_ep"]) > 1 else [])
        assert cell == (" x ".join(dims) + f" · {r['plan_micro_batches']} mb of {r['plan_micro_batch']} · "
                        f"ZeRO {r['plan_zero']} · {r['plan_order']}")
        assert slow == pytest.approx(float(r["given_plan_slowdown"]), rel=1e-9)
    cli_plan_lines = [line for line in cli_lines if line.startswith("'") and " is on the front " in line]
    assert cli_plan_lines, cli_lines[-10:]
    page = markdown_lines(at)
    for line in cli_plan_lines:                                      # word for word under "What the front says"
        assert line in page, line
    rec = at.session_state["search_job"].snapshot().result
    from fabric.search.recommend import recommend

    star = recommend(rec.front, rec.baselines, p99_target_s=at.session_state["constraints"].p99_target_s).record
    mine = next(line for line in cli_plan_lines if line.startswith(f"'{star['design']}' "))
    box = next(m for m in markdown_lines(at) if m.startswith("**★ Recommended"))
    assert box.endswith(" " + mine)                                   # the recommendation says what the plan costs
    assert "with the given plan it is" in mine and re.search(r"\d+% slower", mine)


def test_a_saved_plan_search_reads_back_as_a_plan_objective(searched):
    at, _, _ = searched
    from fabric.ui_support.saved_searches import load_inputs, state_dir

    job = at.session_state["search_job"]
    saved = load_inputs(state_dir(), job.search_id)
    assert saved is not None
    assert saved.workload.key() == job.workload.key()                 # the same objective, shortlist rebuilt


def test_the_brief_is_at_the_designs_best_plans_like_the_search(searched):
    """Issue 34 item 1: the brief's headline, baselines and runner-up are the search's records at each design's
    best plan of the shortlist (never the given plan beside a best-plan figure)."""
    at, _, _ = searched
    at.switch_page("pages/brief.py").run()
    ok(at)
    res = at.session_state["search_job"].snapshot().result
    from fabric.search.recommend import recommend

    rec = recommend(res.front, res.baselines).record
    md = "\n".join(m.value for m in at.markdown).replace("\\", "")
    assert f"p99 step {time_text(rec['p99_s'])}" in md
    assert f"Parallelism plan: {rec['plan']}, the best of the" in md
    for b in res.baselines:
        if b.get("buildable", True):
            assert f"'{b['design']}' as drawn (${b['cost_usd']:,.0f}; p99 {time_text(b['p99_s'])})" in md


def test_design_shows_three_plans_with_measured_and_derived_numbers():
    """The Kineto sample is recognised as Llama-3-70B at TP 8 x PP 4 x DP 8 with 2 micro-batches of 1 sequence and
    5 chunks per stage (docs/plans.md): that plan's numbers are measured, every other plan's derived."""
    at = app(wl="sample:kineto-llama3-70b")
    at.run()
    at.switch_page("pages/design.py").run()
    ok(at)
    fixed_p99 = {m.label: m.value for m in at.metric}["p99 step"]
    assert "Parallelism plans" in [s.value for s in at.subheader]
    at.toggle(key="rank_plans").set_value(True).run()                 # plan space fixed: ranked on request
    ok(at)
    plans = next(d.value for d in at.dataframe if "numbers" in d.value.columns)
    ranked = plans[plans[""].str.match(r"^\d")]
    assert len(ranked) == 3
    given = plans[plans[""].str.contains("given")]
    assert len(given) == 1
    g = given.iloc[0]
    assert g["plan"] == "TP 8 x PP 4 x DP 8 · 2 mb of 1 · 5 chunks · ZeRO 1 · tp-cp-ep-dp-pp"
    assert g["numbers"] == "measured"
    assert set(plans[~plans[""].str.contains("given")]["numbers"]) == {"derived"}
    # the measured plan's p99 is the page's own figure for the workload as traced (one evaluation, two surfaces)
    from fabric.review.figures import figure_text

    assert figure_text(float(g["p99 step (s)"]), "time") == fixed_p99
    assert list(ranked["p99 step (s)"]) == sorted(ranked["p99 step (s)"])
    captions = "\n".join(c.value for c in at.caption)
    assert "measured: the trace's own plan" in captions and "derived: synthesized from the recognised model" in captions

    # plan space auto: every figure of the page is at the best plan (row 1)
    auto = app(wl="sample:kineto-llama3-70b", plans="auto")
    auto.run()
    auto.switch_page("pages/design.py").run()
    ok(auto)
    # (issue 34: the ranking of the search's shortlist, the one the front's plan column and the brief use)
    plans2 = next(d.value for d in auto.dataframe if "vs best" in d.value.columns and "numbers" not in d.value.columns)
    best = plans2.iloc[0]
    assert {m.label: m.value for m in auto.metric}["p99 step"] == best["p99 step"]
    assert any(f"best plan of the search's shortlist, {best['plan']}" in i.value for i in auto.info)
    assert any("With the workload's own plan the p99 step is" in i.value for i in auto.info)


def test_compare_at_own_best_plans_in_auto_and_at_the_given_plan_otherwise():
    at = app(wl="sample:kineto-llama3-70b", plans="auto")
    at.run()
    at.switch_page("pages/compare.py").run()
    ok(at)
    assert any("each design is compared at its own best plan of the search's shortlist" in i.value for i in at.info)
    side = at.dataframe[0].value
    assert "parallelism plan" in side.index
    names = list(side.columns)
    # each column is its design at that design's best plan: the Design page's row 1 for the same design
    at.session_state["design_pick"] = at.session_state["compare_pick"][0]
    at.switch_page("pages/design.py").run()
    ok(at)
    plans = next(d.value for d in at.dataframe if "vs best" in d.value.columns)
    assert side.loc["parallelism plan", names[0]] == plans.iloc[0]["plan"]
    assert side.loc["p99 step time", names[0]] == plans.iloc[0]["p99 step"]

    fixed = app(wl="sample:kineto-llama3-70b")
    fixed.run()
    fixed.switch_page("pages/compare.py").run()
    ok(fixed)
    assert "parallelism plan" not in fixed.dataframe[0].value.index
    assert "every design at the workload's own parallelism plan" in "\n".join(c.value for c in fixed.caption)


def test_an_unrecognised_model_gets_the_model_picker(tmp_path):
    """The Llama-3-70B sample under another job name: fabric does not recognise the model (basis_from_workload
    says so), the page offers the picker, and naming llama3-70b lets the plan search start."""
    data = json.loads((SAMPLES / "llama3-70b.json").read_text())
    data["name"] = "our-model"
    data.pop("facts", None)
    for job in data["jobs"]:
        job["name"] = "our-model"
    at = app(plans="auto")
    at.run()
    at.session_state["uploads"] = [("our-model.json", json.dumps(data).encode())]
    from fabric.workload.ingest import ingest

    res = ingest([("our-model.json", json.dumps(data).encode())])
    assert res.workload is not None
    at.session_state["upload_result"] = res
    at.session_state["upload_sig"] = "our-model"
    at.session_state["wl_choice"] = {"kind": "upload", "names": ["our-model.json"]}
    at.switch_page("pages/search.py").run()
    ok(at)
    errors = "\n".join(e.value for e in at.error)
    assert "the workload's model is not recognised" in errors
    picker = at.selectbox(key="in_plan_model")
    assert picker.options == ["llama3-70b", "mixtral-8x7b"] and picker.value is None
    picker.set_value("llama3-70b").run()
    ok(at)
    assert "the workload's model is not recognised" not in "\n".join(e.value for e in at.error)
    assert any("Plans of llama3-70b" in c.value for c in at.caption)
    job = at.session_state["search_job"]          # the search the first visit could not start now runs
    job.cancel()
    assert job.workload.basis.model.name == "llama3-70b" and job.workload.basis.gpus == 1024
    assert job.wait(300)
    assert at.query_params.get("plan_model") in ("llama3-70b", ["llama3-70b"])


def test_links_carry_the_plan_space():
    from fabric.search import Constraints
    from fabric.ui_support.urlstate import decode_view, encode_view

    p = encode_view(workload=None, constraints=Constraints(), plan_space="auto", plan_model="mixtral-8x7b")
    assert p == {**encode_view(workload=None, constraints=Constraints()), "plans": "auto", "plan_model": "mixtral-8x7b"}
    v = decode_view(p, samples=(), presets=())
    assert (v.plan_space, v.plan_model, v.problems) == ("auto", "mixtral-8x7b", [])
    bad = decode_view({"plans": "sometimes", "plan_model": "gpt-5"}, samples=(), presets=())
    assert bad.plan_space == "fixed" and bad.plan_model is None
    assert any("plans='sometimes' must be fixed or auto" in x for x in bad.problems)
    assert any("plan_model only applies with plans=auto" in x for x in bad.problems)

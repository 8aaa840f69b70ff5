"""The dashboard's job-mix and design-choice rules, below the pages (issue 35, item 4): fabric.ui_support.job_mix
and fabric.search.designs.design_choices / genes_of_record, checked without Streamlit."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fabric.design import Design
from fabric.errors import FabricError
from fabric.search.designs import design_choices, design_genes, genes_of_record
from fabric.ui_support import job_mix
from fabric.ui_support.robust_view import MAX_MIX


@dataclass
class Bundle:
    choice: dict
    key: str = "k"
    ingest: object = None
    workload: object = None


LLAMA = {"kind": "sample", "name": "llama3-70b.json"}
MIXTRAL = {"kind": "sample", "name": "mixtral-8x7b.json"}
PLAN = {"kind": "plan", "preset": "llama3-70b", "gpus": 1024, "tp": 8}


def test_entries_are_named_as_the_workload_page_lists_them():
    assert job_mix.mix_label(LLAMA) == "sample llama3-70b.json"
    assert job_mix.mix_label(PLAN) == "plan llama3-70b on 1,024 GPUs (tp 8)"
    assert job_mix.mix_label({"kind": "upload", "names": ["a.json"]}) == "uploaded a.json"
    assert job_mix.mix_label({"kind": "upload", "names": ["a", "b", "c"]}) == "3 uploaded files"


def test_a_workload_further_down_the_mix_swaps_places_with_the_first():
    mix = [{"choice": MIXTRAL, "weight": 2.0}, {"choice": PLAN, "weight": 0.5}]
    ch = job_mix.after_primary_change(mix, 1.5, Bundle(LLAMA), Bundle(MIXTRAL))
    # mixtral leaves its row (weight 2) for the first one; llama takes its row with the first row's weight
    assert ch.first_weight == 2.0 and ch.reset_first_weight_field
    assert ch.mix == [{"choice": LLAMA, "weight": 1.5}, {"choice": PLAN, "weight": 0.5}]
    assert "keeps its 3 workloads" in ch.notice and mix[0]["choice"] == MIXTRAL      # the input is not changed


def test_a_new_workload_takes_the_first_row_and_the_old_one_leaves_with_a_notice():
    mix = [{"choice": PLAN, "weight": 0.5}]
    ch = job_mix.after_primary_change(mix, 1.0, Bundle(LLAMA), Bundle(MIXTRAL))
    assert ch.mix == mix and ch.first_weight == 1.0 and not ch.reset_first_weight_field
    assert ch.notice.startswith("Sample llama3-70b.json is no longer in the mix")
    gone = job_mix.after_primary_change(mix, 1.0, Bundle(LLAMA), Bundle(MIXTRAL), old_gone=True)
    assert gone.notice == ""


def test_removed_uploads_leave_unsaid_when_the_new_workload_was_in_the_mix():
    mix = [{"choice": MIXTRAL, "weight": 3.0}]
    up = Bundle({"kind": "upload", "names": ["r0.json"]})
    ch = job_mix.after_primary_change(mix, 1.0, up, Bundle(MIXTRAL), old_gone=True)
    assert ch.mix == [] and ch.first_weight == 3.0 and "listed once." in ch.notice


def test_a_full_mix_or_a_repeated_sample_cannot_take_another_workload():
    entries = [{"choice": {"kind": "sample", "name": f"s{i}"}} for i in range(MAX_MIX)]
    with pytest.raises(FabricError, match=f"at most {MAX_MIX}"):
        job_mix.check_addition(entries, LLAMA)
    with pytest.raises(FabricError, match="already in the mix"):
        job_mix.check_addition([{"choice": LLAMA}], LLAMA)
    job_mix.check_addition([{"choice": {"kind": "upload", "names": ["a"]}}], {"kind": "upload", "names": ["a"]})


def test_the_robust_problem_says_what_to_do():
    assert "choose at least one scenario" in job_mix.robust_problem_text("x", others=1, scenarios=0)
    assert "add a workload" in job_mix.robust_problem_text("x", others=0, scenarios=1)
    assert "change it below" in job_mix.robust_problem_text("x", others=1, scenarios=2)


def _record(d: Design, cost: float, p99: float) -> dict:
    g = design_genes(d)
    return {**g, "design": d.name, "cost_usd": cost, "p99_s": p99, "feasible": True, "key": d.name,
            "power_w": 1.0}


def test_design_choices_list_each_design_once_recommended_first():
    a = Design(name="a", gpus=256, oversubscription=(2.0, 1.0))
    b = Design(name="b", gpus=256)
    front = [_record(b, 2.0e6, 1.0), _record(a, 1.0e6, 1.2)]
    out = design_choices(front, [], selected=design_genes(a), selected_name="mine", baselines=[b])
    from fabric.search.designs import recommended_record

    rec = recommended_record(front, [])
    assert out[0]["source"] == "recommended" and out[0]["name"] == rec["design"]
    keys = [tuple(sorted(c["genes"].items())) for c in out]
    assert len(keys) == len(set(keys)) == 2          # a and b, each once: the later sources of one design are left out
    other = next(c for c in out if c["name"] != rec["design"])
    assert other["source"] == ("selected" if rec["design"] == "b" else "baseline")


def test_genes_of_a_record_are_typed_and_carry_the_system_only_in_a_systems_search():
    d = Design(name="x", gpus=256)
    rec = {**{k: str(v) if k in ("planes", "qps_per_connection") else v for k, v in design_genes(d).items()},
           "gpu_model": "b200", "gpus": 512, "pxn": 0}
    g = genes_of_record(rec)
    assert g["planes"] == 1 and isinstance(g["planes"], int) and g["pxn"] is False and "gpu_model" not in g
    assert genes_of_record(rec, systems=True)["gpu_model"] == "b200"

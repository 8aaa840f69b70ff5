"""A preset's global batch does not grow with the cluster unnoticed (issue 39 item 1): the stated batch is kept by a
plan change said in words, or, where no plan can keep it, the growth is said and counted."""

from __future__ import annotations

import pytest

from fabric.ui_support.workload_view import batch_text
from fabric.workload.presets import preset_plan, preset_workload


@pytest.mark.parametrize("gpus", [1024, 16384, 32768, 131072])
def test_llama_preset_keeps_its_4m_token_batch(gpus):
    wl = preset_workload("llama3-70b", gpus)
    facts = dict(wl.facts)
    # the preset says "~4M-token global batch": 512 sequences of 8,192 tokens at every size
    assert int(facts["tokens per step"]) == 512 * 8192
    assert int(facts["global batch (sequences)"]) == 512
    job = wl.training_jobs[0]
    assert job.world_size == gpus
    _, plan = preset_plan("llama3-70b", gpus)
    assert plan.dp * plan.micro_batch * plan.micro_batches == 512
    if gpus > 16384:   # TP 8 x PP 4 would need more than 512 replicas: the plan changes and says so
        assert "global batch kept at 512 sequences" in facts["batch rule"]
        assert "global batch kept" in job.notes[0]
        assert plan.tp * plan.pp * plan.cp * plan.dp == gpus and plan.dp <= 512
    else:
        assert "batch rule" not in facts and (plan.pp, plan.cp) == (4, 1)


def test_131k_plan_is_said_in_words():
    facts = dict(preset_workload("llama3-70b", 131072).facts)
    assert facts["batch rule"] == ("global batch kept at 512 sequences (4.19 M tokens): at 131,072 GPUs the preset's "
                                   "TP 8 x PP 4 would need 4,096 data-parallel replicas, a 8x larger batch, so the plan "
                                   "uses TP 8 x PP 4 x CP 8 (DP 512)")


def test_growth_that_no_plan_avoids_is_a_warning():
    # Mixtral (32 layers, TP 2, EP 8) on 131,072 GPUs: at most PP 4 (stages of >= 5 layers... 32/4 = 8) x CP 8,
    # 64 GPUs a replica, 2,048 replicas: twice the preset's 1,024 sequences
    wl = preset_workload("mixtral-8x7b", 131072)
    assert int(dict(wl.facts)["global batch (sequences)"]) == 2048
    assert any("2x the preset's 1,024" in w and "2x the work" in w for w in wl.warnings)


def test_overrides_are_not_second_guessed():
    _, plan = preset_plan("llama3-70b", 131072, pp=4)
    assert (plan.pp, plan.cp, plan.dp) == (4, 1, 4096)
    facts = dict(preset_workload("llama3-70b", 131072, global_batch=4096).facts)
    assert int(facts["global batch (sequences)"]) == 4096 and "batch rule" not in facts


def test_workload_page_batch_line():
    text = batch_text(preset_workload("llama3-70b", 1024))
    assert text == ("Global batch 512 sequences = 4.19 M tokens per step; each data-parallel replica runs 16 "
                    "micro-batches of 1 sequence; pipeline bubble 4% of the step's compute.")


def test_workload_page_reads_dp_apart_from_cp():
    """Megatron's gradient group is DP x CP ranks; the page's degrees keep them apart (DP 512, not 4,096)."""
    from fabric.ui_support.workload_view import parallelism_text, plan_degrees

    wl = preset_workload("llama3-70b", 131072)
    assert plan_degrees(wl) == {"tp": 8, "pp": 4, "ep": 1, "cp": 8, "dp": 512}
    assert parallelism_text(wl) == "TP 8, PP 4, CP 8, DP 512"

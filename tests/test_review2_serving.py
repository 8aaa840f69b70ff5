"""Issue 24, item 8: the serving figures reconcile, and TPOT has a tail where prefills interrupt decode.

One accounting (docs/serving.md, "One accounting"; fabric/workload/accounting.py): a serving job's step is one
request, its prefill once and its ``output_tokens - 1`` token steps; every figure below is computed by hand from the
model's shape and the plan of ``llama3-70b-online`` (Llama 3 70B: hidden 8,192, 80 layers, BF16; TP 8 in an 8-GPU
server; 1,024 prompt and 256 output tokens; decode batch 64).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fabric.reference.presets import preset_design
from fabric.evaluate import evaluate
from fabric.workload.model import load_workload_json

ROOT = Path(__file__).resolve().parent.parent
HIDDEN, LAYERS, BF16, TP = 8192, 80, 2, 8
PROMPT, OUTPUT, BATCH = 1024, 256, 64
CALLS_PER_PASS = 2 * LAYERS                                  # two TP all-reduces per layer (Megatron)
TOKEN_STEPS = OUTPUT - 1                                     # the first token comes from prefill
PREFILL_BYTES = PROMPT * HIDDEN * BF16                       # 16,777,216 B per call
DECODE_BYTES = BATCH * HIDDEN * BF16                         # 1,048,576 B per call
CALLS = CALLS_PER_PASS * (1 + TOKEN_STEPS)                   # 40,960 per request
BYTES = CALLS_PER_PASS * (PREFILL_BYTES + TOKEN_STEPS * DECODE_BYTES)    # 45,466,255,360 B per request
GIB = 2.0 ** 30


@pytest.fixture(scope="module")
def online():
    return load_workload_json((ROOT / "sample_traces" / "llama3-70b-online.json").read_text())


@pytest.fixture(scope="module")
def online_eval(online):
    return evaluate(preset_design("fat-tree", 256), online, samples=64)


def test_one_request_is_the_step_of_every_figure(online):
    from fabric.workload.accounting import job_account
    from fabric.workload.summary import summarize

    assert (PREFILL_BYTES, DECODE_BYTES, CALLS, BYTES) == (16_777_216, 1_048_576, 40_960, 45_466_255_360)
    job = online.jobs[0]
    acc = job_account(job, 8)
    assert (acc.unit, acc.unit_text) == ("request", "request: prefill + 255 token steps")
    assert acc.calls_per_step == CALLS and acc.bytes_per_step == BYTES
    assert acc.nvlink_bytes_per_step == BYTES and acc.network_bytes_per_step == 0      # TP 8 stays in the server
    by_name = {o.op.name: o for o in acc.ops}
    assert by_name["prefill tp all-reduce"].calls_per_step == CALLS_PER_PASS
    assert by_name["prefill tp all-reduce"].bytes_per_step == CALLS_PER_PASS * PREFILL_BYTES      # 2.5 GiB
    assert by_name["decode tp all-reduce"].calls_per_step == CALLS_PER_PASS * TOKEN_STEPS         # 40,800
    assert by_name["decode tp all-reduce"].bytes_per_step == CALLS_PER_PASS * TOKEN_STEPS * DECODE_BYTES
    sp = job.serving
    assert acc.compute_s == pytest.approx(sp.prefill_s + TOKEN_STEPS * sp.decode_step_s, rel=1e-12)
    # the summary (fabric parse, the Workload page's tables and charts) counts the same
    s = summarize(online)["jobs"][0]
    assert s["comm_calls_per_step"] == CALLS and s["comm_bytes_per_step"] == BYTES
    assert sum(o["bytes_per_step"] for o in s["ops"]) == BYTES


def test_evaluator_counts_per_request_and_exposed_never_exceeds_back_to_back(online, online_eval):
    from fabric.ui_support.workload_view import compute_comm_rows

    ev = online_eval
    counts = {o.name: o.count_per_step for o in ev.ops}
    assert counts == {"prefill tp all-reduce": CALLS_PER_PASS, "decode tp all-reduce": CALLS_PER_PASS * TOKEN_STEPS}
    for o in ev.ops:
        assert o.exposed_in_p99_sample_s <= o.count_per_step * o.time_in_p99_sample_s * (1 + 1e-12)
    (row,) = compute_comm_rows(online, ev)
    assert row["exposed_s"] <= row["comm_s"] * (1 + 1e-12)
    # no overlap with compute in a serving job: all of it is exposed, 160 x 63.7 us + 40,800 x 5.86 us
    assert row["exposed_s"] == pytest.approx(row["comm_s"], rel=1e-9)
    assert row["comm_s"] == pytest.approx(sum(o.count_per_step * o.time_in_p99_sample_s for o in ev.ops))
    assert ev.compute_s == pytest.approx(row["compute_s"]) and row["compute_s"] == online.jobs[0].compute_time_s


def test_the_pages_figures_imply_nvlink_bandwidth(online, online_eval):
    """Bytes over time on one basis give the NVSwitch's speed, not ~20 GB/s (docs/serving.md)."""
    from fabric.ui_support.workload_view import compute_comm_rows, workload_figures

    figs = workload_figures(online, 8, "h100-sxm")
    (row,) = compute_comm_rows(online, online_eval)
    implied = figs["account"].nvlink_bytes_per_step / row["exposed_s"]
    assert 150e9 < implied < 450e9                           # 45.5 GB / 0.249 s = 182 GB/s algbw
    pre = next(o for o in online_eval.ops if o.name == "prefill tp all-reduce")
    algbw = PREFILL_BYTES / pre.time_in_p99_sample_s
    busbw = algbw * 2 * (TP - 1) / TP                        # nccl-tests all-reduce bus bandwidth
    assert 400e9 < busbw <= 476e9                            # NVLS on 8 x H100: ~476 GB/s measured (issue 290)
    assert pre.lower_bound_s == pytest.approx(PREFILL_BYTES / 450e9, rel=1e-9)     # NVLink 4: 450 GB/s


def _app(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at


def _values(data) -> list:
    import base64

    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"])).tolist()
    return list(data)


def test_workload_page_shows_one_accounting(online):
    at = _app(wl="plan:llama3-70b-online:256").run()
    assert not at.exception, [e.value for e in at.exception]
    m = {x.label: x.value for x in at.metric}
    assert m["NVLink traffic per request"] == f"{BYTES / GIB:.1f} GiB" == "42.3 GiB"
    assert m["Network traffic per request"] == "0 B"
    assert m["Compute per request"] == "1.619 s"
    jobs = at.dataframe[0].value
    assert jobs["step"].iloc[0] == "request: prefill + 255 token steps"
    assert jobs["communication per step"].iloc[0] == "42.3 GiB" and jobs["calls per step"].iloc[0] == CALLS
    ops = at.dataframe[2].value
    assert ops["calls per step"].tolist() == [CALLS_PER_PASS, CALLS_PER_PASS * TOKEN_STEPS]
    assert ops["bytes per step"].tolist() == ["2.5 GiB", "39.8 GiB"]        # adds up to the 42.3 GiB tile
    captions = "\n".join(c.value for c in at.caption)
    assert "Per request (request: prefill + 255 token steps" in captions and "40,960 calls" in captions
    cc = next(json.loads(e.proto.spec) for e in at.get("plotly_chart")
              if "all ops back to back" in json.dumps(json.loads(e.proto.spec)["data"]))
    bars = {t["name"]: _values(t["x"])[0] for t in cc["data"]}
    back = bars["communication in the p99 step, all ops back to back"]
    exposed = bars["of which exposed (not hidden behind compute)"]
    assert exposed <= back * (1 + 1e-9) and exposed == pytest.approx(back, rel=1e-6)


def test_decode_end_times_by_hand():
    from fabric.evaluate.serving import decode_end_times

    # prefills busy [1.0, 1.1] and [2.0, 2.1]
    ends = decode_end_times(np.array([0.95, 1.05, 0.2, 1.9]), np.array([0.3, 0.3, 0.5, 0.05]),
                            np.array([1.0, 2.0]), np.array([1.1, 2.1]), rho=0.1)
    # 0.95 + 0.3 + one prefill; from inside a prefill: its end + 0.3; untouched; 1.9 + 0.05 ends before 2.0
    assert ends == pytest.approx([1.35, 1.4, 0.7, 1.95])


def test_colocated_tpot_has_the_tail_of_the_prefills_it_meets():
    """One replica, 2 requests/s, prefill 10 ms, decode 10 ms per token step, 100 output tokens, no network: a
    decode (W = 0.99 s) meets about Poisson(2 x 1.01 s = 2.02) prefills: P(N <= 1) = 0.40, P(N <= 2) = 0.67,
    P(N <= 5) = 0.983, P(N <= 6) = 0.995, so p50 = 2 and p99 = 6 prefills."""
    from fabric.evaluate.serving import PhaseTimes, simulate
    from fabric.workload.model import ServingSpec

    lam, s, t, out = 2.0, 0.01, 0.01, 100
    mean = lam * ((out - 1) * t + 2 * s)
    cdf = np.cumsum([np.exp(-mean) * mean ** k / np.prod(range(1, k + 1)) for k in range(8)])
    assert cdf[1] < 0.5 < cdf[2] and cdf[5] < 0.99 < cdf[6]
    spec = ServingSpec(prompt_tokens=1, output_tokens=out, decode_batch=1000, replicas=1, prefill_s=s,
                       decode_step_s=t)
    sim = simulate(spec, lam, PhaseTimes(nvlink={}, network={"decode": np.zeros(32)}), seed=0)
    p50, p99 = np.percentile(sim.tpot, (50, 99))
    assert p50 == pytest.approx(((out - 1) * t + 2 * s) / (out - 1), rel=1e-9)      # 10.20 ms
    assert p99 == pytest.approx(((out - 1) * t + 6 * s) / (out - 1), rel=1e-9)      # 10.61 ms
    assert sim.tpot.mean() == pytest.approx(t / (1 - lam * s), rel=0.01)          # the old stretch, on average


def test_sample_services_tpot_tail_colocated_but_not_disaggregated(online, online_eval):
    m = online_eval.serving["llama3-70b-online"]
    assert m["tpot_s"]["p99"] > 1.2 * m["tpot_s"]["p50"]            # prefills interrupt decode batches
    split = m["p99_split_tpot_s"]
    assert split["queueing_s"] > split["compute_s"]                  # the p99 request waits for prefills
    dis = load_workload_json((ROOT / "sample_traces" / "llama3-70b-disagg.json").read_text())
    md = evaluate(preset_design("fat-tree", dis.jobs[0].world_size), dis, samples=64).serving["llama3-70b-disagg"]
    assert md["tpot_s"]["p99"] == pytest.approx(md["tpot_s"]["p50"], rel=1e-9)   # no prefill on decode replicas

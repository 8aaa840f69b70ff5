"""Issue 34, item 15: the text and numbers the dashboard shows. A range whose ends read the same is one value; a
change that reads +0.0% is drawn grey; the catalog table names every column in words and says what a blank means
(never "None"); numbers in tables carry thousands separators; the serving load says what it is a share of, in
words that agree with the preset's "arrivals at half of what the replicas sustain on compute"; log axes are
labelled in full (1-2-5 steps), not with plotly's bare minor digits."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.apptest_support import app, ok

from fabric.ui_support import charts

ROOT = Path(__file__).resolve().parent.parent




# ------------------------------------------------------------------ ranges


def test_a_range_whose_ends_read_the_same_is_one_value():
    from fabric.units import range_text

    assert range_text(0.1912, 0.1912) == "191.2 ms"
    assert range_text(0.19118, 0.19124) == "191.2 ms"             # both ends round to the same text
    assert range_text(0.2054, 0.1912) == "191.2 ms to 205.4 ms"   # in order, whichever comes first
    assert range_text(1500, 1500, fmt=lambda v: f"${v:,.0f}") == "$1,500"


def test_the_search_summarys_serving_range_is_one_value_when_the_front_agrees():
    from fabric.search.result import SearchResult

    def rec(name, cost, ttft, tpot):
        return {"design": name, "key": name, "cost_usd": cost, "p99_s": 0.5, "feasible": True, "buildable": True,
                "violations": {"buildable": 0.0}, "power_w": 1.0, "serving_ttft_p99_s": ttft,
                "serving_tpot_p99_s": tpot, "serving_slo_attainment": 1.0}

    front = [rec("a", 100.0, 0.19118, 0.01675), rec("b", 200.0, 0.19124, 0.0172)]
    res = SearchResult(records=front, baselines=[], front=front, hv_history=[], reference_point=[], normalisation=[],
                       evaluations=2, elapsed_s=1.0, generations=1, stopped_because="budget reached", seed=0)
    assert res.serving_lines() == [
        "serving (worst job) across the front: p99 time to first token 191.2 ms, p99 time per output token "
        "16.75 ms to 17.2 ms; the cheapest front design, 'a', serves 100.0% of requests within their budgets."]


# ------------------------------------------------------------------ +0.0 % is no change


def test_a_change_that_reads_plus_zero_is_grey_not_red():
    rows = [{"scenario": s, "delta_p99": d, "p99_s": 0.5 * (1 + d), "p50_s": 0.5}
            for s, d in (("tiny", 0.0004), ("tiny-faster", -0.0004), ("slower", 0.0012), ("faster", -0.02))]
    fig = charts.scenario_figure(rows)
    assert list(fig.data[0].text) == ["+0.0%", "-0.0%", "+0.1%", "-2.0%"]
    assert list(fig.data[0].marker.color) == [charts.CHANGE_COLORS["same"], charts.CHANGE_COLORS["same"],
                                             charts.CHANGE_COLORS["slower"], charts.CHANGE_COLORS["faster"]]


# ------------------------------------------------------------------ the catalog table


def test_catalog_columns_are_named_in_words_and_blanks_are_said():
    from fabric.catalog import default_catalog
    from fabric.ui_support.catalog_view import column_labels, display_table

    for name, df in default_catalog().tables().items():
        labels = column_labels(df.columns)
        assert not [lab for lab in labels.values() if "_" in lab], name          # no raw column names
        shown = display_table(df)
        cells = shown.drop(columns=["source"]).astype(str).to_numpy().ravel()
        assert not {"None", "nan", "NaN", "<NA>"} & set(cells), name
    sw = display_table(default_catalog().tables()["switches"]).set_index("model")
    assert sw.loc["ib-ndr-64x400", "sharp_trees"] == "64" and sw.loc["eth-51t-64x800", "sharp_trees"] == \
        "no limit known"
    assert column_labels(["sharp_trees", "power_w", "max_nic_gbps_per_gpu"]) == {
        "sharp_trees": "SHARP trees (in-network reduction)", "power_w": "power (W)",
        "max_nic_gbps_per_gpu": "most NIC bandwidth per GPU (Gb/s)"}


def test_catalog_edits_of_the_shown_table_reach_the_catalog():
    from fabric.catalog import Catalog, default_catalog
    from fabric.ui_support.catalog_view import display_table, merge_edits

    base = default_catalog().tables()
    shown = {n: display_table(df) for n, df in base.items()}
    assert all(merge_edits(base, shown)[n].equals(base[n]) for n in base)       # nothing edited: the same tables
    shown["switches"].loc[0, "price_usd"] = 1000
    merged = merge_edits(base, shown)
    assert merged["switches"].loc[0, "price_usd"] == 1000
    assert pd.isna(merged["switches"]["sharp_trees"]).sum() == pd.isna(base["switches"]["sharp_trees"]).sum()
    assert Catalog.from_tables(merged).switch(base["switches"].loc[0, "model"]).price_usd == 1000


def _column_configs(element) -> dict:
    return json.loads(element.proto.columns) if element.proto.columns else {}


def test_constraints_page_catalog_shows_words_and_separators():
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    ok(at)
    editors = list(at.data_editor)
    assert len(editors) == 5
    switches = _column_configs(editors[0])
    assert switches["sharp_trees"]["label"] == "SHARP trees (in-network reduction)"
    assert switches["ports_per_cage"]["label"] == "ports per cage"
    assert switches["power_w"]["type_config"]["format"] == "localized"          # 5,800 W, not 5800
    assert switches["price_usd"]["type_config"]["format"] == "dollar"
    assert "None" not in editors[0].value["sharp_trees"].astype(str).tolist()
    gpus = _column_configs(editors[4])
    assert gpus["nvls"]["label"] == "NVLink SHARP (NVLS)" and gpus["hbm_gb"]["label"] == "HBM (GB)"
    assert gpus["server_power_w"]["type_config"]["format"] == "localized"
    for ed in editors:                   # every shown column has a label without an underscore
        cfg = _column_configs(ed)
        for col in ed.value.columns:
            if col != "source":
                assert "_" not in cfg[col]["label"], col


# ------------------------------------------------------------------ thousands separators in tables


def test_workload_tables_write_numbers_with_thousands_separators():
    at = app(wl="plan:llama3-70b:1024").run()
    ok(at)
    jobs = next(d for d in at.dataframe if "ranks (GPUs)" in d.value.columns)
    assert jobs.value["ranks (GPUs)"].tolist() == [1024]
    cfg = _column_configs(jobs)
    assert cfg["ranks (GPUs)"]["type_config"]["format"] == "localized"          # shown as 1,024
    assert cfg["calls per step"]["type_config"]["format"] == "localized"
    groups = next(d for d in at.dataframe if "size (ranks)" in d.value.columns)
    assert _column_configs(groups)["size (ranks)"]["type_config"]["format"] == "localized"


# ------------------------------------------------------------------ the serving load in words


def _serving_metrics():
    from fabric.evaluate import evaluate
    from fabric.search import Constraints, DesignSpace
    from fabric.search.baselines import baseline_designs
    from fabric.workload.model import load_workload_json

    wl = load_workload_json((ROOT / "sample_traces" / "llama3-70b-online.json").read_text())
    design = baseline_designs(DesignSpace(Constraints(gpus=256)))[0]
    return next(iter(evaluate(design, wl, samples=32, seed=0).serving.values()))


def test_the_load_tile_says_what_it_is_a_share_of():
    from fabric.ui_support.serving_view import serving_metrics_row

    m = {"ttft_s": {"p50": 0.05, "p95": 0.1, "p99": 0.19}, "tpot_s": {"p50": 0.01, "p95": 0.015, "p99": 0.017},
         "slo_attainment": 1.0, "ttft_slo_s": 2.0, "tpot_slo_s": 0.2, "request_rate_per_s": 230.0,
         "capacity_rps": 380.0, "compute_capacity_rps": 460.0, "load": 230 / 380}
    label, value, help_ = serving_metrics_row(m)[3]
    assert (label, value) == ("Load on this design", "61%")
    assert help_ == ("The share of what the service sustains on this design that its arrivals use: 230 requests/s "
                     "arrive (50% of the 460 its replicas sustain on compute alone, the basis a preset's arrivals "
                     "are set on); with each request's network time the replicas sustain 380 requests/s on this "
                     "design, so the same arrivals are 61% of it. Queues grow without bound at 100%.")


def test_the_online_samples_arrivals_are_half_of_its_compute_capacity():
    m = _serving_metrics()
    # the preset sets arrivals at half of what the 32 replicas sustain on compute alone (rounded to 2 figures)
    assert m["request_rate_per_s"] == 230.0
    assert m["request_rate_per_s"] / m["compute_capacity_rps"] == pytest.approx(0.5, abs=0.02)
    # on a network the replicas sustain less, so the same arrivals are a larger share: the load
    assert m["capacity_rps"] < m["compute_capacity_rps"] and m["load"] > 0.5
    from fabric.ui_support.serving_view import load_text

    assert f"{m['request_rate_per_s'] / m['compute_capacity_rps']:.0%} of the " in load_text(m)


# ------------------------------------------------------------------ log axes


def test_log_ticks_are_1_2_5_steps_in_full():
    assert charts.log_ticks([8, 2000]) == {
        "tickmode": "array", "tickvals": [5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
        "ticktext": ["5", "10", "20", "50", "100", "200", "500", "1,000", "2,000", "5,000"]}
    assert charts.log_ticks([0.5, 3])["ticktext"] == ["0.2", "0.5", "1", "2", "5"]
    wide = charts.log_ticks([1, 1e7])                  # too many 1-2-5 steps: powers of ten
    assert wide["ticktext"] == ["1", "10", "100", "1,000", "10,000", "100,000", "1,000,000", "10,000,000"]
    assert charts.log_ticks([150, 160]) == {"tickformat": ",.4~g"}      # narrow: plotly's ticks, separated
    assert charts.log_ticks([0, -1]) == {}


def test_the_latency_versus_load_chart_has_readable_log_ticks():
    from fabric.ui_support.serving_view import latency_load_figure

    curve = [{"load": x, "ttft_p50_s": 0.05, "ttft_p99_s": 0.1 + x * 0.1, "tpot_p50_s": 0.008,
              "tpot_p99_s": 0.01 + x * 0.02} for x in (0.1, 0.5, 0.9)]
    fig = latency_load_figure(curve, ttft_slo_s=2.0, tpot_slo_s=0.2)
    y = fig.layout.yaxis
    assert y.type == "log" and y.title.text == "latency (ms, log scale)"
    assert list(y.ticktext) == ["5", "10", "20", "50", "100", "200", "500", "1,000", "2,000", "5,000"]
    assert fig.layout.xaxis.title.text == "load (% of what this design sustains)"


def test_the_message_size_chart_labels_calls_with_separators():
    hist = [{"bin_lo_bytes": 2 ** k, "bin_hi_bytes": 2 ** (k + 1), "count_per_step": c, "bytes_per_step": c * 2 ** k}
            for k, c in ((20, 1.0), (24, 300.0), (25, 3000.0))]
    fig = charts.message_size_figure([{"name": "job", "kind": "training", "message_size_histogram": hist}])
    assert list(fig.layout.yaxis.ticktext) == ["1", "10", "100", "1,000", "10,000"]


def test_the_calibration_plot_ticks_message_sizes_in_full():
    from fabric.calibrate import fit_profile, load_measurements
    from fabric.ui_support.calibrate_view import busbw_figure

    res = fit_profile(load_measurements([ROOT / "examples" / "nccl_allreduce.log"]))
    x = busbw_figure(res).layout.xaxis
    sizes = [p.bytes for p in res.points]
    assert x.type == "log" and x.ticktext and all(t.endswith(("B", "kB", "MB", "GB")) for t in x.ticktext)
    assert x.tickvals[0] <= min(sizes) and x.tickvals[-1] >= max(sizes)
    assert charts.bytes_tick(2e9) == "2 GB" and charts.bytes_tick(20_000) == "20 kB" and charts.bytes_tick(8) == "8 B"


def test_linear_axes_write_thousands_with_a_separator():
    rows = [{"job": "a", "compute_s": 1500.0, "comm_s": 800.0, "exposed_s": 100.0}]
    fig = charts.compute_comm_figure(rows)
    assert fig.layout.xaxis.tickformat == ",~r"                 # 1,000 s, not 1000
    assert charts.scenario_figure([{"scenario": "x", "delta_p99": 0.1, "p99_s": 1.1, "p50_s": 1.0}]) \
        .layout.xaxis.tickformat == "+.0%"                      # an axis's own format is kept

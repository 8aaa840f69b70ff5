"""One design, one context, one set of figures (issue 34): a crawler over the modes a review moves through.

For each mode (plan space fixed / auto; one workload / a robust mix with and without a serving job; a design with
in-network reduction beside baselines without; the GPU switched to B200 and back; the recommended design's JSON
loaded into Upgrade; the CLI with the same context flags) it runs the dashboard's search and reads, for the
recommended design and the fat-tree baseline, every place a figure is shown: the Search page's hover, front table
and CSV, the recommendation box, the Design page's tiles, its HTML report, Compare, the Brief page and its HTML
file, Upgrade's installed fabric and ``fabric evaluate --json``, and asserts they are the search's record of that
design, written the one way (fabric.review.figures). Nothing here imports the code that makes the records
(fabric.review): the expected values are the search's own CSV-able rows.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fabric.review.figures import figure_text
from fabric.units import time_text, time_unit

ROOT = Path(__file__).resolve().parent.parent
GPUS = 1024

MODES = {
    "fixed": {"wl": "plan:mixtral-8x7b:1024"},
    "auto": {"wl": "plan:mixtral-8x7b:1024", "plans": "auto"},
    "robust-serving": {"wl": "plan:mixtral-8x7b:1024", "robust": "worst", "mix": "plan:llama3-70b-online:1024"},
    "robust-training": {"wl": "plan:mixtral-8x7b:1024", "robust": "mean", "mix": "plan:llama3-70b:1024"},
}


# ------------------------------------------------------------------ reading the pages


def _texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def _md(at) -> str:
    return _texts(at.markdown).replace("\\", "")


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def download(at, label: str) -> bytes:
    """The bytes a download button of the page gives (bytes data or a deferred callable, as a browser would get)."""
    import gc

    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    button = next(b for b in at.download_button if b.label == label)
    url = button.proto.url
    for o in gc.get_objects():
        if url and isinstance(o, MemoryMediaFileStorage):
            fid = url.rsplit("/", 1)[-1].split(".")[0]
            if fid in o._files_by_id:
                return bytes(o._files_by_id[fid].content)
        if not url and type(o).__name__ == "MediaFileManager":
            entry = getattr(o, "_deferred_callables", {}).get(button.proto.deferred_file_id)
            if entry is not None:
                data = entry["callable"]()
                return data.encode() if isinstance(data, str) else bytes(data)
    raise AssertionError(f"no data behind the download button {label!r}")


def _p99_word(robust: bool) -> str:
    return "robust p99" if robust else "p99"


def _searched(mode: str):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({**MODES[mode], "gpus": str(GPUS), "evals": "100"})
    at.run()
    at.switch_page("pages/search.py").run()
    job = at.session_state["search_job"]
    assert job.wait(600)
    at.run()
    _ok(at)
    return at, job.snapshot().result


def _recommended(res, cons):
    from fabric.search.recommend import recommend

    return recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s).record


# ------------------------------------------------------------------ one mode, every place


@pytest.fixture(scope="module", params=list(MODES))
def crawl(request, tmp_path_factory):
    """Every place the recommended design and the fat-tree baseline are shown in one mode."""
    mode = request.param
    at, res = _searched(mode)
    cons = at.session_state["constraints"]
    rec = _recommended(res, cons)
    base = next(b for b in res.baselines if b.get("buildable", True))
    robust = bool(rec.get("p99_by_case"))
    seen: dict = {"mode": mode, "rec": rec, "base": base, "robust": robust, "res": res}
    # Search: hover, front table, CSV, the recommendation box
    spec = [json.loads(e.proto.spec) for e in at.get("plotly_chart")][0]
    seen["hover"] = {t: h for tr in spec["data"] for t, h in zip([c[1] for c in tr.get("customdata") or []],
                                                                   tr.get("hovertext") or [])}
    names = {b["design"] for b in res.baselines}
    seen["baseline_symbols"] = [tr["marker"]["symbol"] for tr in spec["data"] if tr.get("name") in names]
    table = next(d.value for d in at.dataframe if "recommended" in d.value.columns)
    seen["table"] = table
    seen["csv"] = pd.read_csv(io.BytesIO(download(at, "Front (CSV)")))
    seen["box"] = next(m for m in _texts(at.markdown).split("\n") if "Recommended" in m).replace("\\", "")
    # Design: the recommended design, then the baseline
    from pages._common import genes_of_record

    pages = {}
    at.switch_page("pages/design.py").run()
    _ok(at)
    for who, label in (("rec", f"recommended: {rec['design']}"), ("base", base["design"])):
        at.selectbox(key="design_pick").set_value(label).run()
        _ok(at)
        pages[who] = {"metrics": {m.label: m.value for m in at.metric}, "md": _md(at),
                      "captions": _texts(at.caption).replace("\\", ""),
                      "info": _texts(at.info).replace("\\", ""),
                      "frames": [d.value for d in at.dataframe],
                      "report": download(at, "Report (one HTML file)").decode(),
                      "design_json": download(at, "Design (JSON)")}
    seen["design"] = pages
    # Compare: the recommended design first, the baseline second
    at.session_state["compare_genes"] = [genes_of_record(rec), genes_of_record(base)]
    if "compare_pick" in at.session_state:
        del at.session_state["compare_pick"]
    at.switch_page("pages/compare.py").run()
    _ok(at)
    seen["compare"] = {"table": at.dataframe[0].value, "md": _md(at)}
    # Brief: page and HTML file
    at.switch_page("pages/brief.py").run()
    _ok(at)
    seen["brief"] = {"md": _md(at), "html": download(at, "Brief (one HTML file)").decode(),
                     "subheaders": [s.value for s in at.subheader]}
    # Upgrade: the recommended design's JSON as the installed fabric
    at.switch_page("pages/upgrade.py").run()
    at.radio(key="up_source").set_value("a design or `fabric build --json` file").run()
    at.file_uploader(key="up_file").set_value([("design.json", pages["rec"]["design_json"], "application/json")]).run()
    _ok(at)
    seen["upgrade"] = {m.label: m.value for m in at.metric}
    # the CLI in the same context
    seen["cli"] = _cli(mode, pages["rec"]["design_json"], tmp_path_factory.mktemp(mode))
    return seen


def _cli(mode: str, design_json: bytes, folder: Path) -> dict:
    from fabric.cli.main import main

    def run(argv):
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(argv) == 0
        return out.getvalue()

    params = MODES[mode]
    files = []
    for spec in [params["wl"]] + ([params["mix"]] if "mix" in params else []):
        _, preset, gpus = spec.split(":")
        path = folder / f"{preset}.json"
        run(["synth", "--preset", preset, "--gpus", gpus, "--out", str(path)])
        files.append(str(path))
    (folder / "design.json").write_bytes(design_json)
    argv = ["evaluate", "-d", str(folder / "design.json"), "--json", "--fixes"]
    for f in files:
        argv += ["-w", f]
    if "robust" in params:
        argv += ["--robust", params["robust"]]
    if params.get("plans") == "auto":
        argv += ["--plan-space", "auto"]
    return json.loads(run(argv))


def _hover_p99(row: dict, robust: bool) -> str:
    s, unit = time_unit([row["p99_s"]])
    return f"{_p99_word(robust)} step {row['p99_s'] * s:,.3g} {unit}"


def test_the_search_hover_table_csv_and_box_show_the_record(crawl):
    rec, base, robust = crawl["rec"], crawl["base"], crawl["robust"]
    for row in (rec, base):
        hover = crawl["hover"][row["design"]]
        assert _hover_p99(row, robust) in hover
        assert ("p50" in hover) is (not robust)           # a robust record has no p50 of its own
    table = crawl["table"]
    assert table.loc[table["design"] == rec["design"], "p99_s"].iloc[0] == rec["p99_s"]
    csv = crawl["csv"]
    col = "robust_p99_s" if robust else "p99_s"
    assert col in csv.columns and (("p50_s" in csv.columns) is (not robust))
    assert csv.loc[csv["design"] == rec["design"], col].iloc[0] == pytest.approx(rec["p99_s"], rel=1e-12)
    if robust:                                            # each case's p99 in a column of its own
        for case, p in rec["p99_by_case"].items():
            assert csv.loc[csv["design"] == rec["design"], f"p99_s|{case}"].iloc[0] == pytest.approx(p, rel=1e-12)
    assert f"network capex ${rec['cost_usd']:,.0f}, {_p99_word(robust)} {time_text(rec['p99_s'])}" in crawl["box"]


def test_the_design_page_and_its_report_show_the_record(crawl):
    robust = crawl["robust"]
    line = None
    for who in ("rec", "base"):
        row, page = crawl[who], crawl["design"][who]
        m = page["metrics"]
        assert m["Network capex"] == figure_text(row["cost_usd"], "usd")
        assert m["Robust p99 step" if robust else "p99 step"] == time_text(row["p99_s"])
        if not robust:
            assert m["p50 step"] == time_text(row["p50_s"])
        context = re.search(r"Context: (.*?)\.( Change it|$)", page["captions"], re.M).group(1)
        line = line or context
        assert context == line                            # one context for both designs
        report = page["report"]
        assert f"Context: {context}" in report
        assert f"network capex {figure_text(row['cost_usd'], 'usd')}" in report
        assert f"{_p99_word(robust)} step {time_text(row['p99_s'])}" in report
        assert "best free policy on this hardware" in report.lower()
        assert len(report.encode()) < 1_000_000
        if robust:
            assert "Each case of the mix" in report
            for case, p in row["p99_by_case"].items():
                assert f"{case} (weight" in report and f"p99 {time_text(p)}" in report
        if row.get("plan"):
            assert f"Parallelism plan: {row['plan']}, the best of" in report
    if crawl["mode"] == "robust-serving":
        assert "Serving latency" in crawl["design"]["rec"]["report"]
    # the in-network reduction of a design that has it is said in its report; the baseline has none
    assert ("In-network reduction" in crawl["design"]["rec"]["report"]) is bool(crawl["rec"]["in_network_reduction"])
    assert "In-network reduction" not in crawl["design"]["base"]["report"]
    if crawl["rec"].get("plan"):                          # the one ranking of plans: the search's
        frame = next(f for f in crawl["design"]["rec"]["frames"] if "vs best" in f.columns)
        assert list(frame["plan"]) == [t["plan"] for t in crawl["rec"]["plan_tried"]]
        assert list(frame["p99 step"]) == [time_text(t["p99_s"]) for t in crawl["rec"]["plan_tried"]]


def test_compare_shows_the_records_and_the_same_best_free_fix(crawl):
    robust = crawl["robust"]
    table = crawl["compare"]["table"]
    what = "robust p99 step time" if robust else "p99 step time"
    for who, col in (("rec", 0), ("base", 1)):
        row = crawl[who]
        name = table.columns[col]
        assert table.loc["network capex", name] == figure_text(row["cost_usd"], "usd")
        assert table.loc[what, name] == time_text(row["p99_s"])
        if row.get("plan"):
            assert table.loc["parallelism plan", name] == row["plan"]
    free = re.search(r"\*\*Free first\*\* \('.*?', \d+ policies tried\): (.*)\.", crawl["compare"]["md"]).group(1)
    assert free[0].upper() + free[1:] in crawl["design"]["rec"]["md"]          # the Design page's sentence


def test_the_brief_and_its_html_show_the_records(crawl):
    rec, base, robust = crawl["rec"], crawl["base"], crawl["robust"]
    md, html = crawl["brief"]["md"], crawl["brief"]["html"]
    which = _p99_word(robust)
    buy = f"network capex {figure_text(rec['cost_usd'], 'usd')}"
    step = f"{which} step {time_text(rec['p99_s'])}"
    for text in (md, html.replace("&#x27;", "'")):
        assert f"Buy '{rec['design']}'" in text and buy in text and step in text
        assert f"'{base['design']}' as drawn (${base['cost_usd']:,.0f}; {which} {time_text(base['p99_s'])})" in text
    res = crawl["res"]
    ru = re.search(r"'([^']+)' (?:costs \$[\d,]+ less and gives up|is [\d.]+% faster at|has the same)", md)
    if ru:
        other = next(r for r in res.front if r["design"] == ru.group(1))
        assert time_text(other["p99_s"]) in md.split(ru.group(0))[1].split("\n")[0]
    if crawl["mode"] == "robust-serving":
        assert "Serving latency" in crawl["brief"]["subheaders"] and "Serving latency" in html
    if robust:
        assert "Each case of the mix" in crawl["brief"]["subheaders"]
    if rec.get("plan"):
        assert f"Parallelism plan: {rec['plan']}" in md
    # the Search chart marks the baselines with the brief's shapes (hollow), in the same order
    from fabric.ui_support.svg_charts import BASELINE_MARKERS

    shapes = [{"triangle": "triangle-up"}.get(m, m) + "-open" for m in BASELINE_MARKERS]
    assert crawl["baseline_symbols"] == shapes[:len(crawl["baseline_symbols"])] and crawl["baseline_symbols"]


def test_upgrade_and_the_cli_show_the_record(crawl):
    rec, robust = crawl["rec"], crawl["robust"]
    assert crawl["upgrade"]["Installed robust p99" if robust else "Installed p99"] == time_text(rec["p99_s"])
    cli = crawl["cli"]
    key = "robust_p99_s" if robust else "p99_s"
    assert cli["figures"][key] == rec["p99_s"]
    assert cli["figures"]["network_capex_usd"] == rec["cost_usd"]
    assert cli["record"]["row"]["p99_s"] == rec["p99_s"]
    if robust:
        assert cli["figures"]["p50_s"] is None
        # the same cases in the same order (the CLI names them after its files, the dashboard after its choices)
        assert [v["figures"]["p99_s"] for v in cli["record"]["cases"].values()] == list(rec["p99_by_case"].values())
    assert cli["context"]["line"].endswith("seed 0, 256 samples")
    free = cli["record"]["fixes"]["best_free_policy"]["sentence"]            # the one best free fix
    assert free[0].upper() + free[1:] in crawl["design"]["rec"]["md"]


# ------------------------------------------------------------------ the GPU switched and back


def test_a_front_of_another_gpu_is_never_shown_beside_this_contexts_designs():
    """Issue 34 item 4: search on H100, switch to B200: the Design page no longer offers the H100 search's designs
    (and says why), the Search page says its front is another GPU's; back on H100, the same figures as before."""
    from dataclasses import replace

    at, res = _searched("fixed")
    cons = at.session_state["constraints"]
    rec = _recommended(res, cons)
    at.switch_page("pages/design.py").run()
    _ok(at)
    labels = at.selectbox(key="design_pick").options
    assert any(o.startswith("recommended: ") for o in labels)
    at.selectbox(key="design_pick").set_value(f"recommended: {rec['design']}").run()
    before = {m.label: m.value for m in at.metric}
    assert before["p99 step"] == time_text(rec["p99_s"])
    at.session_state["constraints"] = replace(cons, gpu_model="b200")
    at.switch_page("pages/design.py").run()
    _ok(at)
    assert not any(o.startswith(("recommended: ", "front: ")) for o in at.selectbox(key="design_pick").options)
    assert "The last search ran with other inputs" in _texts(at.info)
    assert "b200" in _texts(at.caption)
    at.switch_page("pages/search.py").run()
    _ok(at)
    assert "The inputs changed since this front was computed" in _texts(at.warning)
    assert "h100-sxm GPUs" in _texts(at.warning)
    at.switch_page("pages/brief.py").run()
    _ok(at)
    assert "The last search ran with other inputs" in _texts(at.info) and not at.download_button
    at.session_state["constraints"] = cons
    at.switch_page("pages/design.py").run()
    _ok(at)
    assert any(o.startswith("recommended: ") for o in at.selectbox(key="design_pick").options)
    assert {m.label: m.value for m in at.metric} == before

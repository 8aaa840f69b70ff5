"""What a design review sees, in a real browser: the defects a new user found in the first hour (issue 13), each
checked where it showed, so that none comes back.

- the HTML report names the workload actually evaluated and writes readable numbers;
- a copied Search link opens with the budget that ran and tells no restart story;
- the recommendation states the rule and the reference it used (a budget that rules out the fat tree 1:1);
- the hypervolume reads in % of the run's final value;
- what-if bars are coloured by the sign of the change; captions name the unit of their chart;
- at 1,600 px the switch-model chips are all visible;
- the Workload page shows network and NVLink traffic apart; the Fabric & BOM page has its title and exports.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from browser_support import ROOT, VIEW, Dashboard, download_text, expect, free_port, idle, nav, wait_for_search

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def dashboard():
    dash = Dashboard(free_port()).start()
    try:
        yield dash
    finally:
        dash.stop()


@pytest.fixture(scope="module")
def server(dashboard):
    return dashboard.url


def _page(browser, width: int = VIEW["width"], height: int = VIEW["height"]):
    ctx = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    return ctx, ctx.new_page()


def test_report_names_the_workload_evaluated_and_reads_like_a_table(dashboard, server, browser):
    ctx, page = _page(browser)
    page.goto(server + "/design?wl=plan%3Allama3-70b%3A1024")
    idle(page)
    expect(page.get_by_test_id("stMain")).to_contain_text("plan llama3-70b on 1,024 GPUs", timeout=30_000)
    html = download_text(page, "Report (one HTML file)")
    assert "Workload: plan llama3-70b on 1,024 GPUs" in html
    assert "mixtral" not in html
    assert "missing ScriptRunContext" not in dashboard.log_tail(200_000)     # nothing read the session at download
    tables = html[html.index("<table>"):]
    cells = re.findall(r"<td class='num'>([^<]*)</td>", tables)
    assert cells and not [c for c in cells if re.search(r"\de[+-]?\d", c)]     # no e-notation
    money = [c for c in cells if c.startswith("$")]
    assert money and all(re.fullmatch(r"\$\d{1,3}(,\d{3})*", c) for c in money)
    if "<h2>Hot spots</h2>" in html:                                            # utilisation as a percentage
        hot = html[html.index("<h2>Hot spots</h2>"):]
        hot = hot[:hot.index("</table>")]
        assert re.search(r"<td class='num'>\d+\.\d %</td>", hot)
    # the bill of materials exports: one CSV row per item, then the total
    rows = list(csv.DictReader(io.StringIO(download_text(page, "Bill of materials (CSV)"))))
    assert rows[-1]["category"] == "total" and float(rows[-1]["price_usd"]) > 0
    assert sum(float(r["price_usd"]) for r in rows[:-1]) == pytest.approx(float(rows[-1]["price_usd"]))
    ctx.close()


def test_a_copied_search_link_opens_with_the_budget_that_ran(server, browser):
    ctx, page = _page(browser)
    page.goto(server + "/search?evals=140")
    status = wait_for_search(page)
    assert "budget 140" in status
    field = page.get_by_role("spinbutton", name="Evaluation budget (designs)")
    field.fill("20")
    field.press("Tab")
    idle(page)
    expect(page).to_have_url(re.compile(r"evals=20(&|$)"), timeout=15_000)
    link = page.url                                           # what a user copies from the address bar
    ctx2, other = _page(browser)
    other.goto(link)
    status = wait_for_search(other)
    assert "Search finished" in status and "budget 140" in status
    assert "restart" not in status and "reopened" not in status
    assert other.get_by_role("spinbutton", name="Evaluation budget (designs)").input_value() == "140"
    expect(other).to_have_url(re.compile(r"evals=140(&|$)"), timeout=15_000)
    ctx.close()
    ctx2.close()


def test_with_a_budget_the_recommendation_names_the_baseline_it_used(server, browser):
    from fabric.search import Constraints, DesignSpace
    from fabric.search.baselines import baseline_designs
    from fabric.topology import build_fabric
    from fabric.cost import bill_of_materials

    space = DesignSpace(Constraints(gpus=1024))            # the llama3-70b sample's cluster
    cost = {d.name: bill_of_materials(build_fabric(d)).cost_usd for d in baseline_designs(space)}
    ft11 = next(v for k, v in cost.items() if "fat tree 1:1" in k)
    ft21 = next(v for k, v in cost.items() if "fat tree 2:1" in k)
    assert ft21 < ft11
    budget = int((ft11 + ft21) / 2)              # the fat tree 1:1 is over it, the 2:1 is not
    ctx, page = _page(browser)
    page.goto(server + f"/search?wl=sample%3Allama3-70b.json&evals=140&budget_usd={budget}")
    wait_for_search(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("as the baseline 'fat tree 2:1, 400G on ib-ndr-64x400'", timeout=15_000)
    expect(main).to_contain_text("'fat tree 1:1, 400G on ib-ndr-64x400' was not used: over the budget by", timeout=15_000)
    assert "as fast as the fat-tree baseline" not in main.inner_text()
    # the hypervolume reads in % of the run's final value: the last point is at 100 %
    hv = page.locator(".js-plotly-plot").nth(1)
    assert "hypervolume (% of this run's final)" in hv.inner_text()
    ctx.close()


def test_what_if_colours_units_and_1600px_layout(server, browser):
    ctx, page = _page(browser, 1600, 1400)
    page.goto(server + "/constraints")
    idle(page)
    box = page.get_by_test_id("stMultiSelect").filter(has_text="Allowed switch models").first
    assert "Allowed switch models" in box.inner_text()    # (not the first multiselect: GPU systems come before it)
    outer = box.bounding_box()
    chips = box.locator("[data-tag]")
    assert chips.count() == 6
    for i in range(chips.count()):            # every chip whole and inside the widget: none cut off or hidden
        b = chips.nth(i).bounding_box()
        assert b["x"] >= outer["x"] and b["x"] + b["width"] <= outer["x"] + outer["width"], i
        label = chips.nth(i).locator("span").first
        assert label.evaluate("e => e.scrollWidth <= e.clientWidth"), label.inner_text()

    nav(page, "Design")
    page.get_by_role("heading", name="What if").wait_for(timeout=60_000)
    idle(page)
    main = page.get_by_test_id("stMain")
    plots = page.locator(".js-plotly-plot")
    what_if = plots.nth(plots.count() - 1)
    labels = what_if.locator("text.bartext")
    bars = what_if.locator(".bars path")
    assert labels.count() == bars.count() >= 3
    red, green = "rgb(214, 39, 40)", "rgb(44, 160, 44)"
    signs = set()
    for i in range(bars.count()):
        text = labels.nth(i).text_content()
        fill = bars.nth(i).evaluate("e => getComputedStyle(e).fill")
        value = float(text.strip("%").replace("+", "").replace("\u2212", "-"))
        if value > 0:
            assert fill == red, (text, fill)                  # slower is red, however small
            signs.add("+")
        elif value < 0:
            assert fill == green, (text, fill)
    assert "+" in signs
    # the breakdown caption names the axis unit of its chart
    axis = plots.nth(2).locator(".xtitle").text_content()
    unit = axis.rsplit("(", 1)[1].rstrip(")")
    expect(main).to_contain_text(f"longest first (axis in {unit})")
    ctx.close()


def test_workload_traffic_apart_and_fabric_bom_exports(server, browser):
    ctx, page = _page(browser)
    page.goto(server + "/")
    idle(page)
    # the first script run may not have drawn its metrics when the app first reports idle
    expect(page.get_by_test_id("stMetricLabel").filter(has_text="Network traffic per step")).to_be_visible(
        timeout=30_000)
    metrics = {page.get_by_test_id("stMetricLabel").nth(i).inner_text():
               page.get_by_test_id("stMetricValue").nth(i).inner_text()
               for i in range(page.get_by_test_id("stMetric").count())}
    assert metrics["NVLink traffic per step"] == "64.0 GiB" and metrics["Network traffic per step"] == "38.7 GiB"
    assert "Communication per step" not in metrics
    expect(page.get_by_test_id("stMain")).to_contain_text("n/a: synthesized from a plan")
    nav(page, "Fabric & BOM")
    assert page.get_by_role("heading", level=1).first.inner_text().strip() == "Fabric & BOM"
    rows = list(csv.DictReader(io.StringIO(download_text(page, "Bill of materials (CSV)"))))
    assert rows[0]["category"] == "switch" and rows[-1]["category"] == "total"
    design = download_text(page, "Design (JSON)")
    assert '"schema": "fabric.design/1"' in design
    ctx.close()

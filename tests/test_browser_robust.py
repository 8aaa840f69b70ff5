"""The robust search across a job mix in a real browser: a link opens the Workload page with the mix, the robust
mode radio writes the mode into the address bar, and the Search page finishes a small robust search showing each
design's spread on the Pareto chart and one panel per case beside the robust front."""

from __future__ import annotations

import re
import urllib.parse

import pytest

from browser_support import VIEW, expect, idle, nav, shot, wait_for_search

pytestmark = pytest.mark.browser


def test_a_robust_search_runs_from_a_link_and_shows_spread_and_case_fronts(server, browser, shots_dir):
    query = urllib.parse.urlencode({"robust": "worst", "mix": "sample:dlrm-dcnv2.json",
                                    "scenarios": "baseline,fail-spine", "evals": "60"})
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(f"{server}/workload?{query}")
    idle(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("Several workloads: a design robust to the job mix")
    expect(main).to_contain_text("judges designs on 2 workloads × 2 scenarios")
    expect(main).to_contain_text("sample dlrm-dcnv2.json")
    # the mode radio: weighted mean goes into the link, worst case comes back
    page.get_by_test_id("stRadio").filter(has_text="Robust mode").get_by_text("weighted mean").click()
    page.wait_for_url(re.compile(r"robust=mean"), timeout=30_000)
    idle(page)
    page.get_by_test_id("stRadio").filter(has_text="Robust mode").get_by_text("worst case").click()
    page.wait_for_url(re.compile(r"robust=worst"), timeout=30_000)
    idle(page)
    shot(page, shots_dir, "workload-mix", anchor="Workloads in the mix")

    nav(page, "Search")
    status = wait_for_search(page, timeout=150)
    assert "Search finished" in status, status
    expect(main).to_contain_text("Pareto front: network capex vs robust p99 across the job mix")
    pareto = page.locator(".js-plotly-plot").first
    expect(pareto).to_contain_text("spread across cases")                      # the legend of the spread bars
    expect(main).to_contain_text("The robust front against each case's own front")
    panels = page.locator(".js-plotly-plot").nth(2)
    for case in ("mixtral-8x7b|baseline", "mixtral-8x7b|fail-spine", "dlrm-dcnv2|baseline", "dlrm-dcnv2|fail-spine"):
        expect(panels).to_contain_text(case)                                   # one panel per case
    expect(main).to_contain_text(re.compile(r"brittle: '|no front design is brittle"))
    shot(page, shots_dir, "search-robust")
    shot(page, shots_dir, "search-case-fronts", anchor="The robust front against each case's own front")
    ctx.close()

"""In a real browser: a serving workload's Design page draws its request latency (metrics, the latency-versus-load
curve, the split of the p99 request). To refresh the docs' picture:

    FABRIC_SCREENSHOTS_DIR=docs/screenshots python -m pytest tests/test_browser_serving.py
"""

from __future__ import annotations

import pytest

from browser_support import VIEW, expect, idle, shot

pytestmark = pytest.mark.browser


def test_design_page_draws_serving_latency(server, browser, shots_dir):
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(server + "/design?wl=sample%3Adeepseek-v3-ep-decode.json")
    idle(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("Serving latency: deepseek-v3-ep-decode", timeout=60_000)
    for text in ("p99 time to first token", "p99 time per output token", "SLO attainment", "Latency versus load",
                 "Where the p99 request's time goes"):
        expect(main).to_contain_text(text, timeout=30_000)
    # the two serving charts are drawn (plotly's own element), with their legends
    serving = page.locator(".js-plotly-plot").filter(has_text="p50 TPOT")
    expect(serving).to_have_count(1, timeout=30_000)
    expect(page.locator(".js-plotly-plot").filter(has_text="queueing")).to_have_count(1, timeout=30_000)
    shot(page, shots_dir, "design-serving", anchor="Serving latency: deepseek-v3-ep-decode")
    ctx.close()

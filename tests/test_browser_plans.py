"""Parallelism plans in a real browser (issue 25): on the Search page the plan-space switch goes into the address
bar, a plan search finishes and the recommendation says what the workload's own plan costs; opening the
recommended design shows its best plans on the Design page, every figure at the best one."""

from __future__ import annotations

import re

import pytest

from browser_support import VIEW, expect, idle, shot, wait_for_search

pytestmark = pytest.mark.browser

WIDE = {"width": 1600, "height": 1000}


def test_search_with_plan_space_auto_then_the_design_page(server, browser, shots_dir):
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(f"{server}/search?evals=60")
    status = wait_for_search(page, timeout=150)
    assert "Search finished" in status, status
    main = page.get_by_test_id("stMain")
    expect(main).not_to_contain_text("is on the front only with")           # plan space fixed: no plans
    page.get_by_test_id("stRadio").filter(has_text="Plan space").get_by_text(
        "auto: every design at its best plan").click()
    page.wait_for_url(re.compile(r"plans=auto"), timeout=30_000)
    idle(page)
    expect(main).to_contain_text("Plans of mixtral-8x7b, from preset mixtral-8x7b")
    expect(main).to_contain_text("The inputs changed since this front was computed")
    page.get_by_role("button", name="Start search").click()
    status = wait_for_search(page, timeout=240)
    assert "Search finished" in status, status
    box = page.get_by_test_id("stMarkdownContainer").filter(has_text="★ Recommended:").first
    expect(box).to_contain_text(re.compile(r"is on the front (only )?with TP \d+ x .*with the given plan it is "
                                           r"\d+% slower"))
    shot(page, shots_dir, "search-plans-auto")
    page.set_viewport_size(WIDE)
    idle(page)
    shot(page, shots_dir, "search-plans-auto-wide")
    shot(page, shots_dir, "search-plans-auto-table", anchor="What the front says")
    page.set_viewport_size(VIEW)
    idle(page)

    page.get_by_role("button", name="Open ★ design").click()
    page.wait_for_url(re.compile(r"/design"), timeout=60_000)
    idle(page, timeout=120)
    expect(page.get_by_role("heading", name="Parallelism plans")).to_be_visible(timeout=120_000)
    expect(main).to_contain_text(re.compile(r"Every figure on this page is at the design's best plan of the "
                                            r"search's shortlist, TP \d+"))
    assert "plans=auto" in page.url
    shot(page, shots_dir, "design-plans", anchor="Parallelism plans")
    page.set_viewport_size(WIDE)
    idle(page)
    shot(page, shots_dir, "design-plans-wide", anchor="Parallelism plans")
    ctx.close()

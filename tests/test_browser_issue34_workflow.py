"""Issue 34, items 12, 14 and 15, where only a real browser shows them (headless Chromium, 1280x900):

- the session of the issue (1,024 GPUs, the Mixtral plan, robust worst case, Llama-3-70B online serving in the mix):
  picking the online model in the plan form keeps 1,024 GPUs and greys out EP; building it swaps it with the
  Mixtral plan (said once), the robust search can still start, and the Design page names the new first workload;
  "Add a workload from" keeps "a plan" after the top navigation;
- the latency-versus-load chart's log axis labels read in full and in order (plotly's default put bare minor
  digits between the powers of ten: 2, 1000, 5, 2, 100, ...).
"""

from __future__ import annotations

import re

import pytest

from browser_support import expect, idle, nav

pytestmark = pytest.mark.browser


def _page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    return ctx, ctx.new_page()


def _radio(page, group: str, option: str) -> None:
    page.get_by_test_id("stRadio").filter(has_text=group).get_by_text(option, exact=True).click()
    page.wait_for_timeout(300)
    idle(page)


def _select(page, label: str, option: str, typed: str) -> None:
    box = page.get_by_role("combobox", name=label, exact=True)
    box.click()
    box.fill(typed)
    page.get_by_role("option").filter(has_text=option).first.click()
    page.wait_for_timeout(300)
    idle(page)


def test_the_issues_session_swaps_the_primary_and_the_mix_keeps_two_cases(server, browser):
    ctx, page = _page(browser)
    main = page.get_by_test_id("stMain")
    page.goto(server + "/?gpus=1024")
    idle(page)
    _radio(page, "Where the workload comes from", "Parallelism plan")
    page.get_by_role("spinbutton", name="GPUs").first.fill("1024")
    page.get_by_role("button", name="Build workload").click()
    idle(page)
    _radio(page, "Robust mode", "worst case")
    _radio(page, "Add a workload from", "a plan")
    _select(page, "Model to add", "llama3-70b-online:", "llama3-70b-online")
    gpus_to_add = page.get_by_role("spinbutton", name="GPUs").nth(1)
    gpus_to_add.fill("1024")
    gpus_to_add.press("Enter")
    idle(page)
    page.get_by_role("button", name="Add to the mix").click()
    idle(page)
    expect(main).to_contain_text("over mixtral-8x7b@1024, llama3-70b-online@1024 × baseline: 2 cases")
    # another model keeps the session's 1,024 GPUs; EP is greyed out for the dense model
    _select(page, "Model", "llama3-70b-online:", "llama3-70b-online")
    assert page.get_by_role("spinbutton", name="GPUs").first.input_value() == "1024"
    assert page.get_by_role("spinbutton", name="Expert parallel (EP)").is_disabled()
    page.get_by_role("button", name="Build workload").click()
    idle(page)
    expect(main).to_contain_text("What fabric understood: plan llama3-70b-online on 1,024 GPUs")
    expect(main).to_contain_text("plan mixtral-8x7b on 1,024 GPUs takes its place further down (weight 1), so the "
                                 "mix keeps its 2 workloads")
    expect(main).to_contain_text("over llama3-70b-online@1024, mixtral-8x7b@1024 × baseline: 2 cases")
    assert page.get_by_text("The robust search cannot start").count() == 0
    expect(page).to_have_url(re.compile(r"mix=plan%3Amixtral-8x7b%3A1024"))
    nav(page, "Design")
    expect(main).to_contain_text("Context: robust worst case over 2 workloads (llama3-70b-online@1024, "
                                 "mixtral-8x7b@1024)")
    nav(page, "Workload")
    # the notice was said once; "Add a workload from" kept "a plan" (its model field is there)
    assert page.get_by_text("takes its place further down").count() == 0
    expect(page.get_by_role("combobox", name="Model to add", exact=True)).to_be_visible()
    ctx.close()


def test_the_latency_charts_log_axis_reads_in_full_and_in_order(server, browser):
    ctx, page = _page(browser)
    page.goto(server + "/design?wl=sample%3Allama3-70b-online.json")
    idle(page, 120)
    chart = page.locator(".js-plotly-plot").filter(has_text="load (% of what this design sustains)").first
    chart.scroll_into_view_if_needed()
    ticks = chart.evaluate("e => Array.from(e.querySelectorAll('.ytick text'))"
                           ".map(t => [t.textContent, t.getBoundingClientRect().y])")
    values = [float(t.replace(",", "")) for t, _ in sorted(ticks, key=lambda r: -r[1])]      # bottom to top
    assert len(values) >= 3 and values == sorted(values) and len(set(values)) == len(values), ticks
    assert all(str(int(v))[0] in "125" and set(str(int(v))[1:]) <= {"0"} for v in values if v >= 1), ticks
    assert any("," in t for t, _ in ticks)                    # 1,000 and 2,000 ms, with separators
    ctx.close()

"""Compare in a real browser: what money buys reads as each design's sentence with its free-policy and hardware
steps nested under it (list items, not a code block), after the best free policy on the reference's hardware."""

from __future__ import annotations

import urllib.parse

import pytest

from browser_support import VIEW, expect, idle

from fabric.search.baselines import baseline_designs
from fabric.search.constraints import Constraints
from fabric.search.space import DesignSpace
from fabric.search.designs import design_genes
from fabric.ui_support.urlstate import encode_genes

pytestmark = pytest.mark.browser


def test_compare_nests_the_free_policy_and_hardware_steps_under_each_design(server, browser):
    base = baseline_designs(DesignSpace(Constraints(gpus=256)))[0]                    # the fat tree 1:1
    adaptive = base.replace(name="adaptive", routing="adaptive")
    genes = [encode_genes(design_genes(d)) for d in (base, adaptive)]
    query = urllib.parse.urlencode({"design": genes[1], "compare": "|".join(genes)})
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(f"{server}/compare?{query}")
    idle(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("What money buys", timeout=60_000)
    expect(main).to_contain_text("Free first")
    nested = main.locator("li li")
    # (Streamlit's markdown draws "->" as an arrow)
    expect(nested.first).to_contain_text("Free policy (routing ecmp → adaptive) on the hardware of")
    expect(nested.nth(1)).to_contain_text("all of the difference is free policy")
    assert main.locator("pre").filter(has_text="Free policy").count() == 0      # not a code block
    assert "$" not in nested.nth(1).inner_text().replace("$0", "")                # no stray LaTeX or price
    ctx.close()

"""The dashboard (AppTest) on design versus operating conditions: the 'fragmented' what-if, old links with placement
'scattered', the front's free-policy columns, and Compare's split of what money buys."""

from __future__ import annotations

from fabric.design import Design
from fabric.search.baselines import baseline_designs
from fabric.search.constraints import Constraints
from fabric.search.space import DesignSpace
from fabric.search.designs import design_genes
from fabric.ui_support.urlstate import encode_genes

from test_app import app, finish_search, ok, texts


def test_design_page_offers_the_fragmented_cluster_as_a_what_if():
    at = app().run()
    at.switch_page("pages/design.py").run()
    ok(at)
    assert "fragmented" in at.multiselect(key="scenarios").options
    at.multiselect(key="scenarios").set_value(["fragmented"]).run()
    ok(at)
    scen = next(d.value for d in at.dataframe if "p99 change" in d.value.columns)
    assert list(scen["scenario"]) == ["fragmented"]
    assert "drawn at random" in scen["what happens"][0]


def test_an_old_link_with_placement_scattered_opens_with_a_rule_and_says_why():
    genes = design_genes(Design(gpus=256))
    genes["placement"] = "scattered"
    at = app(design=encode_genes(genes), placements="packed,scattered").run()
    ok(at)
    warn = texts(at.warning)
    assert "'scattered' is a fragmented cluster" in warn and "'fragmented'" in warn
    assert at.session_state["design_genes"]["placement"] == "packed"
    at.switch_page("pages/design.py").run()
    ok(at)
    assert not at.error


def test_front_table_separates_hardware_from_free_policy():
    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    table = next(d.value for d in at.dataframe if "policy" in d.value.columns)
    assert {"free_upgrade_of", "family", "switch_model", "transport"} <= set(table.columns)
    assert "placement" not in table.columns and "routing" not in table.columns      # both are in 'policy'
    assert all(p.split()[1] in ("packed", "rail_aligned") for p in table["policy"])
    assert "'free policy' is configuration that costs nothing" in texts(at.caption)


def test_compare_splits_what_money_buys_into_free_policy_and_hardware():
    # the 1:1 fat-tree baseline against the same hardware with adaptive routing: a free change only
    base = baseline_designs(DesignSpace(Constraints(gpus=256)))[0]
    adaptive = base.replace(name="fat tree, adaptive", routing="adaptive")
    pair = "|".join(encode_genes(design_genes(d)) for d in (base, adaptive))
    at = app(design=encode_genes(design_genes(adaptive)), compare=pair).run()
    at.switch_page("pages/compare.py").run()
    ok(at)
    assert len(at.multiselect(key="compare_pick").value) == 2
    md = texts(at.markdown).replace("\\", "")
    assert "**Free first**" in md
    assert "Free policy (routing ecmp -> adaptive) on the hardware of" in md
    assert "Hardware: the same as" in md and "all of the difference is free policy" in md
    genes = next(d.value for d in at.dataframe if "kind" in d.value.columns)
    assert list(genes.loc[genes["gene"] == "routing", "kind"]) == ["free policy"]

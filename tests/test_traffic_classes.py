"""Policies per traffic class (issue 37, item 3): serving traffic routed its own way, a serving class under strict
or weighted priority, storage traffic routed its own way; genes of the search, carried by records and links."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.design import Design
from fabric.errors import DesignError
from fabric.evaluate import evaluate, load_scenario
from fabric.workload.ingest import combine_workloads
from fabric.workload.presets import preset_workload


@pytest.fixture(scope="module")
def shared():
    """Llama-3-70B training beside disaggregated Llama-3-70B serving (each request's KV cache crosses the network)
    on a 3:1 Clos, fragmented so that both jobs cross the same leaf uplinks."""
    wl = combine_workloads([preset_workload("llama3-70b", gpus=256), preset_workload("llama3-70b-disagg", gpus=256)])
    return wl, Design(name="x", gpus=512, family="clos", oversubscription=(3.0, 1.0)), load_scenario("fragmented")


def _figures(design, wl, sc):
    ev = evaluate(design, wl, sc, samples=128)
    s = next(iter(ev.serving.values()))
    return ev.jobs["llama3-70b"]["step_time_s"]["p99"], s["tpot_s"]["p99"], s["isolation"]


def test_priority_orders_the_serving_tail(shared):
    """Shared links slow the decode tail; a class of its own under strict priority removes the training traffic's
    share; weighted priority keeps the serving weight of a contended link, so its tail lies between, closer to
    strict the larger the weight."""
    wl, d, sc = shared
    none = _figures(d, wl, sc)
    strict = _figures(d.replace(serving_class=True), wl, sc)
    w8 = _figures(d.replace(serving_class=True, serving_priority="weighted", serving_weight=0.8), wl, sc)
    w6 = _figures(d.replace(serving_class=True, serving_priority="weighted", serving_weight=0.6), wl, sc)
    assert strict[1] <= w8[1] <= w6[1] < none[1]
    assert strict[1] < none[1]
    assert (none[2], strict[2], w6[2]) == ("shared", "traffic class of its own",
                                           "traffic class of its own (weighted 0.6)")
    # training never gains from serving's priority
    assert strict[0] >= none[0] - 1e-12 and w6[0] >= none[0] - 1e-12


def test_serving_routed_its_own_way_changes_serving_only(shared):
    wl, d, sc = shared
    base = _figures(d, wl, sc)
    own = _figures(d.replace(serving_routing="adaptive"), wl, sc)
    everything = _figures(d.replace(routing="adaptive"), wl, sc)
    assert own[0] == base[0]                           # training keeps ECMP
    assert own[1] < base[1] and own[1] == pytest.approx(everything[1], rel=1e-9)
    assert everything[0] < base[0]


def test_class_shares_follow_the_priority():
    from fabric.evaluate.step import class_shares

    wl = combine_workloads([preset_workload("llama3-70b", gpus=256), preset_workload("llama3-70b-online", gpus=256)])
    jobs = list(wl.jobs)
    d = Design(name="x", gpus=512)
    assert class_shares(d, jobs, 0) is None
    assert class_shares(d.replace(serving_class=True), jobs, 0) == {1: 1.0}      # training loses the link
    w = d.replace(serving_class=True, serving_priority="weighted", serving_weight=0.7)
    assert class_shares(w, jobs, 0) == {1: 0.7} and class_shares(w, jobs, 1) == {0: pytest.approx(0.3)}


@pytest.mark.parametrize("field,value,needle", [
    ("serving_priority", "fifo", "unknown value 'fifo'; choose one of strict, weighted"),
    ("serving_weight", 0.3, "must be in [0.5, 0.99], got 0.3"),
    ("serving_routing", "magic", "'serving_routing': unknown value 'magic'"),
])
def test_bad_class_policies_name_the_field(field, value, needle):
    with pytest.raises(DesignError, match=needle.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        Design(name="x", gpus=64, **{field: value})


def test_class_genes_round_trip_through_records_and_links():
    from fabric.search.constraints import Constraints
    from fabric.search.designs import design_from_record, genes_of_record, short_label
    from fabric.search.records import evaluate_record
    from fabric.search.space import DesignSpace
    from fabric.ui_support.urlstate import decode_genes, encode_genes

    wl = combine_workloads([preset_workload("llama3-70b", gpus=256), preset_workload("llama3-70b-online", gpus=256)])
    space = DesignSpace(Constraints(gpus=512, switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",)),
                        workload=wl)
    assert space.names[-3:] == ("serving_class", "serving_priority", "serving_routing")
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(200):
        x = rng.integers(0, space.upper + 1)
        d, _ = space.decode(x)
        y = space.repair(x)
        assert space.decode(y)[0] == d
        if not d.serving_class:
            assert d.serving_priority == "strict"               # canonical without a class
        assert d.serving_routing != d.routing
        seen.add((d.serving_priority, d.serving_routing is not None))
    assert ("weighted", True) in seen
    d = Design(name="c", gpus=512, serving_class=True, serving_priority="weighted", serving_weight=0.7,
               serving_routing="adaptive", storage_routing="spray")
    rec = evaluate_record(d, wl, None, 0, 16, None, Constraints(gpus=512))
    genes = genes_of_record(rec)
    assert design_from_record(decode_genes(encode_genes(genes)), gpus=512, name="c") == d
    assert short_label(genes).endswith("+serving class (weighted 0.7) serving:adaptive storage:spray")


def test_storage_routing_is_a_gene_when_the_workload_writes_checkpoints():
    from dataclasses import replace

    from fabric.search.constraints import Constraints
    from fabric.search.space import DesignSpace
    from fabric.workload.model import Job

    wl = preset_workload("llama3-70b", gpus=256)
    ckpt = Job(name="ckpt", kind="storage", world_size=256, burst_bytes=2 * 10 ** 12, burst_period_s=600.0,
               burst_target="llama3-70b")
    cons = Constraints(gpus=256, switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",))
    assert "storage_routing" not in DesignSpace(cons, workload=wl).names
    space = DesignSpace(cons, workload=replace(wl, jobs=wl.jobs + (ckpt,)))
    assert space.names[-1] == "storage_routing" and space.gene("storage_routing").choices[0] is None


def test_new_default_fields_keep_the_design_keys_of_earlier_releases():
    """Saved searches, resumed states and shared links find designs by key: fields added with a default
    (rails_per_leaf, regions, the serving class policies) must not change the key of a design that leaves them at
    it. The keys below are what the release before them computed."""
    from fabric.search.records import design_key

    assert design_key(Design(name="x", gpus=256, family="rail_only")) == "fd56fe9dba4a942b"
    assert design_key(Design(name="y", gpus=1024, serving_class=True)) == "c851918b2ea48bf4"
    assert design_key(Design(name="y", gpus=1024, serving_class=True, serving_priority="weighted")) != \
        "c851918b2ea48bf4"

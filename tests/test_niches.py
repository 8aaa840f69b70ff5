"""The genetic search's shape niches (fabric.search.niches): every region split keeps a foothold."""

from __future__ import annotations

import numpy as np
from pymoo.core.population import Population
from pymoo.core.problem import Problem
from pymoo.operators.survival.rank_and_crowding import RankAndCrowding

from fabric.search.constraints import Constraints
from fabric.search.niches import ShapeNiches, shape_keys, shape_niches_for
from fabric.search.space import DesignSpace
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 2 ** 30


def _job(name: str, n: int) -> Job:
    g = ProcessGroup(name="world", size=n, role="dp", rank_start=0, rank_stride=1)
    return Job(name=name, kind="training", world_size=n, groups=(g,),
               ops=(CommOp(kind="all_reduce", bytes=GIB, group="world", count_per_step=1.0),), compute_time_s=0.0)


def _space(families=("clos", "rail_optimized", "regions")):
    wl = Workload(jobs=(_job("moe", 128), _job("dense", 64), _job("serve", 32)))
    return DesignSpace(Constraints(gpus=256, families=families, switch_models=("ib-ndr-64x400",),
                                   nic_models=("nic-cx7-400",)), workload=wl)


def _genome(space, family, split=None):
    x = np.zeros(space.n_var, dtype=np.int64)
    x[space.names.index("family")] = space.gene("family").choices.index(family)
    if split is not None:
        x[space.names.index("region_split")] = space.gene("region_split").choices.index(split)
    return x


def _population(X, F, cv):
    """A population with objectives ``F`` and constraint violations ``cv`` (<= 0 feasible)."""
    cv = np.asarray(cv, float)
    return Population.new(X=np.asarray(X), F=np.asarray(F, float), G=cv[:, None], H=np.zeros((len(X), 0)))


class _Toy(Problem):
    def __init__(self, n_var):
        super().__init__(n_var=n_var, n_obj=2, n_ieq_constr=1)


def test_shape_keys_name_family_and_region_split():
    space = _space()
    X = [_genome(space, "clos"), _genome(space, "regions", ("moe",)), _genome(space, "regions", ("dense", "serve"))]
    assert shape_keys(space, X) == [("clos",), ("regions", ("moe",)), ("regions", ("dense", "serve"))]


def test_niches_only_where_regions_are_searched():
    assert shape_niches_for(_space(("clos", "rail_optimized"))) is None
    assert isinstance(shape_niches_for(_space()), ShapeNiches)
    # three jobs: every non-empty proper subset is a split
    assert len(_space().gene("region_split").choices) == 6


def test_a_dominated_split_keeps_its_best_two():
    """Ten designs of split (moe) dominate every design of split (dense): plain rank and crowding keeps none of
    the dominated split in a population of eight; the niches keep its two best (its own front's ends), and the other
    six come from the dominating split."""
    space = _space()
    good = [_genome(space, "regions", ("moe",)) for _ in range(10)]
    bad = [_genome(space, "regions", ("dense",)) for _ in range(5)]
    X = np.array(good + bad)
    F = [[1 + i, 10 - i] for i in range(10)] + [[20, 30], [25, 25], [30, 20], [40, 40], [50, 50]]
    pop = _population(X, F, [0.0] * 15)
    problem = _Toy(space.n_var)
    plain = RankAndCrowding().do(problem, pop, n_survive=8, return_indices=True)
    assert all(i < 10 for i in plain)
    kept = ShapeNiches(space).do(problem, pop, n_survive=8, return_indices=True)
    assert len(kept) == 8 == len(set(kept))
    assert sorted(i for i in kept if i >= 10) == [10, 12]          # the two ends of the dense split's front
    assert sum(i < 10 for i in kept) == 6 and {0, 9} <= set(kept)  # and the good split's ends
    # the survivors carry ranks of the surviving population as one: the dominated split's designs rank below
    ranks = dict(zip(kept, ShapeNiches(space).do(problem, pop, n_survive=8).get("rank")))
    assert ranks[0] == 0 and ranks[10] >= 1


def test_infeasible_split_keeps_its_least_violating():
    """A split with no feasible design keeps the design closest to feasible, not a random one."""
    space = _space()
    X = np.array([_genome(space, "clos")] * 6 + [_genome(space, "regions", ("serve",))] * 3)
    F = [[1 + i, 6 - i] for i in range(6)] + [[1, 1], [2, 2], [3, 3]]
    cv = [0.0] * 6 + [0.5, 0.1, 0.9]
    kept = ShapeNiches(space, per_niche=1).do(_Toy(space.n_var), _population(X, F, cv), n_survive=4,
                                              return_indices=True)
    assert [i for i in kept if i >= 6] == [7]


def test_one_shape_is_plain_rank_and_crowding():
    space = _space()
    X = np.array([_genome(space, "clos")] * 8)
    F = [[1, 8], [2, 7], [3, 6], [4, 5], [5, 5], [6, 6], [7, 7], [8, 8]]
    pop = _population(X, F, [0.0] * 8)
    problem = _Toy(space.n_var)
    a = RankAndCrowding().do(problem, pop, n_survive=5, return_indices=True, random_state=np.random.default_rng(1))
    b = ShapeNiches(space).do(problem, pop, n_survive=5, return_indices=True, random_state=np.random.default_rng(1))
    assert sorted(a) == sorted(b)


def _mutate(space, X, seed, linked=True):
    from fabric.search.run import _ChoiceMutation

    class _P:
        xu = space.upper.astype(float)

    m = _ChoiceMutation(space if linked else None, prob=1.0)
    return m._do(_P(), np.asarray(X, dtype=np.int64), random_state=np.random.default_rng(seed))


def test_a_split_mutation_redraws_a_region_ratio_half_of_the_time():
    """A design of regions whose split changes also redraws one region's leaf ratio half of the time (the move of
    two genes a split usually needs); nothing else changes, and a space without regions mutates as before."""
    space = _space()
    names = space.names
    split, ra, rb = names.index("region_split"), names.index("region_a_oversub"), names.index("region_b_oversub")
    fam = names.index("family")
    x = _genome(space, "regions", ("moe",))
    X = np.repeat(x[None, :], 8000, axis=0)
    plain, linked = _mutate(space, X, 7, linked=False), _mutate(space, X, 7)
    # the same draws decide every other gene: rows differ only in the ratio genes, and only where the split moved
    moved = (linked[:, split] != x[split]) & (linked[:, fam] == x[fam])
    other = [i for i in range(space.n_var) if i not in (ra, rb)]
    assert (linked[:, other] == plain[:, other]).all()
    diff = (linked != plain).any(axis=1)
    assert not diff[~moved].any()
    ratio_changed = lambda Y: ((Y[:, ra] != x[ra]) | (Y[:, rb] != x[rb]))[moved].mean()      # noqa: E731
    n_ratio = len(space.gene("region_a_oversub").choices)
    # half of the moved rows redraw one ratio, which lands on a new value (n - 1) / n of the time
    expected = 0.5 * (n_ratio - 1) / n_ratio
    assert moved.sum() > 400
    assert ratio_changed(linked) - ratio_changed(plain) > 0.6 * expected
    # without region genes the operator is the plain one
    uniform = _space(("clos", "rail_optimized"))
    Y = np.zeros((50, uniform.n_var), dtype=np.int64)
    assert (_mutate(uniform, Y, 3) == _mutate(uniform, Y, 3, linked=False)).all()


def test_splits_of_a_cluster_the_jobs_fill_keep_region_a_on_the_largest_job():
    """When the jobs fill the cluster exactly in whole servers, a split and its complement are the same cluster
    with A and B named the other way round: only the splits whose region A holds the largest job are genes, and
    each dropped split builds the same regions as the kept complement with A and B swapped."""
    from fabric.search.region_genes import regions_for

    full = Workload(jobs=(_job("moe", 128), _job("dense", 64), _job("serve", 64)))
    cons = Constraints(gpus=256, families=("clos", "rail_optimized", "regions"), switch_models=("ib-ndr-64x400",),
                       nic_models=("nic-cx7-400",))
    kept = DesignSpace(cons, workload=full).gene("region_split").choices
    assert kept == (("moe",), ("dense", "moe"), ("moe", "serve"))
    # spare GPUs (224 of 256 used, _space): the mirror images differ in where the spares sit, all 6 are kept
    assert len(_space().gene("region_split").choices) == 6
    every = [("dense",), ("moe",), ("serve",), ("dense", "moe"), ("dense", "serve"), ("moe", "serve")]
    kw = dict(gpus=256, gpus_per_node=8, domain=8, jobs=full.jobs)
    for split in every:
        if split in kept:
            continue
        complement = tuple(sorted({"moe", "dense", "serve"} - set(split)))
        assert complement in kept
        a, b = regions_for(split, "clos", "rail_optimized", 2.0, 4.0, 1.0, **kw)
        a2, b2 = regions_for(complement, "rail_optimized", "clos", 4.0, 2.0, 1.0, **kw)
        for x, y in ((a, b2), (b, a2)):
            assert (x["nodes"], x["family"], x["oversubscription"], sorted(x.get("jobs", []))) == \
                   (y["nodes"], y["family"], y["oversubscription"], sorted(y.get("jobs", [])))

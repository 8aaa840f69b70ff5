"""Niches of the genetic search: every shape of the cluster keeps a foothold in the population.

When the space holds designs of regions (:mod:`fabric.search.region_genes`), the cheapest designs of a mixed
cluster are often of one region split (which jobs region A holds) while the population settles early on
another: the split that wins the first generations crowds the other out, and reaching the better one then needs
two or three gene changes at once (the split and the ratios that suit it), which mutation rarely makes. NSGA-II's
survival ranks the whole population as one; :class:`ShapeNiches` first keeps, for every shape present in the
parents and offspring (each uniform family, each region split), its own best few by the same rank and crowding
(feasible before infeasible, infeasible by constraint violation), then fills the rest of the population by rank
and crowding over everything left. Each shape's best designs therefore keep breeding, and the population's
ranks and crowding distances are those of the survivors as one population (so tournament selection works as
in plain NSGA-II).
"""

from __future__ import annotations

import numpy as np
from pymoo.core.population import Population
from pymoo.core.survival import Survival
from pymoo.operators.survival.rank_and_crowding import RankAndCrowding

__all__ = ["ShapeNiches", "shape_niches_for", "shape_keys"]


def shape_keys(space, X) -> list:
    """The shape of each genome in ``X`` (rows of gene indices): its family, and for a design of regions also
    its region split."""
    fam = space.names.index("family")
    split = space.names.index("region_split") if "region_split" in space.names else None
    fams, splits = space.genes[fam].choices, (space.genes[split].choices if split is not None else None)
    out = []
    for x in np.asarray(X, dtype=np.int64).reshape(len(X), -1):
        f = fams[int(x[fam])]
        out.append((f, splits[int(x[split])]) if f == "regions" and split is not None else (f,))
    return out


class ShapeNiches(Survival):
    """Rank-and-crowding survival that keeps up to ``per_niche`` individuals of every shape (see the module
    docstring); at most half of the survivors are reserved this way (fewer per shape when shapes are many)."""

    def __init__(self, space, per_niche: int = 2):
        super().__init__(filter_infeasible=False)
        if per_niche < 1:
            raise ValueError(f"per_niche must be at least 1, got {per_niche!r}")
        self.space = space
        self.per_niche = per_niche
        self.inner = RankAndCrowding()

    def _do(self, problem, pop, *args, n_survive=None, random_state=None, **kwargs):
        n_survive = len(pop) if n_survive is None else min(n_survive, len(pop))
        keys = shape_keys(self.space, pop.get("X"))
        groups: dict = {}
        for i, k in enumerate(keys):
            groups.setdefault(k, []).append(i)
        quota = min(self.per_niche, max(1, (n_survive // 2) // max(1, len(groups))))
        kept: list[int] = []
        if len(groups) > 1:
            for k in sorted(groups, key=repr):          # a fixed order: the survivors do not depend on hashing
                idx = np.asarray(groups[k])
                chosen = self.inner.do(problem, pop[idx], n_survive=min(quota, len(idx)),
                                       random_state=random_state, return_indices=True)
                kept += [int(idx[j]) for j in chosen]
        kept = kept[:n_survive]
        rest = np.setdiff1d(np.arange(len(pop)), np.asarray(kept, dtype=int))
        n_more = n_survive - len(kept)
        if n_more > 0 and len(rest):
            more = self.inner.do(problem, pop[rest], n_survive=n_more, random_state=random_state,
                                 return_indices=True)
            kept += [int(rest[j]) for j in more]
        survivors = pop[np.asarray(kept, dtype=int)]
        # ranks and crowding of the survivors as one population, for the next tournament
        return self.inner.do(problem, survivors, n_survive=len(survivors), random_state=random_state)


def shape_niches_for(space) -> ShapeNiches | None:
    """The niche survival for ``space`` when it holds designs of regions with more than one region split; None
    (plain rank and crowding) otherwise."""
    if "family" not in space.names or "regions" not in space.genes[space.names.index("family")].choices:
        return None
    if "region_split" not in space.names or len(space.genes[space.names.index("region_split")].choices) < 2:
        return None
    return ShapeNiches(space)

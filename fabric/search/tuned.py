"""The human baselines as a team would tune them: each at its best free policy, judged like every design of the
search.

A baseline as drawn (one queue pair, ECMP, packed) is a fair picture of what a person draws, not of what a team runs:
queue pairs, routing and the placement rule cost nothing. A recommendation that is "faster than the fat tree" only
against the fat tree as drawn is not one a review can defend when eight queue pairs on the same fat tree beat it.
:func:`tune_baselines` evaluates every free policy of each buildable baseline's hardware through the search's own
session (its records, its context) and keeps the best by :func:`fabric.design.policy.best_free_policy`, the one
definition of "the best free fix" the advisor, Compare and the brief use; the baseline's record gets
``tuned_p99_s``, ``tuned_policy``, ``tuned_changes`` and ``tuned_key`` (the record of the tuned design, which is
among the search's records and may be on the front).
"""

from __future__ import annotations

from fabric.errors import FabricError

__all__ = ["tune_baselines"]


class _Row:
    """What best_free_policy reads of an evaluation (its p99 step), from a search record."""

    def __init__(self, row: dict):
        if not row.get("buildable", True):
            raise FabricError(row.get("error") or "cannot be built")
        self.row = row
        self.step_time_s = {"p99": float(row["p99_s"])}


def _short(name: str) -> str:
    return name.removeprefix("baseline: ")


def tune_baselines(session, space, bases: list, base_recs: list[dict]) -> list[dict]:
    """``base_recs`` (the baselines' records, in the order of ``bases``) with their tuned figures (see the module
    docstring); every policy tried is a record of ``session`` from then on."""
    from fabric.design.policy import best_free_policy, policy_options, policy_text
    from fabric.search.records import design_key

    # every baseline's policies in one batch: a baseline's policies share its cabling, so one batch per baseline
    # kept the workers of a parallel runner one busy and the others idle
    tried, batch = [], []
    for d, rec in zip(bases, base_recs):
        if not rec.get("buildable", True):
            tried.append(None)
            continue
        options = [d] + [o for o in policy_options(d) if o != d]
        genomes = [space.encode(o) for o in options]
        # the other policies named as the search names its designs (the baseline's name is the drawing's alone)
        named = [o if i == 0 else o.replace(name=space.decode(g)[0].name if g is not None else
                                            f"{_short(d.name)} with {policy_text(o)}")
                 for i, (o, g) in enumerate(zip(options, genomes))]
        tried.append((options, genomes, len(batch)))
        batch += [(o, g, ()) for o, g in zip(named, genomes)]
    all_rows = session.evaluate_designs(batch) if batch else []
    out = []
    for d, rec, t in zip(bases, base_recs, tried):
        if t is None:
            out.append(rec)
            continue
        options, genomes, at = t
        rows = all_rows[at:at + len(options)]
        for g, r in zip(genomes, rows):
            if g is None:               # a policy the constraints do not allow: judged, never on the front
                session.outside.add(r["key"])
        by_design = {design_key(o): r for o, r in zip(options, rows)}      # (a design's key leaves its name out)

        def judge(x, _by=by_design):
            return _Row(_by[design_key(x)])

        best = best_free_policy(d, judge)
        tuned = by_design[design_key(best["design"])]
        out.append(dict(rec, tuned_p99_s=float(best["p99_s"]), tuned_policy=best["policy"],
                        tuned_changes=list(best["changes"]), tuned_key=tuned["key"],
                        tuned_feasible=bool(tuned.get("feasible", True))))
    return out

"""The recommendation's neighbourhood: every one-gene change of the recommended design, until none dominates it.

A genetic search that stops (on its budget, or on the convergence rule) may leave its recommended design one
decision away from a better one: a cheaper switch, a ratio that costs less for the same p99, another routing. At the
end of every search (not cancelled) :func:`check_recommendation` evaluates every one-gene change of the recommended
design (:func:`one_gene_neighbours`: each gene set to each of its other choices, repaired to a canonical design; a
design that cannot be built is evaluated as infeasible, as in the search), adds them to the search's records, and
takes the front and the recommendation again. When the recommendation moved (a neighbour dominates it: feasible,
cost <= and p99 <= with one strict; or the recommendation rule now picks another design, e.g. a tie the tie rule
prefers), the new recommendation's neighbourhood is checked in turn, up to ``max_rounds`` rounds. The recommendation
that comes out is a local optimum: no one-gene change of it dominates it.

A converged search first makes its whole front 1-opt (:func:`polish_front`: every front design's one-gene
neighbourhood, again from each new front design, until none is left, within an evaluation cap): a design better than
the recommendation may be one change away from another front design and several from the recommendation (one 400G
NIC per two GPUs against one 200G NIC per GPU with 400G uplinks: three genes), and a search under limits the
recommendation meets could otherwise settle on a design it dominates.

The search's records grow by the neighbours evaluated (they are counted in ``SearchResult.evaluations``, beyond the
evaluation budget, like the tie rule's plain variants); ``SearchResult.neighbourhood`` says how many, in how many
rounds, how long it took and whether (and from where to where) the recommendation moved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["one_gene_neighbours", "dominates", "NeighbourhoodCheck", "polish_front", "check_recommendation"]


def one_gene_neighbours(space, genome) -> list[np.ndarray]:
    """Every distinct repaired genome that differs from ``genome`` in one gene's choice."""
    base = np.asarray(genome, dtype=np.int64)
    seen, out = {tuple(space.repair(base).tolist())}, []
    for i, gene in enumerate(space.genes):
        for c in range(len(gene.choices)):
            if c == base[i]:
                continue
            y = base.copy()
            y[i] = c
            y = space.repair(y)
            key = tuple(y.tolist())
            if key not in seen:
                seen.add(key)
                out.append(y)
    return out


def dominates(a: dict, b: dict) -> bool:
    """True when record ``a`` is feasible and dominates ``b`` on cost and p99 (the search's cost and p99
    objectives, ``objective_cost``/``objective_p99`` when it minimises cost per step): no worse on both, better on
    one."""
    if not a.get("feasible"):
        return False
    ca, pa = _cost_p99(a)
    cb, pb = _cost_p99(b)
    return ca <= cb and pa <= pb and (ca < cb or pa < pb)


def _cost_p99(rec: dict) -> tuple[float, float]:
    from fabric.search.records import record_objectives

    c, p = record_objectives(rec, 2)
    return float(c), float(p)


@dataclass
class NeighbourhoodCheck:
    """What :func:`check_recommendation` did. The recommendation's rounds: one-gene neighbours looked at
    (``checked``), ``rounds``, its ``moves`` (design names ``{"from", "to"}``), whether the final recommendation is a
    local optimum (every one-gene change of it evaluated, none dominating it; False when the round limit stopped the
    check first or there was nothing to recommend) and its name. The front's polish (a converged search only):
    ``front_rounds``, ``front_evaluated`` and ``front_one_opt`` (None: not run; False: its evaluation cap stopped it
    first). ``evaluated``: every design the check evaluated that the search had not (counted beyond the budget);
    ``seconds``: the whole check."""

    checked: int = 0
    evaluated: int = 0
    rounds: int = 0
    seconds: float = 0.0
    moves: list = field(default_factory=list)
    local_optimum: bool = False
    recommended: str = ""
    front_rounds: int = 0
    front_evaluated: int = 0
    front_one_opt: bool | None = None

    def to_dict(self) -> dict:
        return {"checked": self.checked, "evaluated": self.evaluated, "rounds": self.rounds,
                "seconds": self.seconds, "moves": list(self.moves), "local_optimum": self.local_optimum,
                "recommended": self.recommended, "front_rounds": self.front_rounds,
                "front_evaluated": self.front_evaluated, "front_one_opt": self.front_one_opt}

    def sentence(self) -> str:
        """The check in one sentence, for the summary."""
        if not self.rounds and self.front_one_opt is None:
            return ""
        what = ""
        if self.front_one_opt is not None:
            what = (f"the front's one-gene neighbourhoods: {self.front_evaluated:,} designs evaluated in "
                    f"{self.front_rounds} round{'s' if self.front_rounds != 1 else ''}, "
                    + ("no one-gene change of a front design dominates one or joins the front (1-opt); "
                       if self.front_one_opt else "stopped by its evaluation cap before the front was 1-opt; "))
        what += (f"neighbourhood check of the recommendation: {self.checked:,} one-gene change"
                 f"{'s' if self.checked != 1 else ''} looked at in {self.rounds} round"
                 f"{'s' if self.rounds != 1 else ''}, {self.evaluated:,} designs newly evaluated in all, "
                 f"{self.seconds:.1f} s")
        if self.moves:
            n = len(self.moves)
            what += (f"; the recommendation moved from {self.moves[0]['from']!r} to {self.moves[-1]['to']!r}"
                     + (f" in {n} steps" if n > 1 else ""))
        if self.local_optimum:
            what += "; no one-gene change of the recommended design dominates it"
        elif self.rounds:
            what += "; the round limit stopped the check before the recommendation settled"
        return what + "."


def polish_front(session, front_of, *, max_evaluations: int, max_rounds: int = 20, after_round=None,
                 out: NeighbourhoodCheck | None = None) -> NeighbourhoodCheck:
    """Evaluate the one-gene neighbourhood of every front design, again from each new front design, until the front
    is 1-opt (every front design's neighbourhood evaluated: none of them dominates a front design or joins the
    front), ``max_rounds`` rounds have run, or ``max_evaluations`` new designs have been evaluated (checked between
    rounds: the last round may go beyond it by its size). Fills ``out``'s front fields."""
    out = out if out is not None else NeighbourhoodCheck()
    expanded: set = set()
    out.front_one_opt = False
    while True:
        todo = [r for r in front_of() if r["key"] not in expanded and r.get("genome") is not None]
        if not todo:
            out.front_one_opt = True
            break
        if out.front_rounds == max_rounds or out.front_evaluated >= max_evaluations:
            break
        out.front_rounds += 1
        batch = []
        for r in todo:
            expanded.add(r["key"])
            batch.extend(one_gene_neighbours(session.space, r["genome"]))
        before = session.evaluations
        session.evaluate_genomes(batch)
        out.front_evaluated += session.evaluations - before
        if after_round is not None:
            after_round()
    out.evaluated += out.front_evaluated
    return out


def check_recommendation(session, front_of, pick, *, max_rounds: int = 8, after_round=None,
                         front_evaluations: int = 0) -> NeighbourhoodCheck:
    """Evaluate the one-gene neighbourhood of the recommended design in ``session`` (the search's evaluation
    session: ``space``, ``evaluate_genomes``, ``evaluations``) until the recommendation stops moving; with
    ``front_evaluations`` > 0, first make the whole front 1-opt with at most about that many new evaluations
    (:func:`polish_front`).

    ``front_of()``: the current feasible front of the session's records; ``pick(front)``: the recommended record of
    a front (or None); ``after_round()``: called after each round's evaluations (the search evaluates the tie rule's
    plain variants of new front designs there). At most ``max_rounds`` neighbourhoods of the recommendation are
    evaluated.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    t0 = time.perf_counter()
    out = NeighbourhoodCheck()
    if front_evaluations > 0:
        polish_front(session, front_of, max_evaluations=front_evaluations, after_round=after_round, out=out)
    expanded: dict[str, list] = {}      # recommended key -> its neighbours' records
    rec = pick(front_of())
    while rec is not None and rec.get("genome") is not None:
        if rec["key"] in expanded:          # its neighbourhood is known: the recommendation has settled
            out.local_optimum = not any(dominates(n, rec) for n in expanded[rec["key"]])
            break
        if out.rounds == max_rounds:
            break
        out.rounds += 1
        neighbours = one_gene_neighbours(session.space, rec["genome"])
        before = session.evaluations
        expanded[rec["key"]] = session.evaluate_genomes(neighbours)
        out.checked += len(neighbours)
        out.evaluated += session.evaluations - before
        if after_round is not None:
            after_round()
        new = pick(front_of())
        if new is not None and new["key"] != rec["key"]:
            out.moves.append({"from": rec["design"], "to": new["design"]})
        rec = new
    out.recommended = "" if rec is None else str(rec.get("design", ""))
    out.seconds = time.perf_counter() - t0
    return out

"""Designs that tie on every objective: which one the front keeps, and the others it names.

Two designs of one hardware cost the same, and when the network does not set the step's pace (a serving job that
stays inside NVLink, compute-bound training) many free policies (and cost-neutral options) give the very same p99.
The front can hold one point there; which design stands for it must not depend on the order in which a search
happened to evaluate them. The rule is :data:`fabric.design.policy.TIE_RULE` (the plainest configuration), applied
by :func:`front_order` before the front is taken, and :func:`plain_variants` makes sure the plainest free policy of
every front design's hardware has been evaluated at the end of a search, so identical searches recommend the same
design. :func:`front_ties` lists, per front design, the evaluated designs tying with it, which the pages show.
"""

from __future__ import annotations

from fabric.design.policy import plainness, policy_options

__all__ = ["front_order", "front_ties", "plain_variants", "ties_text"]


def _objectives(rec: dict, keys) -> tuple:
    from fabric.search.records import record_objectives

    return tuple(float(v) for v in record_objectives(rec, keys))


def front_order(records: list[dict], keys) -> list[dict]:
    """``records`` (``keys``: the search's objective columns or their count) ordered by their objectives, then by the tie rule, then by key: among designs tying on every
    objective the first is the plainest (the one a duplicate-keeping front keeps)."""
    return sorted(records, key=lambda r: (_objectives(r, keys), _tie_key(r)))


def _tie_key(r: dict) -> tuple:
    """Among designs tying on every objective: the cheaper cluster first (cost per step, servers included: two GPU
    systems with one network), then the plainest configuration, then the key (a total order)."""
    return (float(r.get("usd_per_step", 0.0)), plainness(r), str(r.get("key")))


def front_ties(front: list[dict], records: list[dict], keys) -> dict:
    """Per front design (its key): the other feasible records with exactly its objectives, plainest first."""
    at = {_objectives(r, keys): r.get("key") for r in front}
    out: dict = {}
    for r in records:
        if not r.get("feasible"):
            continue
        k = at.get(_objectives(r, keys))
        if k is not None and r.get("key") != k:
            out.setdefault(k, []).append(r)
    return {k: sorted(v, key=_tie_key) for k, v in out.items()}


def plain_variants(front: list[dict], space, known: set) -> list:
    """Designs to evaluate so that every front design's hardware has its plainest free policy evaluated: per
    front design decoded from its genome, the first of its policy options by the tie rule, when not yet known
    (``known``: keys already evaluated). ``(design, genome, repairs)`` triples for the search's session."""
    from fabric.search.records import design_key

    out, seen = [], set()
    for r in front:
        genome = r.get("genome")
        if genome is None:
            continue
        design, _ = space.decode(genome)
        plain = min(policy_options(design), key=plainness)
        g = space.encode(plain)
        key = design_key(plain)
        if g is None or key in known or key in seen:
            continue
        seen.add(key)
        named, repairs = space.decode(g)        # the space's own name for it (policy_options keeps the old one)
        out.append((named, g, repairs))
    return out


def ties_text(rec: dict, ties: list[dict], *, shown: int = 3) -> str:
    """``"ties with 4 others at the same cost and p99 (adaptive packed, spray packed, ...)"`` or ``""``."""
    if not ties:
        return ""
    from fabric.search.records import policy_text_of_record

    names = []
    for t in ties:
        p = policy_text_of_record(t)
        if p not in names and p != policy_text_of_record(rec):
            names.append(p)
    more = len(names) - shown
    listing = ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
    n = len(ties)
    return (f"ties with {n} other design{'s' if n != 1 else ''} at the same cost and p99"
            + (f" (free policies: {listing})" if listing else ""))

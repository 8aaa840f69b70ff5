"""Which front design to propose, and the sentence saying by which rule and against which reference.

A design review reads the rule beside the star: "cheapest front design meeting the p99 target of 4.70 s", or
"cheapest front design at least as fast (p99) as the baseline 'fat tree 2:1' (4.68 s); 'fat tree 1:1' was not
used: over the budget by 11.1 %". :func:`violation_text` says in words why a design does not meet the
constraints (the search's normalised violations, > 0 when violated).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Recommendation", "recommend", "violation_text", "seconds_text", "blast_radius_text"]

_LIMIT_WORDS = {
    "budget": "over the budget", "power": "over the power limit", "cables": "over the cable count limit",
    "radix": "above the radix limit", "p99_target": "p99 above the target",
    "p99_failure": "p99 under the worst single failure above its limit",
    "p99_failure_slowdown": "p99 under the worst single failure slower than the healthy p99 allows",
    "inference_ttft": "serving p99 time to first token above its limit",
    "inference_tpot": "serving p99 time per output token above its limit",
    "inference_slo": "serving SLO attainment below its target",
}


def seconds_text(seconds: float) -> str:
    """A step time for a sentence: ``4.68 s``, ``412.3 ms`` (:func:`fabric.units.time_text`)."""
    from fabric.units import time_text

    return time_text(seconds)


def violation_text(rec: dict) -> str:
    """Why ``rec`` is infeasible, in words (``""`` when it meets every constraint)."""
    if not rec.get("buildable", True):
        return f"it cannot be built ({rec['error']})" if rec.get("error") else "it cannot be built"
    parts = []
    if (rec.get("violations") or {}).get("partition", 0) > 0:
        parts.append("it does not survive a single switch or cable failure")
    for name, v in (rec.get("violations") or {}).items():
        if name == "gpus_lost" and v > 0:
            gpus = int(rec.get("gpus") or 0)
            lost = int(rec.get("gpus_lost_on_worst_switch_failure", 0))
            over = int(round(v * gpus))
            parts.append(f"the worst single switch failure takes {lost:,} of {gpus:,} GPUs out of the job, "
                         f"{over:,} over the limit")
        elif name == "p99_failure_slowdown" and v > 0 and "p99_failure_slowdown" in rec:
            parts.append(f"the worst single failure slows the p99 by {rec['p99_failure_slowdown']:+.1%}, "
                         f"{v:.1%} above what the limit allows")
        elif name in _LIMIT_WORDS and v > 0:
            parts.append(f"{_LIMIT_WORDS[name]} by {v:.1%}")
    return "; ".join(parts)


def blast_radius_text(rec: dict) -> str:
    """A design's blast radius in one sentence (issue 34): the GPUs the worst single switch failure takes out of the
    job, the GPUs that ride a failure out through another GPU's NIC, and the p99 under the worst single failure
    with its slowdown when it was evaluated. ``""`` for a record that cannot be built or has no such figures."""
    if not rec.get("buildable", True) or "gpus_lost_on_worst_switch_failure" not in rec:
        return ""
    gpus = int(rec.get("gpus") or 0)
    lost = int(rec["gpus_lost_on_worst_switch_failure"])
    of = f" of {gpus:,}" if gpus else ""
    parts = [f"the worst single switch failure takes {lost:,}{of} GPUs out of the job" if lost else
             "no single switch failure takes a GPU out of the job"]
    det = int(rec.get("gpus_detoured_on_single_failure") or 0)
    if det:
        parts.append(f"one takes {det:,} GPUs' own NICs away, which carry on through their servers' other NICs "
                     f"over NVLink")
    p = rec.get("p99_failure_s")
    if p is not None:
        from fabric.search.records import INFEASIBLE_P99

        if p >= INFEASIBLE_P99:
            parts.append("it does not survive every single failure")
        else:
            slow = rec.get("p99_failure_slowdown", p / rec["p99_s"] - 1.0 if rec.get("p99_s") else 0.0)
            which = f" ({rec['worst_failure']})" if rec.get("worst_failure") else ""
            parts.append(f"p99 under the worst single failure{which} {seconds_text(p)} ({slow:+.1%})")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


@dataclass(frozen=True)
class Recommendation:
    """The proposed design (``record``, None for an empty front), the rule that chose it, and the reference the
    rule compared against (a baseline record, or None)."""

    record: dict | None
    rule: str
    reference: dict | None = None


def recommend(front: list[dict], baselines: list[dict], *, p99_target_s: float | None = None) -> Recommendation:
    """The design to propose from a front, with the rule used, stated with its actual reference.

    1. With a p99 target: the cheapest front design that meets it.
    2. Otherwise (or when none meets it): the cheapest front design at least as fast (p99) as the first baseline
       that is buildable and meets the constraints (normally the fat tree 1:1; when it is over a limit, the next
       one, and the rule names both).
    3. When no front design is that fast, or no baseline qualifies: the fastest front design.
    """
    if not front:
        return Recommendation(None, "the front is empty: no design meets every constraint")
    cheapest = lambda rows: min(rows, key=lambda r: (r["cost_usd"], r["p99_s"]))  # noqa: E731
    missed = ""
    if p99_target_s is not None:
        meets = [r for r in front if r["p99_s"] <= p99_target_s]
        if meets:
            return Recommendation(cheapest(meets), f"the cheapest front design meeting the p99 target of "
                                                   f"{seconds_text(p99_target_s)}")
        missed = f"no front design meets the p99 target of {seconds_text(p99_target_s)}, so: "
    usable = [b for b in baselines if b.get("buildable", True)]
    ref = next((b for b in usable if b.get("feasible", True)), None)
    skipped = [b for b in usable[: usable.index(ref)]] if ref is not None else usable
    why_not = "; ".join(f"'{_short(b)}' was not used: {violation_text(b) or 'it does not meet the constraints'}"
                        for b in skipped)
    if ref is not None:
        bar, as_what = _bar(ref)
        as_fast = [r for r in front if r["p99_s"] <= bar]
        if as_fast:
            rule = f"{missed}the cheapest front design at least as fast (p99) as the baseline '{_short(ref)}' {as_what}"
            return Recommendation(cheapest(as_fast), rule + (f" ({why_not})" if why_not else ""), ref)
        rule = (f"{missed}no front design is as fast (p99) as the baseline '{_short(ref)}' {as_what}, so the fastest "
                f"front design")
        return Recommendation(min(front, key=lambda r: (r["p99_s"], r["cost_usd"])),
                              rule + (f" ({why_not})" if why_not else ""), ref)
    rule = f"{missed}no baseline meets the constraints to compare with, so the fastest front design"
    return Recommendation(min(front, key=lambda r: (r["p99_s"], r["cost_usd"])),
                          rule + (f" ({why_not})" if why_not else ""))


def _bar(ref: dict) -> tuple[float, str]:
    """The p99 a recommendation must reach against the baseline ``ref``: the baseline as a team would tune it (its
    best free policy, fabric.search.tuned) when that is faster than as drawn, and the words saying which."""
    drawn = float(ref["p99_s"])
    tuned = ref.get("tuned_p99_s")
    if tuned is None or not tuned < drawn:
        return drawn, f"({seconds_text(drawn)}" + ("; no free policy makes it faster)" if tuned is not None else ")")
    return float(tuned), (f"as a team would tune it ({', '.join(ref.get('tuned_changes') or [])}, no hardware: "
                          f"{seconds_text(tuned)}; as drawn {seconds_text(drawn)})")


def _short(rec: dict) -> str:
    return str(rec["design"]).removeprefix("baseline: ")

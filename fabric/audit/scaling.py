"""Scaling efficiency between job sizes and the "network is the primary suspect" rule.

Efficiency of size M against the smallest traced size N, from the median (p50) step time:

- weak scaling (the per-GPU batch is fixed, the default):   E = p50(N) / p50(M)
- strong scaling (the global batch is fixed):               E = p50(N) * N / (p50(M) * M)

The rule (the seed rule, stated once here and in docs/audit.md): when the job is traced at N and at 4N GPUs or
more and E < ``SUSPECT_EFFICIENCY`` (80 %), the network is flagged the primary suspect; E between
``BORDERLINE_EFFICIENCY`` (75 %) and 80 % is the rule's borderline band and is labelled so. The evidence is where the
step-time growth went: compute (step minus exposed collective time), communication wait (ranks waiting for a late
peer: not the network's doing) and exposed transfer (exposed collective time minus the wait: the network's share).
When most of the growth is not exposed transfer, the verdict says so: the flag stands by the rule, the evidence
points elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.errors import FabricError

__all__ = ["SUSPECT_EFFICIENCY", "BORDERLINE_EFFICIENCY", "RULE_TEXT", "SizePoint", "ScalingPoint", "scaling",
           "verdict"]

SUSPECT_EFFICIENCY = 0.80
BORDERLINE_EFFICIENCY = 0.75
RULE_TEXT = ("network is the primary suspect when the scaling efficiency from N to 4N GPUs (or more) is below 80 % "
             "(75-80 %: borderline)")


@dataclass(frozen=True)
class SizePoint:
    """What the scaling rule needs of one job size (seconds over the (rank, step) records: the p50 step for the
    efficiency, means for the growth split, so that compute + wait + exposed transfer = mean step exactly)."""

    world_size: int
    step_p50_s: float
    step_mean_s: float
    compute_s: float          # step minus exposed collective time
    wait_s: float
    exposed_transfer_s: float  # exposed collective time minus wait


@dataclass(frozen=True)
class ScalingPoint:
    n_from: int
    n_to: int
    efficiency: float
    rule_applies: bool         # n_to >= 4 n_from
    flagged: bool              # rule applies and efficiency < 80 %
    borderline: bool           # flagged with efficiency >= 75 %
    growth_s: float            # mean step growth beyond what the scaling mode expects
    growth_compute_s: float
    growth_wait_s: float
    growth_transfer_s: float
    compute_ratio: float       # compute per step at n_to / (expected from n_from)


def scaling(points: list[SizePoint], mode: str = "weak") -> list[ScalingPoint]:
    """Efficiency of every larger size against the smallest (``mode`` "weak" or "strong")."""
    if mode not in ("weak", "strong"):
        raise FabricError(f"scaling mode must be 'weak' or 'strong', got {mode!r}")
    pts = sorted(points, key=lambda p: p.world_size)
    if len(pts) < 2:
        return []
    base = pts[0]
    out = []
    for p in pts[1:]:
        f = 1.0 if mode == "weak" else base.world_size / p.world_size   # expected step-time ratio at perfect scaling
        eff = (base.step_p50_s * f) / p.step_p50_s if p.step_p50_s > 0 else 0.0
        applies = p.world_size >= 4 * base.world_size
        flagged = applies and eff < SUSPECT_EFFICIENCY
        out.append(ScalingPoint(
            n_from=base.world_size, n_to=p.world_size, efficiency=eff, rule_applies=applies, flagged=flagged,
            borderline=flagged and eff >= BORDERLINE_EFFICIENCY, growth_s=p.step_mean_s - base.step_mean_s * f,
            growth_compute_s=p.compute_s - base.compute_s * f, growth_wait_s=p.wait_s - base.wait_s * f,
            growth_transfer_s=p.exposed_transfer_s - base.exposed_transfer_s * f,
            compute_ratio=p.compute_s / (base.compute_s * f) if base.compute_s > 0 else 1.0))
    return out


def _ms(x: float) -> str:
    return f"{x * 1e3:+.2f} ms"


def verdict(points: list[ScalingPoint], sizes: list[int]) -> tuple[str, bool, list[str]]:
    """(one-line verdict, network flagged, evidence lines) by :data:`RULE_TEXT`."""
    rule = [p for p in points if p.rule_applies]
    if not rule:
        why = (f"one job size traced ({sizes[0]} GPUs)" if len(sizes) == 1 else
               f"sizes {', '.join(map(str, sizes))} GPUs: none is 4x the smallest")
        return (f"scaling rule not applicable: {why}; trace the same job at N and 4N GPUs", False, [])
    p = max(rule, key=lambda q: q.n_to)
    evidence = [f"efficiency {p.n_from} -> {p.n_to} GPUs: {p.efficiency:.1%} (rule: {RULE_TEXT})",
                f"mean step growth beyond perfect scaling {_ms(p.growth_s)}: compute {_ms(p.growth_compute_s)}, "
                f"communication wait {_ms(p.growth_wait_s)}, exposed transfer {_ms(p.growth_transfer_s)}"]
    if p.compute_ratio > 2.0 or p.compute_ratio < 0.5:
        evidence.append(f"compute per step differs {p.compute_ratio:.1f}x between {p.n_from} and {p.n_to} "
                        f"GPUs: check that both are the same job at the same per-GPU batch")
    if not p.flagged:
        return (f"network not flagged: scaling efficiency {p.n_from} -> {p.n_to} GPUs is {p.efficiency:.1%} "
                f"(>= 80 %)", False, evidence)
    band = " (borderline band 75-80 %)" if p.borderline else ""
    text = f"network is the primary suspect: scaling efficiency {p.n_from} -> {p.n_to} GPUs is {p.efficiency:.1%}{band}"
    parts = {"compute": p.growth_compute_s, "communication wait (a late rank, not the network)": p.growth_wait_s,
             "exposed transfer": p.growth_transfer_s}
    top = max(parts, key=parts.get)
    if p.growth_s > 0 and top != "exposed transfer":
        evidence.append(f"but most of the growth is {top}: look there before the network")
    return text, True, evidence

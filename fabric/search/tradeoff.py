"""How a change of network capex and p99 step time reads: the one wording of what money buys, used by the Design
page's cheapest fixes, the Compare page, the search summary and ``fabric advise``.

- A p99 change smaller than :data:`SAME_P99_SHARE` of the reference p99 (0.5 %, the advisor's default
  ``min_gain``) is **the same p99**: "1.00x faster" is never written.
- A **price per millisecond** of p99 saved exists only for a change that is faster by more than that and costs
  more: a change that saves nothing, or a slower one, has none (no "None", no "$9,828 per ms" for a slower
  design); the words say what it is instead ("no p99 saved", "slower and dearer: no saving", ...).
"""

from __future__ import annotations

import math

__all__ = ["SAME_P99_SHARE", "SAME_COST_USD", "same_p99", "usd_per_ms", "usd_per_ms_text", "speedup_text"]

#: A p99 change under this share of the reference p99 is "the same p99" (the advisor's default min_gain).
SAME_P99_SHARE = 0.005
#: A capex change under this (half a dollar) is "the same cost".
SAME_COST_USD = 0.5


def same_p99(delta_p99_s: float, ref_p99_s: float) -> bool:
    """True when a p99 change is under :data:`SAME_P99_SHARE` of the reference p99."""
    return abs(delta_p99_s) < SAME_P99_SHARE * abs(ref_p99_s) or delta_p99_s == 0


def usd_per_ms(delta_cost_usd: float, delta_p99_s: float, ref_p99_s: float) -> float | None:
    """Dollars per millisecond of p99 saved: only for a change faster by more than the same-p99 share that costs
    more; None otherwise (it saves no p99, is slower, or costs nothing more)."""
    if delta_p99_s < 0 and not same_p99(delta_p99_s, ref_p99_s) and delta_cost_usd >= SAME_COST_USD:
        return float(delta_cost_usd / (-delta_p99_s * 1e3))
    return None


def usd_per_ms_text(delta_cost_usd: float, delta_p99_s: float, ref_p99_s: float) -> str:
    """The price of the p99 a change saves, in words: ``$1,234 per ms``, ``no cost``, ``cheaper too``, ``no p99
    saved``, ``slower and dearer: no saving``, ``slower (cheaper)``, ``slower (same cost)``."""
    per = usd_per_ms(delta_cost_usd, delta_p99_s, ref_p99_s)
    if per is not None:
        return f"${per:,.0f} per ms"
    dearer, cheaper = delta_cost_usd >= SAME_COST_USD, delta_cost_usd <= -SAME_COST_USD
    if same_p99(delta_p99_s, ref_p99_s):
        return "no p99 saved"
    if delta_p99_s < 0:
        return "cheaper too" if cheaper else "no cost"
    if dearer:
        return "slower and dearer: no saving"
    return "slower (cheaper)" if cheaper else "slower (same cost)"


def speedup_text(ref_p99_s: float, p99_s: float) -> str:
    """A p99 against a reference p99 in words: ``the same p99 (within 0.5 %)``, ``a 3.1% shorter p99``, ``a 1.45x
    faster p99`` (from 10 % faster on), ``a 2.0% longer p99``."""
    if not (math.isfinite(ref_p99_s) and math.isfinite(p99_s)) or ref_p99_s <= 0 or p99_s <= 0:
        raise ValueError(f"speedup_text: p99s must be positive and finite, got {ref_p99_s!r} and {p99_s!r}")
    if same_p99(p99_s - ref_p99_s, ref_p99_s):
        return f"the same p99 (within {SAME_P99_SHARE:.1%})"
    if p99_s < ref_p99_s:
        ratio = ref_p99_s / p99_s
        return f"a {ratio:.2f}x faster p99" if ratio >= 1.1 else f"a {1 - p99_s / ref_p99_s:.1%} shorter p99"
    return f"a {p99_s / ref_p99_s - 1:.1%} longer p99"

"""Computed path assignment: a controller places every flow on a path (switch-side load balancing such as NSLB,
or path pinning by a fabric manager that knows the job's flows), so no two flows share a link while another
link of the group has fewer.

Flows are not split (each keeps its path, so nothing is reordered), which is what separates this from spraying's
fluid even split: ``k`` equal flows on ``n`` equal links put ``ceil(k / n)`` on the busiest, the max-min ideal of
unsplittable flows (no assignment does better, and an even one reaches it). Between leaves of a Clos the
leaf-to-leaf flows form a bipartite multigraph whose edges can be coloured with as many colours as its largest
degree (Konig's edge-colouring theorem), so spines can be given to flows so that every uplink group and downlink
group reaches its own ``ceil(k / n)`` at once. Slow links take fewer flows: the busiest link time is the smallest
``m`` (in flows at full speed) such that the fast links' ``m`` flows each and the slow links' ``floor(m x speed)``
each hold all ``k``.
"""

from __future__ import annotations

import math

__all__ = ["computed_busiest_balls"]


def computed_busiest_balls(k: int, n: int, slow: int = 0, slow_factor: float = 1.0) -> float:
    """Flows on the busiest link of a group of ``n`` links (``slow`` of them at ``slow_factor`` of the speed) when
    ``k`` equal flows are placed optimally, counted at full speed (a slow link's flows count 1 / slow_factor).
    ``inf`` when the group has no link."""
    k, n, slow = int(k), int(n), int(slow)
    if k <= 0:
        return 0.0
    if n <= 0:
        return math.inf
    fast = n - slow
    sf = float(slow_factor) if slow else 1.0
    if slow == 0 or sf >= 1.0:
        return float(math.ceil(k / n))
    if fast == 0:
        return math.ceil(k / n) / sf
    # smallest m with fast x m + slow x floor(m sf) >= k; the fast links alone bound it by ceil(k / fast)
    for m in range(max(1, math.ceil(k / (fast + slow * sf))), math.ceil(k / fast) + 1):
        if fast * m + slow * math.floor(m * sf + 1e-12) >= k:
            return float(m)
    return float(math.ceil(k / fast))

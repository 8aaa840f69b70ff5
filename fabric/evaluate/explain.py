"""Explain the p99 step: how much of it is compute, stragglers, scale-up (NVLink) and scale-out (network)
communication, and whether a different network could change it at all.

The evaluator's p99 sample splits exactly into compute (the mean compute of a rank, plus what the slowest of the
job's ranks takes beyond it: stragglers), the exposed communication of each op (not hidden behind compute) and
checkpoint interference. An op's exposed time is split between NVLink and the network by the share of its time
each would take on its own (the longer one gets all of it when the two overlap, as hierarchical algorithms
pipeline them). Only the network part (with checkpoint interference, which a separate storage network removes)
is what a different fabric can change; when it is under :data:`NETWORK_MATTERS` of the step, the review is told
so in one sentence.
"""

from __future__ import annotations

__all__ = ["explain_step", "NETWORK_MATTERS", "PARTS"]

#: Below this share of the p99 step, no scale-out fabric can change the step much.
NETWORK_MATTERS = 0.10
#: The parts of the p99 step, in the order they are shown.
PARTS = ("compute", "stragglers", "nvlink", "network", "interference")
_WORDS = {"compute": "compute", "stragglers": "stragglers (the slowest rank's extra compute)",
          "nvlink": "NVLink (scale-up) communication", "network": "scale-out network communication",
          "interference": "checkpoint interference"}


def _t(seconds: float) -> str:
    from fabric.units import time_text

    return time_text(seconds)


def explain_step(evaluation) -> dict:
    """``{"parts_s": {part: seconds}, "shares": {part: share of the p99 step}, "step_s", "network_share",
    "network_can_change", "sentence"}`` for the primary job's p99 step."""
    b = evaluation.p99_breakdown
    parts = {"compute": float(b.get("compute_mean_s", b.get("compute_s", 0.0))),
             "stragglers": float(b.get("stragglers_s", 0.0)), "nvlink": float(b.get("nvlink_s", 0.0)),
             "network": float(b.get("network_s", sum(b.get("ops", {}).values()))),
             "interference": float(b.get("interference_s", 0.0))}
    step = sum(parts.values())
    shares = {k: (v / step if step > 0 else 0.0) for k, v in parts.items()}
    net_share = shares["network"] + shares["interference"]
    can = net_share >= NETWORK_MATTERS
    biggest = max(("compute", "stragglers", "nvlink"), key=lambda k: parts[k])
    listing = ", ".join(f"{_WORDS[k]} {_t(parts[k])} ({shares[k]:.0%})" for k in PARTS if parts[k] > 0)
    if can:
        sentence = (f"The network sets part of this step's pace: of the p99 step ({_t(step)}), the scale-out network "
                    f"takes {net_share:.0%}, so a better or cheaper fabric changes the step by up to that much "
                    f"({listing}).")
    else:
        sentence = (f"The network cannot change this step much: the scale-out network is only {net_share:.0%} of the "
                    f"p99 step ({_t(step)}), most of it is {_WORDS[biggest]}, so no fabric buys more than "
                    f"{net_share:.0%} here ({listing}).")
    return {"parts_s": parts, "shares": shares, "step_s": step, "network_share": net_share,
            "network_can_change": can, "sentence": sentence}

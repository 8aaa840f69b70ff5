"""When a genetic search has converged, and how a search that has not is continued.

The rule (:data:`DEFAULT_RULE`): the search has **converged** when the hypervolume of its feasible front grew by
less than 0.1 % of its value over the last 10 generations, ``(HV_g - HV_{g-10}) / HV_g < 0.001`` with ``HV_g > 0``.
The hypervolume is the search's own (objectives over the first baseline's, reference point fixed after the first
generation), so the rule reads the same whatever the units. Why these numbers (docs/search.md "Convergence, Continue
and the recommendation's neighbourhood", 10 long runs of the Mixtral and Llama samples): the rule stops at 567-874
evaluations on the recommended (cost, p99) point of a 3,000-4,000-evaluation run in all ten; over 5 generations it
stops 141-256 evaluations sooner but one run in ten on a recommendation the longer run dominates; a tighter
threshold costs up to 350 evaluations more for no change.

A search also stops as converged when 10 generations in a row bring no design it has not seen (a small space
exhausted). A search that stops on its evaluation or time budget before the rule is met says "not converged" and
can be continued from its saved state (:func:`fabric.search.run.continue_search`): the state holds the genetic search as it was after
its last generation, so a search continued with ``n`` more evaluations is the very search that would have run with
the larger budget from the start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fabric.errors import FabricError

__all__ = ["ConvergenceRule", "DEFAULT_RULE", "STALE_GENERATIONS", "saved_evaluations",
           "status_text"]

#: Generations in a row without a new design after which a search has exhausted what it can reach.
STALE_GENERATIONS = 10


@dataclass(frozen=True)
class ConvergenceRule:
    """Converged when the hypervolume grew by less than ``threshold`` (relative) over the last ``window``
    generations."""

    threshold: float = 1e-3
    window: int = 10

    def __post_init__(self):
        if not (0 < self.threshold < 1):
            raise ValueError(f"the convergence threshold is a fraction between 0 and 1, got {self.threshold!r}")
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise ValueError(f"the convergence window is a whole number of generations >= 1, got {self.window!r}")

    def gain(self, hv_history: list) -> float | None:
        """The hypervolume's relative gain over the last ``window`` generations of ``hv_history`` (the search's
        per-generation entries, ``{"hypervolume": ...}``), or None while there are not enough generations or no
        feasible front yet (hypervolume 0)."""
        if len(hv_history) <= self.window:
            return None
        now = float(hv_history[-1]["hypervolume"])
        if now <= 0:
            return None
        before = float(hv_history[-1 - self.window]["hypervolume"])
        return (now - before) / now

    def met(self, hv_history: list) -> bool:
        """True when the rule holds after the last generation of ``hv_history``."""
        g = self.gain(hv_history)
        return g is not None and g < self.threshold

    @property
    def words(self) -> str:
        """The rule in words: ``"hypervolume gain below 0.1 % over 5 generations"``."""
        return (f"hypervolume gain below {_percent(self.threshold)} over {self.window} generation"
                f"{'s' if self.window != 1 else ''}")

    def where(self, hv_history: list) -> str:
        """Where the search stands against the rule, for a sentence."""
        g = self.gain(hv_history)
        if g is None:
            if hv_history and float(hv_history[-1]["hypervolume"]) <= 0:
                return f"no feasible front yet; the rule: {self.words}"
            return f"fewer than {self.window + 1} generations run; the rule: {self.words}"
        return f"hypervolume gain {_percent(g)} over the last {self.window} generations; the rule: below " \
               f"{_percent(self.threshold)}"


#: The rule every search uses unless told otherwise.
DEFAULT_RULE = ConvergenceRule()


def _percent(x: float) -> str:
    p = 100.0 * x
    if p == 0:
        return "0 %"
    return f"{p:.2g} %" if abs(p) < 1 else f"{p:.3g} %"


def status_text(converged: bool) -> str:
    """What a page or the CLI says beside the front: ``"converged"`` or ``"not converged: continue"``."""
    return "converged" if converged else "not converged: continue"


def saved_evaluations(state_path) -> int:
    """Evaluations of the genetic search in the saved state at ``state_path`` (FabricError when there is none)."""
    p = Path(state_path)
    try:
        state = json.loads(p.read_text())
    except FileNotFoundError:
        raise FabricError(f"cannot continue: no saved search state at {p}") from None
    except (OSError, json.JSONDecodeError) as err:
        raise FabricError(f"cannot continue from {p}: not a readable search state ({err})") from err
    if not isinstance(state, dict) or "evaluations" not in state:
        raise FabricError(f"cannot continue from {p}: not a fabric search state")
    return int(state["evaluations"])

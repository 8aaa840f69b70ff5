"""The dashboard's job mix (the robust search across workloads, Workload page): how its entries are named, when two
are the same workload, what happens to the mix when the workload above it changes, and what to say when the mix
cannot be searched.

The mix is the current workload (its first row, weight ``robust_weight``) followed by ``robust_mix``: entries
``{"choice", "weight"}`` (uploads also ``"workload"``, what their files made). A choice is a sample
(``{"kind": "sample", "name"}``), a parallelism plan (``{"kind": "plan", "preset", "gpus", ...}``) or uploaded files
(``{"kind": "upload", "names"}``), as :mod:`fabric.ui_support.urlstate` encodes them. A workload "bundle" here is
anything with ``choice``, ``key`` (:func:`fabric.workload.model.workload_key`), ``ingest`` and ``workload``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.errors import FabricError
from fabric.ui_support import urlstate
from fabric.ui_support.robust_view import MAX_MIX
from fabric.workload.model import workload_key

__all__ = ["mix_label", "entry_choice", "same_workload", "MixChange", "after_primary_change", "check_addition",
           "robust_problem_text"]


def mix_label(choice: dict) -> str:
    """How the Workload page names a mix entry: ``sample mixtral-8x7b.json``, ``plan llama3-70b on 1,024 GPUs (tp
    8)``, ``uploaded rank0.json``, ``3 uploaded files``."""
    if choice["kind"] == "sample":
        return f"sample {choice['name']}"
    if choice["kind"] == "plan":
        over = ", ".join(f"{k} {choice[k]}" for k in urlstate.PLAN_KEYS if choice.get(k) is not None)
        return f"plan {choice['preset']} on {int(choice['gpus']):,} GPUs" + (f" ({over})" if over else "")
    names = choice.get("names", [])
    return f"uploaded {names[0]}" if len(names) == 1 else f"{len(names)} uploaded files"


def entry_choice(bundle) -> dict:
    """The choice ``bundle`` is listed with in the mix (uploads by the names of the files that were read)."""
    if bundle.choice.get("kind") == "upload":
        res = bundle.ingest
        names = [f.name for f in res.files if f.ok] if res is not None else list(bundle.choice.get("names", []))
        return {"kind": "upload", "names": names}
    return bundle.choice


def same_workload(entry: dict, bundle) -> bool:
    """True when mix entry ``entry`` is the workload of ``bundle``: the same sample or plan, or uploaded files of
    the same content."""
    if bundle.choice.get("kind") != "upload":
        return entry["choice"] == bundle.choice
    return entry["choice"].get("kind") == "upload" and entry.get("workload") is not None \
        and workload_key(entry["workload"]) == bundle.key


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class MixChange:
    """The mix after its first workload changed: the other entries, the first row's weight, what to say (``""``:
    nothing) and whether the first row's weight field must show the new weight."""

    mix: list
    first_weight: float
    notice: str = ""
    reset_first_weight_field: bool = False


def after_primary_change(mix: list, first_weight: float, old, new, *, old_gone: bool = False) -> MixChange:
    """The job mix when the workload above it (its first row) changes from bundle ``old`` to bundle ``new``.

    - ``new`` was further down the mix: the two swap places. ``new`` takes the first row with the weight it had
      there and ``old`` takes its row with the first row's weight, so the mix keeps as many workloads as before
      (a robust search that could start still can).
    - otherwise ``new`` takes the first row (and its weight) and ``old`` leaves the mix: the workload above is
      always the mix's first one.
    - ``old_gone`` (uploads the user removed): ``old`` leaves, unsaid, and never moves into the mix.
    """
    mix = list(mix)
    old_label, new_label = mix_label(entry_choice(old)), mix_label(entry_choice(new))
    at = next((i for i, e in enumerate(mix) if same_workload(e, new)), None)
    if at is not None:
        w_new = float(mix[at]["weight"])
        if old_gone:
            return MixChange(mix[:at] + mix[at + 1:], w_new,
                             f"{_capital(new_label)} was already in the mix: it is now its first workload (the "
                             f"workload above, weight {w_new:g}) and is listed once.", True)
        moved = {"choice": entry_choice(old), "weight": float(first_weight)}
        if old.choice.get("kind") == "upload":
            moved["workload"] = old.workload    # the files are no longer the session's uploads: keep what they made
        rest = mix[:at] + [moved] + mix[at + 1:]
        return MixChange(rest, w_new,
                         f"{_capital(new_label)} was already in the mix: it is now its first workload (the workload "
                         f"above, weight {w_new:g}) and is listed once; {old_label} takes its place further down "
                         f"(weight {float(first_weight):g}), so the mix keeps its {1 + len(rest)} workloads.", True)
    notice = "" if old_gone else (
        f"{_capital(old_label)} is no longer in the mix: the workload above is always its first one, so {new_label} "
        f"took its row (weight {float(first_weight):g}). Add {old_label} under Several workloads to keep it in the "
        f"robust search.")
    return MixChange(mix, float(first_weight), notice)


def check_addition(entries: list[dict], choice: dict) -> None:
    """FabricError when ``choice`` cannot join the mix ``entries`` (every row, the first included): the mix is
    full, or the sample or plan is there already (uploads may repeat: their content decides)."""
    if len(entries) >= MAX_MIX:
        raise FabricError(f"the mix holds at most {MAX_MIX} workloads; remove one first")
    if any(e["choice"] == choice for e in entries) and choice.get("kind") != "upload":
        raise FabricError(f"{mix_label(choice)} is already in the mix")


def robust_problem_text(message: str, *, others: int, scenarios: int) -> str:
    """Why the robust search cannot start (``message``, already in the user's words) and what to do, given the
    workloads of the mix beside the first (``others``) and the scenarios chosen."""
    if not scenarios:
        todo = "choose at least one scenario below"
    elif 1 + others + scenarios < 3:
        todo = ("add a workload (**Add a workload from** below) or a second scenario (**Scenarios every design is "
                "judged under**), or set **Robust mode** to off to search the workload above alone")
    else:
        todo = "change it below, or set **Robust mode** to off to search the workload above alone"
    return f"The robust search cannot start: {message}. What to do: {todo}."

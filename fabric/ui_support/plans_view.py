"""The dashboard's view of parallelism plans (docs/plans.md): the plan-space switch, the plan column of the front
table, the plan sentences of a search (written by :func:`fabric.plans.report.front_plan_lines`, the CLI's
function), a design's best plans as a table with what is measured and what derived. No modelling here: every
figure comes from :mod:`fabric.plans`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pandas as pd

from fabric.errors import FabricError

__all__ = ["PLAN_SPACES", "PLAN_SPACE_HELP", "plan_objective", "compact_plan", "front_plan_sentences",
           "plan_sentence_of", "ranking_frame", "compact_plan_of", "provenance_notes", "is_plan_objective", "RANKING_CAPTION", "objective_json", "objective_from_json",
           "prepared_objective", "dashboard_words"]

#: The plan-space switch: value -> label.
PLAN_SPACES = {"fixed": "fixed: the workload's own plan", "auto": "auto: every design at its best plan"}
PLAN_SPACE_HELP = ("fixed: every design is judged at the parallelism the workload was written for. auto: every "
                   "design is judged at the plan that suits it (TP/PP/DP/EP/CP, micro-batches, ZeRO, rank order, "
                   "within the GPU's memory), chosen from a shortlist ranked before the search; the front then says "
                   "which plan each design needs and what the workload's own plan costs it (docs/plans.md, "
                   "fabric search --plan-space auto).")
RANKING_CAPTION = ("The whole plan space ranked on this design by p99 step time (fabric plans: exact; plans whose "
                   "compute alone exceeds the third-best p99 are left out unevaluated), times in seconds, memory "
                   "per GPU in GB.")


def is_plan_objective(workload) -> bool:
    """True when ``workload`` is a plan objective (``--plan-space auto``) rather than a workload."""
    from fabric.search.plan_space.inner import PlanObjective

    return isinstance(workload, PlanObjective)


def plan_objective(workload, model: str | None = None, catalog=None):
    """The inner-mode objective of ``workload`` (its model recognised, or ``model``, a training model's name);
    :class:`fabric.errors.WorkloadError` saying why when the workload cannot have plans."""
    from fabric.plans.basis import basis_from_workload
    from fabric.search.plan_space.inner import PlanObjective

    return PlanObjective(basis_from_workload(workload, model=model, catalog=catalog))


#: The dashboard's words for the ways out the core's messages name as command-line flags.
_UI_HINT = ("pick the model under 'Model of the workload' if it is one fabric knows, or choose 'Parallelism plan' on "
            "the Workload page (a preset model with a plan of your own), or keep the plan space fixed")
_CLI_HINTS = (re.compile(r"name the model with --model NAME, or give a preset \(--preset\) or a model shape "
                         r"\(--params[^)]*\) instead of the workload"),
              re.compile(r"give the model shape instead \(fabric plans --params[^)]*\)"))


def dashboard_words(message: str) -> str:
    """A message of :mod:`fabric.plans` with the command-line ways out (``--model``, ``--params``) said as the
    dashboard offers them."""
    for pat in _CLI_HINTS:
        message = pat.sub(_UI_HINT, message)
    return message


def _compact(tp, cp, pp, dp, ep, micro_batches, micro_batch, zero, order, chunks: int = 1,
             recompute: str | None = None) -> str:
    dims = [f"TP {int(tp)}"] + ([f"CP {int(cp)}"] if int(cp or 1) > 1 else []) + [f"PP {int(pp)}", f"DP {int(dp)}"]
    dims += [f"EP {int(ep)}"] if int(ep or 1) > 1 else []
    redo = {"full": " · full recomputation", "none": " · no recomputation"}.get(str(recompute or "selective"), "")
    return (" x ".join(dims) + f" · {int(micro_batches)} mb of {int(micro_batch)}"
            + (f" · {int(chunks)} chunks" if int(chunks) > 1 else "") + f" · ZeRO {int(zero)}{redo} · {order}")


def compact_plan(rec: Mapping) -> str:
    """A record's plan in a table cell: ``TP 8 x PP 4 x DP 32 · 16 mb of 1 · ZeRO 1 · tp-cp-ep-dp-pp`` (CP and EP
    when above 1, dimensions in the order of the plan's label); empty for a record without a plan."""
    if not rec.get("plan"):
        return ""
    return _compact(rec["plan_tp"], rec.get("plan_cp"), rec["plan_pp"], rec["plan_dp"], rec.get("plan_ep"),
                    rec["plan_micro_batches"], rec["plan_micro_batch"], rec["plan_zero"], rec["plan_order"],
                    recompute=rec.get("plan_recompute"))


def compact_plan_of(plan) -> str:
    """:func:`compact_plan` of a :class:`fabric.workload.synth.ParallelPlan` (with its chunks per stage)."""
    return _compact(plan.tp, plan.cp, plan.pp, plan.dp, plan.ep, plan.micro_batches, plan.micro_batch,
                    plan.effective_zero, plan.order, plan.virtual_stages, plan.recompute)


def front_plan_sentences(front: Sequence[Mapping], objective) -> list[str]:
    """What each front design's plan costs, in the words ``fabric search --plan-space auto`` prints."""
    from fabric.plans.report import front_plan_lines, given_plan_name

    return front_plan_lines(list(front), given_plan_name(objective.basis))


def plan_sentence_of(design: str, front: Sequence[Mapping], objective) -> str:
    """The plan sentence of the front design named ``design`` (empty when it is not on the front with a plan)."""
    rows = [r for r in front if r.get("plan")]
    for r, line in zip(rows, front_plan_sentences(front, objective)):
        if r["design"] == design:
            return line
    return ""


def ranking_frame(ranking) -> pd.DataFrame:
    """The best plans of a :class:`fabric.plans.best.PlanRanking` (best first), then the workload's own plan when
    it is not among them: rank, plan, p99/p50/compute (s), memory (GB) and whether the numbers are measured."""
    rows = []
    for i, r in enumerate(ranking.best, 1):
        rows.append(_row(str(i), r, ranking))
    g = ranking.given
    if g is not None and all(r.candidate.key != g.candidate.key for r in ranking.best):
        rows.append(_row("given", g, ranking))
    return pd.DataFrame(rows, columns=["", "plan", "p99 step (s)", "p50 step (s)", "compute (s)",
                                       "memory per GPU (GB)", "vs best", "numbers"])


def _row(rank: str, r, ranking) -> dict:
    top = ranking.top
    return {"": rank + (" (given)" if r.candidate.given and rank != "given" else ""),
            "plan": compact_plan_of(r.candidate.plan),
            "p99 step (s)": r.p99_s, "p50 step (s)": r.p50_s, "compute (s)": r.compute_s,
            "memory per GPU (GB)": r.candidate.memory.total_bytes / 1e9,
            "vs best": "" if top is None or r is top else f"{r.p99_s / top.p99_s - 1:+.1%}",
            "numbers": r.provenance}


def provenance_notes(kinds) -> list[str]:
    """What each provenance label shown means (fabric.plans.report.PROVENANCE_TEXT), in the order given."""
    from fabric.plans.report import PROVENANCE_TEXT

    return [PROVENANCE_TEXT[k] for k in dict.fromkeys(kinds) if k in PROVENANCE_TEXT]


def objective_json(objective) -> dict:
    """A plan objective as JSON for a saved search: its workload and model (the shortlist is rebuilt)."""
    from fabric.workload.model import workload_to_dict
    from fabric.workload.presets import training_models

    basis = objective.basis
    if basis.workload is None:
        raise FabricError("a plan objective without its workload cannot be saved")
    model = next((name for name, spec in training_models().items() if spec == basis.model), None)
    return {"plans": {"mode": objective.mode, "model": model, "workload": workload_to_dict(basis.workload)}}


def objective_from_json(data: Mapping):
    """The plan objective :func:`objective_json` wrote."""
    from fabric.workload.model import workload_from_dict

    p = data["plans"]
    if not isinstance(p, dict) or not isinstance(p.get("workload"), dict):
        raise ValueError("a plan objective needs its workload")
    if p.get("mode", "inner") != "inner":
        raise ValueError(f"plan mode {p.get('mode')!r} is not one the dashboard runs")
    model = p.get("model")
    return plan_objective(workload_from_dict(p["workload"]), None if model is None else str(model))


def prepared_objective(objective, constraints, catalog, *, seed: int, samples: int, transport_overrides=None):
    """``objective`` with its plan shortlist for the search space of ``constraints`` (what
    :func:`fabric.search.run_search` prepares before its first generation: the same call, kept in this server
    process by :func:`fabric.search.prepare.prepare_objective`, so a search run again starts at once). ``catalog``
    must be the object the search uses."""
    from fabric.evaluate import Scenario
    from fabric.search.prepare import prepare_objective, space_for

    if objective.shortlist is not None:
        return objective
    return prepare_objective(objective, space_for(objective, constraints, catalog), seed=seed, samples=samples,
                             overrides=transport_overrides, scenario=Scenario())

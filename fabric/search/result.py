"""What a search returns and writes: all evaluations, the front, the baselines, hypervolume per generation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fabric.design.policy import RECORD_HARDWARE_COLUMNS, RECORD_POLICY_COLUMNS, record_policy_changes, \
    same_record_hardware
from fabric.search.records import policy_text_of_record, record_objectives
from fabric.search.tradeoff import same_p99, speedup_text

__all__ = ["SearchResult", "pareto_mask", "hypervolume", "POLICY_COLUMNS", "HARDWARE_COLUMNS", "free_upgrades", "csv_frame",
           "policy_text_of_record"]

KEY_COLUMNS = ["design", "family", "switch_model", "nic_model", "nics_per_gpu", "oversub_leaf", "oversub_spine",
               "planes", "routing", "qps_per_connection", "transport", "placement", "pxn", "storage_isolation",
               "in_network_reduction", "uplink_leaf_gbps", "uplink_spine_gbps"]
OBJECTIVE_COLUMNS = ["cost_usd", "p99_s", "power_w", "p50_s", "p95_s", "mean_s", "lower_bound_s"]
#: The blast radius, right after the objectives (fabric.search.records.BLAST_COLUMNS; the failure p99 columns are
#: on the front and the baselines after every search, on every record when the constraints need them)
BLAST_COLUMNS = ["gpus_lost_on_worst_switch_failure", "gpus_detoured_on_single_failure", "p99_failure_s",
                 "p99_failure_slowdown", "worst_failure"]
BREAKDOWN_COLUMNS = ["switch_usd", "nic_usd", "transceiver_usd", "cable_usd", "cable_count", "radix", "tiers"]
#: Gene columns that are free policy (routing, queue pairs, placement rule, PXN) and hardware, from the one
#: definition in fabric.design.policy
POLICY_COLUMNS = list(RECORD_POLICY_COLUMNS)
HARDWARE_COLUMNS = list(RECORD_HARDWARE_COLUMNS)


def free_upgrades(front: list, baselines: list) -> dict:
    """Front designs that are a baseline's hardware run with a better free policy: front record key -> list of
    ``{"baseline", "speedup", "changes"}`` (the baseline's p99 over the front design's, the policy changes).

    Two designs of the same hardware cost the same, so at most one of them is on a front; a baseline is a human
    design kept off the front, and when the front holds its hardware with another policy, that policy is what the
    baseline leaves on the table for nothing.
    """
    out: dict = {}
    for b in baselines:
        if not b.get("buildable", True):
            continue
        for r in front:
            if r.get("key") != b.get("key") and same_record_hardware(r, b) and r["p99_s"] < b["p99_s"]:
                out.setdefault(r.get("key"), []).append(
                    {"baseline": b["design"], "speedup": b["p99_s"] / r["p99_s"],
                     "changes": record_policy_changes(b, r)})
    return out


def pareto_mask(F: np.ndarray) -> np.ndarray:
    """True for the non-dominated rows of ``F`` (minimisation); duplicates keep their first copy."""
    F = np.asarray(F, dtype=float)
    n = F.shape[0]
    if F.ndim == 2 and F.shape[1] == 2 and n and not np.isnan(F).any():
        return _pareto_mask_2d(F)
    keep = np.ones(n, bool)
    for i in range(n):
        if not keep[i]:
            continue
        dominated = np.all(F <= F[i], axis=1) & np.any(F < F[i], axis=1)
        if dominated.any():
            keep[i] = False
            continue
        same = np.all(F == F[i], axis=1)
        same[: i + 1] = False
        keep[same] = False
    return keep


def _pareto_mask_2d(F: np.ndarray) -> np.ndarray:
    """:func:`pareto_mask` for two objectives in O(n log n) (the search calls it every generation on every
    feasible record): in the order of (f0, f1, row), a row is dominated exactly when an earlier row that is not
    its duplicate has f1 no larger, and a duplicate group keeps its first row."""
    order = np.lexsort((np.arange(F.shape[0]), F[:, 1], F[:, 0]))
    f0, f1 = F[order, 0], F[order, 1]
    first = np.ones(order.size, bool)                   # the first row of each group of equal (f0, f1)
    first[1:] = (f0[1:] != f0[:-1]) | (f1[1:] != f1[:-1])
    group = np.cumsum(first) - 1
    best_before = np.minimum.accumulate(np.concatenate([[np.inf], f1[first]]))[:-1]   # min f1 of earlier groups
    keep_sorted = first & ((group == 0) | (f1 < best_before[group]))
    keep = np.zeros(F.shape[0], bool)
    keep[order] = keep_sorted
    return keep


def hypervolume(F: np.ndarray, ref: np.ndarray) -> float:
    """Hypervolume of the points of ``F`` below ``ref`` (pymoo's exact indicator)."""
    from pymoo.indicators.hv import HV

    F = np.asarray(F, dtype=float)
    if F.size == 0:
        return 0.0
    inside = np.all(F < ref, axis=1)
    if not inside.any():
        return 0.0
    return float(HV(ref_point=np.asarray(ref, dtype=float))(F[inside]))


@dataclass
class SearchResult:
    """All evaluated designs (one record each), the indices of the front, the baselines and the history."""

    records: list
    baselines: list
    front: list
    hv_history: list
    reference_point: list
    normalisation: list
    evaluations: int
    elapsed_s: float
    generations: int
    stopped_because: str
    seed: int
    objectives: tuple = ("cost_usd", "p99_s")
    infeasible_reason: str = ""
    cache_hits: int = 0
    constraints: dict = field(default_factory=dict)
    #: True when the search met its convergence rule (fabric.search.convergence), or evaluated every design
    converged: bool = False
    #: the convergence rule in words ("hypervolume gain below 0.1 % over 10 generations")
    convergence_rule: str = ""
    #: the neighbourhood check of the recommendation (fabric.search.neighbourhood.NeighbourhoodCheck.to_dict;
    #: {} when none ran)
    neighbourhood: dict = field(default_factory=dict)
    #: designs evaluated after the search to tune the baselines (their free policies: fabric.search.tuned),
    #: counted in ``evaluations`` beyond the evaluation budget
    tuning_evaluations: int = 0

    @property
    def status(self) -> str:
        """``"converged"`` or ``"not converged: continue"`` (fabric.search.convergence.status_text)."""
        from fabric.search.convergence import status_text

        return status_text(self.converged)

    @property
    def feasible(self) -> bool:
        return bool(self.front)

    def frame(self) -> pd.DataFrame:
        return _frame(self.records)

    def front_frame(self) -> pd.DataFrame:
        """The front, cheapest first; ``free_upgrade_of`` names the baselines whose hardware it is (with a better
        free policy), ``policy`` sums up its free policy."""
        from fabric.search.ties import ties_text

        df = _frame(self.front)
        up = free_upgrades(self.front, self.baselines)
        df["free_upgrade_of"] = ["; ".join(u["baseline"] for u in up.get(r.get("key"), [])) for r in self.front]
        df["policy"] = [policy_text_of_record(r) for r in self.front]
        ties = self.ties()
        df["ties"] = [ties_text(r, ties.get(r.get("key"), [])) for r in self.front]
        return df.sort_values("cost_usd").reset_index(drop=True)

    def ties(self) -> dict:
        """Per front design (key): the evaluated feasible designs tying with it on every objective, plainest first
        (:func:`fabric.search.ties.front_ties`)."""
        from fabric.search.ties import front_ties

        return front_ties(self.front, self.records, self.objectives)

    def beyond_target(self) -> list[dict]:
        """With a p99 target: the trade-off it hides, the Pareto front of the evaluated designs that meet every
        limit but the p99 target (cheaper and slower than the front's), plainest first among ties; [] without a
        target. The Search page draws them greyed beside the front, the brief takes its runner-up from them when
        the front holds one design."""
        if (self.constraints or {}).get("p99_target_s") is None:
            return []
        from fabric.search.ties import front_order

        def only_target(r) -> bool:
            v = r.get("violations") or {}
            return (r.get("buildable", True) and not r.get("feasible") and v.get("p99_target", 0) > 0
                    and all(x <= 0 for k, x in v.items() if k != "p99_target"))

        keys = {r.get("key") for r in self.front} | {r.get("key") for r in self.baselines}
        cand = front_order([r for r in self.records if only_target(r) and r.get("key") not in keys],
                           self.objectives)
        if not cand:
            return []
        F = np.array([record_objectives(r, self.objectives) for r in cand])
        return [r for r, k in zip(cand, pareto_mask(F)) if k]

    def baseline_frame(self) -> pd.DataFrame:
        return _frame(self.baselines)

    def comparisons(self) -> list[dict]:
        """Per baseline: the cheapest front design at its p99, and the fastest front design at its cost."""
        out = []
        for b in self.baselines:
            row = {"baseline": b["design"], "baseline_cost_usd": b["cost_usd"], "baseline_p99_s": b["p99_s"],
                   "baseline_feasible": b["feasible"]}
            if b["buildable"]:
                same_p99 = [r for r in self.front if r["p99_s"] <= b["p99_s"]]
                if same_p99:
                    best = min(same_p99, key=lambda r: r["cost_usd"])
                    row.update({"at_p99_design": best["design"], "at_p99_cost_usd": best["cost_usd"],
                                "at_p99_saving_usd": b["cost_usd"] - best["cost_usd"]})
                same_cost = [r for r in self.front if r["cost_usd"] <= b["cost_usd"]]
                if same_cost:
                    best = min(same_cost, key=lambda r: r["p99_s"])
                    row.update({"at_cost_design": best["design"], "at_cost_p99_s": best["p99_s"],
                                "at_cost_speedup": b["p99_s"] / best["p99_s"]})
            out.append(row)
        return out

    def free_upgrade_lines(self) -> list[str]:
        """One sentence per front design that is a baseline's hardware with a better free policy."""
        by_key = {r.get("key"): r for r in self.front}
        lines = []
        for key, ups in free_upgrades(self.front, self.baselines).items():
            for u in ups:
                if same_p99(1 / u["speedup"] - 1, 1.0):      # a change within the noise is no upgrade to report
                    continue
                lines.append(f"'{by_key[key]['design']}' is the hardware of '{u['baseline']}' with a free policy "
                             f"change ({', '.join(u['changes'])}): {speedup_text(u['speedup'], 1.0)} at the same "
                             f"cost.")
        return lines

    def summary(self) -> dict:
        ups = free_upgrades(self.front, self.baselines)
        return {
            "feasible": self.feasible, "infeasible_reason": self.infeasible_reason,
            "objectives": list(self.objectives), "evaluations": self.evaluations, "generations": self.generations,
            "elapsed_s": self.elapsed_s, "stopped_because": self.stopped_because, "seed": self.seed,
            "converged": self.converged, "convergence_rule": self.convergence_rule,
            "neighbourhood_check": self.neighbourhood,
            "tuning_evaluations": self.tuning_evaluations,
            "hypervolume": self.hv_history[-1]["hypervolume"] if self.hv_history else 0.0,
            "hypervolume_history": self.hv_history, "reference_point": self.reference_point,
            "normalisation": self.normalisation, "front_size": len(self.front), "cache_hits": self.cache_hits,
            "comparisons": self.comparisons(), "constraints": self.constraints,
            "policy_genes": POLICY_COLUMNS, "hardware_genes": HARDWARE_COLUMNS,
            "free_upgrades": [{"design": r["design"], **u} for r in self.front for u in ups.get(r.get("key"), [])],
        }

    def summary_lines(self) -> list[str]:
        """The sentences a design review wants; each states the rule and the reference it used."""
        from fabric.search.recommend import seconds_text, violation_text

        if not self.feasible:
            return [f"no feasible design: {self.infeasible_reason}"]
        n = len(self.front)
        tuned = (f", {self.tuning_evaluations:,} of them the baselines' free policies (each baseline compared as "
                 f"drawn and as a team would tune it)" if self.tuning_evaluations else "")
        lines = [f"{n} design{'s' if n != 1 else ''} on the front after {self.evaluations:,} evaluations{tuned} "
                 f"({self.elapsed_s:.1f} s, {self.stopped_because})."]
        if self.neighbourhood.get("rounds"):
            from fabric.search.neighbourhood import NeighbourhoodCheck

            check = NeighbourhoodCheck(**self.neighbourhood).sentence()
            lines.append(check[:1].upper() + check[1:])
        front_keys = {r.get("key") for r in self.front}
        by_name = {b["design"]: b for b in self.baselines}
        for c in self.comparisons():
            b = by_name[c["baseline"]]
            name, p99 = c["baseline"], seconds_text(c["baseline_p99_s"])
            if not b.get("buildable", True):
                lines.append(f"'{name}' cannot be built with the allowed hardware, so nothing is compared with it.")
                continue
            if not b.get("feasible", True):   # said where the baseline is named, so it reads as the baseline's
                p99 += f"; it does not meet the constraints: {violation_text(b)}"
            if "at_p99_design" in c:
                save = c["at_p99_saving_usd"]
                if save > 0:
                    lines.append(f"at the p99 of '{name}' ({p99}), '{c['at_p99_design']}' costs ${save:,.0f} less "
                                 f"({save / c['baseline_cost_usd']:.0%}).")
                elif b.get("key") in front_keys:
                    lines.append(f"'{name}' is on the front: no design is cheaper at its p99 ({p99}).")
                elif save == 0:
                    lines.append(f"'{c['at_p99_design']}' matches '{name}': the same cost and a p99 at least as good "
                                 f"({p99}).")
                else:
                    lines.append(f"every front design at least as fast as '{name}' ({p99}) costs more; the cheapest, "
                                 f"'{c['at_p99_design']}', costs ${-save:,.0f} more.")
            else:
                lines.append(f"no front design is as fast as '{name}' ({p99}).")
            if "at_cost_design" in c and not same_p99(c["at_cost_p99_s"] - c["baseline_p99_s"], c["baseline_p99_s"]) \
                    and c["at_cost_p99_s"] < c["baseline_p99_s"]:
                lines.append(f"for the cost of '{name}' (${c['baseline_cost_usd']:,.0f}), "
                             f"'{c['at_cost_design']}' has "
                             f"{speedup_text(c['baseline_p99_s'], c['at_cost_p99_s'])}.")
        return lines + self.serving_lines() + self.free_upgrade_lines() + self.blast_radius_lines()

    def blast_radius_lines(self) -> list[str]:
        """The recommended design's blast radius (fabric.search.recommend.blast_radius_text), one sentence."""
        from fabric.search.recommend import blast_radius_text, recommend

        rec = recommend(self.front, self.baselines, p99_target_s=(self.constraints or {}).get("p99_target_s")).record
        text = blast_radius_text(rec) if rec is not None else ""
        return [f"the recommended design, '{rec['design']}': {text[0].lower()}{text[1:]}"] if text else []

    def serving_lines(self) -> list[str]:
        """The serving jobs' request latency across the front (records with serving columns only)."""
        from fabric.search.recommend import seconds_text
        from fabric.units import range_text

        recs = [r for r in self.front if "serving_tpot_p99_s" in r]
        if not recs:
            return []
        cheap = min(recs, key=lambda r: r["cost_usd"])
        span = {k: (min(r[k] for r in recs), max(r[k] for r in recs))
                for k in ("serving_ttft_p99_s", "serving_tpot_p99_s")}
        return [f"serving (worst job) across the front: p99 time to first token "
                f"{range_text(*span['serving_ttft_p99_s'], fmt=seconds_text)}, p99 time per output token "
                f"{range_text(*span['serving_tpot_p99_s'], fmt=seconds_text)}; the cheapest front design, "
                f"'{cheap['design']}', serves {cheap.get('serving_slo_attainment', 1.0):.1%} of requests within "
                f"their budgets."]

    def write(self, out_dir: str | Path, *, extra: dict | None = None) -> Path:
        """Write evaluations.csv, pareto.csv, baselines.csv and summary.json into ``out_dir`` (``extra``: more
        fields of summary.json, e.g. the context and the recommendation's record)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        csv_frame(self.frame()).to_csv(out / "evaluations.csv", index=False)
        csv_frame(self.front_frame()).to_csv(out / "pareto.csv", index=False)
        csv_frame(self.baseline_frame()).to_csv(out / "baselines.csv", index=False)
        (out / "summary.json").write_text(json.dumps({**self.summary(), **(extra or {})}, indent=2, default=float))
        return out


def csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A records frame as written to CSV: a robust search's p99 column named ``robust_p99_s`` and each case's
    figures (``p99_by_case``, ``p50_by_case``, ...) spread into columns ``p99_s|<case>``, so no column of a robust
    file reads as a plain p99 or p50."""
    if "p99_by_case" not in df.columns:
        return df
    out = df.rename(columns={"p99_s": "robust_p99_s"})
    for col in [c for c in df.columns if c.endswith("_by_case") and c != "serving_by_case"]:
        base = col.removesuffix("_by_case")
        key = base if base == "gpu_idle_fraction_network" else f"{base}_s"
        cases = sorted({k for v in df[col] if isinstance(v, dict) for k in v})
        at = list(out.columns).index(col)
        out = out.drop(columns=[col])
        for i, case in enumerate(cases):
            out.insert(at + i, f"{key}|{case}", [v.get(case) if isinstance(v, dict) else None for v in df[col]])
    return out


def _frame(records: list) -> pd.DataFrame:
    cols = KEY_COLUMNS + OBJECTIVE_COLUMNS + BLAST_COLUMNS + BREAKDOWN_COLUMNS + ["feasible", "buildable", "error",
                                                                               "repairs"]
    if not records:
        return pd.DataFrame(columns=cols + ["violations"])
    df = pd.DataFrame(records)
    df["violations"] = df["violations"].apply(lambda v: json.dumps(v, sort_keys=True))
    for c in ("min_uplink_switches", "gpus_lost_on_worst_switch_failure", "gpus_detoured_on_single_failure"):
        if c in df.columns:
            df[c] = df[c].astype("Int64")
    rest = [c for c in df.columns if c not in cols and c not in ("genome", "key")]
    return df[[c for c in cols if c in df.columns] + rest]

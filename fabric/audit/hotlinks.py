"""Measured hot links beside predicted ones: rank correlation, top-k overlap, per-tier ECN/PFC rates, and which
link the step tail goes to.

- predicted utilisation of a link: its predicted bytes per step (:mod:`fabric.audit.linkload`) over its design
  capacity and the predicted p50 step;
- measured utilisation: :mod:`fabric.audit.utilisation` (busy windows, reported speed);
- measured bytes per step: busy-window bytes per second x the measured p50 step (from the traces; the predicted
  step when no trace is given), beside the predicted bytes per step: the model's traffic against the counters';
- Spearman rank correlation of measured and predicted utilisation over the measured links (average ranks for ties)
  and the overlap of the top ``k`` = min(5, links) of each (ties broken by name);
- measured hot links: by measured utilisation, then ECN marks and pause frames per second;
- the step tail is attributed to the first measured hot link when it runs below its design speed or its
  utilisation exceeds the predicted by more than 25 %: the extra time it costs per step is, over the ops whose
  traffic crosses it, count x max(0, (bytes the op puts on it x measured/predicted bytes) x 8 / reported speed -
  the op's predicted p50 time): how much longer the link needs for the op's bytes than the model gives the whole
  op. It is set against the measured step's excess over the predicted (p99 and p50).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.audit.linkload import PredictedLinks
from fabric.audit.utilisation import Measured

__all__ = ["LinkRow", "TierRow", "HotLinks", "compare_links", "spearman", "TOP_K", "HOT_EXCESS"]

TOP_K = 5
HOT_EXCESS = 1.25


@dataclass(frozen=True)
class LinkRow:
    name: str
    tier: str
    measured_utilisation: float
    predicted_utilisation: float
    measured_bytes_per_step: float
    predicted_bytes_per_step: float
    speed_bps: float
    design_bps: float
    ecn_per_s: float | None
    pause_per_s: float | None
    drops_per_s: float | None
    partial: str

    @property
    def bytes_ratio(self) -> float:
        p = self.predicted_bytes_per_step
        return self.measured_bytes_per_step / p if p > 0 else (1.0 if self.measured_bytes_per_step == 0 else
                                                                float("inf"))


@dataclass(frozen=True)
class TierRow:
    tier: str
    links: int
    measured_utilisation: float      # mean over the tier's measured links
    predicted_utilisation: float
    ecn_per_s: float | None          # sum over the tier's links
    pause_per_s: float | None
    drops_per_s: float | None


@dataclass(frozen=True)
class HotLinks:
    rows: tuple[LinkRow, ...]        # measured hot links first
    predicted_order: tuple[str, ...]  # the same links by predicted utilisation
    spearman: float | None           # None with fewer than 3 links or a constant side
    top_k: int
    top_k_overlap: int
    tiers: tuple[TierRow, ...]
    attribution: str                 # "" when the tail goes to no link
    attributed_link: str | None
    attributed_s: float              # extra seconds per step at that link
    notes: tuple[str, ...]


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return r


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman rank correlation (Pearson of average ranks); None with fewer than 3 pairs or a constant side."""
    if len(a) != len(b) or len(a) < 3:
        return None
    ra, rb = _ranks(a), _ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(ra, rb)) / (va * vb) ** 0.5


def _extra_time(row: LinkRow, predicted: PredictedLinks) -> float:
    """Seconds per step the link at its measured speed adds to the ops that cross it (module docstring)."""
    if row.speed_bps <= 0:
        return 0.0
    scale = row.bytes_ratio if row.bytes_ratio != float("inf") else 1.0
    share = row.design_bps / predicted.links[row.name].capacity_bps if row.name in predicted.links else 1.0
    extra = 0.0
    for _label, count, t, per_call in predicted.phase_loads:
        b = per_call.get(row.name, 0.0) * share * scale
        if b > 0 and t is not None:
            extra += count * max(b * 8.0 / row.speed_bps - t, 0.0)
    return extra


def _sum_opt(vals):
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def compare_links(measured: Measured, predicted: PredictedLinks, *, measured_step: dict | None = None,
                  predicted_step: dict | None = None) -> HotLinks:
    """Measured vs predicted link loads (see the module docstring)."""
    step_meas = (measured_step or {}).get("p50") or predicted.step_p50_s
    step_pred = predicted.step_p50_s
    rows = []
    for name, m in measured.links.items():
        p = predicted.links.get(name)
        share = m.ports / p.cables if p and p.cables else 0.0
        pb = p.bytes_per_step * share if p else 0.0
        pu = pb * 8.0 / (m.design_bps * step_pred) if m.design_bps > 0 and step_pred > 0 else 0.0
        mb = m.busy_bytes / m.busy_s * step_meas if m.busy_s > 0 else 0.0
        rows.append(LinkRow(name=name, tier=m.tier, measured_utilisation=m.utilisation, predicted_utilisation=pu,
                            measured_bytes_per_step=mb, predicted_bytes_per_step=pb, speed_bps=m.speed_bps,
                            design_bps=m.design_bps, ecn_per_s=m.ecn_per_s, pause_per_s=m.pause_per_s,
                            drops_per_s=m.drops_per_s, partial=m.partial))
    rows.sort(key=lambda r: (-r.measured_utilisation, -((r.ecn_per_s or 0) + (r.pause_per_s or 0)), r.name))
    pred_order = tuple(r.name for r in sorted(rows, key=lambda r: (-r.predicted_utilisation, r.name)))
    rho = spearman([r.measured_utilisation for r in rows], [r.predicted_utilisation for r in rows])
    k = min(TOP_K, len(rows))
    overlap = len({r.name for r in rows[:k]} & set(pred_order[:k]))
    tiers = []
    for tier in sorted({r.tier for r in rows}):
        rs = [r for r in rows if r.tier == tier]
        tiers.append(TierRow(tier=tier, links=len(rs),
                             measured_utilisation=sum(r.measured_utilisation for r in rs) / len(rs),
                             predicted_utilisation=sum(r.predicted_utilisation for r in rs) / len(rs),
                             ecn_per_s=_sum_opt([r.ecn_per_s for r in rs]),
                             pause_per_s=_sum_opt([r.pause_per_s for r in rs]),
                             drops_per_s=_sum_opt([r.drops_per_s for r in rs])))
    notes = list(measured.notes) + list(predicted.notes)
    partial = [r.name for r in rows if r.partial]
    if partial:
        notes.append(f"partial: {len(partial)} link(s) measured over part of the busy windows or cables "
                     f"(e.g. {partial[0]}: {next(r.partial for r in rows if r.partial)})")
    unmeasured = [n for n, ll in predicted.links.items() if ll.bytes_per_step > 0 and n not in measured.links]
    if unmeasured:
        notes.append(f"partial: {len(unmeasured)} link(s) the model loads have no counters (e.g. {unmeasured[0]})")
    text, link, extra = "", None, 0.0
    if rows:
        top = rows[0]
        slow = top.speed_bps < 0.95 * top.design_bps
        hot = top.predicted_utilisation > 0 and top.measured_utilisation > HOT_EXCESS * top.predicted_utilisation
        if slow or hot:
            extra = _extra_time(top, predicted)
            why = (f"runs at {top.speed_bps / 1e9:.4g} Gb/s of its design {top.design_bps / 1e9:.4g} Gb/s" if slow else
                   f"is {top.measured_utilisation / top.predicted_utilisation:.2f}x its predicted utilisation")
            text = (f"{top.name} {why}: the ops crossing it need {extra * 1e3:.3g} ms per step more than the model "
                    f"gives them")
            link = top.name
            if measured_step and predicted_step:
                for q in ("p99", "p50"):
                    ex = measured_step[q] - predicted_step[q]
                    if ex > 0:
                        text += (f"; measured step {q} exceeds the predicted by {ex * 1e3:.3g} ms, "
                                 f"{min(extra / ex, 9.99):.0%} of it at this link")
    return HotLinks(rows=tuple(rows), predicted_order=pred_order, spearman=rho, top_k=k, top_k_overlap=overlap,
                    tiers=tuple(tiers), attribution=text, attributed_link=link, attributed_s=extra,
                    notes=tuple(notes))

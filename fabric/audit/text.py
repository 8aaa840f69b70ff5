"""Plain-text lines of an audit (what ``fabric audit`` prints; the page draws the same figures)."""

from __future__ import annotations

from fabric.audit.compare import size_text
from fabric.audit.report import Audit
from fabric.units import time_text

__all__ = ["audit_lines", "link_lines"]


def _opt(x, fmt="{:.3g}") -> str:
    return "n/a" if x is None else fmt.format(x)


def link_lines(h, world_size) -> list[str]:
    """Measured vs predicted hot links as lines of text."""
    out = [f"== measured vs predicted hot links ({world_size}-GPU job; busy-window utilisation)"]
    out.append("  link                 tier          measured  predicted  bytes/step meas/pred  ECN/s  pause/s  "
               "drops/s")
    for r in h.rows[:15]:
        slow = f"  (runs at {r.speed_bps / r.design_bps:.0%} of design speed)" if r.speed_bps < 0.95 * r.design_bps \
            else ""
        out.append(f"  {r.name:<20} {r.tier:<13} {r.measured_utilisation:>8.1%}  {r.predicted_utilisation:>9.1%}  "
                   f"{r.bytes_ratio:>20.3f}  {_opt(r.ecn_per_s):>5}  {_opt(r.pause_per_s):>7}  "
                   f"{_opt(r.drops_per_s):>7}{slow}{'  partial: ' + r.partial if r.partial else ''}")
    if len(h.rows) > 15:
        out.append(f"  ... {len(h.rows) - 15} more link(s)")
    rho = "n/a (fewer than 3 links or no spread)" if h.spearman is None else f"{h.spearman:.2f}"
    out.append(f"rank correlation (Spearman) measured vs predicted: {rho}; top-{h.top_k} overlap "
               f"{h.top_k_overlap} of {h.top_k}; predicted top: {', '.join(h.predicted_order[:h.top_k])}")
    out.append("per tier: tier  links  measured  predicted  ECN/s  pause/s  drops/s")
    for t in h.tiers:
        out.append(f"  {t.tier:<13} {t.links:>5}  {t.measured_utilisation:>8.1%}  {t.predicted_utilisation:>9.1%}  "
                   f"{_opt(t.ecn_per_s)}  {_opt(t.pause_per_s)}  {_opt(t.drops_per_s)}")
    if h.attribution:
        out.append(f"step tail: {h.attribution}")
    else:
        out.append("step tail: no measured link runs slow or above 1.25x its predicted utilisation")
    out.extend(f"note: {n}" for n in h.notes)
    return out


def audit_lines(a: Audit) -> list[str]:
    """The audit as lines of text."""
    out: list[str] = []
    for s in a.sizes:
        st = s.step_s
        out.append(f"== {s.world_size}-GPU job: {len(s.ranks_traced)} rank(s) traced, {st['n']} (rank, step) "
                   f"sample(s)")
        out.append(f"step time  p50 {time_text(st['p50'])}  p95 {time_text(st['p95'])}  p99 {time_text(st['p99'])}  "
                   f"(mean {time_text(st['mean'])}, nearest-rank over every traced rank and step)")
        out.append(f"exposed communication {s.exposed_share:.1%} of the step; waiting for a late rank "
                   f"{s.wait_share:.1%}")
        out.append("per rank (means per step): rank  step  collectives  exposed  wait")
        for r in s.per_rank:
            out.append(f"  {r.rank:>4}  {time_text(r.step_s):>10}  {time_text(r.comm_s):>10}  "
                       f"{time_text(r.exposed_s):>10}  {time_text(r.wait_s):>10} ({r.wait_share:.1%})")
        if s.stragglers:
            for g in s.stragglers:
                out.append(f"straggler: rank {g.rank} in {g.steps} of {g.of_steps} step(s); the others waited "
                           f"{time_text(g.mean_wait_caused_s)} on average")
        elif s.step_stragglers:
            out.append("no straggler: no rank waited 5 % of the step or more")
        out.append("exposed communication per collective (per rank and step): kind  group  calls  bytes  "
                   "kernel  exposed")
        for c in s.collectives:
            out.append(f"  {c.kind or '?':<14} {c.group or 'world':<10} {c.calls_per_step:>5.3g}  "
                       f"{size_text(c.median_bytes, '?'):>9}  {time_text(c.comm_s_per_step):>10}  "
                       f"{time_text(c.exposed_s_per_step):>10}")
        out.extend(f"note: {n}" for n in s.notes)
    for c in a.comparisons:
        out.append(f"== measured vs predicted on {c.design} ({c.world_size}-GPU job), largest disagreement first")
        for r in c.rows:
            if r.unit == "ratio":
                m, p = f"{r.measured_s:.3g}", f"{r.predicted_s:.3g}"
            else:
                m, p = time_text(r.measured_s), time_text(r.predicted_s)
            ratio = "inf" if r.ratio == float("inf") else f"{r.ratio:.3g}x"
            out.append(f"  {r.what:<24} measured {m:>10}  predicted {p:>10}  {ratio:>7}  {r.cause}")
        out.extend(f"note: {n}" for n in c.notes)
    if a.links is not None:
        out.extend(link_lines(a.links, a.links_world_size))
    if a.congestion:
        out.append("predicted congestion signals per tier (an ESTIMATE from the evaluator's link loads, docs/audit.md): "
                   "share of bytes meeting a standing queue (ECN-marked) / of busy time above XOFF (PFC pause, "
                   "lossless RoCE)")
        for t in a.congestion:
            out.append(f"  {t.tier:<13} ECN-marked {t.ecn_marked:>6.1%}  pause exposure {t.pause_exposure:>6.1%}")
    for p in a.scaling:
        out.append(f"scaling ({a.scaling_mode}) {p.n_from} -> {p.n_to} GPUs: efficiency {p.efficiency:.1%}")
    out.append(("FLAG: " if a.flagged else "") + a.verdict)
    out.extend(f"  evidence: {e}" for e in a.evidence)
    out.append(f"rule: {a.rule}")
    return out

"""Why a design of regions pays, in words: which jobs each region holds, what crosses its leaves, at what ratio and
cost, against the best uniform design the search found at its p99 (the brief's section "Why this shape")."""

from __future__ import annotations

from fabric.design.regions import highest_ratio

__all__ = ["job_regions", "region_lines"]

_ROLE_WORDS = {"ep": "expert", "dp": "data-parallel", "tp": "tensor-parallel", "pp": "pipeline", "cp": "context-parallel",
               "world": "whole-job"}
_KIND_WORDS = {"all_to_all": "all-to-all", "all_reduce": "all-reduce", "all_gather": "all-gather",
               "reduce_scatter": "reduce-scatter", "send_recv": "sends", "sendrecv": "sends", "broadcast": "broadcast"}
_CABLING = {"clos": "a top-of-rack Clos", "rail_optimized": "rail-optimized"}


def job_regions(design, workload) -> dict[str, str]:
    """Job name -> the region it is placed in ("spans regions" when it does), for a design of regions."""
    from fabric.evaluate.placement import region_of_jobs
    from fabric.topology import build_fabric

    fab = build_fabric(design)
    jobs = [j for j in workload.jobs if j.kind != "storage"]
    where = region_of_jobs(jobs, fab)
    names = [r["name"] for r in fab.structure["regions"]]
    return {j.name: (names[w] if w is not None else "spans regions") for j, w in zip(jobs, where)}


def _traffic_name(job, op_group: str, kind: str, gpus_per_node: int) -> str | None:
    """``"expert all-to-all"`` for an op of ``job`` whose group spans servers, None for one inside a server."""
    from fabric.workload.groups import group_pattern

    g = job.group(op_group)
    pat = group_pattern(g, job.world_size)
    span = (pat[1] * g.size) if pat is not None else g.size
    if g.size <= 1 or span <= gpus_per_node:
        return None
    return f"{_ROLE_WORDS.get(g.role, g.role)} {_KIND_WORDS.get(kind, kind.replace('_', ' '))}"


def _ranked(pairs) -> list[tuple[float, str]]:
    """``(amount, name)`` summed by name, positive ones, largest first."""
    out: dict[str, float] = {}
    for name, amount in pairs:
        if name is not None:
            out[name] = out.get(name, 0.0) + amount
    return sorted(((a, n) for n, a in out.items() if a > 0), reverse=True)


def _across_servers(job, gpus_per_node: int) -> list[tuple[float, str]]:
    """``(bytes per rank per step, "expert all-to-all")`` of the job's ops whose groups span servers, largest first."""
    return _ranked((_traffic_name(job, op.group, op.kind, gpus_per_node), float(op.bytes) * float(op.count_per_step))
                   for op in job.ops)


def _exposed(job, evaluation, gpus_per_node: int) -> list[tuple[float, str]]:
    """``(seconds exposed in the p99 step, "expert all-to-all")`` of the job's ops across servers, largest first."""
    return _ranked((_traffic_name(job, op.group, op.kind, gpus_per_node), float(op.exposed_in_p99_sample_s))
                   for op in evaluation.ops if op.job == job.name)


def _bytes(b: float) -> str:
    return f"{b / 1e9:.3g} GB" if b >= 1e8 else f"{b / 1e6:.3g} MB"


def region_lines(design, workload, rows: list[dict], front: list[dict] = (), chosen: dict | None = None,
                 evaluation=None) -> list[str]:
    """Sentences on a design of regions: one per region (cabling, ratio, GPUs, its share of the network capex, the
    jobs it holds and the largest traffic they send across servers, and with ``evaluation`` (of ``workload`` on
    ``design``) the traffic across servers that is exposed longest in the p99 step), then the comparison with the
    cheapest uniform design of ``front`` whose p99 is at most ``chosen``'s (within 0.5 %). ``rows``:
    :func:`fabric.cost.regions.region_rows`. Empty for a uniform design."""
    if not getattr(design, "regions", None):
        return []
    where = job_regions(design, workload)
    by_name = {j.name: j for j in workload.jobs}
    total = sum(r["capex_usd"] for r in rows) or 1.0
    out = []
    for r in rows:
        if r["region"] == "shared":
            what = f"{r['spines']:,} spines" if r["cabling"] == "shared spines" else f"{r.get('cores', 0):,} cores"
            what += f", ${r['capex_usd']:,.0f}"
            out.append(f"The regions are joined by {r['cabling']} ({what}, {r['capex_usd'] / total:.0%} of the "
                       f"network).")
            continue
        held = [n for n, w in where.items() if w == r["region"]]
        ratio = f"{r['leaf_ratio']:g}:1 at the leaf" + (f" and {r['spine_ratio']:g}:1 to the core"
                                                        if r["spine_ratio"] not in (None, 1.0) else "")
        s = (f"Region {r['region']} ({_CABLING.get(r['cabling'], r['cabling'])}, {ratio}, {r['gpus']:,} GPUs, "
             f"${r['capex_usd']:,.0f} or {r['capex_usd'] / total:.0%} of the network)")
        if not held:
            s += " holds no job of this workload (spare GPUs)."
        else:
            parts = []
            for n in held:
                traffic = _across_servers(by_name[n], design.gpus_per_node)
                exposed = _exposed(by_name[n], evaluation, design.gpus_per_node) if evaluation is not None else []
                if traffic:
                    b, what = traffic[0]
                    text = f"{n}, whose largest traffic across servers is its {what} ({_bytes(b)} per GPU per step)"
                    if exposed and exposed[0][1] != what:
                        text += (f", while the p99 step waits longest on its {exposed[0][1]} "
                                 f"({exposed[0][0] * 1e3:,.1f} ms exposed)")
                    elif exposed:
                        text += f", {exposed[0][0] * 1e3:,.1f} ms of it exposed in the p99 step"
                    parts.append(text)
                else:
                    parts.append(f"{n}, which keeps its traffic inside servers")
            s += " carries " + "; and ".join(parts) + "."
        out.append(s)
    span = [n for n, w in where.items() if w == "spans regions"]
    if span:
        out.append(f"{', '.join(span)} do{'es' if len(span) == 1 else ''} not fit one region and span"
                   f"{'s' if len(span) == 1 else ''} them.")
    if chosen is not None and front:
        from fabric.search.tradeoff import same_p99

        p99 = float(chosen["p99_s"])
        uniform = [f for f in front if f.get("family") != "regions"]
        match = [f for f in uniform if float(f["p99_s"]) <= p99 or same_p99(float(f["p99_s"]), p99)]
        if match:
            u = min(match, key=lambda f: float(f["cost_usd"]))
            d = float(u["cost_usd"]) - float(chosen["cost_usd"])
            out.append(f"The cheapest uniform design the search found at this p99 or better, '{u['design']}', costs "
                       f"${abs(d):,.0f} {'more' if d > 0 else 'less'} ({d / float(chosen['cost_usd']):+.1%}).")
        elif uniform:
            u = min(uniform, key=lambda f: float(f["p99_s"]))
            out.append(f"No uniform design on the front reaches this p99; the fastest, '{u['design']}', is "
                       f"{float(u['p99_s']) / p99 - 1:+.1%} slower for ${float(u['cost_usd']):,.0f}.")
        else:
            out.append("No uniform design is on the front: at every cost the search reached, a design of regions "
                       "was at least as fast.")
    out.append(f"Tables of one ratio per design show its highest leaf ratio, {highest_ratio(design, 0):g}:1.")
    return out

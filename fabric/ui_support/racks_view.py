"""Tables and sentences for the dashboard's rack and power view (:func:`fabric.facility.rackpower.rack_report`) and its
scale-up versus scale-out view (:func:`fabric.evaluate.scaleup.traffic_split`)."""

from __future__ import annotations

__all__ = ["rack_rows", "reach_rows", "rack_summary", "power_text", "traffic_rows", "traffic_summary"]

GIB = 2.0**30


def power_text(watts: float) -> str:
    """Power as every page writes it: ``42.5 kW`` below a megawatt, ``1.36 MW`` from one up
    (:func:`fabric.review.figures.figure_text`)."""
    from fabric.review.figures import figure_text

    return figure_text(watts, "power")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}{'es' if word.endswith('switch') else 's'}"


def _holds(group: dict, switch_kind: str) -> str:
    text = f"{group['gpus']:,} GPUs"
    if group.get("reserved"):
        text += f" + {group['reserved']} reserved slot{'s' if group['reserved'] != 1 else ''} (UFM)"
    return text + (f" + {_plural(group['switches'], switch_kind)}" if group["switches"] else "")


def rack_rows(report: dict) -> list[dict]:
    """One row per kind of rack (compute racks apart by what they hold): count, what one holds, its power (kW, the
    most of any rack of the row) and whether it is above the limit."""
    limit = report.get("rack_power_limit_w")
    kind = report.get("tor_switch_kind", "leaf switch")
    rows = [{"racks": "compute", "count": g["racks"], "holds": _holds(g, kind),
             "kW per rack": round(g["power_w"] / 1e3, 1)} for g in report["compute_rack_groups"]]
    rows += [{"racks": f"network ({r['tier']})", "count": r["racks"],
              "holds": f"up to {r['switches_per_rack']:,} switches",
              "kW per rack": round(r["power_per_rack_w"] / 1e3, 1)} for r in report["network_rack_rows"]]
    for r in rows:
        r["over the limit"] = "yes" if limit and r["kW per rack"] * 1e3 > limit * (1 + 1e-9) else "no"
    return rows


def reach_rows(report: dict) -> list[dict]:
    """Network cables per reach class."""
    return [{"reach": k, "cables": v} for k, v in report["cables_by_reach"].items()]


def placement_sentence(report: dict) -> str:
    """Where the leaves sit: in the compute racks (top-of-rack) or in network racks."""
    if not report.get("leaves_in_compute_racks"):
        return "Rail leaves, spines and cores sit in network racks; compute racks hold only servers."
    kind = report.get("tor_switch_kind", "leaf switch")
    held, per_rack = report["servers_per_leaf"], report["nodes_per_rack"]
    with_one = sum(g["racks"] for g in report["compute_rack_groups"] if g["switches"])
    return (f"A {kind} takes up to {held:,} servers and a rack holds {per_rack:,}, so each {kind} sits in the rack of "
            f"its middle server: {with_one:,} of the {report['compute_racks']:,} compute racks hold the "
            f"{_plural(report['tor_switches'], kind)}.")


def rack_summary(report: dict, domain_gpus: int) -> str:
    """Sentences: the busiest rack against the limit, the NVLink domain's racks, where the leaves sit, IT and
    facility power (IT x PUE)."""
    limit = report.get("rack_power_limit_w")
    parts = [f"Busiest rack {power_text(report['max_rack_power_w'])}"
             + (f" against a limit of {power_text(limit)} ({report['racks_over_limit']:,} rack(s) above it)"
                if limit else "")]
    if report["racks_per_scale_up_domain"]:
        parts.append(f"one {domain_gpus:,}-GPU NVLink domain spans {report['racks_per_scale_up_domain']:,} rack(s)")
    parts.append(f"IT power {power_text(report['it_power_w'])} (servers with their NICs "
                 f"{power_text(report['server_power_w'])}, the rest of the network "
                 f"{power_text(report['network_outside_servers_w'])}); facility power "
                 f"{power_text(report['facility_power_w'])} (IT power x PUE {report['pue']:g})")
    return "; ".join(parts) + ". " + placement_sentence(report)


def traffic_rows(split: dict) -> list[dict]:
    """One row per op: where its bytes go in one step of its job (a serving job: one request; GiB, all GPUs
    together)."""
    return [{"op": o["op"], "step": "one request" if o.get("unit") == "request" else "training step",
             "group": f"{o['group']} ({o['group_size']:,} GPUs over {o['domains_per_group']:,} domain(s))",
             "NVLink GiB per step": round(o["nvlink_bytes_per_step"] / GIB, 2),
             "network GiB per step": round(o["network_bytes_per_step"] / GIB, 2)} for o in split["ops"]]


def traffic_summary(split: dict) -> str:
    """One sentence per job: bytes per step per GPU on the network and over NVLink."""
    out = []
    for name, j in split["jobs"].items():
        gpus = max(j["gpus"], 1)
        out.append(f"{name}: {j['network_bytes_per_step'] / gpus / GIB:,.2f} GiB per GPU per {j.get('unit', 'step')} "
                   f"on the network, "
                   f"{j['nvlink_bytes_per_step'] / gpus / GIB:,.2f} GiB over NVLink ({split['domain_gpus']:,}-GPU "
                   f"domains)")
    return "; ".join(out) + "." + (" " + " ".join(split["notes"]) if split["notes"] else "")

"""Tables and sentences for the dashboard's rack and power view (:func:`fabric.rackpower.rack_report`) and its
scale-up versus scale-out view (:func:`fabric.scaleup.traffic_split`)."""

from __future__ import annotations

__all__ = ["rack_rows", "reach_rows", "rack_summary", "traffic_rows", "traffic_summary"]

GIB = 2.0**30


def rack_rows(report: dict) -> list[dict]:
    """One row per kind of rack: count, what one holds, its power (kW) and whether it is above the limit."""
    limit = report.get("rack_power_limit_w")
    rows = [{"racks": "compute", "count": report["compute_racks"],
             "holds": f"{report['gpus_per_rack']:,} GPUs"
                      + (f" + {report['tor_switches_per_rack']} switch" if report["tor_switches_per_rack"] else ""),
             "kW per rack": round(report["compute_rack_power_w"] / 1e3, 1)}]
    rows += [{"racks": f"network ({r['tier']})", "count": r["racks"], "holds": f"up to {r['switches_per_rack']} switches",
              "kW per rack": round(r["power_per_rack_w"] / 1e3, 1)} for r in report["network_rack_rows"]]
    for r in rows:
        r["over the limit"] = "yes" if limit and r["kW per rack"] * 1e3 > limit * (1 + 1e-9) else "no"
    return rows


def reach_rows(report: dict) -> list[dict]:
    """Network cables per reach class."""
    return [{"reach": k, "cables": v} for k, v in report["cables_by_reach"].items()]


def rack_summary(report: dict, domain_gpus: int) -> str:
    """One sentence: the busiest rack against the limit, the NVLink domain's racks, IT and facility power."""
    limit = report.get("rack_power_limit_w")
    parts = [f"Busiest rack {report['max_rack_power_w'] / 1e3:,.1f} kW"
             + (f" against a limit of {limit / 1e3:,.1f} kW ({report['racks_over_limit']:,} rack(s) above it)"
                if limit else "")]
    if report["racks_per_scale_up_domain"]:
        parts.append(f"one {domain_gpus}-GPU NVLink domain spans {report['racks_per_scale_up_domain']} rack(s)")
    parts.append(f"IT power {report['it_power_w'] / 1e6:,.2f} MW (servers {report['server_power_w'] / 1e6:,.2f} MW, "
                 f"network {report['network_power_w'] / 1e6:,.2f} MW), facility {report['facility_power_w'] / 1e6:,.2f} "
                 f"MW at PUE {report['pue']:g}")
    return "; ".join(parts) + "."


def traffic_rows(split: dict) -> list[dict]:
    """One row per op: where its bytes go in one step of its job (a serving job: one request; GiB, all GPUs
    together)."""
    return [{"op": o["op"], "step": "one request" if o.get("unit") == "request" else "training step",
             "group": f"{o['group']} ({o['group_size']} GPUs over {o['domains_per_group']} domain(s))",
             "NVLink GiB per step": round(o["nvlink_bytes_per_step"] / GIB, 2),
             "network GiB per step": round(o["network_bytes_per_step"] / GIB, 2)} for o in split["ops"]]


def traffic_summary(split: dict) -> str:
    """One sentence per job: bytes per step per GPU on the network and over NVLink."""
    out = []
    for name, j in split["jobs"].items():
        gpus = max(j["gpus"], 1)
        out.append(f"{name}: {j['network_bytes_per_step'] / gpus / GIB:,.2f} GiB per GPU per {j.get('unit', 'step')} "
                   f"on the network, "
                   f"{j['nvlink_bytes_per_step'] / gpus / GIB:,.2f} GiB over NVLink ({split['domain_gpus']}-GPU "
                   f"domains)")
    return "; ".join(out) + "." + (" " + " ".join(split["notes"]) if split["notes"] else "")

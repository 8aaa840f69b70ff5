"""The words for single failures: one verdict sentence, the uplink redundancy and the evaluated failures, shared by
the Design page, the brief, the HTML reports and ``fabric evaluate`` so that they all say the same thing.

Everything here reads a :func:`fabric.failures.resilience.resilience` (or :func:`~fabric.failures.resilience.failure_analysis`)
dict; the rule itself is :mod:`fabric.failures.rule`.
"""

from __future__ import annotations

from typing import Callable

from fabric.units import change_text

__all__ = ["RULE_TEXT", "verdict_text", "uplinks_text", "uplinks_value", "evaluated_failures", "resilience_lines"]

#: The rule in one paragraph (the Constraints page's help, the Design page's caption).
RULE_TEXT = ("Counts every switch (leaves and rail switches too), every switch-to-switch cable and every NIC cable, "
             "one at a time. A GPU whose own NICs lost every port sends through the other NICs of its server over "
             "NVLink (NCCL's PXN path): its server stays in the job at reduced bandwidth, which the evaluator "
             "computes. A server none of whose NIC ports is left (a top-of-rack leaf's) leaves the job; nothing "
             "fails over to another server's NIC. A design survives when no single failure splits the GPUs still in "
             "the job (over the paths the evaluator models), takes every server out, or takes more than half of the "
             "servers out while they keep other NIC ports (collateral damage; a top-of-rack leaf's own servers are "
             "their failure domain).")


def _n(x: int) -> str:
    return f"{int(x):,}"


def _others(count: int, shown: int, what: str, whats: str) -> str:
    rest = count - shown
    return f" (and {rest} other {what if rest == 1 else whats})" if rest > 0 else ""


def verdict_text(r: dict) -> str:
    """One sentence: does the design survive any single failure, and if not, which failure and why."""
    if r.get("partitioned_without_failure"):
        return ("Does not survive a single failure: the GPUs cannot all reach each other even with every switch "
                "up.")
    if not r["survives_single_failure"]:
        loss = r.get("server_loss")
        if loss:
            more = _others(r["server_loss_switch_count"], 1, "switch", "switches")
            cut, srv, col = loss["gpus_cut_off"], loss["servers_out"], loss["collateral_servers"]
            per = "" if not srv or cut % srv else f", {cut // srv} in each of {_n(srv)} servers"
            if srv == r["servers"]:
                gone = f"every server leaves the job ({_n(loss['gpus_out'])} of {_n(r['gpus'])} GPUs)"
            else:
                gone = (f"{_n(srv)} of {_n(r['servers'])} servers leave the job ({_n(loss['gpus_out'])} of "
                        f"{_n(r['gpus'])} GPUs), {_n(col)} of them only for that GPU slice: more than half of the "
                        "servers")
            return (f"Does not survive a single failure: {loss['switch']}{more} holds every NIC port of {_n(cut)} "
                    f"GPUs{per}; with no network path left for those GPUs, {gone}.")
        names = r.get("partitioning_switches", []) + r.get("partitioning_links", [])
        n = r.get("partitioning_switch_count", 0) + r.get("partitioning_link_count", 0)
        what = (names[0] + _others(n, 1, "failure", "failures")) if names else "one failure the evaluator tried"
        return (f"Does not survive a single failure: {what} partitions the GPUs still in the job (they fall into "
                "groups that cannot reach each other).")
    head = ("Survives any single failure: no switch or cable failure splits the GPUs still in the job, takes every "
            "server out, or takes more than half of the servers out for a slice of their GPUs")
    det = ""
    if r.get("gpus_detoured_on_single_failure"):
        det = (f"; {r['detour_switch']} takes the own NICs of {_n(r['gpus_detoured_on_single_failure'])} GPUs in "
               f"{_n(r['servers_detoured_on_single_failure'])} servers away, and they carry on through their "
               f"servers' other NICs over NVLink")
    if r.get("worst_switch_out"):
        return (f"{head}; the worst, {r['worst_switch_out']}, takes {_n(r['servers_out_on_worst_switch_failure'])} "
                f"of {_n(r['servers'])} servers ({_n(r['gpus_lost_on_worst_switch_failure'])} GPUs) out of the job"
                f"{det}.")
    if det:
        return f"{head}; no single switch takes a GPU out of the job{det}."
    return f"{head}; no single switch cuts any GPU off (each keeps a NIC port on another switch or plane)."


def uplinks_value(r: dict) -> str:
    """The fewest distinct upper switches a leaf's uplinks reach, or "none" when no switch has uplinks."""
    v = r.get("min_uplink_switches")
    return "none" if v is None else f"{int(v):,}"


def uplinks_text(r: dict) -> str:
    """What :func:`uplinks_value` means for this fabric, in words."""
    v = r.get("min_uplink_switches")
    if v is not None:
        return (f"every leaf's uplinks reach at least {int(v):,} distinct upper switches"
                + (" (a leaf hanging off one spine: that spine is a single point of failure)" if v == 1 else ""))
    fam = r.get("family")
    if fam == "dragonfly":
        return "no uplinks: a dragonfly's routers are joined to each other directly"
    if fam == "rail_only":
        return "no uplinks: one tier of switches, each rail is one switch"
    return "no uplinks: one tier of switches (one switch per plane)"


def evaluated_failures(r: dict) -> list[dict]:
    """The evaluated worst failures: above the leaves (switch, cable), then the leaves whose servers ride the
    failure out through their other NICs (leaf; listed only when :func:`fabric.failures.resilience.resilience` tried
    leaves): ``what`` (switch / cable / leaf), ``failed`` (its label or None), ``p99_s`` (None when it partitions
    or when there is nothing of that kind to fail) and ``state`` ("evaluated", "partitions" or "none"), with
    ``none_text`` saying what the fabric lacks."""
    out = []
    for what, name, key, cut, none in (
            ("switch", "worst_switch", "worst_switch_failure_p99_s", "worst_switch_failure_partitions",
             "no switch above the leaves to fail"),
            ("cable", "worst_link", "worst_link_failure_p99_s", "worst_link_failure_partitions",
             "no switch-to-switch cable to fail"),
            ("leaf", "worst_leaf", "worst_leaf_failure_p99_s", "worst_leaf_failure_partitions",
             "no leaf whose servers keep a NIC on another switch")):
        if name not in r:
            continue
        failed, v = r.get(name), r.get(key)
        state = "none" if failed is None else ("partitions" if r.get(cut) or v is None else "evaluated")
        out.append({"what": what, "failed": failed, "p99_s": v if state == "evaluated" else None, "state": state,
                    "none_text": none})
    return out


def resilience_lines(r: dict, time_text: Callable[[float], str], healthy_p99_s: float | None = None) -> list[str]:
    """The single-failure findings as sentences (brief, reports, CLI): the verdict, the uplinks and the evaluated
    worst failures above the leaves (``time_text`` formats seconds)."""
    base = healthy_p99_s if healthy_p99_s is not None else r.get("healthy_p99_s")
    lines = [verdict_text(r), f"Uplink switches per leaf: {uplinks_value(r)} ({uplinks_text(r)})."]
    for f in evaluated_failures(r):
        where = ("whose servers carry on through their other NICs" if f["what"] == "leaf" else "above the leaves")
        what = "leaf" if f["what"] == "leaf" else f["what"]
        if f["state"] == "none":
            if f["what"] == "leaf":
                continue            # top-of-rack leaves take their servers out: the verdict counts them
            lines.append(f"Worst {what} failure {where}: none ({f['none_text']}).")
        elif f["state"] == "partitions":
            lines.append(f"Worst {what} failure {where} ({f['failed']}): partitions the fabric.")
        else:
            delta = f" ({change_text(f['p99_s'] / base - 1)})" if base else ""
            lines.append(f"Worst {what} failure {where} ({f['failed']}): p99 {time_text(f['p99_s'])}{delta}.")
    return lines

"""The small leaf-spine scenarios of the packet-level comparison table (``benchmarks/bench_packet.py``).

A 10 Gb/s validation catalog keeps ns-3 affordable: ns-3's cost grows with the packets simulated, so a slower link
gives milliseconds of transfer (where fixed latencies are a small share) for few packets. Two small-radix switches
give the same 4 leaves x 8 hosts at two oversubscriptions:

- ``val-sw-16x10``: 16 ports, 1:1 -> 8 down, 8 up; 4 leaves, 2 spines, bundles of 4 links per leaf-spine pair;
- ``val-sw-12x10``: 12 ports, 2:1 -> 8 down, 4 up; 4 leaves, 2 spines, bundles of 2.

Their 10 Gb/s ports also break out into 2 x 5 Gb/s (test hardware: the 2-lane breakout of a real port, scaled
down), so a 2:1 leaf can be made by fewer uplinks or by slower ones (``uplink_gbps: 5``) with the same up capacity:

- ``val-sw-12x10`` with 5G uplinks: 8 down at 10G, 8 up at 5G (4 ports of 2 x 5G), 2:1;
- ``val-sw-6x10``: 6 ports, 2:1 -> 4 down and 2 up at 10G, or 4 down and 4 up at 5G (16 hosts: 4 leaves of 4).

Latencies are the catalog's Ethernet figures (500 ns per switch hop and NIC side).
"""

from __future__ import annotations

import json
import os
import tempfile

__all__ = ["VALIDATION_CATALOG", "validation_catalog", "validation_design", "one_op_workload", "TABLE_CASES",
           "UPLINK_CASES", "table_design", "uplinks_supported"]

_SRC = "validation: small-radix 10 Gb/s test hardware for the packet-level cross-check (not a product)"

VALIDATION_CATALOG = {
    "switches": [
        {"model": "val-sw-16x10", "vendor": "test", "fabric": "ethernet", "ports": 16, "port_speed_gbps": 10,
         "price_usd": 1, "power_w": 1, "latency_ns": 500, "source": _SRC},
        {"model": "val-sw-12x10", "vendor": "test", "fabric": "ethernet", "ports": 12, "port_speed_gbps": 10,
         "price_usd": 1, "power_w": 1, "latency_ns": 500, "source": _SRC},
        {"model": "val-sw-8x10", "vendor": "test", "fabric": "ethernet", "ports": 8, "port_speed_gbps": 10,
         "price_usd": 1, "power_w": 1, "latency_ns": 500, "source": _SRC},
        {"model": "val-sw-6x10", "vendor": "test", "fabric": "ethernet", "ports": 6, "port_speed_gbps": 10,
         "price_usd": 1, "power_w": 1, "latency_ns": 500, "source": _SRC},
    ],
    "nics": [
        {"model": "val-nic-10", "fabric": "ethernet", "ports": 1, "port_speed_gbps": 10, "price_usd": 1,
         "power_w": 1, "latency_ns": 500, "source": _SRC},
    ],
    "transceivers": [
        {"model": "val-sfp-10-sr", "speed_gbps": 10, "ports_per_module": 1, "reach_m": 300, "side": "any",
         "medium": "multimode", "price_usd": 1, "power_w": 1, "source": _SRC},
        {"model": "val-sfp-5-sr", "speed_gbps": 5, "ports_per_module": 1, "reach_m": 300, "side": "any",
         "medium": "multimode", "price_usd": 1, "power_w": 1, "source": _SRC},
    ],
    "cables": [
        {"model": "val-dac-10-3m", "kind": "dac", "speed_gbps": 10, "reach_m": 3, "price_usd": 1, "power_w": 0,
         "source": _SRC},
        {"model": "val-aoc-10-30m", "kind": "aoc", "speed_gbps": 10, "reach_m": 30, "price_usd": 1, "power_w": 1,
         "source": _SRC},
    ],
}

_CACHE: dict = {}


def validation_catalog():
    """The default catalog plus :data:`VALIDATION_CATALOG` (loaded through the documented override path)."""
    if "cat" not in _CACHE:
        from fabric.catalog import load_catalog

        fd, path = tempfile.mkstemp(suffix=".json", prefix="fabric-validation-catalog-")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(VALIDATION_CATALOG, fh)
            _CACHE["cat"] = load_catalog(path)
        finally:
            os.unlink(path)
    return _CACHE["cat"]


def validation_design(oversubscription: int = 1, *, routing: str = "ecmp", hosts: int = 32, name: str | None = None,
                      uplinks: str | None = None, transport: str = "tcp"):
    """A 2-tier leaf-spine of ``hosts`` single-GPU hosts at 10 Gb/s, 8 hosts per leaf (4 for ``hosts <= 16`` at 1:1).

    ``uplinks`` makes the 2:1 pair of equal up capacity per leaf: ``"fewer"``, half as many 10 Gb/s uplinks as
    downlinks, and ``"slower"``, as many uplinks as downlinks at 5 Gb/s (``uplink_gbps: 5``). Both have 8 hosts per
    leaf (``val-sw-12x10``), or 4 for ``hosts <= 16`` (``val-sw-6x10``: 4 x 10G down with 2 x 10G or 4 x 5G up).
    Without it a 2:1 design is the original one (``val-sw-12x10``, 8 hosts per leaf, 10 Gb/s uplinks).
    ``transport`` defaults to ``tcp``, what the packet model runs; a reorder-tolerant one (``uec``) makes
    :func:`fabric.validate.packet.run_packet` add the receiver-side reorder buffer.
    """
    from fabric.design import Design

    if uplinks not in (None, "fewer", "slower"):
        raise ValueError(f"uplinks must be 'fewer', 'slower' or None, got {uplinks!r}")
    if oversubscription == 1:
        switch = "val-sw-8x10" if hosts <= 16 else "val-sw-16x10"
    else:
        switch = "val-sw-6x10" if hosts <= 16 and uplinks is not None else "val-sw-12x10"
    slower = uplinks == "slower" and oversubscription != 1
    spray = routing in ("spray", "spray_rr")
    label = f" by {uplinks} uplinks" if oversubscription != 1 and uplinks else ""
    return Design(name=name or f"leaf-spine {hosts} hosts {oversubscription}:1{label} {routing}", family="clos",
                  gpus=hosts, gpus_per_node=1, scale_up_size=1, nic_model="val-nic-10", switch_model=switch,
                  tiers=2, oversubscription=(oversubscription, 1), uplink_gbps=5 if slower else None,
                  routing="spray" if spray else routing, transport=transport, channels_per_nic=1)


#: The leaf-spines of the 16-host validation table (benchmarks/bench_validation_table.py, docs/validation.md):
#: 4 leaves x 4 single-GPU hosts at 10 Gb/s.
#: ``1:1``: 8-port switches, 4 uplinks per leaf, one to each of 4 spines; ``2:1 fewer uplinks``: 6-port switches,
#: 2 uplinks per leaf, one to each of 2 spines; ``2:1 slower uplinks``: the same 6-port switches with their 2 uplink
#: ports broken out into 4 x 5 Gb/s (the design field ``uplink_gbps``), one to each of 4 spines: the same up capacity
#: per leaf as the fewer-uplinks case.
UPLINK_CASES = {
    "1:1": {"switch_model": "val-sw-8x10", "oversubscription": (1, 1), "spines": 4},
    "2:1 fewer uplinks": {"switch_model": "val-sw-6x10", "oversubscription": (2, 1)},
    "2:1 slower uplinks": {"switch_model": "val-sw-6x10", "oversubscription": (2, 1), "spines": 4,
                           "uplink_gbps": 5},
}


def uplinks_supported(case: str) -> str | None:
    """``None`` when this code base can build ``UPLINK_CASES[case]``, else why not."""
    from dataclasses import fields as _fields

    from fabric.design import Design

    known = {f.name for f in _fields(Design)}
    missing = sorted(set(UPLINK_CASES[case]) - known)
    return f"needs design field(s) {', '.join(missing)} (per-tier link speeds)" if missing else None


def table_design(uplinks: str, *, routing: str = "ecmp", transport: str = "tcp", hosts: int = 16):
    """A design of the 16-host validation table (``uplinks`` a key of :data:`UPLINK_CASES`)."""
    from fabric.design import Design

    why = uplinks_supported(uplinks)
    if why:
        from fabric.errors import DesignError

        raise DesignError(f"the '{uplinks}' case {why}")
    spray = routing in ("spray", "spray_rr")
    return Design(name=f"leaf-spine {hosts} hosts {uplinks} {routing} {transport}", family="clos", gpus=hosts,
                  gpus_per_node=1, scale_up_size=1, nic_model="val-nic-10", tiers=2,
                  routing="spray" if spray else routing, transport=transport, channels_per_nic=1,
                  **UPLINK_CASES[uplinks])


def one_op_workload(kind: str, size_bytes: int, ranks: int, *, group_size: int | None = None, stride: int = 1):
    """One job of ``ranks`` ranks running one ``kind`` op of ``size_bytes``.

    The op's group spans all ranks by default; ``group_size`` with ``stride`` makes it strided (ranks ``i, i + stride,
    ...``), and the evaluator runs every instance of it at once (``ranks / group_size`` groups), e.g. 8 rings of 4
    ranks with stride 8: one rank per leaf of 8 hosts, so every ring flow crosses the spine layer.
    """
    from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

    g = group_size or ranks
    group = (ProcessGroup("world", ranks, "dp", rank_start=0, rank_stride=1) if g == ranks
             else ProcessGroup("dp", g, "dp", rank_start=0, rank_stride=stride))
    label = "" if g == ranks else f" in groups of {g} (stride {stride})"
    return Workload(jobs=(Job(name=f"{kind}-{ranks}", world_size=ranks, groups=(group,),
                              ops=(CommOp(kind, int(size_bytes), group.name),)),),
                    name=f"{kind} {size_bytes / 1e6:g} MB x {ranks}{label}")


def _case(label, kind, size, o, routing, *, group_size=None, stride=1, queue=None):
    return {"label": label, "kind": kind, "bytes": size, "oversubscription": o, "routing": routing,
            "group_size": group_size, "stride": stride, "switch_queue_packets": queue}


_RING = dict(group_size=4, stride=8)
#: The published table (docs/validation-packet.md): 32 hosts; switch queues lossless unless a size is given.
TABLE_CASES = [
    _case("ring all-reduce, 32 ranks, 1:1, ECMP (NIC-bound)", "all_reduce", 4_000_000, 1, "ecmp"),
    _case("8 rings x 4 across leaves, 1:1, ECMP", "all_reduce", 2_000_000, 1, "ecmp", **_RING),
    _case("8 rings x 4 across leaves, 1:1, spray", "all_reduce", 2_000_000, 1, "spray", **_RING),
    _case("8 rings x 4 across leaves, 2:1, ECMP", "all_reduce", 2_000_000, 2, "ecmp", **_RING),
    _case("8 rings x 4 across leaves, 2:1, spray", "all_reduce", 2_000_000, 2, "spray", **_RING),
    _case("8 rings x 4 across leaves, 1:1, round-robin spray", "all_reduce", 2_000_000, 1, "spray_rr", **_RING),
    _case("all-to-all, 1:1, ECMP", "all_to_all", 4_000_000, 1, "ecmp"),
    _case("all-to-all, 1:1, spray", "all_to_all", 4_000_000, 1, "spray"),
    _case("all-to-all, 2:1, ECMP", "all_to_all", 4_000_000, 2, "ecmp"),
    _case("all-to-all, 2:1, spray", "all_to_all", 4_000_000, 2, "spray"),
    _case("all-to-all, 2:1, ECMP, 1000-packet drop-tail", "all_to_all", 4_000_000, 2, "ecmp", queue=1000),
    _case("all-to-all, 2:1, spray, 1000-packet drop-tail", "all_to_all", 4_000_000, 2, "spray", queue=1000),
]

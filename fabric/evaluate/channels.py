"""NCCL channels per NIC: how many flows a collective opens between two ranks across the network.

NCCL runs a ring or tree collective on ``C`` channels (one thread block each); every channel has its own network
connection, and each connection opens ``qps_per_connection`` queue pairs (``NCCL_IB_QPS_PER_CONNECTION``). The
channels are spread over the node's NICs, so two ranks on one rail exchange ``ceil(C_used / NICs) x QPs`` flows,
each hashed on its own by ECMP. The rule, as read from NVIDIA/nccl (docs/evaluator.md, "Flows per rank pair"):

1. *Search channels*: the topology search finds one ring per NIC the communicator's GPUs on a node use (a NIC's
   ring carries its rail; a communicator with one GPU per node, such as a data-parallel group beside tensor
   parallelism, uses that GPU's NIC). An approximation: the search may fit two rings through a fast NIC.
2. *Duplication*: ``src/graph/connect.cc`` doubles them ("Duplication should be complete now":
   ``nChannels = min(MAXCHANNELS, 2 x nChannels)``). The 2 x p4d trace in ``../shared/traces`` (NCCL 2.9.9, 4 EFA
   NICs per node) logs ``8 coll channels``: 4 rings doubled.
3. *Hopper and later* (compute capability >= 9.0, across nodes): "Use 4 compute channels per search channel to
   reach peak BW on <8 PPN" doubles again while fewer than 16 channels remain (capped at ``MAXCHANNELS`` = 32). The
   rule is in the connect.cc read (a 2.2x release); the release that introduced it is not pinned here, so the
   evaluator applies it from 2.19 on (``version``).
4. *Message size*: ``src/enqueue.cc`` drops channels while ``bytes < channels x threads x threshold``; with the
   Simple protocol (512 threads, ``NCCL_SIMPLE_THREAD_THRESHOLD`` = 64) a channel needs 32 KiB of the op, so
   ``C_used = min(C, max(1, bytes // 32 KiB))``.

Point-to-point ops (all-to-all, send/recv) use one channel per peer (``1 p2p channels per peer`` in the same trace),
so their flows stay ``qps_per_connection``.
"""

from __future__ import annotations

import math

__all__ = ["DEFAULT_NCCL_VERSION", "MAXCHANNELS", "BYTES_PER_CHANNEL", "nccl_channels", "channels_for_bytes",
           "flows_per_pair", "op_flows_per_pair", "COLLECTIVE_KINDS", "parse_nccl_version"]

#: The NCCL release the evaluator assumes when none is given (2024-2025 H100 clusters run 2.19-2.23).
DEFAULT_NCCL_VERSION = (2, 21)
#: NCCL's MAXCHANNELS (src/include/device.h) for the collectives that use the network.
MAXCHANNELS = 32
#: Simple protocol: NCCL_SIMPLE_MAX_NTHREADS (512) x NCCL_SIMPLE_THREAD_THRESHOLD (64) bytes per channel.
BYTES_PER_CHANNEL = 512 * 64
#: Ops whose network transfers run on NCCL's collective channels (rings and trees).
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


def parse_nccl_version(v) -> tuple[int, int]:
    """``(major, minor)`` of ``"2.18"``, ``"2.18.3"``, ``(2, 18)`` or ``None`` (the default version)."""
    if v is None:
        return DEFAULT_NCCL_VERSION
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    parts = str(v).strip().split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError as err:
        raise ValueError(f"NCCL version {v!r}: expected MAJOR.MINOR, e.g. 2.21") from err


def nccl_channels(nics_per_node: int, *, hopper: bool, multi_node: bool, version=None) -> int:
    """Collective channels of a communicator on nodes with ``nics_per_node`` NICs (rules 1-3 of the module doc).

    ``hopper``: the GPUs are compute capability 9.0 or later (H100, H200, B200, GB200); ``multi_node``: the
    communicator spans nodes; ``version``: NCCL's (default :data:`DEFAULT_NCCL_VERSION`).
    """
    ver = parse_nccl_version(version)
    c = min(MAXCHANNELS, 2 * max(1, int(nics_per_node)))
    if hopper and multi_node and ver >= (2, 19) and c < 16:
        c = min(MAXCHANNELS, 2 * c)
    return c


def channels_for_bytes(channels: int, size_bytes: float) -> int:
    """Channels NCCL keeps for an op of ``size_bytes`` (rule 4 of the module doc)."""
    return int(min(channels, max(1, math.floor(float(size_bytes) / BYTES_PER_CHANNEL))))


def flows_per_pair(kind: str, size_bytes: float, *, nics_per_node: int, qps_per_connection: int, hopper: bool,
                   multi_node: bool, version=None, channels_per_nic: int | None = None) -> int:
    """Flows (connections x queue pairs) between two ranks on one rail that an op of ``kind`` opens: the ECMP balls
    of one rank pair (module doc). Point-to-point kinds: one channel per peer. ``channels_per_nic`` (the design
    field) pins the channels per NIC instead of NCCL's rule."""
    qps = max(1, int(qps_per_connection))
    if kind not in COLLECTIVE_KINDS or not multi_node:
        return qps
    if channels_per_nic is not None:
        return int(channels_per_nic) * qps
    used = channels_for_bytes(nccl_channels(nics_per_node, hopper=hopper, multi_node=multi_node, version=version),
                              size_bytes)
    return max(1, math.ceil(used / max(1, int(nics_per_node)))) * qps


def op_flows_per_pair(design, shape, kind: str, size_bytes: float, *, hopper: bool) -> int:
    """:func:`flows_per_pair` of an op of ``kind`` on a placed group (``fabric.evaluate.flows.GroupShape``) of
    ``design``: the NICs its rings use on a node are those of its GPUs there (one GPU per node: its own NIC)."""
    nics = max(1, min(design.nics_per_node, int(round(shape.per_domain * design.nics_per_gpu))))
    return flows_per_pair(kind, size_bytes, nics_per_node=nics, qps_per_connection=design.qps_per_connection,
                          hopper=hopper, multi_node=shape.domains > 1, channels_per_nic=design.channels_per_nic)

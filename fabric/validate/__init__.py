"""Validation of the evaluator against independent models.

``fabric.validate.packet.run_packet`` cross-checks one op against ns-3 (the optional ``packet`` extra: ``pip install
.[packet]``). Nothing here imports ns-3 at import time; see ``docs/validation-packet.md``.
"""

from fabric.validate.network import PacketNetwork, flow_hash, packet_network, switch_salts
from fabric.validate.packet import PacketResult, run_packet, select_op

__all__ = ["run_packet", "PacketResult", "select_op", "packet_network", "PacketNetwork", "flow_hash",
           "switch_salts", "ns3_available"]


def ns3_available() -> bool:
    """True when ns-3's Python bindings are installed (checked without importing them)."""
    from fabric.validate.ns3sim import ns3_available as _avail

    return _avail()

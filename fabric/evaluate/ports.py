"""Per-port hashing on multi-port NICs (issue 28): each flow (NCCL channel x queue pair) leaves on one port.

A NIC with several ports (a 2 x 200G dual-plane NIC, a 4 x 200G multi-plane one) does not split a connection's
bytes over its ports: it hashes each queue pair onto one port (link aggregation towards two ToRs, or one port per
plane), and the QP's packets stay there. So under ECMP a rank pair's ``f`` flows are ``f`` balls thrown onto the
NIC's ``P`` ports, exactly like ECMP onto uplinks: with 1 QP and NCCL's 2 channels per NIC, a 2-port NIC puts both
flows on one port half of the time and runs at half speed. Under computed paths the controller places them too
(``ceil(f / P)`` on the busiest port); under adaptive routing and spraying the NIC balances or sprays over its
ports (an even split, as multi-plane NICs that spray across planes do). Inside a plane each port carries on
average ``f / P`` of the flows, each of the full flow size / ``f``.

The port group of a NIC is a link class of kind ``"nic ports"`` (drawn like ECMP under ``ecmp``:
``LinkClass.hashed``) at the NIC port speed. Only the sending side is drawn: the receiving port
is the sender's plane, so its load follows the senders' draws (with many senders it is near their mean).
"""

from __future__ import annotations

import numpy as np

__all__ = ["port_classes", "PORT_KIND"]

PORT_KIND = "nic ports"


def port_classes(nic_ids: np.ndarray, bytes_per_byte: np.ndarray, flows: float, ports, *,
                 hashed: bool = True) -> list:
    """The ``"nic ports"`` classes of the sending NICs ``nic_ids`` (node ids, one per flow, before the flows are
    split over ports), each flow ``flows`` balls of ``bytes / flows``, on ``ports`` ports per NIC (a number, or one
    per flow: the ports it can use); ``hashed``: drawn
    like ECMP whatever the routing, else placed by the routing's own rule (computed paths: ``ceil(k / ports)``)."""
    from fabric.evaluate.link_classes import _group_classes

    n = np.asarray(ports, dtype=np.int64)
    if nic_ids.size == 0 or n.max() <= 1:
        return []
    zero = lambda keys: np.zeros(len(keys), np.int64)           # noqa: E731
    if n.ndim == 0 or n.min() == n.max():
        # every flow may use all its NIC's ports: one group per NIC
        p = int(n.max())
        classes = _group_classes(PORT_KIND, nic_ids.astype(np.int64), float(flows), bytes_per_byte,
                                 lambda keys: np.full(len(keys), p, np.int64), zero)
    else:
        # ``ports`` differs by flow (a failed leaf leaves some flows fewer usable ports: dualtor.py): one group per
        # (NIC, usable ports), each hashed on its own
        n = np.broadcast_to(n, nic_ids.shape)
        width = int(n.max()) + 1
        classes = _group_classes(PORT_KIND, nic_ids.astype(np.int64) * width + n, float(flows), bytes_per_byte,
                                 lambda keys: keys % width, zero)
        for c in classes:
            c.member_ids = c.member_ids // width
    for c in classes:
        c.hashed = hashed
    return classes

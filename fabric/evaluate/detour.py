"""A NIC whose every port lost its switch (issue 34): its GPU's traffic detours over NVLink through the live NICs
of the other GPUs of its server (the rule and its source: :mod:`fabric.failures.rule`, "the detour").

What the evaluator does with a failed leaf (or rail switch) whose servers keep live NICs elsewhere:

- a NIC is **dead** when every port of it hangs off a failed leaf; a NIC with a live port carries on through it
  (:mod:`fabric.evaluate.dualtor`);
- a flow whose source or destination NIC is dead is split evenly over the server's live NICs, as NCCL spreads its
  channels over the NICs that are up. With PXN on a rail fabric (``pxn``, always on rail-only) a flow stays on one
  rail from end to end, so it is split over the rails live at *both* servers (on a rail-only fabric there is no
  other way: rails are separate networks); otherwise each end is split over its own server's live NICs and the
  spines join them;
- the bytes that leave through another GPU's NIC cross NVLink to that GPU first, and the bytes that arrive on
  another GPU's NIC cross NVLink after it: each is a hop in series with the network, charged as PXN's forward hop
  is (store and forward; ``PhaseLoad.forward_nvlink`` holds the busiest GPU's bytes of both).

Hand check (tests/test_blast_radius.py): 2 servers of 8 GPUs, 8 rails, one rail leaf down. Each server's 8 flows
of a rail-aligned exchange go over 7 NICs: every surviving NIC carries its own flow and a seventh of the failed
rail's, 8/7 of its healthy load.
"""

from __future__ import annotations

import numpy as np

from fabric.errors import DesignError
from fabric.topology.fabric import LINK_KINDS

__all__ = ["dead_nics", "detour_flows", "nvlink_detour"]


def dead_nics(fabric, dead_leaf: np.ndarray) -> np.ndarray | None:
    """Per NIC (index from ``fabric.nic_base``): True when every port of it hangs off a failed leaf (``dead_leaf``:
    per switch index); None when no NIC is dead."""
    if dead_leaf is None or not dead_leaf.any():
        return None
    ports = fabric.nic_ports.astype(np.int64) - fabric.switch_base
    ok = (ports >= 0) & (ports < fabric.n_switches)
    dead = np.where(ok, dead_leaf[np.clip(ports, 0, fabric.n_switches - 1)], False).all(axis=1)
    return dead if dead.any() else None


def _spread(cand: np.ndarray, parts: np.ndarray):
    """For each row of the bool ``cand`` (flows x NICs of a server), the chosen local NIC indices: ``(row, local,
    share)`` with ``share`` = 1 / the row's count. DesignError naming the first flow with none."""
    cnt = cand.sum(axis=1)
    if (cnt == 0).any():
        raise DesignError("the failure leaves two servers no live rail in common: the fabric is partitioned for "
                          "them (fail fewer switches)")
    rows, local = np.nonzero(cand)
    return parts[rows], local, 1.0 / cnt[rows]


def detour_flows(fabric, dead_nic: np.ndarray, src_gpu, dst_gpu, src_nic, dst_nic, per, *, same_rail: bool):
    """The flows (``src_gpu``, ``dst_gpu``, ``src_nic``, ``dst_nic``: node ids; ``per``: bytes per op byte) with
    those on a dead NIC moved to live ones (module docstring), and the NVLink forward hop they add:
    ``(src_gpu, dst_gpu, src_nic, dst_nic, per, forward)`` where ``forward`` is the busiest GPU's bytes sent to
    another GPU's NIC plus the busiest GPU's bytes received from another GPU's NIC (None when no flow touches a
    dead NIC: the flows are returned as given)."""
    nb = fabric.nic_base
    npn = max(1, int(fabric.design.nics_per_node))
    s, d = src_nic - nb, dst_nic - nb
    bad = dead_nic[s] | dead_nic[d]
    if not bad.any():
        return src_gpu, dst_gpu, src_nic, dst_nic, per, None
    live = ~dead_nic.reshape(-1, npn)                          # (servers, NICs of a server)
    idx = np.flatnonzero(bad)
    sn, dn = s[idx] // npn, d[idx] // npn
    if same_rail:
        rows, local, share = _spread(live[sn] & live[dn], np.arange(idx.size))
        new_s = sn[rows] * npn + local
        new_d = dn[rows] * npn + local
        new_per = per[idx][rows] * share
        src_rows = rows
    else:
        own_s = np.zeros((idx.size, npn), bool)
        own_s[np.arange(idx.size), s[idx] % npn] = True
        cand_s = np.where(dead_nic[s[idx]][:, None], live[sn], own_s)
        r1, ls, sh1 = _spread(cand_s, np.arange(idx.size))
        own_d = np.zeros((r1.size, npn), bool)
        own_d[np.arange(r1.size), d[idx][r1] % npn] = True
        cand_d = np.where(dead_nic[d[idx][r1]][:, None], live[dn[r1]], own_d)
        r2, ld, sh2 = _spread(cand_d, np.arange(r1.size))
        src_rows = r1[r2]
        new_s = sn[src_rows] * npn + ls[r2]
        new_d = dn[src_rows] * npn + ld
        new_per = per[idx][src_rows] * sh1[r2] * sh2
    keep = ~bad
    sg = np.concatenate([src_gpu[keep], src_gpu[idx][src_rows]])
    dg = np.concatenate([dst_gpu[keep], dst_gpu[idx][src_rows]])
    sni = np.concatenate([src_nic[keep], new_s + nb])
    dni = np.concatenate([dst_nic[keep], new_d + nb])
    p = np.concatenate([per[keep], new_per])
    if (dead_nic[sni - nb] | dead_nic[dni - nb]).any():       # cannot happen: every part was moved to live NICs
        raise DesignError("internal: a detoured flow still uses a dead NIC")
    nics = fabric.gpu_nics
    away_s = ~(nics[sg] == sni[:, None]).any(axis=1)          # leaves through another GPU's NIC
    away_d = ~(nics[dg] == dni[:, None]).any(axis=1)          # arrives on another GPU's NIC
    out_fwd = float(np.bincount(sg[away_s], weights=p[away_s]).max()) if away_s.any() else 0.0
    in_fwd = float(np.bincount(dg[away_d], weights=p[away_d]).max()) if away_d.any() else 0.0
    return sg, dg, sni, dni, p, out_fwd + in_fwd


def nvlink_detour(fabric) -> bool:
    """Whether the detour (module docstring; the rule: :mod:`fabric.failures.rule`) applies to ``fabric``: its servers' GPUs are joined by NVLink (a
    server of one GPU has no sibling to detour through, and none is needed: its NICs are its own)."""
    if fabric.design.gpus_per_node <= 1:
        return True
    nv = fabric.link_kind == LINK_KINDS.index("nvlink")
    return bool(nv.any() and float(fabric.link_capacity_bps[nv].min()) > 0)

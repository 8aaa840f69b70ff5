"""A cabling plan as tables: the whole plan as CSV (streamed in batches, so a million links stay a few seconds and a
bounded amount of memory), and a readable table per rack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from fabric.topology.fabric import MEDIA

__all__ = ["plan_table", "write_plan_csv", "rack_table", "switch_interface_names", "BATCH_ROWS"]

#: Rows written per batch.
BATCH_ROWS = 200_000


def _take(values, idx: np.ndarray) -> pa.Array:
    """``values[idx]`` as a string array (``idx`` -1: empty)."""
    values = pa.array(list(values) + [""], pa.string())
    idx = np.where(np.asarray(idx) < 0, len(values) - 1, idx)
    return pc.take(values, pa.array(idx, pa.int64()))


def switch_interface_names(port: np.ndarray, cage: np.ndarray, lane: np.ndarray, ports_per_cage: int,
                           lanes: np.ndarray) -> pa.Array:
    """Interface names on a switch: ``cage/port-in-cage`` where a cage holds two ports (Quantum-2's OSFP cages,
    "1/1", "1/2"), else the port number; a breakout lane adds ``/lane`` ("12/3")."""
    port, cage, lane = (np.asarray(x, np.int64) for x in (port, cage, lane))
    if ports_per_cage > 1:
        head = pc.binary_join_element_wise(pa.array(cage).cast(pa.string()),
                                           pa.array((port - 1) % ports_per_cage + 1).cast(pa.string()), "/")
    else:
        head = pa.array(port).cast(pa.string())
    tail = pa.array(lane).cast(pa.string())
    split = pa.array(np.asarray(lanes) > 1)
    return pc.if_else(split, pc.binary_join_element_wise(head, tail, "/"), head)


def _interfaces(plan, node: np.ndarray, port, cage, lane, speed) -> pa.Array:
    """Interface name of each row end: a NIC's ``nicK`` (``nicK/pP`` on a multi-port NIC), a switch's port name;
    a reserved slot's ``rail-R``."""
    fab = plan.fabric
    node = np.asarray(node, np.int64)
    is_nic = (node >= fab.nic_base) & (node < fab.nic_base + fab.n_nics)
    lanes = np.array([plan.switch_lanes.get(float(s), 1) for s in np.unique(speed).tolist()])
    lanes = lanes[np.searchsorted(np.unique(speed), speed)]
    sw_names = switch_interface_names(port, np.maximum(cage, 1), np.maximum(lane, 1), plan.ports_per_cage, lanes)
    nic_idx = np.where(is_nic, node - fab.nic_base, 0)
    nic_ports = fab.nic_ports.shape[1]
    nic_name = pa.array(plan.nic_interface[nic_idx])
    if nic_ports > 1:
        nic_name = pc.binary_join_element_wise(nic_name, pc.binary_join_element_wise(
            pa.scalar("p"), pa.array(port).cast(pa.string()), ""), "/")
    return pc.if_else(pa.array(is_nic), nic_name, sw_names)


def plan_table(plan, rows=None) -> pa.Table:
    """The plan's rows (all, a slice or an index array) as a table with the columns of ``PLAN_COLUMNS``."""
    idx = np.arange(plan.rows)[rows] if rows is not None else np.arange(plan.rows)
    lay = plan.layout
    ra, ua, rb, ub = (x[idx] for x in plan._ends())
    a_node, b_node = plan.a_node[idx], plan.b_node[idx]
    names = plan.node_names
    speed = plan.speed_bps[idx]
    from fabric.cabling.roles import ROLE_NAMES, RESERVED_ROLE

    role = plan.role[idx]
    a_iface = _interfaces(plan, a_node, plan.a_port[idx], plan.a_cage[idx], plan.a_lane[idx], speed)
    res = role == RESERVED_ROLE
    if res.any():
        a_iface = pc.if_else(pa.array(res), pa.array(np.char.add("rail-", plan.a_port[idx].astype(str))), a_iface)
    cable_len = np.where(plan.cable[idx] >= 0, plan.cable_length_m[np.maximum(plan.cable[idx], 0)]
                         if plan.cable_length_m.size else 0.0, np.nan)
    medium = plan.medium[idx]
    return pa.table({
        "link": pa.array(plan.link[idx]),
        "role": _take(ROLE_NAMES, role),
        "plane": pa.array(plan.plane[idx]),
        "speed_gbps": pa.array(speed / 1e9),
        "a_rack": _take(lay.rack_name.tolist(), ra),
        "a_u": pa.array(ua),
        "a_device": pa.array(names[a_node].astype(str)),
        "a_interface": a_iface,
        "a_port": pa.array(plan.a_port[idx]),
        "a_cage": pa.array(plan.a_cage[idx]),
        "a_lane": pa.array(plan.a_lane[idx]),
        "a_optic": _take(plan.optic_models, plan.a_optic[idx]),
        "b_rack": _take(lay.rack_name.tolist(), rb),
        "b_u": pa.array(ub),
        "b_device": pa.array(names[b_node].astype(str)),
        "b_interface": _interfaces(plan, b_node, plan.b_port[idx], plan.b_cage[idx], plan.b_lane[idx], speed),
        "b_port": pa.array(plan.b_port[idx]),
        "b_cage": pa.array(plan.b_cage[idx]),
        "b_lane": pa.array(plan.b_lane[idx]),
        "b_optic": _take(plan.optic_models, plan.b_optic[idx]),
        "medium": _take(MEDIA, np.where(medium < 0, -1, medium)),
        "cable_model": _take(plan.cable_models, plan.cable[idx]),
        "cable_length_m": pa.array(cable_len),
        "length_m": pa.array(plan.length_m[idx]),
    })


def write_plan_csv(plan, path, *, batch_rows: int = BATCH_ROWS) -> int:
    """Write the whole plan as CSV to ``path`` (a path or a binary file object), batch by batch; returns the rows
    written."""
    sink = str(path) if isinstance(path, (str, Path)) else path
    writer = None
    try:
        for start in range(0, max(plan.rows, 1), batch_rows):
            t = plan_table(plan, slice(start, min(plan.rows, start + batch_rows)))
            if writer is None:
                writer = pacsv.CSVWriter(sink, t.schema)
            writer.write_table(t)
    finally:
        if writer is not None:
            writer.close()
    return plan.rows


def rack_table(plan, rack: int):
    """A readable table (pandas) of the links with an end in layout rack ``rack``: that end first (its U, device,
    port), the far end, the cable and its length; ordered by U and port."""
    rows = plan.rack_rows(rack)
    t = plan_table(plan, rows).to_pandas()
    here_a = plan.a_rack[rows] == rack
    out = {}
    for col, a_col, b_col in (("U", "a_u", "b_u"), ("device", "a_device", "b_device"),
                              ("port", "a_interface", "b_interface"), ("far rack", "b_rack", "a_rack"),
                              ("far device", "b_device", "a_device"), ("far port", "b_interface", "a_interface")):
        out[col] = np.where(here_a, t[a_col], t[b_col])
    import pandas as pd

    df = pd.DataFrame(out)
    df["role"] = t["role"].to_numpy()
    df["cable"] = t["cable_model"].to_numpy()
    df["length (m)"] = t["length_m"].to_numpy()
    return df.sort_values(["U", "device", "port"], kind="stable").reset_index(drop=True)


def write_by_rack_csv(plan, path_or_file) -> int:
    """Every rack's links as one CSV, rack by rack (each link twice, once from each end's rack): rack, U, device,
    port, then the far end, role, cable and length; ordered by rack, U, device and port. Returns the rows."""
    lay = plan.layout
    ra, ua, rb, ub = plan._ends()
    t = plan_table(plan)
    views = []
    for here, u, dev, iface, port, far_rack, far_dev, far_iface in (
            (ra, ua, "a_device", "a_interface", plan.a_port, "b_rack", "b_device", "b_interface"),
            (rb, ub, "b_device", "b_interface", plan.b_port, "a_rack", "a_device", "a_interface")):
        views.append((here, u, port, pa.table({
            "rack": _take(lay.rack_name.tolist(), here), "u": pa.array(u), "device": t[dev], "port": t[iface],
            "far_rack": t[far_rack], "far_device": t[far_dev], "far_port": t[far_iface], "role": t["role"],
            "cable_model": t["cable_model"], "length_m": t["length_m"], "link": t["link"]})))
    rack = np.concatenate([v[0] for v in views])
    u = np.concatenate([v[1] for v in views])
    port = np.concatenate([v[2] for v in views])
    table = pa.concat_tables([v[3] for v in views])
    dev = pc.dictionary_encode(table["device"]).combine_chunks()
    # devices in name order within a U: rank of each name among the dictionary's sorted values
    dict_rank = np.argsort(np.argsort(np.asarray(dev.dictionary.to_pylist(), dtype=object)))
    dev_rank = dict_rank[dev.indices.to_numpy(zero_copy_only=False)]
    order = np.lexsort((port, dev_rank, u, rack))
    table = table.take(pa.array(order))
    sink = str(path_or_file) if isinstance(path_or_file, (str, Path)) else path_or_file
    with pacsv.CSVWriter(sink, table.schema) as w:
        for start in range(0, table.num_rows, BATCH_ROWS):
            w.write_table(table.slice(start, BATCH_ROWS))
    return table.num_rows

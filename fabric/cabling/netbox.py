"""The design as the CSV files NetBox's bulk import takes (NetBox 4.x; column names as its import forms give them,
checked against NetBox v4.6.8's ``dcim/forms/bulk_import.py``): sites, racks, manufacturers, device roles, device
types, devices, interfaces and cables, to be imported in that order.

- devices' interfaces are imported from ``interfaces.csv`` (the device types carry no interface templates, so
  importing a device creates none that would clash);
- switch interfaces are named as in the cabling plan (``1/2``: cage 1, port 2; ``12/3``: port 12, breakout lane
  3), NIC ports ``nicK`` (``nicK/pP`` on a multi-port NIC);
- cable types: ``mmf-om4`` (multimode optics), ``smf-os2`` (single-mode), ``dac-passive``, ``dac-active``, ``aoc``;
  interface types by speed and fabric (``400gbase-x-osfp``, ``800gbase-x-osfp``, ``infiniband-ndr``/``-xdr``, else
  ``other``); lengths in metres, the layout's.
"""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from fabric.cabling.tables import BATCH_ROWS, plan_table
from fabric.topology.fabric import MEDIA

__all__ = ["netbox_files", "NETBOX_ORDER"]

#: Files in import order.
NETBOX_ORDER = ("sites.csv", "manufacturers.csv", "device_roles.csv", "device_types.csv", "racks.csv",
                "devices.csv", "interfaces.csv", "cables.csv")
_ROLE_COLOURS = {"server": "4c78a8", "reserved": "9e9e9e", "patch panel": "bab0ac", "leaf": "f58518", "spine": "e45756", "core": "b279a2",
                 "router": "f58518"}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:100] or "x"


def _csv(header, rows) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode()


def _iface_type(speed_bps: float, fabric_kind: str) -> str:
    g = round(speed_bps / 1e9)
    if fabric_kind == "infiniband":
        return {400: "infiniband-ndr", 800: "infiniband-xdr", 200: "infiniband-hdr", 100: "infiniband-edr"}.get(g, "other")
    return {400: "400gbase-x-osfp", 800: "800gbase-x-osfp", 200: "200gbase-x-qsfp56", 100: "100gbase-x-qsfp28"}.get(
        g, "other")


_CABLE_TYPE = {"optics": None, "copper": "dac-passive", "active_copper": "dac-active", "aoc": "aoc"}


def netbox_files(plan, catalog=None, *, site: str = "fabric-site") -> dict[str, bytes]:
    """The NetBox bulk-import CSVs of a cabling plan, by file name (:data:`NETBOX_ORDER`)."""
    from fabric.cabling.elevations import rack_contents
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    fab, lay = plan.fabric, plan.layout
    d = fab.design
    sw, nic, gpu = cat.switch(d.switch_model), cat.nic(d.nic_model), cat.gpu(d.gpu_model)
    site_slug = _slug(site)
    files: dict[str, bytes] = {}
    files["sites.csv"] = _csv(["name", "slug", "status", "description"],
                              [[site, site_slug, "planned", f"fabric design {d.name}"]])
    # the catalog's GPU systems are NVIDIA's; switch vendors as the catalog names them
    makers = {"server": "NVIDIA", "switch": {"nvidia": "NVIDIA"}.get(sw.vendor, sw.vendor.capitalize())}
    manufacturers = sorted(set(makers.values()) | {"Generic"})
    files["manufacturers.csv"] = _csv(["name", "slug"], [[m, _slug(m)] for m in manufacturers])
    roles = ["server", "reserved"] + list(fab.tier_names) + ["patch panel"]
    files["device_roles.csv"] = _csv(["name", "slug", "color"], [[r, _slug(r), _ROLE_COLOURS.get(r, "9e9e9e")]
                                                                   for r in roles])
    server_type = f"{gpu.model} node ({d.gpus_per_node} GPUs)"
    types = [[makers["server"], server_type, _slug(server_type), lay.slot_height_u, "true"],
             ["Generic", "reserved slot", "reserved-slot", lay.slot_height_u, "true"],
             [makers["switch"], sw.model, _slug(sw.model), lay.switch_height_u, "true"],
             ["Generic", "fibre patch panel 1U", "fibre-patch-panel-1u", 1, "false"]]
    files["device_types.csv"] = _csv(["manufacturer", "model", "slug", "u_height", "is_full_depth"], types)
    files["racks.csv"] = _csv(["site", "name", "status", "width", "u_height", "facility_id", "description"],
                              [[site, str(lay.rack_name[r]), "planned", 19, int(lay.rack_height_u[r]),
                                f"row {int(lay.rack_row[r]) + 1} position {int(lay.rack_col[r]) + 1}",
                                f"{lay.rack_kind[r]} rack, {lay.rack_power_w[r] / 1e3:.1f} kW"]
                               for r in range(lay.n_racks)])
    type_of = {"server": (makers["server"], server_type), "reserved": ("Generic", "reserved slot"),
               "panel": ("Generic", "fibre patch panel 1U")}
    dev_rows = []
    for r in range(lay.n_racks):
        rack = str(lay.rack_name[r])
        for item in rack_contents(plan, r):
            maker, model = type_of.get(item["kind"], (makers["switch"], sw.model))
            role = "patch panel" if item["kind"] == "panel" else item["kind"]
            dev_rows.append([item["device"], role, maker, model, "planned", site, rack, item["u"], "front"])
    files["devices.csv"] = _csv(["name", "role", "manufacturer", "device_type", "status", "site", "rack",
                                 "position", "face"], dev_rows)
    # interfaces and cables: every row of the plan (both ends), built column-wise and written batch by batch
    n = plan.rows
    ib = sw.fabric == "infiniband"
    speeds = np.unique(plan.speed_bps)
    itype = pa.array([_iface_type(s, "infiniband" if ib else "ethernet") for s in speeds.tolist()], pa.string())
    type_idx = np.searchsorted(speeds, plan.speed_bps)
    kbps = (plan.speed_bps / 1e3).astype(np.int64)

    def iface_batches():
        for side in ("a", "b"):
            for lo in range(0, n, BATCH_ROWS):
                rows = slice(lo, min(n, lo + BATCH_ROWS))
                t = plan_table(plan, rows, columns=(f"{side}_device", f"{side}_interface"))
                yield pa.table({"device": t.column(0), "name": t.column(1),
                                "type": itype.take(pa.array(type_idx[rows])), "speed": pa.array(kbps[rows]),
                                "enabled": pa.array(np.ones(rows.stop - rows.start, bool))})

    files["interfaces.csv"] = _arrow_csv_batches(iface_batches(), ["device", "name", "type", "speed", "enabled"])
    # cable type of each (medium, far-end optic) pair: single-mode optics by the optic's name, else by medium
    medium_names = [""] + list(MEDIA)                   # code m + 1; "" for no medium
    optic_names = [""] + list(plan.optic_models)        # code o + 1; "" for no optic
    ctypes = []
    for m in medium_names:
        for o in optic_names:
            single = "dr" in o or "fr" in o or "lr" in o or "cwdm" in o
            ctypes.append(("smf-os2" if single else "mmf-om4") if m == "optics" else (_CABLE_TYPE.get(m) or ""))
    ctypes = pa.array(ctypes, pa.string())
    medium_code = np.where(plan.medium < 0, 0, plan.medium.astype(np.int64) + 1)
    ctype_idx = medium_code * len(optic_names) + np.where(plan.b_optic < 0, 0, plan.b_optic + 1)

    def cable_batches():
        for lo in range(0, n, BATCH_ROWS):
            rows = slice(lo, min(n, lo + BATCH_ROWS))
            k = rows.stop - rows.start
            t = plan_table(plan, rows, columns=("a_device", "a_interface", "b_device", "b_interface", "link",
                                                "length_m"))
            yield pa.table({
                "side_a_device": t["a_device"], "side_a_type": pa.repeat(pa.scalar("dcim.interface"), k),
                "side_a_name": t["a_interface"], "side_b_device": t["b_device"],
                "side_b_type": pa.repeat(pa.scalar("dcim.interface"), k), "side_b_name": t["b_interface"],
                "type": ctypes.take(pa.array(ctype_idx[rows])), "status": pa.repeat(pa.scalar("planned"), k),
                "label": pc.if_else(pc.less(t["link"], 0),          # a reserved slot's cable: R<row>
                                    pc.binary_join_element_wise(pa.scalar("R"), pa.array(
                                        np.arange(rows.start, rows.stop) + 1).cast(pa.string()), ""),
                                    pc.binary_join_element_wise(pa.scalar("L"), pc.cast(t["link"], pa.string()),
                                                                "")),
                "length": t["length_m"], "length_unit": pa.repeat(pa.scalar("m"), k)})

    files["cables.csv"] = _arrow_csv_batches(cable_batches(), [
        "side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name", "type", "status",
        "label", "length", "length_unit"])
    return files


def _arrow_csv_batches(tables, header) -> bytes:
    """Tables of the same columns as one CSV (Arrow's writer, values quoted where needed); just the header when
    there are none."""
    sink = pa.BufferOutputStream()
    writer = None
    try:
        for t in tables:
            if writer is None:
                writer = pacsv.CSVWriter(sink, t.schema, write_options=pacsv.WriteOptions(quoting_style="needed"))
            writer.write_table(t)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        return _arrow_csv(pa.table({h: pa.array([], pa.string()) for h in header}))
    return sink.getvalue().to_pybytes()


def _arrow_csv(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(quoting_style="needed"))
    return sink.getvalue().to_pybytes()

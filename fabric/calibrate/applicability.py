"""Does a calibration fitted on one system apply to a design? The warnings a user sees before trusting it.

A calibration fits the transport's efficiency and latency to measurements of one system: a GPU model, a NIC
speed, a transport, a node count. Applied to a design that differs in any of these, its numbers are an
extrapolation. :func:`calibration_mismatches` lists each difference in one sentence (empty when none); the CLI
(``fabric evaluate/search --calibration``) prints them as warnings and the dashboard shows them next to the
calibration line. Node counts differ "materially" when the design has more than :data:`NODE_RATIO` times the
measured nodes (or fewer than 1 / NODE_RATIO): latency and congestion terms fitted on 2 nodes do not carry to 256
without a check; a one-node (NVLink) calibration never describes the network.
"""

from __future__ import annotations

__all__ = ["calibration_mismatches", "search_mismatches", "NODE_RATIO"]

#: Node counts within this factor of the measured system's count are close enough not to warn.
NODE_RATIO = 4.0


def calibration_mismatches(system: dict | None, design, *, transport: str | None = None, catalog=None) -> list[str]:
    """Sentences naming how ``design`` differs from the measured ``system`` (a profile's ``system`` metadata, the
    ``SystemSpec.to_dict()`` form); ``transport`` is the profile's transport. Empty when nothing differs or
    nothing is known about the system."""
    if not system:
        return []
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    out = []
    where = f"fitted on {system.get('name') or 'another system'}"
    gpu = system.get("gpu_model")
    if gpu and gpu != design.gpu_model:
        out.append(f"the calibration was {where} ({gpu} GPUs); this design uses {design.gpu_model}")
    prof_transport = transport or system.get("transport")
    measured_nodes = int(system.get("nodes") or 0)
    design_nodes = max(1, design.gpus // design.gpus_per_node)
    if system.get("level") == "nvlink" or measured_nodes == 1:
        if design_nodes > 1:
            out.append(f"the calibration was {where}: one server, so it fits NVLink only; this design's "
                       f"{design_nodes:,} servers talk over the network, which keeps the uncalibrated defaults")
    else:
        if prof_transport and prof_transport != design.transport:
            out.append(f"the calibration was {where} over {prof_transport}; this design uses {design.transport}")
        nic_gbps, nics = system.get("nic_gbps"), system.get("nics_per_node")
        if nic_gbps:
            try:
                nic = cat.nic(design.nic_model)
                design_node_gbps = nic.ports * nic.port_speed_bps / 1e9 * design.nics_per_node
            except Exception:           # an unknown NIC is the builder's error to report, not this check's
                design_node_gbps = None
            if design_node_gbps and abs(design_node_gbps - float(nic_gbps)) > 0.01 * float(nic_gbps):
                per = f" ({nics} NICs)" if nics else ""
                out.append(f"the calibration was {where}: {float(nic_gbps):g} Gb/s of NICs per server{per}; this "
                           f"design has {design_node_gbps:g} Gb/s per server")
        if measured_nodes and (design_nodes > NODE_RATIO * measured_nodes
                               or design_nodes * NODE_RATIO < measured_nodes):
            out.append(f"the calibration was {where}: {measured_nodes:,} servers; this design has "
                       f"{design_nodes:,}, so its latency and congestion terms are extrapolated")
    return out


def search_mismatches(system: dict | None, constraints, *, transport: str | None = None) -> list[str]:
    """The differences that hold for every design a search under ``constraints`` may try (GPU model, node count,
    transports allowed); NIC speed differences are per design and reported when one is evaluated."""
    if not system:
        return []
    out = []
    where = f"fitted on {system.get('name') or 'another system'}"
    gpu = system.get("gpu_model")
    if gpu and gpu != constraints.gpu_model:
        out.append(f"the calibration was {where} ({gpu} GPUs); the search designs for {constraints.gpu_model}")
    nodes = max(1, constraints.gpus // constraints.gpus_per_node)
    measured = int(system.get("nodes") or 0)
    if system.get("level") == "nvlink" or measured == 1:
        if nodes > 1:
            out.append(f"the calibration was {where}: one server, so it fits NVLink only; the search's {nodes:,} "
                       f"servers talk over the network, which keeps the uncalibrated defaults")
        return out
    t = transport or system.get("transport")
    if t and t not in constraints.transports:
        out.append(f"the calibration was {where} over {t}; the search allows {', '.join(constraints.transports)}")
    elif t and len(constraints.transports) > 1:
        out.append(f"the calibration was {where} over {t}; designs on other transports "
                   f"({', '.join(x for x in constraints.transports if x != t)}) use it too")
    if measured and (nodes > NODE_RATIO * measured or nodes * NODE_RATIO < measured):
        out.append(f"the calibration was {where}: {measured:,} servers; the search's cluster has {nodes:,}, so its "
                   f"latency and congestion terms are extrapolated")
    return out

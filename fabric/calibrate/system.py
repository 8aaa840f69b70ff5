"""Which system a measurement file ran on, and a small fabric design that stands for it.

A calibration fits the evaluator's transport parameters, so the evaluator must see the measured system: the
ranks, GPUs per node and node count (nccl-tests header facts ``ranks``, ``hosts``, ``ranks per host``, ``nGpus``),
the GPU model (its NVLink bandwidth comes from the catalog) and, across nodes, the NIC bandwidth per node.

GPU names map to catalog rows by family: ``A100`` (SXM) -> ``a100-sxm-80gb`` (NVLink3, 300 GB/s per direction,
the same for the 40 GB part), ``H100`` (SXM) -> ``h100-sxm``, ``H200`` -> ``h200-sxm``, ``B200`` -> ``b200``,
``GB200`` -> ``gb200-nvl72``. PCIe/NVL variants and export parts (A800, H800) have other NVLink bandwidths: they
need ``gpu_model`` (CLI ``--gpu-model``).

NIC bandwidth per node (``nic_gbps``, CLI ``--nic-gbps``) defaults for known systems (:data:`KNOWN_NETWORKS`):

=====================  ==========================  =====================================================
network, GPU           NICs x speed (per node)     basis
=====================  ==========================  =====================================================
EFA, A100              4 x 100 Gb/s = 400 Gb/s     AWS p4d.24xlarge (400 Gb/s EFA networking)
EFA, H100              32 x 100 Gb/s = 3,200 Gb/s  AWS p5.48xlarge (3,200 Gb/s EFA networking)
InfiniBand, A100       8 x 200 Gb/s = 1,600 Gb/s   NVIDIA DGX A100 (8 x ConnectX-6 HDR)
InfiniBand, H100       8 x 400 Gb/s = 3,200 Gb/s   NVIDIA DGX H100 (8 x ConnectX-7 NDR, facts.md section 4)
=====================  ==========================  =====================================================

The NIC count per node is read from an NCCL_DEBUG log when it lists its network paths (``NET/<net>/<i>/...``),
else it is the known system's, else one NIC per GPU. The design is a 1- or 2-tier Clos of catalog rows made for
the purpose (a NIC and a switch port at the per-NIC speed); its cost is irrelevant to calibration. The evaluator
runs on it what NCCL would on the measured system (docs/evaluator.md, "NCCL's algorithm choice": the GPU's NVLink
SHARP support, the node count and the NVLink and NIC line rates decide; e.g. the NVLS tree on 2 x p5 H100 nodes,
the ring on 2 x p4d A100 nodes).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from fabric.catalog.devices import gpu_model_for
from fabric.errors import FabricError

__all__ = ["CalibrationError", "SystemSpec", "KNOWN_NETWORKS", "gpu_model_for", "infer_system", "system_design"]


class CalibrationError(FabricError):
    """Measurements cannot be calibrated as given (bad file, unknown system, too few points)."""


#: (network, catalog GPU) -> (NICs per node, Gb/s per NIC, basis)
KNOWN_NETWORKS = {
    ("efa", "a100-sxm-80gb"): (4, 100.0, "AWS p4d.24xlarge: 4 x 100 Gb/s EFA (400 Gb/s per node)"),
    ("efa", "h100-sxm"): (32, 100.0, "AWS p5.48xlarge: 32 x 100 Gb/s EFA (3,200 Gb/s per node)"),
    ("infiniband", "a100-sxm-80gb"): (8, 200.0, "NVIDIA DGX A100: 8 x 200 Gb/s HDR"),
    ("infiniband", "h100-sxm"): (8, 400.0, "NVIDIA DGX H100: 8 x 400 Gb/s NDR (facts.md section 4)"),
}
#: fabric transport profile and routing per detected network
#: (EFA's SRD sprays packets over paths and tolerates their reordering: the reorder-tolerant Ethernet profile)
_TRANSPORT = {"efa": ("uec", "spray"), "infiniband": ("infiniband", "ecmp"), "roce": ("roce", "ecmp"),
              "uec": ("uec", "spray"), "spray_ethernet": ("uec", "spray"), "tcp": ("tcp", "ecmp")}
_CATALOG_FABRIC = {"infiniband": "infiniband"}
#: switch hop and NIC latency of the design rows (catalog values: QM9700 class / Ethernet class)
_SWITCH_LATENCY_NS = {"infiniband": 130.0, "ethernet": 550.0}
_NIC_LATENCY_NS = {"infiniband": 600.0, "ethernet": 700.0}


@dataclass(frozen=True)
class SystemSpec:
    """The measured system. ``network`` is ``nvlink`` (one node), ``efa``, ``infiniband`` or ``roce``.

    ``nic_gbps`` is the scale-out bandwidth of one node (all its NICs), ``nics_per_node`` how many NICs share it;
    ``basis`` says where each value came from.
    """

    ranks: int
    gpus_per_node: int
    gpu_model: str
    gpu_name: str = ""
    network: str = "nvlink"
    nic_gbps: float | None = None
    nics_per_node: int | None = None
    basis: tuple = field(default_factory=tuple)

    @property
    def nodes(self) -> int:
        """Servers the measurement spans."""
        return self.ranks // self.gpus_per_node

    @property
    def level(self) -> str:
        """Which transport level the measurements exercise: ``nvlink`` (one node) or ``network``."""
        return "nvlink" if self.nodes <= 1 else "network"

    @property
    def transport(self) -> str:
        """The fabric transport profile the design uses."""
        return _TRANSPORT.get(self.network, ("infiniband", "ecmp"))[0]

    @property
    def name(self) -> str:
        """A short label, e.g. ``1 x 8 a100-sxm-80gb`` or ``2 x 8 a100-sxm-80gb, efa 400 Gb/s/node``."""
        s = f"{self.nodes} x {self.gpus_per_node} {self.gpu_model}"
        if self.level == "network":
            s += f", {self.network} {self.nic_gbps:g} Gb/s/node"
        return s

    def key(self) -> tuple:
        """What must agree for measurements to come from one system."""
        return (self.ranks, self.gpus_per_node, self.gpu_model, self.network, self.nic_gbps, self.nics_per_node)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["basis"] = list(self.basis)
        d.update(nodes=self.nodes, level=self.level, transport=self.transport, name=self.name)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "SystemSpec":
        keep = {k: d[k] for k in ("ranks", "gpus_per_node", "gpu_model", "gpu_name", "network", "nic_gbps",
                                  "nics_per_node") if k in d}
        return cls(**keep, basis=tuple(d.get("basis", ())))


def _facts(facts) -> dict:
    out: dict[str, str] = {}
    for k, v in facts:
        out.setdefault(str(k), str(v))
    return out


def _int_prefix(text: str | None) -> int | None:
    m = re.match(r"\s*(\d+)", text or "")
    return int(m.group(1)) if m else None


def _device_name(f: dict) -> str:
    for key in ("devices", "nccl-tests devices"):
        m = re.match(r"\s*\d+\s*x\s*(.+)", f.get(key, ""))
        if m:
            return m.group(1).split(",")[0].strip()
    return ""


def _network(f: dict) -> str | None:
    provider = f.get("libfabric provider", "").lower()
    net = f.get("network", "").lower()
    paths = f.get("transport paths", "")
    if provider == "efa" or "efa" in net:
        return "efa"
    if net == "ib" or "NET/IB" in paths:
        return "infiniband"
    if "socket" in net or "NET/Socket" in paths:
        return "roce"
    return None


def _nics_from_paths(f: dict) -> int | None:
    idx = set(re.findall(r"NET/[^/:,]+/(\d+)", f.get("transport paths", "")))
    return len(idx) or None


def infer_system(facts, source: str, *, ranks: int | None = None, gpu_model: str | None = None,
                 nic_gbps: float | None = None, gpus_per_node: int | None = None, network: str | None = None,
                 catalog=None) -> SystemSpec:
    """The system of one measurement file from its header ``facts`` (user values win; see the module doc)."""
    from fabric.catalog import default_catalog

    catalog = catalog or default_catalog()
    f = _facts(facts)
    basis = []
    n = ranks or _int_prefix(f.get("ranks")) or _int_prefix(f.get("nGpus"))
    if not n:
        raise _err(source, "the file does not say how many ranks ran (no 'ranks' or 'nGpus' header)")
    hosts = _int_prefix(f.get("hosts"))
    if gpus_per_node:
        gpn = int(gpus_per_node)
        basis.append(f"gpus per node {gpn}: given")
    elif hosts:
        if n % hosts:
            raise _err(source, f"{n} ranks on {hosts} hosts is not a whole number per host; "
                                        "pass --gpus-per-node")
        gpn = n // hosts
        basis.append(f"gpus per node {gpn}: {n} ranks on {hosts} host(s) in the log")
    elif n <= 8:
        gpn = n
        basis.append(f"gpus per node {gpn}: no host list in the log, {n} ranks taken as one node")
    else:
        raise _err(source, f"{n} ranks but the log does not list hosts; pass --gpus-per-node")
    if n % gpn:
        raise _err(source, f"{n} ranks is not a whole number of {gpn}-GPU nodes")
    name = _device_name(f)
    model = gpu_model or gpu_model_for(name)
    if model is None:
        what = f"GPU {name!r}" if name else "an unnamed GPU (no device lines in the log)"
        raise _err(source, f"cannot map {what} to a catalog GPU; pass --gpu-model (one of "
                                    f"{', '.join(catalog.models('gpus'))})")
    if model not in catalog.models("gpus"):
        raise _err(source, f"unknown GPU model {model!r}; choose one of {', '.join(catalog.models('gpus'))}")
    basis.append(f"GPU {model}: " + ("given" if gpu_model else f"device name {name!r}"))
    spec = SystemSpec(ranks=n, gpus_per_node=gpn, gpu_model=model, gpu_name=name, basis=tuple(basis))
    if spec.nodes <= 1:
        return spec
    net = network or _network(f)
    if net is None:
        net = "infiniband" if nic_gbps else None
        if net is None:
            raise _err(source, f"{spec.nodes} nodes but the log does not say which network; pass "
                                        "--transport and --nic-gbps")
        basis.append("network infiniband: assumed (log does not say; --transport to change)")
    else:
        basis.append(f"network {net}: " + ("given" if network else "NCCL log"))
    known = KNOWN_NETWORKS.get((net, model))
    nics = _nics_from_paths(f)
    if nics:
        basis.append(f"{nics} NICs per node: distinct NET paths in the NCCL log")
    elif known:
        nics = known[0]
        basis.append(f"{nics} NICs per node: {known[2]}")
    else:
        nics = gpn
        basis.append(f"{nics} NICs per node: one per GPU (assumed)")
    if nic_gbps:
        gbps = float(nic_gbps)
        basis.append(f"NIC bandwidth {gbps:g} Gb/s per node: given")
    elif known:
        gbps = known[0] * known[1]
        basis.append(f"NIC bandwidth {gbps:g} Gb/s per node: {known[2]}")
    else:
        raise _err(source, f"{spec.nodes} nodes on {net} with {model}: no default NIC bandwidth is known; "
                                    "pass --nic-gbps (scale-out Gb/s per node, all NICs together)")
    if not gbps > 0:
        raise _err(source, f"--nic-gbps must be positive, got {gbps:g}")
    return SystemSpec(ranks=n, gpus_per_node=gpn, gpu_model=model, gpu_name=name, network=net, nic_gbps=gbps,
                      nics_per_node=nics, basis=tuple(basis))


def _err(source: str, msg: str) -> CalibrationError:
    """A calibration error naming the file."""
    return CalibrationError(f"{source}: {msg}")


def system_design(system: SystemSpec, catalog=None):
    """``(design, catalog)`` standing for ``system``: a Clos of catalog rows at the measured NIC speed."""
    from fabric.catalog import apply_overrides, compatible_nics, default_catalog
    from fabric.design import Design

    base = catalog or default_catalog()
    transport, routing = _TRANSPORT.get(system.network, ("infiniband", "ecmp"))
    if system.level == "nvlink":
        # one node: the network is not exercised, but the design's NIC must be one the host runs (an A100 host
        # feeds 200G per GPU, not the default 400G NIC); the fastest such NIC of the default switch's fabric
        nics = [base.nic(m) for m in compatible_nics(base, system.gpu_model)]
        same = [n for n in nics if n.fabric == base.switch(Design.switch_model).fabric] or nics
        nic = max(same, key=lambda n: (n.port_speed_bps * n.ports, -n.price_usd)).model if same else Design.nic_model
        design = Design(name=f"calibration {system.name}", family="clos", gpus=system.ranks,
                        gpus_per_node=system.gpus_per_node, gpu_model=system.gpu_model, transport=transport,
                        routing=routing, nic_model=nic)
        return design, base
    nics = int(system.nics_per_node or system.gpus_per_node)
    speed = float(system.nic_gbps) / nics
    fab = _CATALOG_FABRIC.get(system.network, "ethernet")
    src = f"fabric calibrate: {system.name} ({nics} NICs per node at {speed:g} Gb/s)"
    rows = [
        ("nics", src, {"model": "calib-nic", "fabric": fab, "ports": 1, "port_speed_gbps": speed, "price_usd": 0,
                       "power_w": 0, "latency_ns": _NIC_LATENCY_NS[fab], "source": src}),
        ("switches", src, {"model": "calib-switch", "vendor": "calibration", "fabric": fab, "ports": 64,
                           "port_speed_gbps": speed, "price_usd": 0, "power_w": 0,
                           "latency_ns": _SWITCH_LATENCY_NS[fab], "source": src}),
        ("transceivers", src, {"model": "calib-optic", "speed_gbps": speed, "ports_per_module": 1, "reach_m": 2000,
                               "side": "any", "medium": "singlemode", "price_usd": 0, "power_w": 0, "source": src}),
        ("cables", src, {"model": "calib-dac", "kind": "dac", "speed_gbps": speed, "reach_m": 5, "price_usd": 0,
                         "power_w": 0, "source": src}),
    ]
    limit = base.gpu(system.gpu_model).max_nic_bps_per_gpu
    per_gpu_gbps = speed * max(1.0, nics / system.gpus_per_node)       # as fabric.catalog.compat counts it
    if limit is not None and per_gpu_gbps * 1e9 > limit:
        # the measured system is what it is: its host fed these NICs, whatever the catalog's limit says
        rows.append(("gpus", src, {"model": system.gpu_model, "max_nic_gbps_per_gpu": per_gpu_gbps}))
    cat = apply_overrides(base, rows, source=f"{base.source} + calibration rows")
    design = Design(name=f"calibration {system.name}", family="clos", gpus=system.ranks,
                    gpus_per_node=system.gpus_per_node, gpu_model=system.gpu_model,
                    nics_per_gpu=nics / system.gpus_per_node, nic_model="calib-nic", switch_model="calib-switch",
                    transport=transport, routing=routing)
    return design, cat

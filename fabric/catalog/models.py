"""The rows of the hardware catalog as plain frozen dataclasses, in SI units (bits/s, seconds, dollars, watts).

Reading, checking and converting the edge-unit CSV columns lives in :mod:`fabric.catalog.schema` and
:mod:`fabric.catalog.loader`; these classes only hold values and answer small questions about themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabric.errors import DesignError

__all__ = ["SwitchModel", "NicModel", "Transceiver", "Cable", "GpuModel", "MAX_BREAKOUT_LANES"]

#: Most links one switch port can be split into (an 800G OSFP breaks out to at most 8 x 100G lanes).
MAX_BREAKOUT_LANES = 8
#: Standard breakouts of one port: whole, or 2, 4, 8 equal links (800G OSFP: 1 x 800G, 2 x 400G, 4 x 200G, 8 x 100G).
_BREAKOUTS = (1, 2, 4, 8)


@dataclass(frozen=True)
class SwitchModel:
    """A switch: ``ports`` ports of ``port_speed_bps`` each, its price, power, and cut-through hop latency."""

    model: str
    vendor: str
    fabric: str
    ports: int
    port_speed_bps: float
    price_usd: float
    power_w: float
    latency_s: float
    source: str
    #: ports one physical cage holds (2: an OSFP cage of two NDR or XDR ports, taking twin-port modules); None: 1
    ports_per_cage: int | None = None
    #: SHARP streaming aggregation trees the switch takes part in at once (1: NVIDIA Quantum; one per port on
    #: Quantum-2); 0: it does not reduce in the network; None: no limit is known beyond one tree per link
    #: (fabric.evaluate.innetwork)
    sharp_trees: int | None = None

    @property
    def cage_bps(self) -> float:
        """Bandwidth of one cage: the most a switch-side optical module may carry in it."""
        return self.port_speed_bps * (self.ports_per_cage or 1)

    def radix_at(self, link_speed_bps: float) -> int:
        """Number of links of ``link_speed_bps`` this switch can terminate, using port breakout.

        A port splits into ``port_speed / link_speed`` links when that ratio is a whole number (at most
        :data:`MAX_BREAKOUT_LANES`): 64 x 800G gives 128 links at 400G. A port slower than the link gives 0;
        a ratio that is not a whole number means no breakout, so each port carries one slower link.
        """
        if not link_speed_bps > 0:
            raise DesignError(f"link speed must be a positive number of bits/s, got {link_speed_bps!r}")
        ratio = self.port_speed_bps / link_speed_bps
        if ratio < 1 - 1e-9:
            return 0
        lanes = round(ratio)
        if not math.isclose(ratio, lanes, rel_tol=1e-9):
            return self.ports
        return self.ports * min(lanes, MAX_BREAKOUT_LANES)

    def lanes_at(self, link_speed_bps: float) -> int:
        """Links of ``link_speed_bps`` one port carries in a standard breakout (the port whole, or split in 2, 4 or
        :data:`MAX_BREAKOUT_LANES` equal links), else 0: an 800G port gives 1 link at 800G, 2 at 400G, 4 at 200G,
        8 at 100G, and none at 300G or 1.6T."""
        if not link_speed_bps > 0:
            raise DesignError(f"link speed must be a positive number of bits/s, got {link_speed_bps!r}")
        ratio = self.port_speed_bps / link_speed_bps
        for lanes in _BREAKOUTS:
            if math.isclose(ratio, lanes, rel_tol=1e-9):
                return lanes
        return 0

    def breakout_speeds_bps(self) -> tuple[float, ...]:
        """The link speeds :meth:`lanes_at` accepts, fastest first (800G ports: 800, 400, 200, 100G)."""
        return tuple(self.port_speed_bps / k for k in _BREAKOUTS)

    @property
    def capacity_bps(self) -> float:
        """Total switching capacity, ports x port speed (one direction)."""
        return self.ports * self.port_speed_bps


@dataclass(frozen=True)
class NicModel:
    """A network adapter: ``ports`` ports of ``port_speed_bps``, price, power and one-side latency."""

    model: str
    fabric: str
    ports: int
    port_speed_bps: float
    price_usd: float
    power_w: float
    latency_s: float
    source: str


@dataclass(frozen=True)
class Transceiver:
    """An optical module serving ``ports_per_module`` ports of ``speed_bps`` each (2 for a twin-port OSFP).

    ``side`` is where it plugs in ("nic", "switch" or "any"); ``medium`` is the fibre it needs.
    """

    model: str
    speed_bps: float
    ports_per_module: int
    reach_m: float
    side: str
    medium: str
    price_usd: float
    power_w: float
    source: str

    @property
    def price_per_port_usd(self) -> float:
        """Price divided by the ports one module serves."""
        return self.price_usd / self.ports_per_module


@dataclass(frozen=True)
class Cable:
    """A cable: ``kind`` dac (passive copper), acc (active copper), aoc (active optical) or fibre, up to ``reach_m``
    long; ``speed_bps`` 0 means any speed (passive fibre). ``medium`` (fibre): "multimode" or "singlemode", the
    modules it carries light for; None: not given, taken to fit any module."""

    model: str
    kind: str
    speed_bps: float
    reach_m: float
    price_usd: float
    power_w: float
    source: str
    medium: str | None = None

    def fits_speed(self, speed_bps: float) -> bool:
        """True when this cable carries links of ``speed_bps`` (passive fibre, speed 0, carries any)."""
        return self.speed_bps == 0 or math.isclose(self.speed_bps, speed_bps, rel_tol=1e-9)


@dataclass(frozen=True)
class GpuModel:
    """An accelerator and the server (or rack) it is sold in.

    ``scale_up_bps`` is the NVLink-class bandwidth per GPU per direction; ``scale_up_domain_max`` the most GPUs
    one scale-up domain can hold; ``bf16_flops`` the dense BF16 rate in FLOP/s; ``server_price_usd`` and
    ``server_power_w`` are for a whole server of ``server_gpus`` GPUs, GPUs included. ``max_nic_bps_per_gpu`` is
    the most scale-out NIC bandwidth the host feeds one GPU (bits/s per direction, set by its PCIe link: one
    Gen5 x16 link carries ~64 GB/s, so 400G per H100); it bounds the NIC bandwidth serving a GPU and each NIC's
    own bandwidth (a NIC sits on one such link). ``None``: the catalog row gives no limit, none is checked
    (see :mod:`fabric.catalog.compat`). ``node_gpus`` is the GPUs of one host board, whose NICs sit beside them (8
    on an HGX baseboard, 4 on a GB200 compute tray); ``None``: the whole server (:attr:`host_gpus`). ``hbm_bytes``
    is the GPU's own memory (HBM) in bytes, what a training plan's weights, optimizer state and activations must fit
    in (:mod:`fabric.plans.memory`); ``None``: not given, so no plan can be checked against it.
    ``hbm_bytes_per_s`` its HBM bandwidth (bytes/s), the memory roof of the compute model
    (:mod:`fabric.workload.compute_model`); ``None``: taken as H100's ratio to the BF16 rate.
    """

    model: str
    price_usd: float
    power_w: float
    scale_up_bps: float
    scale_up_domain_max: int
    bf16_flops: float
    server_gpus: int
    server_price_usd: float
    server_power_w: float
    nvls: str
    source: str
    max_nic_bps_per_gpu: float | None = None
    node_gpus: int | None = None
    hbm_bytes: float | None = None
    hbm_bytes_per_s: float | None = None

    @property
    def host_gpus(self) -> int:
        """GPUs per host (the design's ``gpus_per_node`` for this system): ``node_gpus``, else the whole server."""
        return int(self.node_gpus or self.server_gpus)

    @property
    def rack_scale(self) -> bool:
        """True when the scale-up domain spans more than one host (an NVL72 rack of 18 trays)."""
        return self.scale_up_domain_max > self.host_gpus

    @property
    def has_nvls(self) -> bool:
        """NVLink SHARP: the NVSwitch reduces in the switch (H100 generation and later), so NCCL runs multi-node
        all-reduces as a two-level NVLS tree instead of a flat ring."""
        return self.nvls == "yes"

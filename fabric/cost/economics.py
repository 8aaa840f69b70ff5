"""GPU economics of a design: what one training step costs once GPU time is counted, how much of it the network
wastes, and how fast extra network spend pays for itself.

The cluster costs money every second whether its GPUs compute or wait:

    usd_per_s = (server capex + network capex) / life  +  IT power x PUE x electricity price

where IT power is the servers' rated power plus the network's bill of materials without its NICs, which the
servers' rating already includes (DGX H100: 10.2 kW with its eight ConnectX-7; :func:`fabric.facility.rackpower.it_power_w`,
the same figure as the rack report's). The servers' part of the running cost is their rating less the NICs; the
network's part keeps its NICs' power, as its capex keeps their price.

and one step costs ``usd_per_s x step`` (the p99 step: the pace a synchronous job keeps). GPUs wait on the network
for the exposed scale-out communication of the step (communication not hidden behind compute, checkpoint interference
included): ``gpu_idle_fraction_network`` is its share of the p99 step. Against a cheaper reference design, extra
network capex buys back step time; it pays for itself when the GPU time it frees, valued at the servers' cost per
second, adds up to the extra capex (``payback_days``).

Defaults (facts.md section 11, all editable): a 4-year life (epoch-research training-cost-trends amortizes cluster
capex over ~4 years; common practice 4-5), electricity $0.08 per kWh (US EIA industrial average), PUE 1.3 (Uptime
Institute surveys: 1.1-1.5). Server price and power per GPU come from the GPU's catalog row.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from fabric.errors import FabricError

__all__ = ["EconomicsParams", "economics", "SECONDS_PER_YEAR"]

SECONDS_PER_YEAR = 365.25 * 86400.0
_J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class EconomicsParams:
    """What GPU time costs: amortization ``life_years``, ``electricity_usd_per_kwh`` and ``pue`` (facility power /
    IT power)."""

    life_years: float = 4.0
    electricity_usd_per_kwh: float = 0.08
    pue: float = 1.3

    def __post_init__(self):
        for name, lo, hi in (("life_years", 0.1, 30.0), ("electricity_usd_per_kwh", 0.0, 5.0), ("pue", 1.0, 3.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
                raise FabricError(f"economics parameter '{name}': expected a number between {lo:g} and {hi:g}, "
                                  f"got {v!r}")

    def to_dict(self) -> dict:
        return asdict(self)


def _exposed_p99(evaluation) -> tuple[float, float]:
    """(everything else, exposed scale-out network communication incl. checkpoint interference) of the p99
    sample (fabric.evaluate.explain: NVLink communication is the servers', not the network's)."""
    b = evaluation.p99_breakdown
    comm = float(sum(b.get("ops", {}).values()))
    net = float(b.get("network_s", comm)) + float(b.get("interference_s", 0.0))
    return float(b.get("compute_s", 0.0)) + comm - float(b.get("network_s", comm)), net


def economics(evaluation, design, *, catalog=None, params: EconomicsParams | None = None, reference=None) -> dict:
    """Cost per step, network idle share and (against ``reference``, another Evaluation of the same workload on a
    cheaper design) the payback of the extra network spend. All money in USD, time in seconds.

    Keys: ``usd_per_step``, ``usd_per_hour``, ``network_usd_per_step`` (the network's part of it),
    ``gpu_idle_fraction_network``, ``idle_usd_per_step`` (what the waiting costs), ``server_capex_usd``,
    ``network_capex_usd``, ``power_w`` (IT power: servers and network, the NICs once), ``params``; with
    ``reference``: ``reference_design``, ``extra_network_capex_usd``, ``p99_saved_s``, ``payback_days`` (None
    when the design is not faster, or not dearer: then nothing is bought back or nothing is spent).
    """
    from fabric.catalog import default_catalog

    p = params or EconomicsParams()
    gpu = (catalog or default_catalog()).gpu(design.gpu_model)
    per_gpu_price = gpu.server_price_usd / gpu.server_gpus
    per_gpu_power = gpu.server_power_w / gpu.server_gpus
    server_capex = design.gpus * per_gpu_price
    nic_power = float(evaluation.cost_by_category.get("nic", {}).get("power_w", 0.0))
    server_power = design.gpus * per_gpu_power - nic_power      # (the NICs are the network's: module docstring)
    life_s = p.life_years * SECONDS_PER_YEAR
    usd_per_j = p.electricity_usd_per_kwh / _J_PER_KWH
    server_usd_per_s = server_capex / life_s + server_power * p.pue * usd_per_j
    network_usd_per_s = evaluation.cost_usd / life_s + evaluation.power_w * p.pue * usd_per_j
    usd_per_s = server_usd_per_s + network_usd_per_s
    step = float(evaluation.step_time_s["p99"])
    compute, net = _exposed_p99(evaluation)
    idle = net / (compute + net) if compute + net > 0 else 0.0
    out = {
        "usd_per_step": usd_per_s * step, "usd_per_hour": usd_per_s * 3600.0,
        "network_usd_per_step": network_usd_per_s * step,
        "gpu_idle_fraction_network": idle, "idle_usd_per_step": usd_per_s * step * idle,
        "server_capex_usd": server_capex, "network_capex_usd": float(evaluation.cost_usd),
        "power_w": server_power + float(evaluation.power_w), "step_p99_s": step, "params": p.to_dict(),
    }
    if reference is not None:
        extra = float(evaluation.cost_usd) - float(reference.cost_usd)
        saved = float(reference.step_time_s["p99"]) - step
        payback = None
        if extra > 0 and saved > 0:
            # every second of training on the reference, this design frees saved / ref_step of the servers' time
            freed_usd_per_s = server_usd_per_s * saved / float(reference.step_time_s["p99"])
            payback = extra / freed_usd_per_s / 86400.0
        out.update({"reference_design": reference.design_name, "extra_network_capex_usd": extra,
                    "p99_saved_s": saved, "payback_days": payback})
    return out

"""The headline figures of one evaluated design: one definition, one way to write each.

A design review reads the same numbers on the Design page, on Compare, in the brief, in the HTML report and from
``fabric evaluate --json``; a number that differs between two of them (another sample count, another rounding,
IT power labelled facility power) is a number nobody signs. :func:`design_figures` computes them from one
evaluation (the seed and samples every page uses: :data:`fabric.evaluate.DEFAULT_SAMPLES`, seed 0), and
:func:`figure_texts` writes each in its one format. Every surface takes them from here.
"""

from __future__ import annotations

__all__ = ["FIGURES", "design_figures", "figure_texts", "figure_text"]

#: name -> (label, kind): the figures in the order pages show them; ``kind`` picks the format of
#: :func:`figure_text` (usd: $1,234,567; time: 1.218 s / 85.12 ms; power: 51.0 kW / 1.73 MW; share: 9.7 %).
FIGURES = {
    "network_capex_usd": ("Network capex", "usd"),
    "capex_per_gpu_usd": ("Network capex per GPU", "usd"),
    "network_power_w": ("Network power", "power"),
    "p50_s": ("p50 step", "time"),
    "p95_s": ("p95 step", "time"),
    "p99_s": ("p99 step", "time"),
    "robust_p99_s": ("Robust p99 step", "time"),
    "lower_bound_s": ("Lower bound", "time"),
    "compute_s": ("Compute (mean rank)", "time"),
    "stragglers_s": ("Stragglers (slowest rank's extra compute)", "time"),
    "nvlink_s": ("NVLink (scale-up) communication", "time"),
    "network_s": ("Scale-out network communication", "time"),
    "interference_s": ("Checkpoint interference", "time"),
    "usd_per_step": ("Cost per p99 step", "usd_cents"),
    "usd_per_hour": ("Cluster cost per hour", "usd"),
    "gpu_idle_fraction_network": ("GPU time waiting on the network", "share"),
    "max_rack_power_w": ("Busiest rack", "power"),
    "it_power_w": ("IT power (servers and network)", "power"),
    "facility_power_w": ("Facility power (IT x PUE)", "power"),
}


def figure_text(value, kind: str) -> str:
    """One figure written the one way every surface writes it."""
    from fabric.units import time_text

    if value is None:
        return "n/a"
    v = float(value)
    if kind == "usd":
        return f"-${-v:,.0f}" if v < 0 else f"${v:,.0f}"
    if kind == "usd_cents":
        return f"${v:,.2f}"
    if kind == "time":
        return time_text(v)
    if kind == "power":
        return f"{v / 1e6:,.2f} MW" if abs(v) >= 1e6 else f"{v / 1e3:,.1f} kW"
    if kind == "share":
        return f"{v:.1%}"
    raise ValueError(f"unknown figure kind {kind!r}")


def design_figures(evaluation, design, *, catalog=None, economics_params=None, racks: dict | None = None) -> dict:
    """The figures of :data:`FIGURES` (SI numbers) of one evaluation of ``design``: capex, power, step-time
    percentiles and lower bound, where the p99 step goes (:func:`fabric.evaluate.explain.explain_step`), cost per
    step (:func:`fabric.cost.economics.economics`), busiest rack, IT and facility power (:func:`fabric.facility.rackpower.rack_report`,
    or ``racks`` when the caller has it)."""
    from fabric.cost.economics import economics
    from fabric.evaluate.explain import explain_step
    from fabric.facility.rackpower import rack_report

    ev = evaluation
    parts = explain_step(ev)["parts_s"]
    eco = economics(ev, design, catalog=catalog, params=economics_params)
    if racks is None:
        pue = economics_params.pue if economics_params is not None else None
        racks = rack_report(design, catalog=catalog, **({"pue": pue} if pue is not None else {}))
    st = ev.step_time_s
    return {"network_capex_usd": float(ev.cost_usd), "capex_per_gpu_usd": float(ev.cost_usd) / design.gpus,
            "network_power_w": float(ev.power_w), "p50_s": float(st["p50"]), "p95_s": float(st["p95"]),
            "p99_s": float(st["p99"]), "lower_bound_s": float(ev.lower_bound_s),
            "compute_s": parts["compute"], "stragglers_s": parts["stragglers"], "nvlink_s": parts["nvlink"],
            "network_s": parts["network"], "interference_s": parts["interference"],
            "usd_per_step": float(eco["usd_per_step"]), "usd_per_hour": float(eco["usd_per_hour"]),
            "gpu_idle_fraction_network": float(eco["gpu_idle_fraction_network"]),
            "max_rack_power_w": float(racks["max_rack_power_w"]), "it_power_w": float(racks["it_power_w"]),
            "facility_power_w": float(racks["facility_power_w"])}


def figure_texts(figures: dict) -> dict:
    """Each figure of ``figures`` (from :func:`design_figures`) as text."""
    return {k: figure_text(v, FIGURES[k][1]) for k, v in figures.items() if k in FIGURES}

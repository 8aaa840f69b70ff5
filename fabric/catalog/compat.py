"""Which NICs a GPU's host can run at full speed (the ``max_nic_gbps_per_gpu`` column of gpus.csv).

A GPU reaches its NICs over one PCIe link (GPUDirect RDMA), and a NIC sits on one PCIe slot: an H100 host's
Gen5 x16 link carries ~64 GB/s per direction, so 400G per GPU, and an 800G NIC cannot run at 800G there
(facts.md section 9). The bandwidth a design asks of the host is therefore

    NIC bandwidth (ports x port speed) x max(1, nics_per_gpu)

(two GPUs sharing one NIC still put the whole NIC on one slot; two NICs per GPU both pass through the GPU's link),
and it must not exceed the GPU row's limit. A row without the limit (an older catalog file) is not checked.

The builder refuses an impossible pair (:func:`nic_host_problem` gives the message) rather than derating it: a
derated 800G NIC would still be priced as an 800G NIC with 800G optics, so the honest fix is the 400G NIC. The
search only offers compatible NICs (:func:`compatible_nics`), which the dashboard can also use to grey out the
others.
"""

from __future__ import annotations

__all__ = ["host_nic_bps", "nic_host_problem", "compatible_nics"]


def host_nic_bps(nic, nics_per_gpu: float = 1.0) -> float:
    """Bits/s per direction the host must feed for one GPU's NIC attachment (see the module docstring)."""
    return nic.ports * nic.port_speed_bps * max(1.0, float(nics_per_gpu))


def nic_host_problem(gpu, nic, nics_per_gpu: float = 1.0, catalog=None) -> str | None:
    """Why ``nic`` cannot run at full speed on ``gpu``'s host (a one-line message), or ``None`` when it can.

    With ``catalog`` the message names the catalog's NICs that would fit.
    """
    limit = gpu.max_nic_bps_per_gpu
    need = host_nic_bps(nic, nics_per_gpu)
    if limit is None or need <= limit * (1 + 1e-9):
        return None
    per_nic = f"{nic.ports} x {nic.port_speed_bps / 1e9:g}G" if nic.ports > 1 else f"{nic.port_speed_bps / 1e9:g}G"
    what = (f"{nics_per_gpu:g} x NIC {nic.model} ({per_nic}) per GPU" if nics_per_gpu > 1
            else f"NIC {nic.model} ({per_nic})")
    fix = f"pick a NIC of at most {limit / 1e9:g} Gb/s"
    if catalog is not None:
        fits = compatible_nics(catalog, gpu.model, nics_per_gpu)
        fix = f"NICs that fit: {', '.join(fits)}" if fits else f"no catalog NIC fits at {nics_per_gpu:g} per GPU"
    return (f"{what} cannot run at full speed on the {gpu.model} host: it needs {need / 1e9:g} Gb/s per GPU, the "
            f"host's PCIe link feeds at most {limit / 1e9:g} Gb/s (gpus.csv max_nic_gbps_per_gpu); {fix}; or use "
            f"fewer NICs per GPU, or a GPU whose host takes {need / 1e9:g} Gb/s")


def compatible_nics(catalog, gpu_model: str, nics_per_gpu: float = 1.0, models=None) -> list[str]:
    """The NIC models (of ``models``, default all, in catalog order) that ``gpu_model``'s host runs at full speed
    with ``nics_per_gpu`` NICs per GPU.

    >>> from fabric.catalog import default_catalog
    >>> compatible_nics(default_catalog(), "h100-sxm")
    ['nic-cx7-400', 'nic-cx6-200', 'nic-2x200-dual', 'nic-eth-400']
    """
    gpu = catalog.gpu(gpu_model)
    names = catalog.models("nics") if models is None else list(models)
    return [m for m in names if nic_host_problem(gpu, catalog.nic(m), nics_per_gpu) is None]

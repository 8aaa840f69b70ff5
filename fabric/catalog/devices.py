"""GPU device names as traces and NCCL logs print them, and the catalog GPU rows they stand for.

Names map to catalog rows by family: ``A100`` (SXM) -> ``a100-sxm-80gb`` (the 40 GB part has the same NVLink and
BF16 rate), ``H100`` (SXM) -> ``h100-sxm``, ``H200`` -> ``h200-sxm``, ``B200`` -> ``b200``, ``GB200`` ->
``gb200-nvl72``. PCIe/NVL variants and export parts (A800, H800) have other NVLink bandwidths and BF16 rates (an H100
PCIe: 756 TFLOPS dense, not 989): they map to no row.
"""

from __future__ import annotations

__all__ = ["DEVICE_NAMES", "gpu_model_for"]

#: catalog GPU -> the device name CUDA (nvidia-smi, nccl-tests, a Kineto trace's ``deviceProperties``) prints
DEVICE_NAMES = {"h100-sxm": "NVIDIA H100 80GB HBM3", "h200-sxm": "NVIDIA H200",
                "a100-sxm-80gb": "NVIDIA A100-SXM4-80GB", "b200": "NVIDIA B200"}


def gpu_model_for(device_name: str) -> str | None:
    """The catalog GPU row for a device name, or None when the name does not say (see the module doc)."""
    n = device_name.upper().replace(" ", "")
    if any(tag in n for tag in ("PCIE", "NVL")) and "NVL72" not in n or any(tag in n for tag in ("A800", "H800")):
        return None
    for tag, model in (("GB200", "gb200-nvl72"), ("B200", "b200"), ("H200", "h200-sxm"), ("H100", "h100-sxm"),
                       ("A100", "a100-sxm-80gb")):
        if tag in n:
            return model
    return None

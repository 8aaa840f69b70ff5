"""Unit conversions at the edges. Inside fabric everything is SI: bytes, seconds, bits/s, dollars, watts."""

__all__ = [
    "GBPS", "GB", "MB", "KB", "GIB", "MIB", "KIB", "US", "NS", "MS",
    "gbps_to_bps", "bps_to_gbps", "bps_to_bytes_per_s", "bytes_per_s_to_bps",
]

GBPS = 1e9          # bits/s in one Gb/s
GB = 1e9            # bytes in one GB (decimal, as nccl-tests reports GB/s)
MB = 1e6
KB = 1e3
GIB = 2.0 ** 30
MIB = 2.0 ** 20
KIB = 2.0 ** 10
MS = 1e-3
US = 1e-6
NS = 1e-9


def gbps_to_bps(gbps: float) -> float:
    """Gb/s -> bits/s."""
    return float(gbps) * GBPS


def bps_to_gbps(bps: float) -> float:
    """bits/s -> Gb/s."""
    return float(bps) / GBPS


def bps_to_bytes_per_s(bps: float) -> float:
    """bits/s -> bytes/s."""
    return float(bps) / 8.0


def bytes_per_s_to_bps(bytes_per_s: float) -> float:
    """bytes/s -> bits/s."""
    return float(bytes_per_s) * 8.0

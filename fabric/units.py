"""Unit conversions at the edges. Inside fabric everything is SI: bytes, seconds, bits/s, dollars, watts."""

__all__ = [
    "GBPS", "GB", "MB", "KB", "GIB", "MIB", "KIB", "US", "NS", "MS",
    "gbps_to_bps", "bps_to_gbps", "bps_to_bytes_per_s", "bytes_per_s_to_bps", "time_unit", "time_text",
    "TIME_DIGITS", "range_text", "change_text",
]

#: Significant digits of every duration fabric writes (pages, brief, report, CLI): one figure reads the same
#: everywhere ("1.218 s" on the Design page, in the brief and in the advisor's answer alike).
TIME_DIGITS = 4

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


def time_unit(values) -> tuple[float, str]:
    """(factor, unit) to show durations ``values`` (seconds) in, from the largest finite one: s from 1 s up, ms
    from 1 ms, us below."""
    import math

    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v))]
    ref = max(finite) if finite else 1.0
    if ref >= 1.0 or ref == 0.0:
        return 1.0, "s"
    if ref >= MS:
        return 1e3, "ms"
    return 1e6, "us"


def time_text(seconds: float, digits: int = TIME_DIGITS) -> str:
    """A duration for a sentence or a tile, in the unit that suits it, with :data:`TIME_DIGITS` significant
    digits: ``1.218 s``, ``85.12 ms``, ``248 us``; thousands separated, never in e-notation."""
    scale, unit = time_unit([seconds])
    v = float(seconds) * scale
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f} {unit}"
    return f"{v:,.{digits}g} {unit}"


def range_text(low: float, high: float, fmt=time_text, sep: str = " to ") -> str:
    """A range for a sentence, each end written by ``fmt`` (default :func:`time_text`): ``191.2 ms to 205.4 ms``;
    one value when both ends read the same (``191.2 ms``, never ``191.2 ms to 191.2 ms``)."""
    a, b = fmt(min(low, high)), fmt(max(low, high))
    return a if a == b else f"{a}{sep}{b}"


def change_text(x: float) -> str:
    """A relative change in words: under 0.05 % it is "no change" (never "+0.0 %"), else signed to 0.1 %."""
    return "no change" if abs(x) < 0.0005 else f"{x:+.1%}"

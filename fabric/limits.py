"""Resource limits on user input, configurable by whoever runs fabric.

Each limit has a name that appears in the error a user sees, a default, and an environment variable that
overrides it (``FABRIC_LIMIT_<NAME>``, e.g. ``FABRIC_LIMIT_MAX_DECOMPRESSED_BYTES=4000000000``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

__all__ = ["Limits", "current_limits"]


@dataclass(frozen=True)
class Limits:
    """Caps on input sizes and on the work one user can start. All sizes in bytes."""

    #: largest single uploaded/read file (before decompression)
    max_upload_bytes: int = 1_000_000_000
    #: largest decompressed size of a gzip file (gzip-bomb guard)
    max_decompressed_bytes: int = 2_000_000_000
    #: deepest JSON nesting accepted
    max_json_depth: int = 64
    #: most trace events read from one file
    max_trace_events: int = 20_000_000
    #: most GPUs in one design
    max_design_gpus: int = 1_048_576
    #: most links in one built fabric
    max_design_links: int = 20_000_000
    #: most evaluations in one search
    max_search_evaluations: int = 200_000
    #: most evaluations one dashboard session may spend on searches in all (the session's search budget)
    max_session_evaluations: int = 100_000
    #: most dashboard searches running at once on one server (later ones wait in a queue)
    max_concurrent_searches: int = 4
    #: seconds without a sign of life from its browser tab after which a dashboard search counts as abandoned and
    #: is cancelled (its worker processes end)
    search_abandon_after_s: int = 60
    #: evaluation records one process keeps for reuse by later searches, oldest dropped first (a few KB each:
    #: 50,000 take a few hundred MB)
    max_cached_evaluations: int = 50_000

    @classmethod
    def from_env(cls, environ=None) -> "Limits":
        """Defaults overridden by ``FABRIC_LIMIT_<NAME>`` environment variables (whole numbers)."""
        environ = os.environ if environ is None else environ
        kw = {}
        for f in fields(cls):
            key = f"FABRIC_LIMIT_{f.name.upper()}"
            if key in environ:
                try:
                    kw[f.name] = int(environ[key])
                except ValueError:
                    from fabric.errors import FabricError

                    raise FabricError(f"environment variable {key} must be a whole number, got {environ[key]!r}")
        return cls(**kw)


def current_limits() -> Limits:
    """The limits in force (defaults plus environment overrides)."""
    return Limits.from_env()

"""fabric: an automated network designer for AI clusters.

The core package. It never imports streamlit: the dashboard (``app.py``, ``pages/``) and the CLI
(``fabric.cli``) are thin layers over the functions exported here and in the subpackages.

SI units everywhere inside: bytes, seconds, bits per second for link rates, dollars, watts.
"""

from fabric.errors import (
    CatalogError,
    DesignError,
    FabricError,
    ParseError,
    WorkloadError,
)

__version__ = "0.1.0"

__all__ = [
    "FabricError",
    "CatalogError",
    "DesignError",
    "ParseError",
    "WorkloadError",
    "__version__",
]

"""The one exception family of fabric.

Every error a user can cause (a bad file, a bad design, a bad flag) is a :class:`FabricError` subclass whose
message says what is wrong, where, and how to fix it. The CLI prints the message on one line and exits with 2;
the dashboard shows it next to the input. Anything else escaping is a bug.
"""

__all__ = ["FabricError", "CatalogError", "DesignError", "ParseError", "WorkloadError"]


class FabricError(ValueError):
    """Base class of every user-facing error in fabric."""


class CatalogError(FabricError):
    """The hardware catalog (or an override file) is malformed or names an unknown model."""


class DesignError(FabricError):
    """A design description is invalid or infeasible (e.g. too many endpoints for the radix)."""


class WorkloadError(FabricError):
    """A workload description is invalid (native JSON, synthesis parameters)."""


class ParseError(FabricError):
    """A trace file could not be parsed. ``source`` names the file; ``line`` the line or field when known."""

    def __init__(self, message: str, *, source: str | None = None, line: int | str | None = None):
        self.source = source
        self.line = line
        self.message = message
        where = ""
        if source is not None:
            where = f"{source}"
            if line is not None:
                where += f" (line {line})" if isinstance(line, int) else f" ({line})"
            where += ": "
        super().__init__(f"{where}{message}")

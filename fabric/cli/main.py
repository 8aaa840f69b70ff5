"""Entry point of the ``fabric`` console script.

Each subcommand lives in its own module ``fabric.cli.cmd_<name>`` exposing ``register(subparsers)``, which adds
its parser and sets ``func`` to a handler ``(args) -> int``. User errors (:class:`fabric.errors.FabricError`) are
printed on one line to stderr and give exit code 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from fabric import __version__
from fabric.errors import FabricError

__all__ = ["main", "build_parser", "COMMAND_MODULES"]

#: Subcommand modules, in the order ``fabric --help`` lists them.
COMMAND_MODULES = ["build", "catalog", "parse", "synth", "evaluate", "scale", "search", "plans", "calibrate", "validate",
                   "rollout", "advise", "upgrade", "plan_growth", "audit", "export"]


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="fabric",
        description=(
            "fabric designs the network of an AI cluster for a workload: it builds fabrics and their bill of "
            "materials, parses communication traces, evaluates p99 step time, and searches for the Pareto front "
            "of cost versus p99 step time."
        ),
        epilog="Run 'fabric COMMAND --help' for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"fabric {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(f"fabric.cli.cmd_{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except FabricError as err:
        msg = " ".join(str(err).split())
        print(f"fabric {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"fabric {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

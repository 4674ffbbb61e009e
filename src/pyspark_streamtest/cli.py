"""The ``pyspark-streamtest`` command."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pyspark-streamtest",
        description="Deterministic tests for PySpark Structured Streaming.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "demo",
        help="run the example topology on the canned clickstream and print the batch timeline",
    )
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run_demo

        print(run_demo())
        return 0
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover (argparse exits)
    return 2


if __name__ == "__main__":
    sys.exit(main())

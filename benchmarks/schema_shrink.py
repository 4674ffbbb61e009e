"""How long a failing property test built from a user's schema takes to shrink, with
Spark in the loop.

    python -m benchmarks.schema_shrink [--examples N] [--master URL]

The property is ``tests/spark/test_schema_properties.py``'s: a JSON-valued Kafka
pipeline (``from_json``, then clicks per user in 5-second windows with 4 s of grace)
fed rows drawn from its own schema (``row_events(..., target="json")``), checked
against an expectation that is wrong for a click without a page. hypothesis finds a
failing schedule, shrinks it with ``run_topology`` (its cache) and ``spark_settings``,
and the minimal schedule (two clicks) is printed with the seconds from the first
example to the end of the shrink, the examples tried and the Spark runs made. Nothing
is asserted about the time: it is a measure, for the docs and the changelog.
"""

from __future__ import annotations

import argparse
import sys

from pyspark_streamtest import test_spark_session
from pyspark_streamtest.testing import strategies as sst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.schema_shrink")
    parser.add_argument("--examples", type=int, default=60,
                        help="max_examples of the property (default 60)")
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    args = parser.parse_args(argv)
    spark = test_spark_session(master=args.master)
    from tests.spark.test_schema_properties import shrink_a_wrong_expectation

    try:
        tried, seconds, runs = shrink_a_wrong_expectation(spark, args.examples)
    finally:
        sst.clear_run_cache()
    minimal = tried[-1]
    print(f"failed and shrank in {seconds:.1f} s: {len(tried)} examples tried, "
          f"{runs} Spark runs (the rest answered by run_topology's cache)")
    print(f"minimal schedule, {len(minimal.events)} events:\n{minimal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Cases ported from Apache Spark's own streaming test suites (one file per suite).

Each test names the Spark suite and test it comes from and keeps Spark's expected
answers unchanged; where the driver disagrees the test is a strict xfail naming the
difference. See docs/spark-parity.md.
"""

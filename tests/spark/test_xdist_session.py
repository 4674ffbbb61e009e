"""The ``spark`` fixture's JVM under pytest-xdist: the workers' JVMs share the cores, so
they run with ``SHARED_CORES_JVM_OPTIONS`` (checked in the worker's own JVM)."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_an_xdist_workers_jvm_runs_with_the_shared_cores_options(pytester):
    pytester.makepyfile(
        """
        def test_jvm_arguments(spark):
            jvm = spark.sparkContext._jvm
            bean = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
            arguments = list(bean.getInputArguments())
            assert "-XX:TieredStopAtLevel=1" in arguments, arguments
            assert "-XX:+UseSerialGC" in arguments, arguments
            # the quiet-log set-up is still there
            assert any(a.startswith("-Dlog4j2.configurationFile=") for a in arguments)
        """
    )
    result = pytester.runpytest("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=1)

"""Project-wide test configuration.

The pyspark-streamtest pytest plugin (fixtures ``spark`` and ``topology_driver``) is
registered by the package's ``pytest11`` entry point, so an installed package is all
the suite needs. Hypothesis profiles: ``ci`` (derandomized, no deadline: Spark steps
vary in wall time) is selected when CI is set.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")

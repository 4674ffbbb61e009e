"""Compatibility path: what this module held lives in
:mod:`pyspark_streamtest.gates.scenario`,
:mod:`pyspark_streamtest.gates.scenario_file`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .errors import hide_our_frames
from .gates.scenario import (
    ScenarioResult as ScenarioResult,
)
from .gates.scenario import (
    invalid_result as invalid_result,
)
from .gates.scenario import (
    junit_xml as junit_xml,
)
from .gates.scenario import (
    resolve_topology as resolve_topology,
)
from .gates.scenario import (
    run_scenario as run_scenario,
)
from .gates.scenario import (
    scenario_history as scenario_history,
)
from .gates.scenario_file import (
    DEFAULT_START as DEFAULT_START,
)
from .gates.scenario_file import (
    SCENARIO_SUFFIXES as SCENARIO_SUFFIXES,
)
from .gates.scenario_file import (
    Scenario as Scenario,
)
from .gates.scenario_file import (
    ScenarioError as ScenarioError,
)
from .gates.scenario_file import (
    Step as Step,
)
from .gates.scenario_file import (
    load_scenario as load_scenario,
)
from .gates.scenario_file import (
    parse_duration as parse_duration,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "Step",
    "load_scenario",
    "resolve_topology",
    "run_scenario",
]

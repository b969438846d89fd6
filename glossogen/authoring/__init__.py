"""Writing your own scenario: the package ``new-scenario`` writes, and ``check-scenario``."""

from glossogen.authoring._check import CHECK_ROUNDS, ScenarioCheck, check_scenario
from glossogen.authoring._new import (
    NewScenario,
    NewScenarioError,
    check_new_scenario,
    class_name,
    write_new_scenario,
)

__all__ = [
    "CHECK_ROUNDS",
    "NewScenario",
    "NewScenarioError",
    "ScenarioCheck",
    "check_new_scenario",
    "check_scenario",
    "class_name",
    "write_new_scenario",
]

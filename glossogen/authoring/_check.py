"""``glossogen check-scenario``: what a scenario must get right before a run spends money.

Each rule gives one line per problem it finds; an empty list means the scenario passed:

- the scenario loads (installed, or on ``GLOSSOGEN_SCENARIO_PATH``);
- every event it declares is named ``<scenario>_...``;
- it ships ``knobs_default``, every preset validates with its knobs model, and the knobs model
  exports as JSON Schema;
- every seat can act or speak (a scenario tool, or a main-phase channel it is on), and every
  tool a seat names is one ``tools()`` offers;
- every seat's system prompt renders from the default preset with strict undefined values
  (a missing value is an error naming the template and the value);
- no module of the scenario's folder names an unseeded source of chance or time (the global
  ``random`` functions, an unseeded ``Random()``, the wall clock: :mod:`._sources`);
- a scripted run of 2 rounds completes without drawing from the global ``random`` source
  (whatever the way in), and a second one records the same verdicts;
- a judged scenario names its case event (``Scenario.case_event``) and logs it, and no judge
  prompt of the run holds a field that event marks hidden (:class:`~glossogen.scenario.Code`).
"""

from __future__ import annotations

import json
import random
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from jinja2 import TemplateError

from glossogen.authoring._sources import ADVICE, unseeded_sources
from glossogen.eventlog import JudgeCalled, RunView
from glossogen.knobs import BaseKnobs, ConfigError, knobs_json_schema, list_presets, load_config
from glossogen.knobs import resolve_knobs as validate_knobs
from glossogen.launch import LaunchError
from glossogen.scenario import (
    Scenario,
    UnknownScenarioError,
    codes_in,
    hidden_fields,
    load_scenario,
    scenario_dir,
)
from glossogen.testing import play, round_verdicts

CHECK_ROUNDS = 2
"""Rounds each of the two scripted runs plays."""
DEFAULT_PRESET = "knobs_default"


@dataclass(frozen=True)
class ScenarioCheck:
    """What ``check-scenario`` found: one line per problem, and the summary of a pass.

    Attributes:
        scenario: The name checked.
        problems: One line each, in the order the rules run; empty when it passed.
        summary: What passed, said once (``ok: ...``), when nothing failed.
    """

    scenario: str
    problems: list[str]
    summary: str = ""


def check_scenario(name: str) -> ScenarioCheck:
    """Check scenario ``name`` by every rule of this module; nothing is written but temp runs."""
    try:
        cls = load_scenario(name)
    except UnknownScenarioError as exc:
        return ScenarioCheck(name, [str(exc)])
    problems = event_name_problems(cls)
    presets = list_presets(scenario_dir(cls))
    problems += preset_problems(cls, presets)
    problems += schema_problems(cls)
    knobs = _default_knobs(cls, presets)
    if knobs is None:
        return ScenarioCheck(name, problems)
    scenario = cls(knobs)
    problems += seat_problems(scenario)
    problems += prompt_problems(scenario)
    problems += unseeded_sources(scenario_dir(cls))
    if problems:  # a run of a scenario already wrong says nothing more
        return ScenarioCheck(name, problems)
    with tempfile.TemporaryDirectory(prefix="glossogen-check-") as work:
        runs, run_problems = _two_runs(name, Path(work))
        problems += run_problems
        if runs:
            problems += judge_leak_problems(cls, runs[0])
    if problems:
        return ScenarioCheck(name, problems)
    won = runs[0].rounds_won
    summary = (
        f"ok: {name}: {_count(len(presets), 'preset')}, "
        f"{_count(len(_prompt_files(cls)), 'prompt')}, {_count(len(scenario.agents()), 'seat')}, "
        f"{_count(len(cls.events), 'event')}; two scripted {CHECK_ROUNDS}-round runs agree "
        f"({won} of {CHECK_ROUNDS} rounds won)"
    )
    return ScenarioCheck(name, [], summary)


def event_name_problems(cls: type[Scenario]) -> list[str]:
    """One line per declared event whose ``event_type`` lacks the ``<scenario>_`` prefix."""
    prefix = f"{cls.name}_"
    found = []
    for event in cls.events:
        event_type = event.model_fields["event_type"].default
        if not str(event_type).startswith(prefix):
            found.append(
                f"event {event.__name__} is named {event_type!r}: "
                f"a scenario's events must start with {prefix!r}"
            )
    return found


def preset_problems(cls: type[Scenario], presets: list[str]) -> list[str]:
    """One line per preset that does not validate, and one if ``knobs_default`` is missing."""
    found = []
    if DEFAULT_PRESET not in presets:
        found.append(
            f"no {DEFAULT_PRESET} preset: {DEFAULT_PRESET}.json belongs beside the scenario module"
        )
    for preset in presets:
        try:
            base, _ = load_config(preset, scenario_dir(cls))
            validate_knobs(cls.knobs_model, base, {})
        except ConfigError as exc:
            found.append(f"preset {preset}: {exc}")
    return found


def schema_problems(cls: type[Scenario]) -> list[str]:
    """One line if the knobs model does not export as JSON Schema."""
    try:
        json.dumps(knobs_json_schema(cls.knobs_model))
    except Exception as exc:  # any failure of a plug-in's model is the finding
        return [f"the knobs schema does not export: {type(exc).__name__}: {exc}"]
    return []


def seat_problems(scenario: Scenario) -> list[str]:
    """One line per seat that can neither act nor speak, or that names a tool not offered."""
    offered = {tool.name for tool in scenario.tools()}
    main = [c for c in scenario.channels() if c.phase == "main"]
    found = []
    for seat in scenario.agents():
        for tool in seat.tools:
            if tool not in offered:
                found.append(f"seat {seat.agent_id} names tool {tool!r}, which tools() lacks")
        speaks = any(c.members is None or seat.agent_id in c.members for c in main)
        if not speaks and not (set(seat.tools) & offered):
            found.append(
                f"seat {seat.agent_id} can neither act nor speak: "
                "no scenario tool and no main-phase channel"
            )
    return found


def prompt_problems(scenario: Scenario) -> list[str]:
    """One line per seat whose system prompt does not render (strict undefined values)."""
    found = []
    for seat in scenario.agents():
        try:
            scenario.system_prompt(seat)
        except TemplateError as exc:
            found.append(f"prompt {_template_of(exc)} for seat {seat.agent_id}: {exc.message}")
    return found


def judge_leak_problems(cls: type[Scenario], run: RunView) -> list[str]:
    """One line per round and hidden field of its case that a judge prompt holds.

    The case is the round's event the scenario names its case (``Scenario.case_event``); its
    hidden fields are those annotated with :class:`~glossogen.scenario.Code`. The judge prompt
    is the instructions the scenario wrote (``judge_called.instructions``); the question is the
    seat's own words, which may say anything. A judged scenario that names no case event, or
    logs none, is a problem too: its judge prompts cannot be checked.
    """
    if not cls.uses_judge:
        return []
    case_type = cls.case_type()
    if case_type is None:
        return [
            "judged scenario names no case_event: its judge prompts cannot be checked "
            "against the case's hidden fields"
        ]
    cases = {e.round_number: e for e in run.events if e.event_type == case_type}
    if not cases:
        return [
            f"judged scenario logs no {case_type} event: its judge prompts cannot be checked "
            "against the case's hidden fields"
        ]
    found: list[str] = []
    for call in run.events:
        if not isinstance(call, JudgeCalled) or call.round_number not in cases:
            continue
        for field, codes in hidden_fields(cases[call.round_number]).items():
            held = codes_in(call.instructions, codes)
            line = (
                f"round {call.round_number}: a judge prompt holds hidden field {field} "
                f"of {case_type} ({', '.join(held)})"
            )
            if held and line not in found:
                found.append(line)
    return found


def _two_runs(name: str, work: Path) -> tuple[list[RunView], list[str]]:
    """Play the scripted check run twice; the problems if one fails or the verdicts differ."""
    runs: list[RunView] = []
    for attempt in ("first", "second"):
        before = random.getstate()
        try:
            run = play(name, work / attempt, rounds=CHECK_ROUNDS, config=DEFAULT_PRESET)
        except LaunchError as exc:
            return runs, [f"the scripted run is refused: {exc}"]
        except TemplateError as exc:
            return runs, [f"the scripted run failed: prompt {_template_of(exc)}: {exc.message}"]
        except Exception as exc:  # a plug-in's bug in its round code is the finding
            return runs, [f"the scripted run failed: {type(exc).__name__}: {exc}"]
        if run.status != "completed":
            error = run.ended.error if run.ended is not None else None
            return runs, [f"the scripted run ended {run.status}: {error or 'no reason logged'}"]
        if random.getstate() != before:  # the engine never draws from it: the scenario did
            return runs, [f"the scripted run drew from the global random source: {ADVICE}"]
        runs.append(run)
    first, second = (round_verdicts(run) for run in runs)
    problems = [
        f"two scripted runs of one seed disagree in round {n}: {_said(a)} then {_said(b)}"
        for n, (a, b) in enumerate(zip(first, second, strict=False), start=1)
        if a != b
    ]
    return runs, problems


def _said(verdicts: list[tuple[str, bool, str]]) -> str:
    return "; ".join(
        f"team {team} {'won' if ok else 'lost'} ({reason})" for team, ok, reason in verdicts
    )


def _default_knobs(cls: type[Scenario], presets: list[str]) -> BaseKnobs | None:
    if DEFAULT_PRESET not in presets:
        return None
    try:
        base, _ = load_config(DEFAULT_PRESET, scenario_dir(cls))
        return validate_knobs(cls.knobs_model, base, {})
    except ConfigError:
        return None


def _template_of(exc: TemplateError) -> str:
    """The template an error was raised in (the innermost ``.j2`` frame), else ``?``."""
    name = getattr(exc, "name", None)
    if name:
        return str(name)
    frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    templates = [Path(f).name for f in frames if f.endswith(".j2")]
    return templates[-1] if templates else "?"


def _prompt_files(cls: type[Scenario]) -> list[Path]:
    return sorted((scenario_dir(cls) / "prompts").glob("*.j2"))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

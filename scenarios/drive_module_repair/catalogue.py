"""The repair bay's world: drive modules, their components, service classes and one round's case.

The ore crawler *Tessel Nine* walks on drive modules, each a sealed box of components that wear
out. A faulty module shows symptoms; which component a symptom points to differs from module to
module (each has its own fault tree), and each module's service sheet gives every component's
full procedure. Components belong to service classes, and a class fixes the shape of the steps.
All of it is invented for this scenario.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from glossogen.scenario import Code

CRAWLER = "Tessel Nine"
"""The vehicle whose drive modules are serviced."""

MODULE_NAMES: tuple[str, ...] = ("Kestrel", "Osprey", "Heron", "Plover", "Merlin", "Tern")
"""Names of the crawler's drive modules; a round's modules are drawn from them."""

PATTERNS: tuple[str, ...] = ("star", "cross", "clockwise", "spiral")
"""Orders in which a ring of fasteners is undone and tightened."""

ROUTINES: tuple[str, ...] = ("zero-offset", "sweep", "null-balance", "loopback")
"""Calibration routines a calibrated component can need."""

StepKind = Literal["unfasten", "fit", "torque", "calibrate", "hold"]


@dataclass(frozen=True)
class ServiceClass:
    """A family of components serviced the same way.

    Attributes:
        key: Short name (``flange``).
        steps: The ordered step kinds every procedure of the class has.
        fastener: What holds the component (``bolts``, ``screws``).
        tools: Tools a sheet of this class may call for.
        fastener_counts: Counts a sheet may call for.
        torque_nm: Inclusive (low, high) torque range, N·m.
        hold_what: What the hold step does, in words (``hold the preload``).
        hold_seconds: Inclusive (low, high) range of the hold, seconds.
    """

    key: str
    steps: tuple[StepKind, ...]
    fastener: str
    tools: tuple[str, ...]
    fastener_counts: tuple[int, ...]
    torque_nm: tuple[int, int]
    hold_what: str = ""
    hold_seconds: tuple[int, int] = (0, 0)


CLASSES: tuple[ServiceClass, ...] = (
    ServiceClass("flange", ("unfasten", "fit", "torque"), "bolts",
                 ("socket driver", "spanner"), (4, 6, 8), (30, 60)),
    ServiceClass("clamp", ("unfasten", "fit", "torque", "hold"), "bolts",
                 ("pin wrench", "spanner"), (2, 4), (20, 45), "hold the preload", (10, 40)),
    ServiceClass("sensor", ("unfasten", "fit", "torque", "calibrate"), "screws",
                 ("hex key", "nut runner"), (2, 3, 4), (2, 9)),
    ServiceClass("sealed", ("unfasten", "fit", "hold", "torque"), "bolts",
                 ("socket driver", "nut runner"), (6, 8, 10), (15, 35),
                 "leak-check under pressure", (20, 90)),
    ServiceClass("board", ("hold", "unfasten", "fit", "torque", "calibrate"), "screws",
                 ("hex key", "pin wrench"), (4, 6), (1, 5), "discharge it", (5, 30)),
)  # fmt: skip
CLASS_BY_KEY = {c.key: c for c in CLASSES}


@dataclass(frozen=True)
class Component:
    """A replaceable component: its name, service class and part code (a code: never judged)."""

    name: str
    service_class: str
    part_code: str


COMPONENTS: tuple[Component, ...] = (
    Component("coolant pump", "flange", "FL-310"),
    Component("gear pump", "flange", "FL-322"),
    Component("drive flange", "flange", "FL-347"),
    Component("idler bearing", "clamp", "CL-204"),
    Component("main bearing", "clamp", "CL-219"),
    Component("shaft coupling", "clamp", "CL-236"),
    Component("speed sensor", "sensor", "SN-118"),
    Component("temperature probe", "sensor", "SN-127"),
    Component("position encoder", "sensor", "SN-141"),
    Component("oil seal housing", "sealed", "SE-405"),
    Component("valve block", "sealed", "SE-412"),
    Component("filter canister", "sealed", "SE-430"),
    Component("motor controller", "board", "BD-502"),
    Component("power inverter", "board", "BD-517"),
    Component("sensor hub", "board", "BD-529"),
)
COMPONENT_BY_NAME = {c.name: c for c in COMPONENTS}

SYMPTOMS: tuple[str, ...] = (
    "grinding under load",
    "whine rising with speed",
    "oil mist on the casing",
    "speed readout drops out",
    "casing hot after idling",
    "knock at start-up",
    "coolant drips under the box",
    "jerky at low speed",
    "buzz at full power",
    "position readout jumps",
    "pressure sags when held",
    "smell of hot insulation",
    "shudder on reversing",
    "slow to warm up",
    "rattle at idle",
    "temperature reading stuck",
)
"""What a technician can notice; each module maps its own symptoms to its own components."""

COMPONENTS_PER_MODULE = 8
"""Components of a module's fault tree and service sheet."""


class Replacement(BaseModel):
    """One component's full procedure on one module's service sheet.

    ``part_code`` is a code: the judge never sees it. ``routine`` is set for classes that
    calibrate, ``hold_seconds`` for classes that hold.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    component: str
    part_code: Annotated[str, Code()]
    tool: str
    fasteners: int = Field(ge=1)
    pattern: str
    torque_nm: int = Field(ge=1)
    passes: int = Field(ge=1, le=5)
    routine: str | None = None
    hold_seconds: int | None = Field(default=None, ge=1)

    @property
    def service_class(self) -> ServiceClass:
        """The component's service class."""
        return CLASS_BY_KEY[COMPONENT_BY_NAME[self.component].service_class]

    def step_texts(self) -> list[str]:
        """The ordered steps in plain words, every parameter filled in (what the judge reads)."""
        c = self.service_class
        words = {
            "unfasten": f"remove the {self.fasteners} {c.fastener} in a {self.pattern} pattern "
            f"with the {self.tool}",
            "fit": f"fit the new {self.component}",
            "torque": f"torque the {c.fastener} to {self.torque_nm} N·m in {self.passes} passes",
            "calibrate": f"run the {self.routine} calibration",
            "hold": f"{c.hold_what} for {self.hold_seconds} seconds",
        }
        return [words[kind] for kind in c.steps]

    def compact(self) -> str:
        """The steps as the scripted spec engineer sends them: terse, in order, complete."""
        c = self.service_class
        words = {
            "unfasten": f"remove {self.fasteners} {c.fastener} {self.pattern} with {self.tool}",
            "fit": "fit new",
            "torque": f"torque {self.torque_nm} Nm in {self.passes} passes",
            "calibrate": f"run {self.routine} calibration",
            "hold": f"hold {self.hold_seconds} s",
        }
        return "; ".join(words[kind] for kind in c.steps)


class ModuleCase(BaseModel):
    """One faulty module of a round: its fault tree, access depth, service sheet and faults.

    Attributes:
        module: The module's name.
        tree: Symptom -> component, for every component of the module.
        depth_order: The module's components, shallowest (reached first) to deepest.
        sheet: Every component's procedure on this module.
        faulty: The faulty components, in depth order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str
    tree: dict[str, str]
    depth_order: list[str]
    sheet: list[Replacement]
    faulty: list[str] = Field(min_length=1, max_length=4)

    def replacement(self, component: str) -> Replacement:
        """The sheet's procedure for ``component``."""
        return next(r for r in self.sheet if r.component == component)

    def symptom(self, component: str) -> str:
        """The symptom this module shows when ``component`` is faulty."""
        return next(s for s, c in self.tree.items() if c == component)


@dataclass(frozen=True)
class Stage:
    """One fault to fix: its module and component, 1-based, in the order they are met."""

    number: int
    module: ModuleCase
    component: str

    @property
    def replacement(self) -> Replacement:
        """The procedure the fix must follow."""
        return self.module.replacement(self.component)


class DriveCase(BaseModel):
    """One round's case: the faulty modules in the order the technician reaches them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    modules: list[ModuleCase] = Field(min_length=1, max_length=3)

    def stages(self) -> list[Stage]:
        """Every fault, module by module, depth-ordered inside a module."""
        found: list[Stage] = []
        for m in self.modules:
            for component in m.faulty:
                found.append(Stage(len(found) + 1, m, component))
        return found


def check_case(case: DriveCase) -> None:
    """Check an injected case against the catalogue.

    Raises:
        ValueError: a repeated module, an unknown component, symptom, tool, pattern or routine,
            a tree, depth order and sheet that do not cover the same components, or a faulty
            component outside them or out of depth order.
    """
    names = [m.module for m in case.modules]
    if len(set(names)) != len(names):
        raise ValueError(f"modules repeat: {names}")
    for m in case.modules:
        parts = set(m.tree.values())
        unknown = sorted(parts - set(COMPONENT_BY_NAME))
        if unknown:
            raise ValueError(f"module {m.module}: unknown components {unknown}")
        if set(m.tree) - set(SYMPTOMS):
            raise ValueError(
                f"module {m.module}: unknown symptoms {sorted(set(m.tree) - set(SYMPTOMS))}"
            )
        if (
            len(parts) != len(m.tree)
            or set(m.depth_order) != parts
            or {r.component for r in m.sheet} != parts
        ):
            raise ValueError(
                f"module {m.module}: tree, depth_order and sheet must cover the same "
                "components once each"
            )
        order = [m.depth_order.index(c) for c in m.faulty if c in parts]
        if len(order) != len(m.faulty) or order != sorted(set(order)):
            raise ValueError(f"module {m.module}: faulty must be module components in depth order")
        for r in m.sheet:
            c = r.service_class
            if r.tool not in c.tools or r.pattern not in PATTERNS:
                raise ValueError(f"module {m.module}, {r.component}: tool or pattern unknown")
            if ("calibrate" in c.steps) != (r.routine in ROUTINES):
                raise ValueError(
                    f"module {m.module}, {r.component}: routine does not fit its class"
                )
            if ("hold" in c.steps) != (r.hold_seconds is not None):
                raise ValueError(f"module {m.module}, {r.component}: hold does not fit its class")


def _replacement(rng: random.Random, component: Component) -> Replacement:
    c = CLASS_BY_KEY[component.service_class]
    return Replacement(
        component=component.name,
        part_code=component.part_code,
        tool=rng.choice(c.tools),
        fasteners=rng.choice(c.fastener_counts),
        pattern=rng.choice(PATTERNS),
        torque_nm=rng.randint(*c.torque_nm),
        passes=rng.randint(1, 3),
        routine=rng.choice(ROUTINES) if "calibrate" in c.steps else None,
        hold_seconds=rng.randint(*c.hold_seconds) if "hold" in c.steps else None,
    )


def draw_case(
    rng: random.Random, *, module_count_weights: list[float], fault_count_weights: list[float]
) -> DriveCase:
    """Draw a round's case from ``rng``.

    Args:
        rng: The round's random source (seeded from the run's seed and the round).
        module_count_weights: Weight of 1, 2, ... faulty modules.
        fault_count_weights: Weight of 1, 2, ... faulty components per module.

    Returns:
        The case: per module its own fault tree over :data:`COMPONENTS_PER_MODULE` components,
        its own depth order and service sheet, and its faulty components in depth order.
    """
    count = rng.choices(range(1, len(module_count_weights) + 1), weights=module_count_weights)[0]
    modules = []
    for name in rng.sample(MODULE_NAMES, count):
        parts = rng.sample(COMPONENTS, COMPONENTS_PER_MODULE)
        symptoms = rng.sample(SYMPTOMS, COMPONENTS_PER_MODULE)
        depth = [p.name for p in rng.sample(parts, len(parts))]
        faults = rng.choices(range(1, len(fault_count_weights) + 1), weights=fault_count_weights)
        faulty = sorted(rng.sample(depth, faults[0]), key=depth.index)
        modules.append(
            ModuleCase(
                module=name,
                tree={s: p.name for s, p in zip(symptoms, parts, strict=True)},
                depth_order=depth,
                sheet=[_replacement(rng, p) for p in parts],
                faulty=faulty,
            )
        )
    return DriveCase(modules=modules)

"""The vehicle's world: subsystems, their fault catalogue, the procedure handbook, one round's case.

The survey tender *Marrow Lark* flies crew-tended in a high orbit. Its panel raises one alarm per
subsystem, shared by every fault of that subsystem, so the astronaut at the panel knows where
trouble is but not what it is. The ground's telemetry officer reads the exact fault signature;
the systems engineer holds the handbook, whose every fault has three procedure variants, and the
round's configuration table saying which variant applies. All of it is invented for this
scenario.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from glossogen.scenario import Code

VEHICLE = "Marrow Lark"
"""The vehicle the crew flies."""

CONFIGURATIONS: tuple[str, ...] = ("nominal string", "redundant string", "cross-strapped")
"""How a tripped unit can be wired when it trips; the panel shows it, the action must name it."""

VARIANTS = 3
"""Procedure variants per fault in the handbook."""


@dataclass(frozen=True)
class Subsystem:
    """A part of the vehicle: the panel alarm its faults share, and its units."""

    key: str
    name: str
    alarm: str
    units: tuple[str, ...]


SUBSYSTEMS: tuple[Subsystem, ...] = (
    Subsystem(
        "thermal",
        "thermal control",
        "THERMAL LOOP CAUTION",
        ("coolant pump A", "coolant pump B", "port radiator wing", "starboard radiator wing"),
    ),
    Subsystem(
        "power",
        "electrical power",
        "POWER BUS WARNING",
        ("battery string 1", "battery string 2", "solar array drive", "bus regulator"),
    ),
    Subsystem(
        "attitude",
        "attitude control",
        "ATTITUDE CONTROL CAUTION",
        ("pitch reaction wheel", "yaw reaction wheel", "star tracker", "gyro package"),
    ),
    Subsystem(
        "life_support",
        "life support",
        "CABIN AIR WARNING",
        ("oxygen generator", "scrubber bed 1", "scrubber bed 2", "humidity separator"),
    ),
    Subsystem(
        "comms",
        "communications",
        "COMMS LINK CAUTION",
        ("antenna gimbal", "transponder 1", "transponder 2", "signal amplifier"),
    ),
)
SUBSYSTEM_BY_KEY = {s.key: s for s in SUBSYSTEMS}


@dataclass(frozen=True)
class Variant:
    """One way of clearing a fault.

    Attributes:
        steps: Plain words, with ``{setting}`` where the corrective setting goes.
        keywords: Regex stems; an action names this variant when it uses every one of them
            (words or phrases, matched case-insensitively from a word start). The scripted engineer
            sends them.
    """

    steps: str
    keywords: tuple[str, ...]

    def named_in(self, text: str) -> bool:
        """True when ``text`` uses every keyword of this variant."""
        return all(re.search(r"\b" + k, text, re.IGNORECASE) for k in self.keywords)


@dataclass(frozen=True)
class Fault:
    """One fault of the catalogue.

    Attributes:
        fault_id: The handbook's code (``TH-01``); never in a judge prompt.
        subsystem: Key of the subsystem whose alarm it raises.
        name: The signature's short name, as telemetry calls it (``pump cavitation``).
        signature: What telemetry reads, in plain words.
        priority: 1 (can wait) to 5 (act first); a case's stages run from high to low.
        setting_name: What the corrective setting sets (``pump speed``).
        setting_unit: Its unit, spelled out (``percent``).
        setting_range: Inclusive (low, high, step) of the values telemetry can call for.
        variants: The handbook's three procedure variants, index 0, 1, 2.
    """

    fault_id: str
    subsystem: str
    name: str
    signature: str
    priority: int
    setting_name: str
    setting_unit: str
    setting_range: tuple[int, int, int]
    variants: tuple[Variant, Variant, Variant]


FAULTS: tuple[Fault, ...] = (
    Fault(
        "TH-01", "thermal", "pump cavitation",
        "coolant flow oscillating and pump inlet pressure dipping under its floor",
        4, "pump speed", "percent", (20, 80, 5),
        (
            Variant("throttle the pump down to {setting}, then purge its inlet line",
                    ("throttle", "purge")),
            Variant("stop the pump, bleed the accumulator, then restart the pump at {setting}",
                    ("bleed", "accumulator")),
            Variant("open the loop bypass valve and ramp the pump back up to {setting}",
                    ("bypass", "ramp")),
        ),
    ),
    Fault(
        "TH-02", "thermal", "radiator freeze",
        "radiator outlet temperature falling fast, one wing far colder than its twin",
        3, "heater duty", "percent", (20, 90, 5),
        (
            Variant("turn the wing edge-on to the sun and run its heater at {setting}",
                    ("edge", "sun")),
            Variant("close the wing's loop valve and run its heater at {setting}",
                    ("close", "valve")),
            Variant("route warm return fluid through the wing and cap the heater at {setting}",
                    ("route", "warm")),
        ),
    ),
    Fault(
        "TH-03", "thermal", "loop overpressure",
        "loop pressure climbing steadily while temperatures stay flat",
        5, "relief pressure", "kilopascals", (150, 400, 10),
        (
            Variant("vent the loop through the relief line down to {setting}",
                    ("vent", "relief")),
            Variant("isolate the loop and reseat the relief valve at {setting}",
                    ("isolate", "reseat")),
            Variant("transfer fluid to the reserve tank until the loop reads {setting}",
                    ("transfer", "reserve")),
        ),
    ),
    Fault(
        "PW-01", "power", "cell imbalance",
        "one cell group charging far ahead of the others on the same string",
        2, "charge current", "amps", (2, 12, 1),
        (
            Variant("take the string off the bus and balance-charge it at {setting}",
                    ("off the bus", "balance")),
            Variant("cut the charge current to {setting} and drain the high cells",
                    ("cut", "drain")),
            Variant("drop the string to trickle charge at {setting}",
                    ("trickle",)),
        ),
    ),
    Fault(
        "PW-02", "power", "drive stall",
        "array current sagging as the sun angle drifts, drive motor current spiking",
        3, "drive angle", "degrees", (5, 85, 5),
        (
            Variant("unlatch the drive and slew the array by hand to {setting}",
                    ("unlatch", "by hand")),
            Variant("cycle the drive motor's power and command the array to {setting}",
                    ("cycle", "command")),
            Variant("park the array at {setting} and set the drive brake",
                    ("park", "brake")),
        ),
    ),
    Fault(
        "PW-03", "power", "bus sag",
        "main bus voltage sliding down under a steady load",
        5, "bus voltage", "volts", (24, 32, 1),
        (
            Variant("shed the non-essential loads and trim the regulator to {setting}",
                    ("shed", "trim")),
            Variant("bring the standby regulator online and set it to {setting}",
                    ("standby", "online")),
            Variant("tie the bus to the spare battery and hold the regulator at {setting}",
                    ("tie", "spare")),
        ),
    ),
    Fault(
        "AT-01", "attitude", "wheel overspeed",
        "wheel speed creeping past its limit with momentum still building",
        4, "wheel speed", "rpm", (1000, 4000, 100),
        (
            Variant("fire the desaturation jets and brake the wheel down to {setting}",
                    ("fire", "jets")),
            Variant("spin the wheel down with the magnetic torquers to {setting}",
                    ("magnetic", "torquers")),
            Variant("hand the axis to the other wheel and coast this one down to {setting}",
                    ("hand the axis", "coast")),
        ),
    ),
    Fault(
        "AT-02", "attitude", "tracker blinded",
        "no star lock, attitude estimate drifting on gyros alone",
        3, "slew angle", "degrees", (5, 45, 5),
        (
            Variant("close the tracker shutter and slew the vehicle by {setting}",
                    ("shutter", "slew")),
            Variant("slew the vehicle by {setting} and then reboot the tracker",
                    ("slew", "reboot")),
            Variant("switch on the baffle heater and turn the vehicle by {setting}",
                    ("baffle", "heater")),
        ),
    ),
    Fault(
        "AT-03", "attitude", "gyro drift",
        "rate readings wandering off while the tracker holds steady",
        1, "bias trim", "degrees per hour", (1, 9, 1),
        (
            Variant("recalibrate the gyros against the tracker with a bias trim of {setting}",
                    ("recalibrate",)),
            Variant("power-cycle the gyros and load a bias trim of {setting}",
                    ("power-cycle", "load")),
            Variant("hold attitude on the wheels and feed the gyros a bias trim of {setting}",
                    ("hold attitude", "feed")),
        ),
    ),
    Fault(
        "LS-01", "life_support", "oxygen shortfall",
        "oxygen output falling short of demand while the stack current looks normal",
        5, "stack current", "amps", (10, 40, 2),
        (
            Variant("purge the generator's water line and restart it at {setting}",
                    ("purge", "water line")),
            Variant("switch the generator to its reserve cell stack at {setting}",
                    ("reserve", "stack")),
            Variant("light an oxygen candle and run the generator at {setting}",
                    ("candle",)),
        ),
    ),
    Fault(
        "LS-02", "life_support", "scrubber saturation",
        "carbon dioxide rising at the outlet of the working bed",
        4, "bake temperature", "degrees Celsius", (60, 200, 10),
        (
            Variant("take the bed offline and bake it out at {setting}",
                    ("offline", "bake")),
            Variant("vent the bed to vacuum and reheat it to {setting}",
                    ("vacuum", "reheat")),
            Variant("double the fan flow and bake the bed at {setting}",
                    ("double", "fan")),
        ),
    ),
    Fault(
        "LS-03", "life_support", "humidity runaway",
        "cabin dew point rising and the water trap reading empty",
        2, "condenser temperature", "degrees Celsius", (2, 15, 1),
        (
            Variant("chill the condenser to {setting} and drain the water trap",
                    ("chill", "trap")),
            Variant("bypass the separator and set the condenser to {setting}",
                    ("bypass", "separator")),
            Variant("restart the separator drum and hold the condenser at {setting}",
                    ("restart", "drum")),
        ),
    ),
    Fault(
        "CM-01", "comms", "gimbal jam",
        "antenna pointing error growing while the gimbal motor draws full current",
        2, "gimbal angle", "degrees", (10, 170, 10),
        (
            Variant("release the gimbal brake and step the antenna to {setting}",
                    ("release", "step")),
            Variant("warm the gimbal motor, then drive the antenna to {setting}",
                    ("warm", "drive")),
            Variant("stow the antenna and re-point it at {setting}",
                    ("stow", "re-point")),
        ),
    ),
    Fault(
        "CM-02", "comms", "carrier lockup",
        "downlink carrier frozen on one frequency and not answering commands",
        1, "carrier offset", "kilohertz", (1, 30, 1),
        (
            Variant("reboot the transponder and retune its carrier by {setting}",
                    ("reboot", "retune")),
            Variant("change over to the other transponder and offset its carrier by {setting}",
                    ("change over", "offset")),
            Variant("drop to low rate and shift the carrier by {setting}",
                    ("low rate", "shift")),
        ),
    ),
)  # fmt: skip
FAULT_BY_ID = {f.fault_id: f for f in FAULTS}
FAULT_BY_NAME = {f.name: f for f in FAULTS}
LOW_PRIORITY = 2
"""Faults at or below this priority are the ones an easy round draws from."""


def table_variant(variant_index: int, fault_index: int) -> int:
    """Return the variant the configuration table assigns to the fault at ``fault_index``.

    Index 0 gives every fault variant 0; indexes 1 and 2 spread the variants over the faults.
    """
    return (variant_index * (1 + fault_index)) % VARIANTS


class FaultStage(BaseModel):
    """One stage of a case: the fault, where it tripped and what telemetry calls for.

    ``fault_id`` is a code: the judge never sees it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fault_id: Annotated[str, Code()]
    unit: str
    configuration: str
    hold_seconds: int = Field(ge=1)
    setting: int

    @property
    def fault(self) -> Fault:
        """The catalogue entry of this stage's fault."""
        return FAULT_BY_ID[self.fault_id]

    def setting_text(self) -> str:
        """The setting with its unit spelled out (``45 percent``)."""
        return f"{self.setting} {self.fault.setting_unit}"


class OrbitalCase(BaseModel):
    """One round's case: the faults in priority order and the round's secret variant index.

    ``variant_index`` and the table's keys are codes: the judge never sees them. An
    ``inject_case`` payload is this model as JSON (``table`` is derived, not given).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: list[FaultStage] = Field(min_length=1, max_length=5)
    variant_index: Annotated[int, Code("variant {}")] = Field(ge=0, lt=VARIANTS)

    @property
    def table(self) -> dict[str, int]:
        """The round's configuration table: fault id -> variant index, for every fault."""
        return {f.fault_id: table_variant(self.variant_index, i) for i, f in enumerate(FAULTS)}

    def variant(self, stage: int) -> Variant:
        """Return the procedure variant that clears ``stage`` (1-based) this round."""
        s = self.stages[stage - 1]
        return s.fault.variants[self.table[s.fault_id]]


def check_case(case: OrbitalCase) -> None:
    """Check an injected case against the catalogue.

    Raises:
        ValueError: an unknown fault id, a repeated fault, a unit or configuration the fault's
            subsystem does not have, or a setting outside the fault's range.
    """
    seen: set[str] = set()
    for n, s in enumerate(case.stages, start=1):
        if s.fault_id not in FAULT_BY_ID:
            raise ValueError(f"stage {n}: unknown fault_id {s.fault_id!r}")
        if s.fault_id in seen:
            raise ValueError(f"stage {n}: fault_id {s.fault_id!r} repeats")
        seen.add(s.fault_id)
        units = SUBSYSTEM_BY_KEY[s.fault.subsystem].units
        if s.unit not in units:
            raise ValueError(f"stage {n}: unit {s.unit!r} is not one of {', '.join(units)}")
        if s.configuration not in CONFIGURATIONS:
            raise ValueError(f"stage {n}: configuration {s.configuration!r} is unknown")
        low, high, _ = s.fault.setting_range
        if not low <= s.setting <= high:
            raise ValueError(f"stage {n}: setting {s.setting} outside {low}..{high}")


def draw_case(
    rng: random.Random,
    *,
    fault_count_weights: list[float],
    hold_seconds: tuple[int, int],
    easy: bool,
    cipher: bool,
) -> OrbitalCase:
    """Draw a round's case from ``rng``.

    Args:
        rng: The round's random source (seeded from the run's seed and the round).
        fault_count_weights: Weight of 1, 2, ... faults (one weight per count).
        hold_seconds: Inclusive (low, high) range of each stage's hold time, seconds.
        easy: One low-priority fault only (priority at most :data:`LOW_PRIORITY`).
        cipher: False forces variant index 0; the stream is drawn the same either way.

    Returns:
        The case, its stages ordered by priority (highest first, then catalogue order).
    """
    counts = list(range(1, len(fault_count_weights) + 1))
    count = rng.choices(counts, weights=fault_count_weights)[0]
    if easy:
        faults = [rng.choice([f for f in FAULTS if f.priority <= LOW_PRIORITY])]
    else:
        faults = rng.sample(FAULTS, count)
    faults.sort(key=lambda f: (-f.priority, FAULTS.index(f)))
    stages = []
    for f in faults:
        low, high, step = f.setting_range
        stages.append(
            FaultStage(
                fault_id=f.fault_id,
                unit=rng.choice(SUBSYSTEM_BY_KEY[f.subsystem].units),
                configuration=rng.choice(CONFIGURATIONS),
                hold_seconds=rng.randint(*hold_seconds),
                setting=rng.randrange(low, high + 1, step),
            )
        )
    variant_index = rng.randrange(VARIANTS)
    return OrbitalCase(stages=stages, variant_index=variant_index if cipher else 0)

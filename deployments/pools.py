"""Work pools and ``llm:<provider>`` limits as code: read ``limits.yaml``, apply it, check it.

``glossogen pools apply`` calls :func:`apply_limits`: one process work pool ``glossogen-<p>``
per provider of :mod:`glossogen.catalog` (with its flow-run concurrency limit), the shared pool
``glossogen`` (sweeps, evaluations, exports, reconcile, derived runs), and one active global
concurrency limit ``llm:<p>`` per provider that has a number. Prefect limits fail open
(a missing limit is ignored, an inactive one too), so :func:`check_limits` reports
every limit that does not exist or is inactive, for launchers to refuse or warn before use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator
from pydantic_core import ErrorDetails

from glossogen.catalog import JUDGE_PROVIDERS, SIMULATION_PROVIDERS
from glossogen.concurrency import limit_name
from glossogen.strict_yaml import DuplicateKeyError, YamlError, load_yaml

JUDGE_ONLY_PROVIDERS: tuple[str, ...] = tuple(
    p for p in JUDGE_PROVIDERS if p not in SIMULATION_PROVIDERS
)
"""Providers that only judge (``huggingface``): they get an ``llm:<provider>`` limit, no pool."""

__all__ = [
    "DEFAULT_LIMITS_FILE",
    "LimitsError",
    "LimitsFile",
    "PlannedLimit",
    "PlannedPool",
    "apply_limits",
    "check_limits",
    "load_limits",
    "plan_limits",
    "pool_name",
]

DEFAULT_LIMITS_FILE = Path(__file__).with_name("limits.yaml")
POOL_TYPE = "process"

ENGINE_COMMAND = "python -m glossogen._prefect_engine"
"""The command a pool's flow runs start with (the ``command`` job variable's default).

Left unset (Prefect's default template), a process worker starts each flow run as Prefect's
workspace supervisor, which imports Prefect, reads the flow run and its deployment and runs
the pull steps, then replaces itself with ``python -m prefect.engine``, which imports Prefect
and does all of that again. Set, the worker starts the engine at
once, in the deployment's folder as before (its ``set_working_directory`` pull step). The
``python`` is the one on the worker's ``PATH``: start the worker from the project's
environment (``uv run prefect worker start ...``, or with it activated). Measured in
``tests/orchestration`` (a loaded 2-core machine): a flow run's process took 4.24 CPU-s
(median of 31) with the supervisor and 2.94 (median of 33) without. The engine runs through
:mod:`glossogen._prefect_engine`, which sets the collector's thresholds first (it took 14% of a
flow run's CPU with CPython's defaults, 3% with these)."""


def pool_name(provider: str) -> str:
    """Return the work pool of ``provider``'s runs: ``glossogen-<provider>``."""
    return f"glossogen-{provider}"


class LimitsError(ValueError):
    """A limits file that cannot be read or is malformed; one line naming the bad value."""

    def __init__(self, message: str, exit_code: int = 65) -> None:
        """Keep ``message`` and the exit code (65 malformed, 66 unreadable)."""
        super().__init__(message)
        self.exit_code = exit_code


MAX_COUNT = 2**31 - 1
"""The largest size Prefect's server stores (a 32-bit integer column on PostgreSQL; SQLite
answered 500 past 64 bits, after the pools before it were already updated)."""
Count = Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]
"""A number of 1 to :data:`MAX_COUNT`, written as a number (``true`` is not read as 1)."""
POOL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A work pool name the server takes and a shell command line shows as is."""
BUILT_IN_POOL, BUILT_IN_LLM = 8, 4
"""What ``defaults`` holds for a number it leaves out."""


class ProviderLimits(BaseModel):
    """Limits of one provider; a number left out falls back to ``defaults``."""

    model_config = ConfigDict(extra="forbid")

    pool_concurrency: Count | None = None
    """Flow runs of this provider's work pool at once (never null: a pool has a size)."""
    llm_concurrency: Count | None = None
    """Model requests in flight at once (``llm:<provider>``); null: no limit."""

    @field_validator("pool_concurrency", mode="before")
    @classmethod
    def _pool_has_a_size(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must be a number of 1 or more, not null (leave it out for defaults)")
        return value


class SharedPool(BaseModel):
    """The pool of flows that are not one provider's runs."""

    model_config = ConfigDict(extra="forbid")

    name: str = "glossogen"
    pool_concurrency: Count = BUILT_IN_POOL

    @field_validator("name")
    @classmethod
    def _a_pool_of_its_own(cls, value: str) -> str:
        if not POOL_NAME.fullmatch(value):
            raise ValueError("must be a pool name (letters, digits, '-', '_', '.')")
        taken = {pool_name(p): p for p in SIMULATION_PROVIDERS}
        if value in taken:
            raise ValueError(f"is the pool of {taken[value]} runs; give the shared pool its own")
        return value


class LimitsFile(BaseModel):
    """The shape of ``deployments/limits.yaml``."""

    model_config = ConfigDict(extra="forbid")

    defaults: ProviderLimits = Field(
        default_factory=lambda: ProviderLimits(
            pool_concurrency=BUILT_IN_POOL, llm_concurrency=BUILT_IN_LLM
        )
    )
    providers: dict[str, ProviderLimits] = Field(default_factory=dict)
    shared_pool: SharedPool = Field(default_factory=SharedPool)


class PlannedPool(BaseModel):
    """One work pool to create or update."""

    name: str
    concurrency_limit: int


class PlannedLimit(BaseModel):
    """One global concurrency limit: a size to create or update (active), or None: no limit."""

    name: str
    limit: int | None

    def line(self, verb: str) -> str:
        """Return what ``pools apply`` prints for it: ``created limit llm:openai (1 call at once)``.

        Args:
            verb: ``created`` or ``updated`` (a size), ``deactivated`` (None, an existing limit
                set inactive) or ``left out`` (None, no such limit).
        """
        if self.limit is None:
            return f"{verb} limit {self.name} (no limit: calls to it are not limited)"
        calls = "call" if self.limit == 1 else "calls"
        return f"{verb} limit {self.name} ({self.limit} {calls} at once)"


def _as_written(value: Any) -> str:
    """Render a value as YAML writes it (``true``, ``null``, ``'3'``, ``2.5``), on one line."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    text = text.removesuffix("...").strip()
    return text if len(text) <= 60 else f"{text[:57]}..."


def _refusal(error: ErrorDetails) -> str:
    """One line naming the key (dotted path) and the value as written: ``<key> <rule>, got <v>``.

    The rule is ours, not pydantic's wording: what the key takes, so the fix is plain.
    """
    loc = [str(part) for part in error["loc"]]
    where = ".".join(loc)
    got = _as_written(error["input"])
    kind, field = error["type"], (loc[-1] if loc else "")
    if kind == "extra_forbidden":
        parent: type[BaseModel] = ProviderLimits
        if len(loc) == 1:
            parent = LimitsFile
        elif loc[0] == "shared_pool":
            parent = SharedPool
        return f"unknown key {where} (known: {', '.join(parent.model_fields)}), got {got}"
    if field in ("pool_concurrency", "llm_concurrency") and kind == "less_than_equal":
        return f"{where} must be a whole number of at most {MAX_COUNT}, got {got}"
    if field in ("pool_concurrency", "llm_concurrency"):
        rule = "must be a whole number of at least 1"
        if field == "llm_concurrency":
            rule += " or null (no limit)"
        elif error["input"] is None:
            rule += ", not null (leave it out for defaults)"
        return f"{where} {rule}, got {got}"
    if kind in ("model_type", "dict_type"):
        return f"{where} must be a mapping of keys to values, got {got}"
    if kind == "string_type":
        return f"{where} must be a name, got {got}"
    if kind == "value_error":
        return f"{where} {str(error['msg']).removeprefix('Value error, ')}, got {got}"
    return f"{where}: {error['msg']}, got {got}"


def load_limits(path: str | Path = DEFAULT_LIMITS_FILE) -> LimitsFile:
    """Read and validate a limits file.

    Raises:
        LimitsError: the file cannot be read (66), is not YAML, names a key twice in one mapping
            (a provider, or a number under one provider: the key and both lines are named),
            has an unknown key, a number below 1 or not written as a whole number, or names a
            provider the catalogue lacks (65). The message names the key and the value as
            written: ``providers.openai.llm_concurrency must be a whole number of at least 1
            or null (no limit), got true``.
    """
    try:
        raw: Any = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise LimitsError(f"cannot read limits file {path}: {reason}", 66) from None
    except DuplicateKeyError as exc:
        raise LimitsError(f"limits file {path}: {exc}") from None
    except YamlError as exc:
        raise LimitsError(f"limits file {path} is not YAML: {exc}") from None
    if raw is None:
        raise LimitsError(f"limits file {path} is empty (see deployments/limits.yaml)")
    if not isinstance(raw, dict):
        raise LimitsError(
            f"limits file {path} must be a mapping of keys to values, got {_as_written(raw)}"
        )
    try:
        limits = LimitsFile.model_validate(raw)
    except ValidationError as exc:
        raise LimitsError(f"limits file {path}: {_refusal(exc.errors()[0])}") from None
    unknown = sorted(set(limits.providers) - set(SIMULATION_PROVIDERS) - set(JUDGE_ONLY_PROVIDERS))
    if unknown:
        raise LimitsError(
            f"limits file {path}: unknown provider(s) {', '.join(unknown)} "
            f"(known: {', '.join(SIMULATION_PROVIDERS + JUDGE_ONLY_PROVIDERS)})"
        )
    return limits


def plan_limits(limits: LimitsFile) -> tuple[list[PlannedPool], list[PlannedLimit]]:
    """Resolve ``defaults`` into one pool per provider (plus the shared one) and the LLM limits.

    Returns:
        ``(pools, llm_limits)``: pools in catalogue order then the shared pool; one
        ``llm:<provider>`` limit per provider, its ``limit`` None where ``llm_concurrency``
        resolves to null (no limit: an existing one is set inactive).
    """
    defaults = limits.defaults
    set_by_default = defaults.model_fields_set
    default_pool = (
        defaults.pool_concurrency if "pool_concurrency" in set_by_default else BUILT_IN_POOL
    )
    default_llm = defaults.llm_concurrency if "llm_concurrency" in set_by_default else BUILT_IN_LLM

    def resolved(provider: str) -> tuple[int, int | None]:
        own = limits.providers.get(provider)
        given = own.model_fields_set if own is not None else set()
        pool = own.pool_concurrency if own and "pool_concurrency" in given else None
        calls = own.llm_concurrency if own and "llm_concurrency" in given else default_llm
        return pool or default_pool or BUILT_IN_POOL, calls

    pools: list[PlannedPool] = []
    llm: list[PlannedLimit] = []
    for provider in SIMULATION_PROVIDERS:
        size, calls = resolved(provider)
        pools.append(PlannedPool(name=pool_name(provider), concurrency_limit=size))
        llm.append(PlannedLimit(name=limit_name(provider), limit=calls))
    for provider in JUDGE_ONLY_PROVIDERS:  # judges only: a call limit, no pool of runs
        llm.append(PlannedLimit(name=limit_name(provider), limit=resolved(provider)[1]))
    shared = limits.shared_pool
    pools.append(PlannedPool(name=shared.name, concurrency_limit=shared.pool_concurrency))
    return pools, llm


async def apply_limits(limits: LimitsFile) -> list[str]:
    """Create or update every planned pool and limit on the configured Prefect server.

    Idempotent: a pool that exists gets the planned concurrency limit; a limit that exists gets
    the planned size and is set active, or is set inactive where the file now says null (no
    limit). Returns one line per object changed (``created``/``updated``/``deactivated``).

    Raises:
        prefect.exceptions.PrefectHTTPStatusError: the server refused a change.
        httpx.HTTPError: the server cannot be reached.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import (
        GlobalConcurrencyLimitCreate,
        GlobalConcurrencyLimitUpdate,
        WorkPoolCreate,
        WorkPoolUpdate,
    )
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    pools, llm = plan_limits(limits)
    done: list[str] = []
    template = ProcessWorker.get_default_base_job_template()
    template["variables"]["properties"]["command"]["default"] = ENGINE_COMMAND
    async with get_client() as client:
        for pool in pools:
            try:
                await client.read_work_pool(pool.name)
            except ObjectNotFound:
                await client.create_work_pool(
                    WorkPoolCreate(
                        name=pool.name,
                        type=POOL_TYPE,
                        base_job_template=template,
                        concurrency_limit=pool.concurrency_limit,
                    )  # fmt: skip
                )
                done.append(f"created work pool {pool.name} (concurrency {pool.concurrency_limit})")
                continue
            update = WorkPoolUpdate(concurrency_limit=pool.concurrency_limit, is_paused=False)
            await client.update_work_pool(pool.name, update)
            done.append(f"updated work pool {pool.name} (concurrency {pool.concurrency_limit})")
        for limit in llm:
            try:
                existing = await client.read_global_concurrency_limit_by_name(limit.name)
            except ObjectNotFound:
                if limit.limit is None:
                    continue  # no limit wanted, none there: nothing to say
                create = GlobalConcurrencyLimitCreate(
                    name=limit.name, limit=limit.limit, active=True
                )
                await client.create_global_concurrency_limit(create)
                done.append(limit.line("created"))
                continue
            if limit.limit is None:  # null now: the old number must not stay in force
                if existing.active:
                    inactive = GlobalConcurrencyLimitUpdate(active=False)
                    await client.update_global_concurrency_limit(limit.name, inactive)
                    done.append(limit.line("deactivated"))
                continue
            update_limit = GlobalConcurrencyLimitUpdate(limit=limit.limit, active=True)
            await client.update_global_concurrency_limit(limit.name, update_limit)
            done.append(limit.line("updated"))
    return done


async def check_limits(providers: list[str]) -> list[str]:
    """Return one problem line per ``llm:<provider>`` limit that is missing or inactive.

    An empty list means every named provider's calls will be bounded. Scripted runs call no
    model and are not checked.

    Raises:
        httpx.HTTPError: the server cannot be reached.
    """
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    problems: list[str] = []
    async with get_client() as client:
        for provider in sorted(set(providers) - {"scripted"}):
            name = limit_name(provider)
            try:
                limit = await client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                problems.append(f"{name} does not exist (run `glossogen pools apply`)")
                continue
            if not limit.active:
                problems.append(f"{name} is inactive: Prefect would not enforce it")
    return problems

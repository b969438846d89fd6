"""The Prefect edge of glossogen, in one place: the task policy, the call gate, deployments.

- :func:`glossogen_task` (here): the one way a task of ``tasks/`` is declared. Its parameters
  are live values (configs, sessions, run folders, records), so no task keeps a Prefect result
  cache (Prefect's ``NONE`` cache policy): hashing them is wasted work and a task must re-read what
  changed. The one exception is a task that runs once per flow run (``once_per_flow_run``):
  its result is persisted under ``<name>-<flow run id>``, so a retry of the flow run gets what
  the first attempt made (a claimed run folder, a derived run's prepared folder).
- :mod:`orchestration.gate`: the ``llm:<provider>`` call gate (Prefect global concurrency
  limits around every model request).
- :mod:`orchestration.deployments`: which deployments a worker serves, creating their flow
  runs, recording and cancelling the flow run that plays a run folder.
- :mod:`orchestration.busy`: asking a busy server again soon (the gate's requests, launches),
  with the client's own 2-32 s backoff off.
- :mod:`orchestration.runtime`: what the CLI needs of Prefect's settings (the API URL) and
  its queued logs and events.

Imports point down: ``flows -> tasks -> orchestration -> glossogen``; ``glossogen/`` reaches
this package only lazily, inside the commands and tools that start or stop Prefect work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect import Flow, Task
from prefect.cache_policies import NONE
from prefect.context import TaskRunContext
from prefect.utilities.annotations import quote

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["GlossogenFlow", "GlossogenTask", "glossogen_flow", "glossogen_task", "task_argument"]

_PLAIN = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON as it is: a plain value, a list or str-keyed dict of them.

    A tuple is not (Prefect's serialisation makes it a list).
    """
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


class GlossogenFlow(Flow[P, R]):
    """A Prefect flow whose run parameters are serialised without importing FastAPI.

    Prefect serialises a flow run's parameters with FastAPI's ``jsonable_encoder``, and that
    import loads FastAPI whole (Starlette, its OpenAPI models): about 0.16 CPU-s of every
    ``glossogen run`` and ``evaluate --runs-dir`` process, which serve no page. glossogen's flow
    parameters are pydantic models (dumped in JSON mode by alias, as ``jsonable_encoder`` dumps
    them) and plain JSON values (kept as they are); any other value goes through Prefect's own
    serialisation, so the server stores the same parameters.
    """

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """Return ``parameters`` as JSON values (see the class docstring)."""
        from pydantic import BaseModel

        serialized: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, value in parameters.items():
            if isinstance(value, BaseModel):
                serialized[key] = value.model_dump(mode="json", by_alias=True)
            elif _plain(value):
                serialized[key] = value
            else:
                rest[key] = value
        if rest:
            serialized.update(super().serialize_parameters(rest))
        return {key: serialized[key] for key in parameters if key in serialized}


def glossogen_flow(**options: Any) -> Callable[[Callable[P, R]], Flow[P, R]]:
    """Declare a flow of ``flows/`` (Prefect's ``@flow`` options) as a :class:`GlossogenFlow`."""

    def declare(fn: Callable[P, R]) -> Flow[P, R]:
        return GlossogenFlow(fn, **options)

    return declare


class GlossogenTask(Task[P, R]):
    """A Prefect task that hands its arguments to its function as they are, unvisited.

    Prefect walks every argument of a task call, depth first, twice (once for the run's
    inputs, once to resolve futures and states in them) and rebuilds each pydantic model and
    collection it walks. glossogen's tasks take live values (a run's config, its session, its
    records), never futures or states, so each argument is passed ``quote``-d (Prefect's own
    annotation for "do not visit"): measured on ``tests/derive/test_fork.py``, that walk was
    about a quarter of the suite process's CPU (579,043 ``visit_collection`` calls for 131 task
    calls).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the task as Prefect does, each argument ``quote``-d."""
        options = {k: kwargs.pop(k) for k in ("return_state", "wait_for") if k in kwargs}
        quoted = {k: quote(v) for k, v in kwargs.items()}
        call: Any = super().__call__  # Prefect's overloads take P; these are P's values quoted
        return call(*(quote(a) for a in args), **options, **quoted)


def glossogen_task(
    *, name: str, once_per_flow_run: bool = False, **options: Any
) -> Callable[[Callable[P, R]], Task[P, R]]:
    """Declare a Prefect task under glossogen's policy (see the module docstring).

    Args:
        name: The task's name (the Prefect UI's; also the prefix of its per-flow-run key).
        once_per_flow_run: Persist the result under ``<name>-<flow run id>`` so that a retry
            of the same flow run returns it instead of running the task again.
        **options: Prefect's other task options (``retries``, ``task_run_name``, ...); never
            a cache option: the policy is this function's.
    """

    def per_flow_run(context: TaskRunContext, parameters: dict[str, Any]) -> str:
        return f"{name}-{context.task_run.flow_run_id}"

    def declare(fn: Callable[P, R]) -> Task[P, R]:
        if once_per_flow_run:
            return GlossogenTask(
                fn, name=name, cache_key_fn=per_flow_run, persist_result=True, **options
            )
        return GlossogenTask(fn, name=name, cache_policy=NONE, **options)

    return declare


def task_argument(name: str) -> Any:
    """The running task call's argument ``name``, as its function receives it.

    For a ``task_run_name`` callable: Prefect's ``prefect.runtime.task_run.parameters`` holds
    the call's arguments as :class:`GlossogenTask` passed them, ``quote``-d.
    """
    from prefect.runtime import task_run

    value = task_run.parameters[name]
    return value.unwrap() if isinstance(value, quote) else value

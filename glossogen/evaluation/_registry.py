"""The metric registry: the ``@metric`` decorator for built-ins, one entry-point group for plug-ins.

Built-in metrics register when :mod:`glossogen.evaluation.metrics` is imported; third-party ones
are declared in the ``glossogen.metrics`` entry-point group (``name = "package.module:function"``,
the function decorated with :func:`metric`). Both load lazily, on the first lookup, so
``glossogen --help`` imports no metric code.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

from glossogen.evaluation._contract import Compute, Hook, Metric, MetricKind

ENTRY_POINT_GROUP = "glossogen.metrics"

_registry: dict[str, Metric] = {}
_loaded = False
_scanned_for: tuple[str, ...] | None = None


class UnknownMetricError(LookupError):
    """A metric name no built-in or installed plug-in provides; the message lists the known ones."""


def metric(
    name: str,
    *,
    unit: str,
    kind: MetricKind = "deterministic",
    version: int = 1,
    needs: tuple[Hook, ...] = ("channels",),
    sidecar: str | None = None,
    scenarios: tuple[str, ...] | None = None,
    reads: tuple[str, ...] | None = None,
    usage: tuple[str, ...] = (),
) -> Callable[[Compute], Compute]:
    """Register the decorated ``async def compute(ctx) -> Scored`` as metric ``name``.

    Args:
        name: Registry name (the report key).
        unit: What the headline score counts.
        kind: ``deterministic``, ``judged`` or ``model``.
        version: Definition version (bump when the formula changes; part of the cache key).
        needs: Run hooks read (:data:`~glossogen.evaluation._contract.Hook`).
        sidecar: JSONL file the metric writes into the run folder, if any.
        scenarios: The only scenarios it measures (None: all); ``--metrics all`` leaves it
            out of any other scenario's evaluation.
        reads: Event types read beyond what a loaded run describes
            (:attr:`~glossogen.evaluation._contract.Metric.reads`); None (the default):
            every event, so the whole log is parsed whenever the metric is scored.
        usage: Priced event types read only for their usage, through the run's spend
            (:attr:`~glossogen.evaluation._contract.Metric.usage`).

    Raises:
        ValueError: another metric already registered ``name``.
    """

    def register(compute: Compute) -> Compute:
        known = _registry.get(name)
        if known is not None and known.compute is not compute:
            raise ValueError(f"metric {name!r} is already registered")
        _registry[name] = Metric(
            name=name,
            unit=unit,
            kind=kind,
            version=version,
            needs=needs,
            compute=compute,
            sidecar=sidecar,
            scenarios=scenarios,
            description=(compute.__doc__ or "").strip(),
            reads=reads,
            usage=usage,
        )
        return compute

    return register


def _load(rescan: bool = False) -> None:
    """Import the built-ins (once), then the plug-ins of the entry-point group not yet loaded.

    The entry points are scanned again only when ``sys.path`` changed since the last scan, or
    when ``rescan`` asks (a name was not found): a scan reads every installed distribution.
    """
    global _loaded, _scanned_for
    if not _loaded:
        _loaded = True
        importlib.import_module("glossogen.evaluation.metrics")
    if not rescan and _scanned_for == tuple(sys.path):
        return
    _scanned_for = tuple(sys.path)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _registry:
            ep.load()  # importing the module runs its @metric decorators


def metric_names() -> list[str]:
    """Return every registered metric name, sorted."""
    _load()
    return sorted(_registry)


def get_metric(name: str) -> Metric:
    """Return the metric called ``name``.

    Raises:
        UnknownMetricError: no metric has that name (the message lists the known ones).
    """
    _load()
    if name not in _registry:
        _load(rescan=True)
    try:
        return _registry[name]
    except KeyError:
        raise UnknownMetricError(
            f"unknown metric {name!r} (known: {', '.join(sorted(_registry))})"
        ) from None

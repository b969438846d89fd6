"""The OpenTelemetry SDK side of Langfuse tracing, imported only when tracing is configured.

Kept apart from :mod:`glossogen.tracing` so that a run without Langfuse does not import the SDK
(its span processor and exporter bases are needed to define these classes).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from glossogen.tracing import PAUSE_AFTER_FAILURE_SECONDS, logger, span_attributes

__all__ = ["ContextAttributes", "QuietExporter"]


class ContextAttributes(SpanProcessor):
    """Copies the run and agent attributes in context onto every span as it starts."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        attributes = span_attributes()
        if attributes:
            span.set_attributes(attributes)


class QuietExporter(SpanExporter):
    """Wraps the OTLP exporter: never raises, warns once, and backs off after a failure."""

    def __init__(self, inner: Any, label: str) -> None:
        self.inner = inner
        self.label = label
        self.warned = False
        self.paused_until = 0.0

    def export(self, spans: Sequence[Any]) -> Any:
        if time.monotonic() < self.paused_until:
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception:  # noqa: BLE001 (an exporter bug must not reach the run)
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_SECONDS
            if not self.warned:
                self.warned = True
                logger.warning(
                    "Langfuse export to %s failed; spans are dropped while it fails "
                    "(not reported again)",
                    self.label,
                )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

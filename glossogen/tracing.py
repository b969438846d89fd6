"""Langfuse tracing of agent and judge calls, through pydantic-ai's OpenTelemetry instrumentation.

With ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY`` and ``LANGFUSE_HOST`` set,
:func:`configure_tracing` builds a private ``TracerProvider`` (the global one is left alone)
exporting over OTLP/HTTP to ``{LANGFUSE_HOST}/api/public/otel/v1/traces`` with Basic auth.
Agents built with ``capabilities=tracing_capabilities(handle)`` (or given
``agent.instrument = handle.instrumentation``) make one Langfuse trace per run; each span carries
what :func:`run_span` and :func:`agent_attributes` put in context: the run id as the Langfuse
session, and scenario, round, agent, role, model and provider as ``glossogen.*`` attributes,
trace metadata and ``langfuse.trace.tags``.

Tracing never stops a run: a host down or refusing the keys at start gives one warning line
(``handle.warning``) and tracing stays off; exports run in a background thread with a short
timeout, and a host lost mid-run is logged once, then retried quietly. Keys are never logged.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

KEY_VARS = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_HOST")  # all three, or off
OTEL_PATH = "/api/public/otel/v1/traces"
PROBE_TIMEOUT_SECONDS = 2.0  # the reachability check at start
EXPORT_TIMEOUT_SECONDS = 3.0  # one batch export, retries included (in the exporter's thread)
PAUSE_AFTER_FAILURE_SECONDS = 60.0  # after a failed export, batches are dropped this long
SHUTDOWN_TIMEOUT_SECONDS = 5.0
TAG_FIELDS = ("scenario", "agent_id", "role", "model", "provider", "round")
_QUIETED_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
)

_run: ContextVar[dict[str, Any] | None] = ContextVar("glossogen_trace_run", default=None)
_agent: ContextVar[dict[str, Any] | None] = ContextVar("glossogen_trace_agent", default=None)


@dataclass
class TracingHandle:
    """Tracing set up for a process or a run.

    Attributes:
        instrumentation: The pydantic-ai ``InstrumentationSettings`` (for ``agent.instrument``
            or an ``Instrumentation`` capability); None when tracing is off (host down, keys
            refused, packages missing), which leaves agents uninstrumented.
        warning: One line to show the user when tracing is configured but off, else None.
        endpoint: The OTLP/HTTP traces URL (no credentials in it).
    """

    instrumentation: Any = None
    warning: str | None = None
    endpoint: str = ""
    _provider: Any = field(default=None, repr=False)

    def capabilities(self) -> list[Any]:
        """``[Instrumentation(settings=...)]`` for ``Agent(capabilities=...)``; ``[]`` when off."""
        if self.instrumentation is None:
            return []
        from pydantic_ai.capabilities import Instrumentation

        return [Instrumentation(settings=self.instrumentation)]

    def shutdown(self, timeout_seconds: float = SHUTDOWN_TIMEOUT_SECONDS) -> None:
        """Flush pending spans and stop the exporter, waiting at most ``timeout_seconds``.

        Safe to call twice; a flush still running at the deadline goes on in a daemon thread.
        """
        provider, self._provider = self._provider, None
        if provider is None:
            return
        worker = threading.Thread(target=provider.shutdown, name="glossogen-tracing", daemon=True)
        worker.start()
        worker.join(timeout_seconds)


def tracing_capabilities(handle: TracingHandle | None) -> list[Any]:
    """The capabilities that trace an agent under ``handle`` (``[]`` when None or off)."""
    return handle.capabilities() if handle is not None else []


def configure_tracing(environ: Mapping[str, str]) -> TracingHandle | None:
    """Set up Langfuse tracing from ``environ``.

    Args:
        environ: Usually ``os.environ`` (after the ``.env`` file is applied).

    Returns:
        None when none of the Langfuse variables is set. Otherwise a handle: with
        ``instrumentation`` set when the host answered and accepted the keys, else with
        ``instrumentation`` None and a one-line ``warning`` naming the host (never a key).
    """
    public, secret, host = (environ.get(name, "").strip() for name in KEY_VARS)
    if not (public or secret or host):
        return None
    missing = [
        name for name, value in zip(KEY_VARS, (public, secret, host), strict=True) if not value
    ]
    if missing:
        return TracingHandle(warning=f"Langfuse tracing off: {', '.join(missing)} not set")
    if "://" not in host:
        host = f"https://{host}"
    endpoint = host.rstrip("/") + OTEL_PATH
    parts = urlsplit(host)  # shown in warnings: no user info, no path
    label = f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    # The OpenTelemetry SDK is imported only here, when tracing is configured: a run without
    # Langfuse does not pay for it.
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the packages
        return TracingHandle(
            warning=f"Langfuse tracing off ({label}): install opentelemetry-sdk and "
            f"opentelemetry-exporter-otlp-proto-http (missing module "
            f"{exc.name or 'opentelemetry-sdk'})",
            endpoint=endpoint,
        )
    token = base64.b64encode(f"{public}:{secret}".encode()).decode()
    headers = {"Authorization": f"Basic {token}"}
    problem = _probe(endpoint, headers)
    if problem:
        problem = problem.replace(public, "***").replace(secret, "***").replace(token, "***")
        return TracingHandle(
            warning=f"Langfuse tracing off: {label} {problem}; the run goes on untraced",
            endpoint=endpoint,
        )
    return _start(endpoint, headers, label)


def _probe(endpoint: str, headers: dict[str, str]) -> str | None:
    """POST an empty OTLP export once; return what is wrong in a few words, or None."""
    import httpx

    try:
        response = httpx.post(
            endpoint,
            content=b"",
            headers={**headers, "Content-Type": "application/x-protobuf"},
            timeout=PROBE_TIMEOUT_SECONDS,
        )
    except httpx.HTTPError as exc:
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        return f"is unreachable ({type(exc).__name__}: {reason})"
    if response.status_code in (401, 403):
        return f"rejected the keys (HTTP {response.status_code})"
    if response.status_code == 404:
        return "has no OpenTelemetry endpoint (HTTP 404)"
    if response.status_code >= 500:
        return f"failed (HTTP {response.status_code})"
    return None


def _start(endpoint: str, headers: dict[str, str], label: str) -> TracingHandle:
    """Build the provider: context attributes first, then a quiet batching OTLP exporter."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from pydantic_ai.models.instrumented import InstrumentationSettings

    from glossogen._tracing_sdk import ContextAttributes, QuietExporter

    for name in _QUIETED_LOGGERS:  # their per-batch errors would repeat; QuietExporter warns once
        logging.getLogger(name).setLevel(logging.CRITICAL)
    provider = TracerProvider(
        resource=Resource.create({"service.name": "glossogen"}), shutdown_on_exit=False
    )
    provider.add_span_processor(ContextAttributes())
    exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=EXPORT_TIMEOUT_SECONDS)
    provider.add_span_processor(
        BatchSpanProcessor(
            QuietExporter(exporter, label),
            schedule_delay_millis=2000,
            export_timeout_millis=EXPORT_TIMEOUT_SECONDS * 1000,
        )
    )
    return TracingHandle(
        instrumentation=InstrumentationSettings(tracer_provider=provider),
        endpoint=endpoint,
        _provider=provider,
    )


@contextmanager
def run_span(
    handle: TracingHandle | None, run_id: str, scenario: str, round_number: int | None = None
) -> Iterator[None]:
    """Tag every span started inside with ``run_id`` (the Langfuse session) and ``scenario``.

    It opens no span: each agent or judge run is its own trace, grouped by the session. Tasks
    created inside inherit it, and :func:`set_round` updates the round for all of them.

    Args:
        handle: What :func:`configure_tracing` returned.
        run_id: The run id, used as ``langfuse.session.id``.
        scenario: The scenario name.
        round_number: The current round, if known (else call :func:`set_round`).
    """
    if handle is None or handle.instrumentation is None:
        yield
        return
    state: dict[str, Any] = {"run_id": run_id, "scenario": scenario}
    if round_number is not None:
        state["round"] = round_number
    token = _run.set(state)
    try:
        yield
    finally:
        _run.reset(token)


def set_round(round_number: int) -> None:
    """Set the round of the enclosing :func:`run_span` (seen by tasks already started)."""
    state = _run.get()
    if state is not None:
        state["round"] = round_number


@contextmanager
def agent_attributes(agent_id: str, role: str, model: str, provider: str) -> Iterator[None]:
    """Tag the spans started inside (one agent or judge run) with who made the calls.

    Args:
        agent_id: The seat's id (``"judge"`` for the judge).
        role: The seat's role (``"judge"`` for the judge).
        model: The model name, as recorded in events.
        provider: The provider name.
    """
    token = _agent.set({"agent_id": agent_id, "role": role, "model": model, "provider": provider})
    try:
        yield
    finally:
        _agent.reset(token)


def span_attributes() -> dict[str, Any]:
    """The attributes the current context puts on a span (empty outside any run or agent)."""
    values = {**(_run.get() or {}), **(_agent.get() or {})}
    if not values:
        return {}
    attributes: dict[str, Any] = {f"glossogen.{k}": v for k, v in values.items()}
    attributes |= {f"langfuse.trace.metadata.{k}": str(v) for k, v in values.items()}
    attributes["langfuse.trace.tags"] = [f"{k}:{values[k]}" for k in TAG_FIELDS if k in values]
    if "run_id" in values:
        attributes["langfuse.session.id"] = attributes["session.id"] = values["run_id"]
    if "agent_id" in values:
        attributes["langfuse.user.id"] = attributes["user.id"] = values["agent_id"]
    return attributes

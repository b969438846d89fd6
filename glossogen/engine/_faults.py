"""What a failed model call was, whether to try again, and how long to wait first.

Kinds follow pydantic-ai's exception categories (``pydantic_ai.exceptions``): a provider's
``Retry-After`` reaches us as ``ModelAPIError.retry_after``. Retries are ours, not the vendor
SDK's (whose own retries we switch off with ``max_retries=0``), so every failure is an event.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pydantic import ValidationError
from pydantic_ai import exceptions as pa

RETRY_BASE_SECONDS = 1.0
"""Wait before the first retry; doubled per further failure (exponential backoff)."""
RETRY_MAX_WAIT_SECONDS = 60.0
"""No single wait exceeds this, whatever ``Retry-After`` asks for."""
MAX_ATTEMPTS = 3
"""Model errors in a row (failed calls, refusals, invalid tool arguments) before the agent is
taken out of the run."""
INVALID_TOOL_ARGUMENTS = "invalid_tool_arguments"
"""The kind of a model error where a tool call's arguments failed validation or named no tool."""
MALFORMED_RESPONSE = "malformed_response"
"""The kind of a provider answer whose body is not what its wire promises."""
TIMEOUT = "timeout"
"""The kind of a request the client stopped waiting for (its timeout)."""
INTERNAL = "internal"
"""The kind of a failure no provider caused: an exception of ours (or a history pydantic-ai
refuses), a bug. A run this takes out ends ``error`` with exit 70, not 69."""


@dataclass(frozen=True)
class Fault:
    """A classified failure: ``kind`` for the event log, ``retryable``, the provider's wait."""

    kind: str
    retryable: bool
    retry_after: float | None = None


_KINDS: tuple[tuple[type[BaseException], str, bool], ...] = (
    (pa.ModelRateLimitError, "rate_limit", True),
    (pa.ModelQuotaExceededError, "quota_exceeded", False),
    (pa.ModelOverloadedError, "overloaded", True),
    (pa.ModelUnavailableError, "unavailable", True),
    (pa.ModelServerError, "server_error", True),
    (pa.ModelTimeoutError, TIMEOUT, True),
    (pa.ModelConnectionError, "connection", True),
    (pa.ModelAuthenticationError, "authentication", False),
    (pa.ModelNotFoundError, "model_not_found", False),
    (pa.ModelContextWindowExceededError, "context_window", False),
    (pa.ModelRequestRejectedError, "request_rejected", False),
    (pa.ContentFilterError, "refusal", True),
    (pa.UnexpectedModelBehavior, MALFORMED_RESPONSE, True),
    (pa.ModelAPIError, "api_error", True),
    (TimeoutError, TIMEOUT, True),
)


def classify(exc: BaseException) -> Fault:
    """Return the :class:`Fault` of ``exc``; anything unknown is :data:`INTERNAL` and retryable.

    pydantic-ai gives up on a tool whose calls keep failing validation with an
    ``UnexpectedModelBehavior`` caused by the last rejection: that is the model's error of
    ``INVALID_TOOL_ARGUMENTS``, not a malformed response.
    """
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(exc, pa.UnexpectedModelBehavior) and isinstance(
        exc.__cause__, ValidationError | pa.ToolRetryError | pa.ModelRetry
    ):
        return Fault(INVALID_TOOL_ARGUMENTS, True)
    for cls, kind, retryable in _KINDS:
        if isinstance(exc, cls):
            return Fault(kind, retryable, retry_after)
    if _raised_reading_a_response(exc):
        return Fault(MALFORMED_RESPONSE, True, retry_after)
    return Fault(INTERNAL, True, retry_after)


def cost_of_failed(fault: Fault, sent: bool, answered_usd: float | None) -> float | None:
    """USD a failed attempt is logged with: what its answered requests cost, or unknown.

    A failed request is not billed, except one that timed out after it was sent: the provider
    may have answered it (and billed it) after the client left, so its cost is unknown (None),
    and the run's total becomes a lower bound that says so. ``answered_usd`` is what the
    attempt's answered requests cost (0 when none answered).
    """
    if fault.kind == TIMEOUT and sent:
        return None
    return answered_usd


_PARSING_ERRORS = (TypeError, KeyError, AttributeError, IndexError, ValueError)
_RESPONSE_READERS = ("/pydantic_ai/models/", "/openai/", "/anthropic/", "/google/genai/")
"""Where a provider's answer is read: pydantic-ai's model classes and the vendor SDKs."""


def _raised_reading_a_response(exc: BaseException) -> bool:
    """Whether ``exc`` is a plain parsing error raised where a provider's answer is read.

    A 200 whose body is not the shape its wire promises (a chat completion where the
    Responses API was called, a field missing or null) makes pydantic-ai's model code or the
    vendor SDK fail with a ``TypeError`` or ``KeyError`` of its own instead of
    ``UnexpectedModelBehavior``: the provider's malformed response, not a bug of ours.
    """
    if not isinstance(exc, _PARSING_ERRORS) or isinstance(exc, pa.UserError):
        return False
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename.replace("\\", "/")
    return any(reader in where for reader in _RESPONSE_READERS)


def backoff_seconds(attempt: int, fault: Fault, rng: random.Random) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based).

    The provider's ``Retry-After`` wins when given; otherwise exponential backoff with "equal
    jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015): uniform between half
    and all of ``RETRY_BASE_SECONDS * 2 ** (attempt - 1)``. Capped at ``RETRY_MAX_WAIT_SECONDS``.
    """
    if fault.retry_after is not None:
        return min(fault.retry_after, RETRY_MAX_WAIT_SECONDS)
    ceiling = RETRY_BASE_SECONDS * 2 ** (attempt - 1)
    return min(rng.uniform(ceiling / 2, ceiling), RETRY_MAX_WAIT_SECONDS)

"""Retries for remote embedding calls: timeouts, exponential backoff with jitter, Retry-After.

One policy for every API provider (OpenAI, Azure OpenAI, Gemini, Ollama), written once here:

- a call that times out, cannot connect, or gets HTTP 429 or 5xx is retried;
- any other 4xx (bad key, bad model, input too long) is not retried: it will not get better;
- the wait before retry ``n`` (1-based) is "full jitter" exponential backoff, a uniform draw in
  ``[0, min(max_wait, initial_wait * 2**(n-1))]`` (Brooker, "Exponential Backoff And Jitter",
  AWS Architecture Blog, 2015), but never less than the server's ``Retry-After`` (seconds,
  HTTP-date, or the ``retry-after-ms`` header that OpenAI and Azure send);
- a ``Retry-After`` longer than ``max_retry_after`` stops the retries at once: the caller's
  chunks stay pending and ``reindex`` embeds them later, instead of blocking a write for minutes.

Providers translate their client's exceptions into :class:`Transient` or :class:`Permanent`
(with the HTTP status and headers); :func:`call_with_retries` runs the tenacity loop.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from semsearch.errors import EmbedderUnavailable

if TYPE_CHECKING:
    import tenacity

__all__ = [
    "Permanent",
    "RetryPolicy",
    "Transient",
    "backoff_wait",
    "call_with_retries",
    "http_client",
    "http_status_failure",
    "is_retryable_status",
    "parse_retry_after",
    "transport_failure",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How a remote embedder waits, retries and gives up.

    Attributes:
        attempts: total tries per request, first included (default 5, so at most 4 retries).
        initial_wait: backoff cap for the first retry, in seconds (default 0.5).
        max_wait: largest backoff cap, in seconds (default 20).
        max_retry_after: a server-requested wait above this many seconds is not honoured by
            waiting; the call fails at once with EmbedderUnavailable (default 60).
        timeout: seconds per HTTP request (connect + read) before it counts as failed (default 30).
        sleep: the function that waits (``time.sleep``); tests inject a recorder.
        rng: the random source for jitter; tests inject a seeded ``random.Random``.
    """

    attempts: int = 5
    initial_wait: float = 0.5
    max_wait: float = 20.0
    max_retry_after: float = 60.0
    timeout: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    rng: random.Random = field(default_factory=random.Random, compare=False)


class Transient(Exception):
    """A failure worth retrying: timeout, connection error, HTTP 429 or 5xx.

    Args:
        reason: one line for logs and errors; must not contain secrets.
        status: the HTTP status, or None for timeouts and connection errors.
        retry_after: seconds the server asked us to wait (``Retry-After``), or None.
    """

    def __init__(self, reason: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after


class Permanent(Exception):
    """A failure not worth retrying: any 4xx but 429, or a response we cannot read."""

    def __init__(self, reason: str, status: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status


def is_retryable_status(status: int) -> bool:
    """True for 429 (rate limited) and every 5xx."""
    return status == 429 or 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (delta-seconds or HTTP-date).

    Returns None when absent or unreadable; negative values become 0.
    Source: RFC 9110 section 10.2.3; ``retry-after-ms`` is sent by OpenAI and Azure OpenAI.
    """
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    if (ms := lower.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_wait(policy: RetryPolicy, retry_number: int, retry_after: float | None) -> float:
    """Seconds to wait before retry ``retry_number`` (1-based): full jitter, >= Retry-After."""
    cap = min(policy.max_wait, policy.initial_wait * 2 ** (retry_number - 1))
    jitter = policy.rng.uniform(0.0, cap)
    return max(jitter, retry_after or 0.0)


def call_with_retries(call: Callable[[], T], policy: RetryPolicy, what: str) -> T:
    """Run ``call`` and retry it on :class:`Transient` failures, per ``policy``.

    Args:
        call: does one request; raises Transient or Permanent on failure.
        policy: attempts, waits and the injectable sleep.
        what: a short label for log lines (e.g. ``"openai:text-embedding-3-small"``).
    Returns:
        ``call``'s result.
    Raises:
        Transient: the last transient failure, once attempts are used up or the server asks for
            a wait above ``policy.max_retry_after``.
        Permanent: at once, without retrying.
    """

    try:
        import tenacity
    except ImportError as exc:
        raise EmbedderUnavailable(
            "tenacity is not installed", hint="pip install 'semsearch[providers]'"
        ) from exc

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = exc.retry_after if isinstance(exc, Transient) else None
        return backoff_wait(policy, state.attempt_number, after)

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number >= max(1, policy.attempts):
            return True
        exc = state.outcome.exception() if state.outcome else None
        after = exc.retry_after if isinstance(exc, Transient) else None
        return after is not None and after > policy.max_retry_after

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "%s: %s; retry %d/%d in %.2f s",
            what,
            exc,
            state.attempt_number,
            policy.attempts - 1,
            delay,
        )

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(Transient),
        stop=stop,
        wait=wait,
        sleep=policy.sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(call)


def transport_failure(exc: BaseException) -> Transient | None:
    """Transient for an httpx (or httpx2) timeout or connection error, else None."""
    for module_name in ("httpx", "httpx2"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        if isinstance(exc, module.TimeoutException):
            return Transient("request timed out")
        if isinstance(exc, module.TransportError):
            return Transient(f"cannot connect ({type(exc).__name__})")
    return None


def http_status_failure(response: Any) -> Transient | Permanent:
    """Transient (429, 5xx; with its Retry-After) or Permanent for an httpx error response.

    The reason is ``HTTP <status>: <detail>``, the detail read from the JSON body's ``error``,
    ``message`` or ``detail`` field (Ollama, Cohere, Jina and Voyage use one each), else the
    body's first 300 characters.
    """
    status = int(response.status_code)
    try:
        body = response.json()
        detail = next(str(body[k]) for k in ("error", "message", "detail") if k in body)[:300]
    except (ValueError, AttributeError, TypeError, StopIteration):
        detail = response.text[:300]
    message = f"HTTP {status}: {detail}"
    if is_retryable_status(status):
        return Transient(message, status, parse_retry_after(dict(response.headers)))
    return Permanent(message, status)


def http_client(**options: Any) -> Any:
    """An ``httpx.Client(**options)`` for an API provider.

    Raises:
        EmbedderUnavailable: httpx is not installed (it ships with the ``providers`` extra).
    """
    try:
        import httpx
    except ImportError as exc:
        raise EmbedderUnavailable(
            "httpx is not installed", hint="pip install 'semsearch[providers]'"
        ) from exc
    return httpx.Client(**options)

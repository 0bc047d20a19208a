"""Per-key request rate limit for the HTTP API: one token bucket per API key.

Each key may send ``burst`` requests at once, then ``per_minute`` requests per minute (the
bucket refills continuously). A request over the limit gets **429** ``rate_limited`` with a
``Retry-After`` header (whole seconds until one request is allowed again, at most a day), in
the API's error shape. With API keys the limit is on by default (:data:`DEFAULT_PER_MINUTE`); in
local mode (no keys) it is off unless asked for, and then all callers share one bucket. 0 and
``inf`` turn it off; a limit under one request a day (:data:`MIN_PER_MINUTE`) is refused. Each
server process keeps its own buckets, so ``serve --workers N`` allows up to N times the limit.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from semsearch.errors import InvalidQuery

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_PER_MINUTE",
    "MAX_RETRY_AFTER",
    "MIN_PER_MINUTE",
    "RateLimiter",
    "TokenBucket",
    "check_rate_limit",
]

#: Requests per minute per key when API keys are configured and no limit is given.
DEFAULT_PER_MINUTE = 600.0
#: Requests a key may send at once before the per-minute rate applies.
DEFAULT_BURST = 60
#: The smallest limit taken, in requests per minute: one a day.
MIN_PER_MINUTE = 1 / 1440
#: The longest ``Retry-After`` sent, in seconds: a day (the wait at :data:`MIN_PER_MINUTE`).
MAX_RETRY_AFTER = 86_400
_LIMIT_HINT = (
    "give requests per minute (--rate-limit / SEMSEARCH_RATE_LIMIT): at least one a day "
    f"({MIN_PER_MINUTE:.6g}); 0 or inf turn the limit off"
)


def check_rate_limit(per_minute: float) -> float:
    """``per_minute`` as the limiter takes it: 0.0 (off) for 0 and ``inf``, else itself.

    Raises:
        InvalidQuery: NaN, a negative number, or a limit under one request a day (a client
            would be told to retry after years).
    """
    if per_minute == 0 or per_minute == math.inf:
        return 0.0
    if not per_minute >= MIN_PER_MINUTE:  # NaN too
        raise InvalidQuery(f"a rate limit of {per_minute:g} per minute is not taken", _LIMIT_HINT)
    return float(per_minute)


@dataclass
class TokenBucket:
    """``capacity`` tokens, refilled at ``rate`` tokens per second; one request takes one.

    Args:
        rate: tokens added per second (> 0).
        capacity: most tokens held (>= 1); the bucket starts full.
        clock: seconds, monotonic (``time.monotonic``; tests pass their own).
    """

    rate: float
    capacity: float
    clock: Callable[[], float] = time.monotonic
    tokens: float = field(init=False)
    updated: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = self.capacity
        self.updated = self.clock()

    def take(self) -> float:
        """Take one token: 0.0 when granted, else the seconds until one is available."""
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimiter:
    """One :class:`TokenBucket` per caller; thread-safe.

    Args:
        per_minute: requests per minute per caller, at least :data:`MIN_PER_MINUTE`; 0 or
            ``inf`` turn the limit off.
        burst: requests a caller may send at once (>= 1).
        clock: as for TokenBucket.
    Raises:
        InvalidQuery: ``per_minute`` is NaN, negative or under one a day (see
            :func:`check_rate_limit`), or ``burst`` is below 1.
    """

    def __init__(
        self,
        per_minute: float,
        burst: int = DEFAULT_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if burst < 1:
            raise InvalidQuery(f"a rate burst of {burst} is not taken", "give 1 or more")
        self.per_minute = check_rate_limit(per_minute)
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """False when the limit is off (``per_minute`` 0)."""
        return self.per_minute > 0

    def retry_after(self, caller: str) -> float:
        """Take one request from ``caller``'s bucket: 0.0 when allowed, else seconds to wait
        (at most a day, :data:`MAX_RETRY_AFTER`)."""
        if not self.enabled:
            return 0.0
        with self._lock:
            bucket = self._buckets.get(caller)
            if bucket is None:
                bucket = TokenBucket(self.per_minute / 60.0, float(self.burst), self._clock)
                self._buckets[caller] = bucket
            return min(float(MAX_RETRY_AFTER), bucket.take())

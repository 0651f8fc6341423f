"""Infrastructure failures of an evaluation, and the retry policy that keeps them out of the scores.

A trial (an episode, or one replay decision) can fail because the *agent* did badly — that is a score
— or because something around it broke: the simulator or judge endpoint, the environment, the
transport to the agent's server, a deadline. The reference scored the latter as 0 and cached the zero
forever (docs/decisions.md A24); here they are classified, retried up to a limit, and reported as
*unscored* when they keep failing. Anything unclassified is a bug and propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from mimesis_pl.failures import (
    FailureKind,
    InfrastructureFailure,
)

T = TypeVar("T")


def classify_failure(error: BaseException) -> FailureKind | None:
    """The :class:`FailureKind` of ``error``, or None when it is not an infrastructure failure."""
    if isinstance(error, InfrastructureFailure):
        return error.kind
    if isinstance(error, TimeoutError):  # asyncio.TimeoutError is TimeoutError on 3.11+
        return FailureKind.TIMEOUT
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How often an infrastructure failure is retried, and how long to wait between attempts.

    ``attempt_timeout_s`` bounds each attempt (a timeout counts as :attr:`FailureKind.TIMEOUT`);
    ``classify`` maps an exception to a kind, or None to let it propagate.
    """

    max_attempts: int = 3
    backoff_s: float = 1.0
    backoff_factor: float = 2.0
    max_backoff_s: float = 30.0
    attempt_timeout_s: float | None = None
    classify: Callable[[BaseException], FailureKind | None] = classify_failure

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff_s < 0 or self.backoff_factor < 1 or self.max_backoff_s < 0:
            raise ValueError("RetryPolicy: backoff_s and max_backoff_s must be >= 0 and backoff_factor >= 1")
        if self.attempt_timeout_s is not None and self.attempt_timeout_s <= 0:
            raise ValueError(f"RetryPolicy.attempt_timeout_s must be > 0, got {self.attempt_timeout_s}")

    def delay_before(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt`` (2, 3, ...)."""
        return min(self.max_backoff_s, self.backoff_s * self.backoff_factor ** (attempt - 2))


@dataclass(frozen=True)
class FailedAttempt:
    attempt: int
    kind: FailureKind
    error: str


@dataclass(frozen=True)
class RetryResult(Generic[T]):
    """The value of the first successful attempt, or the last classified failure.

    ``failures`` lists every failed attempt (also when a later one succeeded).
    """

    value: T | None
    attempts: int
    failures: tuple[FailedAttempt, ...] = ()
    succeeded: bool = True

    @property
    def failure(self) -> FailureKind | None:
        return None if self.succeeded else self.failures[-1].kind

    @property
    def error(self) -> str | None:
        return None if self.succeeded else self.failures[-1].error


def describe_error(error: BaseException) -> str:
    text = str(error) or "(no message)"
    return f"{type(error).__name__}: {text}"[:2000]


async def run_with_retries(attempt_fn: Callable[[], Awaitable[T]], policy: RetryPolicy | None = None) -> RetryResult[T]:
    """Await ``attempt_fn()`` until it succeeds or ``policy.max_attempts`` classified failures occurred.

    Each attempt calls ``attempt_fn`` afresh (a new coroutine). Waiting uses ``asyncio.sleep``, never a
    blocking sleep. Unclassified exceptions and cancellation propagate at once.
    """
    policy = policy or RetryPolicy()
    failures: list[FailedAttempt] = []
    for attempt in range(1, policy.max_attempts + 1):
        if attempt > 1:
            await asyncio.sleep(policy.delay_before(attempt))
        try:
            if policy.attempt_timeout_s is None:
                value = await attempt_fn()
            else:
                value = await asyncio.wait_for(attempt_fn(), policy.attempt_timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - classified below; the rest re-raised
            kind = policy.classify(error)
            if kind is None:
                raise
            failures.append(FailedAttempt(attempt, kind, describe_error(error)))
            continue
        return RetryResult(value=value, attempts=attempt, failures=tuple(failures))
    return RetryResult(value=None, attempts=policy.max_attempts, failures=tuple(failures), succeeded=False)

"""Failure classification and the retry policy (non-blocking, bounded, bugs propagate)."""

from __future__ import annotations

import asyncio
import time

import pytest

from mimesis_pl.eval import (
    AgentTransportFailure,
    EnvironmentFailure,
    FailureKind,
    JudgeFailure,
    RetryPolicy,
    SimulatorFailure,
    classify_failure,
    run_with_retries,
)


def test_classification() -> None:
    assert classify_failure(SimulatorFailure("x")) is FailureKind.SIMULATOR
    assert classify_failure(JudgeFailure("x")) is FailureKind.JUDGE
    assert classify_failure(EnvironmentFailure("x")) is FailureKind.ENVIRONMENT
    assert classify_failure(AgentTransportFailure("x")) is FailureKind.AGENT_TRANSPORT
    assert classify_failure(TimeoutError()) is FailureKind.TIMEOUT
    assert classify_failure(KeyError("bug")) is None


def test_succeeds_after_failures_and_records_them() -> None:
    seen = []

    async def attempt():
        seen.append(1)
        if len(seen) < 3:
            raise JudgeFailure(f"try {len(seen)}")
        return "ok"

    result = asyncio.run(run_with_retries(attempt, RetryPolicy(max_attempts=3, backoff_s=0)))
    assert result.succeeded and result.value == "ok" and result.attempts == 3 and result.failure is None
    assert [(f.attempt, f.kind, f.error) for f in result.failures] == [
        (1, FailureKind.JUDGE, "JudgeFailure: try 1"),
        (2, FailureKind.JUDGE, "JudgeFailure: try 2"),
    ]


def test_gives_up_after_the_limit_and_times_out_attempts() -> None:
    async def slow():
        await asyncio.sleep(10)

    start = time.perf_counter()
    result = asyncio.run(run_with_retries(slow, RetryPolicy(max_attempts=2, backoff_s=0, attempt_timeout_s=0.05)))
    assert not result.succeeded and result.failure is FailureKind.TIMEOUT and result.attempts == 2
    assert time.perf_counter() - start < 2


def test_backoff_does_not_block_the_event_loop() -> None:
    ticks = []

    async def ticker():
        for _ in range(5):
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    async def failing():
        raise EnvironmentFailure("down")

    async def main():
        policy = RetryPolicy(max_attempts=3, backoff_s=0.03, backoff_factor=1)
        result, _ = await asyncio.gather(run_with_retries(failing, policy), ticker())
        return result

    result = asyncio.run(main())
    assert result.attempts == 3 and len(ticks) == 5


def test_unclassified_errors_propagate_immediately() -> None:
    calls = []

    async def buggy():
        calls.append(1)
        raise ZeroDivisionError("bug in the harness")

    with pytest.raises(ZeroDivisionError):
        asyncio.run(run_with_retries(buggy, RetryPolicy(max_attempts=5, backoff_s=0)))
    assert calls == [1]


def test_policy_validation_and_delays() -> None:
    with pytest.raises(ValueError, match="max_attempts must be >= 1"):
        RetryPolicy(max_attempts=0)
    policy = RetryPolicy(backoff_s=1, backoff_factor=2, max_backoff_s=3)
    assert [policy.delay_before(a) for a in (2, 3, 4, 5)] == [1, 2, 3, 3]
    custom = RetryPolicy(classify=lambda e: FailureKind.ENVIRONMENT if isinstance(e, OSError) else None)
    assert custom.classify(ConnectionResetError()) is FailureKind.ENVIRONMENT

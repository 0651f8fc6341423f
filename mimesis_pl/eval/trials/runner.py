"""Run n trials per task through an async trial callable, with retries and a resumable cache.

The callable is the episode itself (the lead's ``EpisodeExecutor`` over a gym, an engine and a
simulator); this module only decides *which* trials still have to run, retries infrastructure failures,
and writes every finished trial to the :class:`TrialCache` the moment it finishes.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mimesis_pl.eval.failures import RetryPolicy, run_with_retries
from mimesis_pl.eval.trials.cache import TrialCache, TrialRecord
from mimesis_pl.eval.trials.keys import RunIdentity, TrialKey


@dataclass(frozen=True)
class TaskRef:
    """One evaluation task: its gym, id, the hash of the gym configuration it runs under, a hash of its
    content (E10), and the task data handed to the trial callable (``payload``, not part of the identity)."""

    gym: str
    task_id: str
    gym_config_hash: str
    payload: Any = field(default=None, compare=False, hash=False, repr=False)
    content_hash: str = ""

    def key(self, identity: RunIdentity, trial: int) -> TrialKey:
        return identity.key(self.gym, self.gym_config_hash, self.task_id, trial, self.content_hash)


@dataclass(frozen=True)
class TrialOutcome:
    """What a trial callable returns for an episode it could score.

    ``reward`` is the raw episode reward; ``success`` may be given by gyms with their own verdict,
    otherwise the gym's success rule derives it from the reward. ``info``: JSON extras.
    """

    reward: float
    success: bool | None = None
    info: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


TrialFn = Callable[[TaskRef, int], Awaitable[TrialOutcome]]


@dataclass(frozen=True)
class TrialRunReport:
    """What one call of :func:`run_trials` did: ``ran`` records written now, ``reused`` already done."""

    ran: tuple[TrialRecord, ...]
    reused: int

    @property
    def unscored(self) -> tuple[TrialRecord, ...]:
        return tuple(r for r in self.ran if r.status == "unscored")


def pending_trials(
    tasks: Sequence[TaskRef], n_trials: int, identity: RunIdentity, cache: TrialCache
) -> list[tuple[TaskRef, int, TrialKey]]:
    """The (task, trial index, key) triples that have no scored record yet, task-major."""
    todo = []
    for task in tasks:
        for trial in range(n_trials):
            key = task.key(identity, trial)
            if not cache.is_done(key):
                todo.append((task, trial, key))
    return todo


def check_trial_plan(tasks: Sequence[TaskRef], n_trials: int, max_concurrency: int) -> None:
    """A :class:`ValueError` for a plan that cannot run: no trial, no worker, or a task listed twice."""
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    seen: set[tuple[str, str]] = set()
    for task in tasks:
        if (task.gym, task.task_id) in seen:
            raise ValueError(f"task {task.gym}/{task.task_id} is listed twice")
        seen.add((task.gym, task.task_id))


async def run_trial(task: TaskRef, trial: int, key: TrialKey, trial_fn: TrialFn, retry: RetryPolicy) -> TrialRecord:
    """One trial, retried on classified failures: ``scored``, or ``unscored`` once the retries are spent. A trial
    callable that returns no :class:`TrialOutcome`, or a reward that is not finite, raises (a bug, not a failure)."""
    result = await run_with_retries(lambda: trial_fn(task, trial), retry)
    if not result.succeeded:
        return TrialRecord(
            key=key,
            status="unscored",
            failure=result.failure.value if result.failure else None,
            error=result.error,
            attempts=result.attempts,
        )
    outcome = result.value
    if not isinstance(outcome, TrialOutcome):
        raise TypeError(f"trial {key.describe()}: trial_fn returned {type(outcome).__name__}, expected TrialOutcome")
    reward = float(outcome.reward)
    if not math.isfinite(reward):
        raise ValueError(f"trial {key.describe()}: reward {outcome.reward!r} is not finite")
    info = dict(outcome.info)
    if result.failures:
        info["retried_failures"] = [f.kind.value for f in result.failures]
    return TrialRecord(
        key=key, status="scored", reward=reward, success=outcome.success, attempts=result.attempts, info=info
    )


async def run_trials(
    tasks: Sequence[TaskRef],
    n_trials: int,
    identity: RunIdentity,
    trial_fn: TrialFn,
    cache: TrialCache,
    retry: RetryPolicy | None = None,
    max_concurrency: int = 8,
) -> TrialRunReport:
    """Run every trial of ``tasks`` that the cache does not hold as scored.

    Each finished trial (scored, or unscored after ``retry.max_attempts`` classified failures) is
    appended to ``cache`` before the next one is awaited on its worker. An unclassified exception (a
    bug, or a deliberate abort) stops new trials from starting, lets the ones in flight finish and be
    cached, then propagates; rerunning resumes where it stopped.
    """
    check_trial_plan(tasks, n_trials, max_concurrency)
    policy = retry or RetryPolicy()
    todo = deque(pending_trials(tasks, n_trials, identity, cache))
    reused = len(tasks) * n_trials - len(todo)
    ran: list[TrialRecord] = []
    fatal: list[BaseException] = []

    async def worker() -> None:
        while todo and not fatal:
            task, trial, key = todo.popleft()
            try:
                record = await run_trial(task, trial, key, trial_fn, policy)
            except Exception as error:  # noqa: BLE001 - recorded and re-raised after in-flight trials end
                fatal.append(error)
                return
            cache.append(record)
            ran.append(record)

    await asyncio.gather(*(worker() for _ in range(min(max_concurrency, len(todo)))))
    if fatal:
        raise fatal[0]
    return TrialRunReport(ran=tuple(ran), reused=reused)

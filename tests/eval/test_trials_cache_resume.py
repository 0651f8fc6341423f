"""Trial cache and resume: a killed run reruns nothing that finished; unscored trials are re-run."""

from __future__ import annotations

import asyncio
import json

import pytest

from mimesis_pl.eval import EnvironmentFailure, RetryPolicy, SimulatorFailure
from mimesis_pl.eval.trials import (
    RunIdentity,
    TaskRef,
    TrialCache,
    TrialKey,
    TrialOutcome,
    TrialRecord,
    config_hash,
    run_trials,
)

IDENTITY = RunIdentity(model_under_test="tiny-agent", model_revision="abc123", partner="scripted-user")
GYM_HASH = config_hash({"max_turns": 16, "temperature": 0})
TASKS = [TaskRef("function", f"task-{i}", GYM_HASH) for i in range(4)]
NO_WAIT = RetryPolicy(max_attempts=3, backoff_s=0)


class Killed(Exception):
    """Stands in for the process dying mid-run (not an infrastructure failure: it propagates)."""


def test_killed_run_resumes_and_every_trial_runs_exactly_once(tmp_path) -> None:
    completed: list[tuple[str, int]] = []
    kill_after = [5]

    async def trial(task: TaskRef, index: int) -> TrialOutcome:
        if kill_after[0] is not None and len(completed) == kill_after[0]:
            raise Killed("power cut")
        await asyncio.sleep(0)
        completed.append((task.task_id, index))
        return TrialOutcome(reward=1.0 if index % 2 == 0 else 0.0, info={"turns": 3})

    path = tmp_path / "trials.jsonl"
    with pytest.raises(Killed):
        asyncio.run(run_trials(TASKS, 3, IDENTITY, trial, TrialCache(path), NO_WAIT, max_concurrency=2))
    first = len(completed)
    assert first >= 5 and len(TrialCache(path)) == first  # every finished trial is on disk

    kill_after[0] = None
    report = asyncio.run(run_trials(TASKS, 3, IDENTITY, trial, TrialCache(path), NO_WAIT, max_concurrency=2))
    assert sorted(completed) == sorted((t.task_id, i) for t in TASKS for i in range(3))
    assert len(completed) == len(set(completed)) == 12
    assert report.reused == first and len(report.ran) == 12 - first

    again = asyncio.run(run_trials(TASKS, 3, IDENTITY, trial, TrialCache(path), NO_WAIT))
    assert again.reused == 12 and again.ran == () and len(completed) == 12
    # Asking for more trials later runs only the new indices.
    more = asyncio.run(run_trials(TASKS, 4, IDENTITY, trial, TrialCache(path), NO_WAIT))
    assert sorted((r.key.task_id, r.key.trial) for r in more.ran) == [(t.task_id, 3) for t in TASKS]


def test_in_flight_trials_finish_and_are_cached_when_another_one_dies(tmp_path) -> None:
    started: list[str] = []

    async def trial(task: TaskRef, index: int) -> TrialOutcome:
        started.append(task.task_id)
        if task.task_id == "task-0":
            await asyncio.sleep(0.001)
            raise Killed("bug")
        await asyncio.sleep(0.05)
        return TrialOutcome(reward=1.0)

    cache = TrialCache(tmp_path / "t.jsonl")
    with pytest.raises(Killed):
        asyncio.run(run_trials(TASKS, 1, IDENTITY, trial, cache, NO_WAIT, max_concurrency=2))
    assert started == ["task-0", "task-1"]  # nothing new started after the failure...
    assert [r.key.task_id for r in TrialCache(tmp_path / "t.jsonl")] == ["task-1"]  # ...the running one was kept


def test_infrastructure_failures_are_retried_then_unscored_and_rerun_on_resume(tmp_path) -> None:
    calls: dict[str, int] = {}
    healthy = [False]

    async def trial(task: TaskRef, index: int) -> TrialOutcome:
        calls[task.task_id] = calls.get(task.task_id, 0) + 1
        if task.task_id == "task-1" and not healthy[0]:
            raise SimulatorFailure("simulator endpoint returned 502")
        if task.task_id == "task-2" and calls[task.task_id] == 1:
            raise EnvironmentFailure("gym step timed out")
        return TrialOutcome(reward=0.5)

    path = tmp_path / "t.jsonl"
    report = asyncio.run(run_trials(TASKS, 1, IDENTITY, trial, TrialCache(path), NO_WAIT))
    (bad,) = report.unscored
    assert (bad.key.task_id, bad.failure, bad.attempts, bad.reward) == ("task-1", "simulator", 3, None)
    assert bad.error == "SimulatorFailure: simulator endpoint returned 502"
    task2 = TrialCache(path).get(IDENTITY.key("function", GYM_HASH, "task-2", 0))
    assert task2.status == "scored" and task2.attempts == 2 and list(task2.info["retried_failures"]) == ["environment"]

    healthy[0] = True
    resumed = asyncio.run(run_trials(TASKS, 1, IDENTITY, trial, TrialCache(path), NO_WAIT))
    assert [(r.key.task_id, r.status) for r in resumed.ran] == [("task-1", "scored")]
    assert calls == {"task-0": 1, "task-1": 4, "task-2": 2, "task-3": 1}


def test_key_covers_model_revision_simulator_config_and_harness(tmp_path) -> None:
    base = IDENTITY.key("function", GYM_HASH, "task-0", 0)
    variants = [
        RunIdentity("tiny-agent", "def456", "scripted-user").key("function", GYM_HASH, "task-0", 0),
        RunIdentity("tiny-agent", "abc123", "other-sim").key("function", GYM_HASH, "task-0", 0),
        RunIdentity("tiny-agent", "abc123", "scripted-user", harness_version="2").key(
            "function", GYM_HASH, "task-0", 0
        ),
        IDENTITY.key("function", config_hash({"max_turns": 8, "temperature": 0}), "task-0", 0),
        IDENTITY.key("function", GYM_HASH, "task-0", 1),
        IDENTITY.key("function", GYM_HASH, "task-1", 0),
    ]
    assert len({base.digest, *(v.digest for v in variants)}) == 7
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    cache = TrialCache(tmp_path / "t.jsonl")
    cache.append(TrialRecord(key=base, status="scored", reward=1.0))
    assert cache.is_done(base) and not any(cache.is_done(v) for v in variants)
    cache.append(TrialRecord(key=variants[0], status="scored", reward=0.0))
    assert [r.key for r in cache.records(IDENTITY)] == [base] and len(cache.records()) == 2
    with pytest.raises(ValueError, match="model_revision must be a non-empty string"):
        RunIdentity("m", "", "s")


def test_torn_last_line_is_cut_and_other_damage_is_reported(tmp_path) -> None:
    path = tmp_path / "t.jsonl"
    cache = TrialCache(path)
    keys = [IDENTITY.key("function", GYM_HASH, "task-0", i) for i in range(2)]
    cache.append(TrialRecord(key=keys[0], status="scored", reward=1.0))
    with open(path, "ab") as fh:
        fh.write(b'{"key": {"gym": "func')  # the process died here
    reopened = TrialCache(path)
    assert reopened.repaired_bytes > 0 and len(reopened) == 1
    reopened.append(TrialRecord(key=keys[1], status="scored", reward=0.0))
    assert [r.key.trial for r in TrialCache(path)] == [0, 1]
    assert all(json.loads(line) for line in path.read_text().splitlines())

    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\nnot json\n" + lines[1] + "\n")
    with pytest.raises(ValueError, match=r"t\.jsonl:2: unreadable trial record"):
        TrialCache(path)


def test_records_validate_their_fields() -> None:
    key = IDENTITY.key("function", GYM_HASH, "task-0", 0)
    with pytest.raises(ValueError, match="function/task-0#0 .*needs a finite reward"):
        TrialRecord(key=key, status="scored", reward=None)
    with pytest.raises(ValueError, match="needs a finite reward"):
        TrialRecord(key=key, status="scored", reward=float("inf"))
    with pytest.raises(ValueError, match="info is not JSON"):
        TrialRecord(key=key, status="scored", reward=1.0, info={"x": object()})
    with pytest.raises(ValueError, match="trial must be an int >= 0"):
        TrialKey("g", "t", -1, "m", "r", "s", "h", "1")

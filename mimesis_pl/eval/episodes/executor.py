"""``EpisodeExecutor``: n trials per gym task through an episode runner, cached and resumable.

For every (task, trial) the cache does not hold as scored, the runner plays one episode; the
recorded trajectory is appended to the transcripts file and scored by :func:`episode_outcome`.
Infrastructure failures (gym, simulator, judge, deadline, agent transport) are retried within the
policy and end up *unscored*, never as a 0. Every finished trial is on disk before the next one
starts on its worker (:func:`~mimesis_pl.eval.trials.run_trials`), so a killed run resumes without
re-running or losing a finished trial.

The cache key of a trial is (task id, trial, agent model + revision, simulator, gym configuration
hash, harness version); the configuration hash covers the gym's options, the episode limits and the
agent-side settings of the runner (sampling, lengths, template), since each changes results.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_pl.envs import GymTask
from mimesis_pl.eval.episodes.records import append_transcript, episode_outcome
from mimesis_pl.eval.episodes.runners import EpisodeRunner
from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.trials import (
    GymSummary,
    RunIdentity,
    TaskRef,
    TrialCache,
    TrialOutcome,
    TrialRecord,
    TrialRunReport,
    aggregate_trials,
    config_hash,
    content_hash,
    run_trials,
)


def gym_label(env_name: str) -> str:
    """The short gym name used in results and success rules: ``TelepathyGym`` -> ``telepathy``."""
    label = re.sub(r"gym$", "", env_name.strip(), flags=re.IGNORECASE).lower()
    if not label:
        raise ValueError(f"cannot derive a gym label from env_name {env_name!r}")
    return label


def task_content(task: GymTask) -> dict[str, Any]:
    """What a task's result depends on: its gym, data source, prompt and hidden fields (not where it was read)."""
    return {"env_name": task.env_name, "data_source": task.data_source, "public": task.public, "hidden": task.hidden}


@dataclass(frozen=True)
class EpisodeRun:
    """What one :meth:`EpisodeExecutor.run` call covered: its tasks, what ran now, and the latest
    cached record of every trial of those tasks (run now or reused)."""

    tasks: tuple[TaskRef, ...]
    report: TrialRunReport
    records: tuple[TrialRecord, ...]


class EpisodeExecutor:
    """Runs ``n_trials`` episodes per task with ``runner`` and keeps the results in ``cache``.

    Args:
        runner: plays one episode (token-level engine, or a served chat agent).
        identity: agent model + revision, simulator, harness version.
        cache: the durable trial store; reuse the same file to resume.
        n_trials: trials per task.
        retry: policy for infrastructure failures (default: 3 attempts).
        max_concurrency: episodes in flight at once (engines batch their generate calls).
        transcripts: JSONL file receiving every episode's recorded trajectory (each attempt), or None.
        extra_config: anything else that changes results and belongs in the configuration hash.
    """

    def __init__(
        self,
        runner: EpisodeRunner,
        identity: RunIdentity,
        cache: TrialCache,
        n_trials: int = 1,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        transcripts: str | Path | None = None,
        extra_config: Mapping[str, Any] | None = None,
    ) -> None:
        if n_trials < 1:
            raise ValueError(f"n_trials must be >= 1, got {n_trials}")
        self.runner = runner
        self.identity = identity
        self.cache = cache
        self.n_trials = n_trials
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.transcripts = Path(transcripts) if transcripts is not None else None
        self.extra_config = dict(extra_config or {})
        self.attempts: Counter[str] = Counter()  # per trial digest, attempts made by this process

    def gym_config(self, env_name: str) -> dict[str, Any]:
        """Everything besides the task and the agent's identity that decides a trial's result."""
        manager = self.runner.manager
        canonical = manager.registry.canonical_name(env_name)
        return {
            "env_name": canonical,
            "gym_options": manager.gym_options.get(canonical, {}),
            "max_turns": manager.max_turns,
            "show_reward": manager.show_reward,
            "agent": dict(self.runner.settings()),
            "extra": self._extra(canonical),
        }

    def _extra(self, canonical: str) -> dict[str, Any]:
        """``extra_config``, with only this gym's share of its ``per_gym`` part (resources, served judges: E25)."""
        extra = {k: v for k, v in self.extra_config.items() if k != "per_gym"}
        own = self.extra_config.get("per_gym", {}).get(canonical)
        return {**extra, "gym": own} if own else extra

    def task_ref(self, task: GymTask) -> TaskRef:
        """The task's cache reference: its id, and a hash of its gym settings and its content."""
        return TaskRef(
            gym=gym_label(task.env_name),
            task_id=task.key,
            gym_config_hash=config_hash(self.gym_config(task.env_name)),
            payload=task,
            # The task's content is part of the key (E10): an edited prompt or ground truth is run again.
            content_hash=content_hash(task_content(task)),
        )

    async def run(self, tasks: Sequence[GymTask | Mapping[str, Any]]) -> EpisodeRun:
        """Run every missing trial of ``tasks`` (rows are parsed into :class:`GymTask`)."""
        parsed = [
            t if isinstance(t, GymTask) else GymTask.from_row(t, source=str(t.get("_source", "<row>"))) for t in tasks
        ]
        refs = tuple(self.task_ref(t) for t in parsed)
        report = await run_trials(
            refs,
            self.n_trials,
            self.identity,
            self._trial,
            self.cache,
            self.retry,
            max_concurrency=self.max_concurrency,
        )
        return EpisodeRun(tasks=refs, report=report, records=tuple(self.records(refs)))

    async def _trial(self, ref: TaskRef, trial: int) -> TrialOutcome:
        key = ref.key(self.identity, trial)
        self.attempts[key.digest] += 1
        # Episode ids become shim URL segments: a short hash keeps any task id within the allowed characters.
        prefix = f"{ref.gym}-{hashlib.sha256(ref.task_id.encode()).hexdigest()[:10]}-t{trial}"
        record = await self.runner.run_episode(ref.payload, prefix)
        if self.transcripts is not None:
            append_transcript(self.transcripts, key, self.attempts[key.digest], record)
        return episode_outcome(record)

    def records(self, refs: Sequence[TaskRef]) -> list[TrialRecord]:
        """The latest cached record of every trial of ``refs`` (missing trials are left out)."""
        out = []
        for ref in refs:
            for trial in range(self.n_trials):
                record = self.cache.get(ref.key(self.identity, trial))
                if record is not None:
                    out.append(record)
        return out

    def summarize(self, refs: Sequence[TaskRef], ks: Sequence[int] = (1,)) -> dict[str, GymSummary]:
        """Per-gym avg@n, pass@k, pass^k and reward statistics over ``refs`` (unscored trials apart)."""
        return aggregate_trials(self.records(refs), self.n_trials, ks, tasks=refs)

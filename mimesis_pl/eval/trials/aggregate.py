"""Aggregate cached trials per gym: avg@n, pass@k, pass^k, reward stats — unscored trials apart.

A trial the harness could not score (simulator, judge or environment failure) is neither a success nor
a 0: it is left out of every rate and reported in ``unscored`` with its failure kind. A task with fewer
than ``k`` scored trials does not enter pass@k / pass^k for that ``k`` and is counted in
``tasks_below_k``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, field
from types import MappingProxyType
from typing import Any

import torch

from mimesis_pl.envs.success import SuccessRule
from mimesis_pl.eval.trials.cache import TrialRecord
from mimesis_pl.eval.trials.runner import TaskRef
from mimesis_pl.metrics.estimators import avg_at_n, mean_over_tasks, pass_at_k, pass_hat_k

_BINARY = SuccessRule()
# Per gym, a rule other than the default (threshold 1 on the reward clipped to [0, 1]; every built-in gym uses it,
# mimesis_pl/envs/success.py); looked up by gym label, variant names by their family (docs/decisions.md E5).
GYM_SUCCESS_RULES: Mapping[str, SuccessRule] = MappingProxyType({})


def success_rule_for(gym: str, rules: Mapping[str, SuccessRule] | None = None) -> SuccessRule:
    """The rule for ``gym``; variant names fall back to their family (``travel233`` -> ``travel``)."""
    rules = GYM_SUCCESS_RULES if rules is None else rules
    if gym in rules:
        return rules[gym]
    family = re.sub(r"[\d_-]+$", "", gym)
    return rules.get(family, _BINARY)


@dataclass(frozen=True)
class GymSummary:
    """Results of one gym. Rates are macro means over tasks; None when nothing could be computed."""

    gym: str
    n_trials: int
    tasks: int
    scored_trials: int
    unscored_trials: int
    missing_trials: int
    avg_at_n: float | None
    success_rate: float | None
    pass_at_k: Mapping[int, float | None]
    pass_hat_k: Mapping[int, float | None]
    tasks_below_k: Mapping[int, int]
    unscored_by_kind: Mapping[str, int] = field(default_factory=dict)
    reward: Mapping[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gym": self.gym,
            "n_trials": self.n_trials,
            "tasks": self.tasks,
            "scored_trials": self.scored_trials,
            "unscored_trials": self.unscored_trials,
            "missing_trials": self.missing_trials,
            "avg_at_n": self.avg_at_n,
            "success_rate": self.success_rate,
            "pass_at_k": {str(k): v for k, v in self.pass_at_k.items()},
            "pass_hat_k": {str(k): v for k, v in self.pass_hat_k.items()},
            "tasks_below_k": {str(k): v for k, v in self.tasks_below_k.items()},
            "unscored_by_kind": dict(self.unscored_by_kind),
            "reward": dict(self.reward),
        }


def _check_one_identity(records: Sequence[TrialRecord]) -> None:
    identities = {astuple(r.key.identity) for r in records}
    if len(identities) > 1:
        raise ValueError(f"records of several runs mixed in one aggregation: {sorted(identities)}")
    configs: dict[str, set[str]] = {}
    for r in records:
        configs.setdefault(r.key.gym, set()).add(r.key.gym_config_hash)
    mixed = {gym: sorted(h) for gym, h in configs.items() if len(h) > 1}
    if mixed:
        raise ValueError(f"records of several gym configurations mixed in one aggregation: {mixed}")


def _reward_stats(rewards: list[float]) -> dict[str, float | None]:
    if not rewards:
        return {"mean": None, "std": None, "min": None, "max": None}
    mean = math.fsum(rewards) / len(rewards)
    var = math.fsum((r - mean) ** 2 for r in rewards) / len(rewards)
    return {"mean": mean, "std": math.sqrt(var), "min": min(rewards), "max": max(rewards)}


def aggregate_trials(
    records: Iterable[TrialRecord],
    n_trials: int,
    ks: Sequence[int] = (1,),
    tasks: Sequence[TaskRef] | None = None,
    rules: Mapping[str, SuccessRule] | None = None,
) -> dict[str, GymSummary]:
    """One :class:`GymSummary` per gym, from the latest record of each trial.

    Only trials ``0 .. n_trials-1`` count, so a cache that holds more trials from a larger run does not
    change ``n``. ``tasks`` (optional) lists every task of the run, so tasks with no record yet count as
    missing rather than disappearing from the denominator.
    """
    if any(k < 1 or k > n_trials for k in ks):
        raise ValueError(f"every k must be in 1..n_trials={n_trials}, got {list(ks)}")
    records = [r for r in records if r.key.trial < n_trials]
    _check_one_identity(records)
    by_task: dict[str, dict[str, list[TrialRecord]]] = {}
    for task in tasks or ():
        by_task.setdefault(task.gym, {}).setdefault(task.task_id, [])
    for record in records:
        by_task.setdefault(record.key.gym, {}).setdefault(record.key.task_id, []).append(record)

    summaries: dict[str, GymSummary] = {}
    for gym in sorted(by_task):
        rule = success_rule_for(gym, rules)
        task_scores: list[float] = []
        counts: list[tuple[int, int]] = []
        rewards: list[float] = []
        unscored: dict[str, int] = {}
        successes = scored_total = unscored_total = 0
        for task_records in by_task[gym].values():
            scored = [r for r in task_records if r.status == "scored"]
            for r in task_records:
                if r.status == "unscored":
                    unscored_total += 1
                    unscored[r.failure or "unknown"] = unscored.get(r.failure or "unknown", 0) + 1
            wins = [r.success if r.success is not None else rule.success(r.reward) for r in scored]  # type: ignore[arg-type]
            rewards.extend(r.reward for r in scored)  # type: ignore[misc]
            successes += sum(wins)
            scored_total += len(scored)
            counts.append((len(scored), sum(wins)))
            if scored:
                task_scores.append(avg_at_n(rule.score(r.reward) for r in scored))  # type: ignore[arg-type]
        summaries[gym] = GymSummary(
            gym=gym,
            n_trials=n_trials,
            tasks=len(by_task[gym]),
            scored_trials=scored_total,
            unscored_trials=unscored_total,
            missing_trials=len(by_task[gym]) * n_trials - scored_total - unscored_total,
            avg_at_n=mean_over_tasks(task_scores),
            success_rate=successes / scored_total if scored_total else None,
            pass_at_k={k: mean_over_tasks(pass_at_k(n, c, k) for n, c in counts if n >= k) for k in ks},
            pass_hat_k={k: mean_over_tasks(pass_hat_k(n, c, k) for n, c in counts if n >= k) for k in ks},
            tasks_below_k={k: sum(1 for n, _ in counts if n < k) for k in ks},
            unscored_by_kind=dict(sorted(unscored.items())),
            reward=_reward_stats(rewards),
        )
    return summaries


def trial_matrix(
    records: Iterable[TrialRecord], gym: str, n_trials: int, rules: Mapping[str, SuccessRule] | None = None
) -> dict[str, Any]:
    """One gym's trials as tensors for the torchmetrics: ``scores``/``rewards`` float64 ``[B, N]``,
    ``correct``/``valid`` bool ``[B, N]`` (valid = scored), ``task_ids`` (row order)."""
    rule = success_rule_for(gym, rules)
    rows: dict[str, dict[int, TrialRecord]] = {}
    for r in records:
        if r.key.gym == gym and r.key.trial < n_trials:
            rows.setdefault(r.key.task_id, {})[r.key.trial] = r
    task_ids = sorted(rows)
    shape = (len(task_ids), n_trials)
    scores = torch.zeros(shape, dtype=torch.float64)
    rewards = torch.zeros(shape, dtype=torch.float64)
    correct = torch.zeros(shape, dtype=torch.bool)
    valid = torch.zeros(shape, dtype=torch.bool)
    for i, task_id in enumerate(task_ids):
        for j, r in rows[task_id].items():
            if r.status == "scored" and r.reward is not None:
                valid[i, j] = True
                rewards[i, j] = r.reward
                scores[i, j] = rule.score(r.reward)
                correct[i, j] = r.success if r.success is not None else rule.success(r.reward)
    return {"task_ids": task_ids, "scores": scores, "rewards": rewards, "correct": correct, "valid": valid}

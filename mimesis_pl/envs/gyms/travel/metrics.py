"""The reference's Travel metrics, from per-turn rewards and the answers given (UserRL eval.py, table3).

Per trial: ``micro_avg`` = mean per-turn reward, ``micro_max`` = max per-turn reward,
``number_of_1`` / ``number_of_08`` = answers rewarded exactly 1.0 (best option) / 0.8 (correct option),
``aspect_score`` = Σ over the trip's aspects of the best answer reward for that aspect / number of aspects
(the paper's Travel number, table3). Each is averaged over a task's trials, then over tasks.

Deviations (docs/decisions.md A45): UserRL's eval.py uses only the last rollout of a task, we average
every scored trial (identical at n = 1); it counts 1.0 / 0.8 over all turns (a 0.8 preference reward,
training's setting, would count as a correct pick), we count answer turns; table3 buckets an answer by
the first character of its raw content, we by the parsed option id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mimesis_pl.envs.gyms.travel.grader import option_aspect
from mimesis_pl.envs.gyms.travel.scenarios import parse_task_id, variant_of

_EPS = 1e-9


@dataclass(frozen=True)
class TravelTrial:
    """One scored Travel episode: its task id (names the aspects), per-turn rewards, answers (content, reward)."""

    task_id: str
    turn_rewards: tuple[float, ...]
    answers: tuple[tuple[str, float], ...]


def best_per_aspect(task_id: str, answers: Sequence[tuple[str, float]]) -> dict[str, float]:
    """The best answer reward for each aspect of the trip (0 for an aspect never answered)."""
    best = dict.fromkeys(parse_task_id(task_id), 0.0)
    for content, reward in answers:
        # an answer with several ids ("H2, C3": their summed reward, A83) goes to its first id's aspect, as
        # table3 buckets by the content's first character; one choice per aspect makes the sum come out the same
        aspect = option_aspect(content.split(",")[0])
        if aspect in best:
            best[aspect] = max(best[aspect], reward)
    return best


def aspect_score(task_id: str, answers: Sequence[tuple[str, float]]) -> float:
    """The paper's Travel score of one episode: Σ best answer reward per aspect / number of aspects."""
    best = best_per_aspect(task_id, answers)
    return math.fsum(best.values()) / len(best)


def trial_values(trial: TravelTrial) -> dict[str, float]:
    """The per-trial numbers, including ``aspect/<name>`` (best answer reward of each aspect of the trip)."""
    best = best_per_aspect(trial.task_id, trial.answers)
    rewards = trial.turn_rewards or (0.0,)
    answer_rewards = [r for _, r in trial.answers]
    values = {
        "micro_avg": math.fsum(rewards) / len(rewards),
        "micro_max": max(rewards),
        "avg_number_of_1": float(sum(abs(r - 1.0) < _EPS for r in answer_rewards)),
        "avg_number_of_08": float(sum(abs(r - 0.8) < _EPS for r in answer_rewards)),
        "aspect_score": math.fsum(best.values()) / len(best),
    }
    values.update({f"aspect/{a}": v for a, v in best.items()})
    return values


def _mean_of_task_means(per_task: Mapping[str, Sequence[Mapping[str, float]]]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for trials in per_task.values():
        keys = {k for t in trials for k in t}
        for key in keys:
            vals = [t[key] for t in trials if key in t]
            sums.setdefault(key, []).append(math.fsum(vals) / len(vals))
    return {k: math.fsum(v) / len(v) for k, v in sorted(sums.items())}


def travel_metrics(trials: Sequence[TravelTrial]) -> dict[str, dict[str, float]]:
    """``{"travel": {...}, "travel22": {...}, ...}``: pooled over every variant, then per variant set.

    Each block holds ``tasks``, ``trials`` and the means above (``aspect/<name>`` over the tasks that
    have that aspect).
    """
    groups: dict[str, dict[str, list[dict[str, float]]]] = {}
    for trial in trials:
        values = trial_values(trial)
        for group in ("travel", variant_of(trial.task_id)):
            groups.setdefault(group, {}).setdefault(trial.task_id, []).append(values)
    out: dict[str, dict[str, float]] = {}
    for group in sorted(groups, key=lambda g: (g != "travel", g)):
        per_task = groups[group]
        out[group] = {
            "tasks": float(len(per_task)),
            "trials": float(sum(len(v) for v in per_task.values())),
            **_mean_of_task_means(per_task),
        }
    return out

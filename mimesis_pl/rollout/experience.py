"""A batch of scored trajectories made ready for the policy update: scores, failure masking, advantages."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from ..envs.success import SuccessRule
from ..rl.advantage_estimators import advantage_estimator
from ..rl.advantages import trajectory_score
from .progress import groups_with_signal
from .settings import AdvantageSettings
from .trajectory import Trajectory, collate_trajectories


@dataclass
class Experience:
    """One batch of rollouts, ready for the policy update.

    Args:
        trajectories: every trajectory of the batch (this rank's), failures included.
        tensors: ``collate_trajectories`` of the trained trajectories plus ``advantages [B, T]`` (float32);
            row ``k`` is ``trajectories[trained[k]]``; empty when nothing is trained.
        metrics: reward, success, length and termination statistics of the batch.
        trained: indices into ``trajectories`` that are trained on (failures masked out).
    """

    trajectories: list[Trajectory]
    tensors: dict[str, torch.Tensor]
    metrics: dict[str, float]
    trained: list[int]


def build_experience(trajectories: list[Trajectory], advantage: AdvantageSettings, pad_id: int) -> Experience:
    """Score trajectories, mask infrastructure failures, compute per-token advantages."""
    a = advantage
    for t in trajectories:
        t.reward = float(trajectory_score(t.turn_rewards, a.score, a.gamma)) if t.turn_rewards else 0.0
    trained = [i for i, t in enumerate(trajectories) if not (a.mask_failures and t.failed) and t.num_turns > 0]
    metrics = rollout_metrics(trajectories, a.success_threshold)
    metrics["rollout/trained_fraction"] = len(trained) / max(1, len(trajectories))
    metrics["rollout/groups_with_signal"] = groups_with_signal(trajectories)
    tensors: dict[str, torch.Tensor] = {}
    if trained:
        chosen = [trajectories[i] for i in trained]
        tensors = collate_trajectories(chosen, pad_id)
        estimate = advantage_estimator(a.estimator)
        rewards, groups = [t.turn_rewards for t in chosen], [t.group_id for t in chosen]
        tensors["advantages"] = estimate(tensors["turn_index"], rewards, groups, a)
    return Experience(trajectories=trajectories, tensors=tensors, metrics=metrics, trained=trained)


def rollout_metrics(trajectories: list[Trajectory], success_threshold: float) -> dict[str, float]:
    """Reward, success, length and termination statistics of a batch (all trajectories)."""
    rewards = torch.tensor([sum(t.turn_rewards) for t in trajectories], dtype=torch.float32)
    ok = [t for t in trajectories if not t.failed]
    rule = SuccessRule(threshold=success_threshold)
    metrics = {
        "rollout/episode_reward_mean": rewards.mean().item() if len(rewards) else 0.0,
        "rollout/episode_reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
        "rollout/score_mean": sum(t.reward for t in trajectories) / max(1, len(trajectories)),
        "rollout/success_rate": sum(rule.success(sum(t.turn_rewards)) for t in ok) / max(1, len(ok)),
        "rollout/turns_mean": sum(t.num_turns for t in trajectories) / max(1, len(trajectories)),
        "rollout/response_tokens_mean": sum(t.response_length for t in trajectories) / max(1, len(trajectories)),
        "rollout/sequence_tokens_mean": sum(len(t.input_ids) for t in trajectories) / max(1, len(trajectories)),
    }
    for status, n in Counter(t.status for t in trajectories).items():
        metrics[f"rollout/status/{status}"] = float(n)
    tool_errors = sum(t.counters.get("tool_errors", 0) for t in trajectories)
    metrics["rollout/tool_errors_per_episode"] = tool_errors / max(1, len(trajectories))
    return metrics

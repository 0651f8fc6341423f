"""Multi-turn GRPO advantage estimators by name: the built-in ``turn`` and ``trajectory``, and users' own.

An estimator takes the step's ``turn_index [B, T]`` (the assistant turn of each generated token, -1 elsewhere), the
trajectories' per-turn rewards and group ids, and the :class:`~mimesis_pl.rollout.settings.AdvantageSettings`; it
returns the per-token advantages ``[B, T]``. ``advantage.estimator`` in YAML names a registered estimator or a
function of a user's package (``package.module:function``, registered under that path; docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torch import Tensor

from mimesis_pl.checks import resolve_registered
from mimesis_pl.rl.advantages import GroupIds, grpo_multiturn_advantages, grpo_turn_advantages

AdvantageEstimator = Callable[[Tensor, Sequence[Sequence[float]], GroupIds, Any], Tensor]
_ESTIMATORS: dict[str, AdvantageEstimator] = {}


def register_advantage_estimator(name: str) -> Callable[[AdvantageEstimator], AdvantageEstimator]:
    """Register ``fn(turn_index, turn_rewards, group_ids, settings) -> advantages [B, T]`` under ``name``."""

    def register(fn: AdvantageEstimator) -> AdvantageEstimator:
        if name in _ESTIMATORS:
            raise ValueError(f"advantage estimator {name!r} is already registered")
        _ESTIMATORS[name] = fn
        return fn

    return register


def resolve_advantage_estimator(name: str, *, key: str = "model.init_args.advantage.estimator") -> str:
    """``name`` when registered; ``package.module:function`` imported and registered under that path; else an error."""
    return resolve_registered(name, _ESTIMATORS, register_advantage_estimator, what="advantage estimator", key=key)


def advantage_estimator(name: str) -> AdvantageEstimator:
    return _ESTIMATORS[resolve_advantage_estimator(name)]


@register_advantage_estimator("turn")
def turn_estimator(turn_index: Tensor, turn_rewards, group_ids: GroupIds, settings: Any) -> Tensor:
    """Each turn's discounted return z-scored against the same turn of its group (docs/decisions.md A8b)."""
    return grpo_turn_advantages(
        turn_index, turn_rewards, group_ids, gamma=settings.gamma, norm_by_std=settings.norm_by_std, eps=settings.eps
    )


@register_advantage_estimator("trajectory")
def trajectory_estimator(turn_index: Tensor, turn_rewards, group_ids: GroupIds, settings: Any) -> Tensor:
    """The reference's: one group z-score per trajectory, shared among its turns by ``settings.credit``."""
    return grpo_multiturn_advantages(
        turn_index,
        turn_rewards,
        group_ids,
        gamma=settings.gamma,
        credit=settings.credit,
        score=settings.score,
        norm_by_std=settings.norm_by_std,
        eps=settings.eps,
        zero_credit=settings.zero_credit,
    )

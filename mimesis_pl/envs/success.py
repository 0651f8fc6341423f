"""When an episode counts as a success: one rule for training metrics, RL validation and evaluation.

``score >= threshold`` where ``score`` is the episode's summed reward clipped to ``bounds`` (the episode sums of some
gyms exceed 1; docs/decisions.md E5). Every built-in gym uses the default, threshold 1 on a [0, 1] score: its
reward is 0/1 (Function, Telepathy, Tau, Search, ALFWorld) or a share that reaches 1 when the task is fully done
(Turtle's criteria, Travel's aspects, Intention's coverage, Persuade's stance change).
"""

from __future__ import annotations

from dataclasses import dataclass

# Rounding slack of the comparison (a sum of shares that should reach 1 may fall short by float rounding).
SUCCESS_EPS = 1e-9


@dataclass(frozen=True)
class SuccessRule:
    """``success(reward)``: the reward clipped to ``bounds`` (``None``: not clipped) reaches ``threshold``."""

    threshold: float = 1.0
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def score(self, reward: float) -> float:
        if self.bounds is None:
            return reward
        low, high = self.bounds
        return min(max(reward, low), high)

    def success(self, reward: float) -> bool:
        return self.score(reward) >= self.threshold - SUCCESS_EPS

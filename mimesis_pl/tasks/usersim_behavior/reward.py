"""usersim-behavior reward: pure functions of a validated verdict."""

from __future__ import annotations

from .prompts import BehaviorVerdict, ControlVerdict

W_EXHIBIT, W_PLACEMENT, W_NATURAL, W_ONTASK = 2.0, 1.5, 1.0, 0.5
ANNOUNCE_DIVISOR = 2.0
C_COOPERATIVE, C_NATURAL, C_ONTASK = 2.0, 1.0, 0.5


def clamp01(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def behavior_reward(v: BehaviorVerdict) -> float:
    """``(2·exhibit + 1.5·placement + 1·naturalness + 0.5·on_task) / 5``, halved when announced, clamped."""
    r = (
        W_EXHIBIT * clamp01(v.exhibit)
        + W_PLACEMENT * clamp01(v.placement)
        + W_NATURAL * clamp01(v.naturalness)
        + W_ONTASK * clamp01(v.on_task)
    ) / (W_EXHIBIT + W_PLACEMENT + W_NATURAL + W_ONTASK)
    if v.announced:
        r /= ANNOUNCE_DIVISOR
    return clamp01(r)


def control_reward(v: ControlVerdict) -> float:
    """``(2·cooperative + 1·naturalness + 0.5·on_task) / 3.5``, clamped."""
    return clamp01(
        (C_COOPERATIVE * clamp01(v.cooperative) + C_NATURAL * clamp01(v.naturalness) + C_ONTASK * clamp01(v.on_task))
        / (C_COOPERATIVE + C_NATURAL + C_ONTASK)
    )

"""usersim-behavior reward: pure functions of a validated verdict.

The judge client only returns verdicts whose scores lie in [0, 1] (a score outside is a judge failure,
docs/decisions.md S60), so nothing here clamps: a clamp would turn a broken judge into a valid reward.
"""

from __future__ import annotations

from .prompts import BehaviorVerdict, ControlVerdict

W_EXHIBIT, W_PLACEMENT, W_NATURAL, W_ONTASK = 2.0, 1.5, 1.0, 0.5
ANNOUNCE_DIVISOR = 2.0
C_COOPERATIVE, C_NATURAL, C_ONTASK = 2.0, 1.0, 0.5


def behavior_reward(v: BehaviorVerdict) -> float:
    """``(2·exhibit + 1.5·placement + 1·naturalness + 0.5·on_task) / 5``, halved when announced."""
    r = (W_EXHIBIT * v.exhibit + W_PLACEMENT * v.placement + W_NATURAL * v.naturalness + W_ONTASK * v.on_task) / (
        W_EXHIBIT + W_PLACEMENT + W_NATURAL + W_ONTASK
    )
    return r / ANNOUNCE_DIVISOR if v.announced else r


def control_reward(v: ControlVerdict) -> float:
    """``(2·cooperative + 1·naturalness + 0.5·on_task) / 3.5``."""
    return (C_COOPERATIVE * v.cooperative + C_NATURAL * v.naturalness + C_ONTASK * v.on_task) / (
        C_COOPERATIVE + C_NATURAL + C_ONTASK
    )

"""Rollouts: engines, the multi-turn token-in/token-out loop, trajectories and Lightning callbacks."""

from .callbacks import AdvantageSettings, Experience, RolloutCallback, RolloutSettings
from .loop import MultiTurnRollout
from .services import SimulatorServices, UserSimSettings
from .trajectory import Trajectory, collate_trajectories

__all__ = [
    "AdvantageSettings",
    "Experience",
    "MultiTurnRollout",
    "RolloutCallback",
    "RolloutSettings",
    "SimulatorServices",
    "Trajectory",
    "UserSimSettings",
    "collate_trajectories",
]

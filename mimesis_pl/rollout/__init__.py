"""Rollouts: engines, the multi-turn token-in/token-out loop, trajectories, and the stages of an RL step
(rollout, coaching) with the typed data they hand to the update."""

from .coaching import CoachingSettings, CoachStage, OpenAICoachSettings, ScriptedCoachSettings
from .experience import Experience, build_experience
from .loop import MultiTurnRollout
from .services import (
    OpenAIUserSettings,
    ScriptedHTTPUserSettings,
    ScriptedUserSettings,
    SimulatorServices,
    UserSimSettings,
)
from .settings import AdvantageSettings, EpisodeSettings, RolloutSettings
from .stage import RolloutStage
from .step import RLStep, TeacherBatch
from .trajectory import Trajectory, collate_trajectories

__all__ = [
    "AdvantageSettings",
    "CoachStage",
    "CoachingSettings",
    "EpisodeSettings",
    "Experience",
    "MultiTurnRollout",
    "OpenAICoachSettings",
    "OpenAIUserSettings",
    "RLStep",
    "RolloutSettings",
    "RolloutStage",
    "ScriptedCoachSettings",
    "ScriptedHTTPUserSettings",
    "ScriptedUserSettings",
    "SimulatorServices",
    "TeacherBatch",
    "Trajectory",
    "UserSimSettings",
    "build_experience",
    "collate_trajectories",
]

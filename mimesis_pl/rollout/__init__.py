"""Rollouts: engines, the multi-turn token-in/token-out loop, trajectories, the coach stage of a CSD step and the
typed data a step hands to the update (the rollout stages live in :mod:`mimesis_pl.stages`)."""

from .coaching import (
    CheckpointCoachSettings,
    CoachingSettings,
    CoachStage,
    OpenAICoachSettings,
    ScriptedCoachSettings,
)
from .experience import Experience, build_experience
from .loop import MultiTurnRollout
from .services import (
    BuiltUsers,
    CheckpointUserSettings,
    OpenAIUserSettings,
    ScriptedHTTPUserSettings,
    ScriptedUserSettings,
    SimulatorServices,
    UserSimSettings,
)
from .settings import AdvantageSettings, EpisodeSettings, RolloutSettings
from .step import RLStep, TeacherBatch
from .trajectory import Trajectory, collate_trajectories

__all__ = [
    "AdvantageSettings",
    "BuiltUsers",
    "CheckpointCoachSettings",
    "CheckpointUserSettings",
    "CoachStage",
    "CoachingSettings",
    "EpisodeSettings",
    "Experience",
    "MultiTurnRollout",
    "OpenAICoachSettings",
    "OpenAIUserSettings",
    "RLStep",
    "RolloutSettings",
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

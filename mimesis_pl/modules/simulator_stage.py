"""Moved: simulator RL's rollout stage and its settings live in :mod:`mimesis_pl.stages.simulator`, beside the
agent's stage; these names stay importable from here (docs/decisions.md D15)."""

from ..stages.simulator import (
    FoldAdvantageSettings,
    SimRolloutSettings,
    SimValidationSettings,
    TaskRolloutStage,
    fold_experience,
)

__all__ = [
    "FoldAdvantageSettings",
    "SimRolloutSettings",
    "SimValidationSettings",
    "TaskRolloutStage",
    "fold_experience",
]

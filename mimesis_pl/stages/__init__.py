"""The stages of an RL step: the declared lifecycle they share, the agent's rollout stage and simulator RL's.

Stages hold no Lightning state: the module that owns them passes itself to each call. ``stages/`` imports
``rollout/`` and ``tasks/``; ``rollout/`` never imports ``stages/``.
"""

from .agent import RolloutStage
from .base import CollectStage, Stage, ValidatingStage
from .simulator import FoldAdvantageSettings, SimRolloutSettings, SimValidationSettings, TaskRolloutStage

__all__ = [
    "CollectStage",
    "FoldAdvantageSettings",
    "RolloutStage",
    "SimRolloutSettings",
    "SimValidationSettings",
    "Stage",
    "TaskRolloutStage",
    "ValidatingStage",
]

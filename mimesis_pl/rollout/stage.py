"""Moved: the agent's rollout stage lives in :mod:`mimesis_pl.stages.agent`, beside simulator RL's.

A re-export here would make ``rollout/`` import the ``stages/`` layer above it (docs/decisions.md D15).
"""

raise ImportError(
    "mimesis_pl.rollout.stage has moved: import RolloutStage from mimesis_pl.stages.agent (or mimesis_pl.stages)"
)

"""The data of one RL step, handed from the stages that produce it to the module's update.

``RolloutStage.collect`` builds an :class:`RLStep` (trajectories → scored :class:`Experience`, metrics);
the optional coach stage adds a :class:`TeacherBatch`; the module's ``update(step)`` consumes it. Nothing
travels through attributes of the module (see docs/decisions.md, "RL step data").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..rl.teacher import TeacherBatch

if TYPE_CHECKING:
    from .experience import Experience
    from .trajectory import Trajectory


@dataclass
class RLStep:
    """One RL step's input to the update.

    Args:
        experience: the scored trajectories, the trained rows' tensors and advantages.
        teacher: the CSD teacher rows (``None`` when no coach stage ran).
        metrics: the step's rollout and timing figures (the update adds its own before logging).
        notes: the coach's ``(notes, counts)`` written inside the rollouts' background job
            (``rollout.max_staleness >= 1``); the coach stage builds the teacher rows from them.
    """

    experience: Experience
    teacher: TeacherBatch | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    notes: tuple[dict, Any] | None = None  # the coach's (notes, counts) when a background job wrote them

    @property
    def trajectories(self) -> list[Trajectory]:
        return self.experience.trajectories

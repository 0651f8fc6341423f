"""``AgentGRPO``: multi-turn GRPO of the agent against simulated users (manual optimisation).

Each training step: the :class:`~mimesis_pl.rollout.stage.RolloutStage` runs the batch's episodes and
scores them into an :class:`~mimesis_pl.rollout.step.RLStep`, which :meth:`AgentGRPO.update` takes as its
argument (the PPO update of :class:`~mimesis_pl.modules.ppo_module.PPOModule`). RL validation runs on the
same stage after the steps its schedule names.
"""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics import MeanMetric

from ..rollout.settings import AdvantageSettings, RolloutSettings
from ..rollout.stage import RolloutStage
from ..rollout.step import RLStep
from ..rollout.trajectory import Trajectory
from ..rollout.validation import ValidationSettings
from .ppo_module import ExtraLoss, PPOModule
from .settings import ModelSettings, OptimSettings, PPOSettings

# The reference's actor optimiser: AdamW lr 1e-6, constant, weight decay 0.01 (torch's betas and eps).
REFERENCE_RL_OPTIM = OptimSettings(lr=1e-6, weight_decay=0.01, schedule="constant")
DEFAULT_ROLLOUT, DEFAULT_ADVANTAGE, DEFAULT_PPO = RolloutSettings(), AdvantageSettings(), PPOSettings()


class AgentGRPO(PPOModule):
    """The agent policy trained with GRPO against simulated users.

    Args:
        policy: the policy's weights and how they load (``model_path`` once: engines that load their own copy
            default to it).
        rollout: engine, simulated users, episode settings and sampling of each step.
        advantage: multi-turn GRPO scores, credits and failure masking.
        ppo: the clipped policy update (mini/micro-batches, epochs, clipping, loss aggregation).
        optim: AdamW; the reference uses lr 1e-6 constant with weight decay 0.01.
        validation: greedy episodes on the DataModule's val split, ``val/*`` and the best checkpoint
            (off when ``None``).
    """

    def __init__(
        self,
        policy: ModelSettings,
        rollout: RolloutSettings = DEFAULT_ROLLOUT,
        advantage: AdvantageSettings = DEFAULT_ADVANTAGE,
        ppo: PPOSettings = DEFAULT_PPO,
        optim: OptimSettings = REFERENCE_RL_OPTIM,
        validation: ValidationSettings | None = None,
    ) -> None:
        super().__init__(policy=policy, ppo=ppo, optim=optim)
        self.save_hyperparameters()
        self.rollout_stage = RolloutStage(rollout, advantage, validation)
        self.reward_mean = MeanMetric()

    # -- stages ------------------------------------------------------------------------------------

    def stages(self) -> list[tuple[str, Any]]:
        return [("rollout", self.rollout_stage)]

    def setup(self, stage: str) -> None:
        if stage == "fit":
            self.rollout_stage.setup(self)

    def collect(self, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        return self.rollout_stage.collect(self, batch, batch_idx)

    def after_batch(self, batch_idx: int) -> None:
        self.rollout_stage.after_batch(self, batch_idx)

    # -- the update --------------------------------------------------------------------------------

    def update(self, step: RLStep) -> None:
        exp = step.experience
        metrics = dict(step.metrics)
        trained = self.train_on(
            exp.tensors,
            n_slots=len(exp.trajectories),
            trained=list(exp.trained),
            metrics=metrics,
            extra=self.extra_loss(step),
        )
        if not trained:
            # Every trajectory failed or had no turn: nothing to learn from; the counts are still logged.
            self.log_dict(metrics, on_step=True)
            return
        self._log(metrics, step.trajectories)

    def extra_loss(self, step: RLStep) -> ExtraLoss | None:
        """A term added to the policy loss for this step (none for GRPO)."""
        return None

    def _log(self, metrics: dict[str, float], trajectories: list[Trajectory]) -> None:
        rewards = torch.tensor([sum(t.turn_rewards) for t in trajectories], dtype=torch.float32)
        self.reward_mean(rewards)  # forward, not update: Lightning logs a metric's step value from its forward
        self.log(
            "rollout/reward", self.reward_mean, on_step=True, on_epoch=False, prog_bar=True, batch_size=len(rewards)
        )
        self.log_dict(metrics, on_step=True, batch_size=len(rewards))

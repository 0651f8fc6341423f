"""``AgentGRPO``: multi-turn GRPO of the agent against simulated users (manual optimisation).

Each training step: the :class:`~mimesis_pl.stages.agent.RolloutStage` runs the batch's episodes and
scores them into an :class:`~mimesis_pl.rollout.step.RLStep`, which :meth:`AgentGRPO.update` takes as its
argument (the PPO update of :class:`~mimesis_pl.modules.ppo_module.PPOModule`, on the step's typed
:class:`~mimesis_pl.rl.policy_batch.PolicyBatch`). RL validation runs on the same stage after the steps its
schedule names.
"""

from __future__ import annotations

import torch
from torchmetrics import MeanMetric

from ..rl.policy_batch import PolicyBatch
from ..rollout.settings import AdvantageSettings, RolloutSettings
from ..rollout.step import RLStep
from ..rollout.trajectory import Trajectory
from ..rollout.validation import ValidationSettings
from ..stages.agent import RolloutStage
from .ppo_module import ExtraLoss, PPOModule, check_behaviour_logprobs
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
        self.max_staleness = rollout.max_staleness  # rollouts ahead of the update (the stages read their settings)
        self.behaviour_correction = ppo.correction_for(rollout.max_staleness)
        self.reward_mean = MeanMetric()

    # -- the update --------------------------------------------------------------------------------

    def update(self, step: RLStep) -> None:
        exp = step.experience
        if self.behaviour_correction == "decoupled":
            check_behaviour_logprobs(exp.trajectories, exp.trained)
        batch = PolicyBatch.from_tensors(exp.tensors, trained=list(exp.trained), n_slots=len(exp.trajectories))
        result = self.train_on(batch, extra=self.extra_loss(step))
        metrics = {**step.metrics, **result.metrics}
        if not result.trained:
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

"""``SimulatorRL``: stage 3 — the ThoughtTrace simulator trained by RL over the task mixture.

Each training step: the :class:`~mimesis_pl.stages.simulator.TaskRolloutStage` runs the batch's rows
through their tasks and folds the scored rollouts into an :class:`~mimesis_pl.rollout.step.RLStep` (FoldGRPO
advantages); :meth:`SimulatorRL.update` takes it as its argument and runs the PPO update of
:class:`~mimesis_pl.modules.ppo_module.PPOModule` (clip 0.2 / 0.28, dual clip 10, manual optimisation).
Validation follows the shared RL schedule (before training, every N steps, at the end), n = 1, no format
gate, with one transcript JSON per row.
"""

from __future__ import annotations

from typing import Any

from ..rl.policy_batch import PolicyBatch
from ..rollout.step import RLStep
from ..stages.simulator import FoldAdvantageSettings, SimRolloutSettings, SimValidationSettings, TaskRolloutStage
from ..tasks.clients import RoleSettings
from ..tasks.registry import import_tasks
from .ppo_module import PPOModule, check_behaviour_logprobs
from .settings import ModelSettings, OptimSettings, PPOSettings

# The reference's simulator optimiser (lr 8e-6, constant, weight decay 0.01) and PPO (mini-batch 16 prompts
# × 8 = 128 trajectories, clip 0.2 / 0.28, dual clip 10).
REFERENCE_SIM_OPTIM = OptimSettings(lr=8e-6, weight_decay=0.01, schedule="constant")
REFERENCE_SIM_PPO = PPOSettings(mini_batch_size=128, clip_high=0.28, dual_clip=10.0)
DEFAULT_SIM_ROLLOUT, DEFAULT_ROLES, DEFAULT_FOLD = SimRolloutSettings(), RoleSettings(), FoldAdvantageSettings()
DEFAULT_SIM_VALIDATION = SimValidationSettings()


class SimulatorRL(PPOModule):
    """The simulator trained with FoldGRPO on the task mixture; the update is the shared PPO update.

    Args:
        policy: the simulator's weights and how they load (engines that load their own copy default to
            its ``model_path``).
        rollout: the engine, sampling and limits of the task rollouts.
        roles: judge, partner and support-agent endpoints (``scripted`` stand-ins or served models).
        task_options: per data_source settings, e.g. ``{usersim-behavior: {abcd_dir: /data/abcd}}`` (the real
            ABCD ``guidelines.json`` + ``kb.json``; default: the bundled synthetic stand-in).
        advantage: FoldGRPO normalisation.
        ppo: the clipped policy update (reference: mini-batch 128 trajectories, clip 0.2 / 0.28, dual clip 10).
        optim: AdamW (reference: lr 8e-6, constant, weight decay 0.01).
        validation: when and how to validate (``None``: never).
        tasks: tasks of your own package, by import path (``my_pkg.tasks:SPECS``: a ``TaskSpec`` or a list of them,
            one per data_source): registered before the rows are read, they train, validate and take
            ``task_options`` like the built-in ones (docs/extending.md).
    """

    def __init__(
        self,
        policy: ModelSettings,
        rollout: SimRolloutSettings = DEFAULT_SIM_ROLLOUT,
        roles: RoleSettings = DEFAULT_ROLES,
        task_options: dict[str, dict[str, Any]] | None = None,
        advantage: FoldAdvantageSettings = DEFAULT_FOLD,
        ppo: PPOSettings = REFERENCE_SIM_PPO,
        optim: OptimSettings = REFERENCE_SIM_OPTIM,
        validation: SimValidationSettings | None = DEFAULT_SIM_VALIDATION,
        tasks: list[str] | None = None,
    ) -> None:
        for path in tasks or ():
            import_tasks(path, key="model.init_args.tasks")
        super().__init__(policy=policy, ppo=ppo, optim=optim)
        self.save_hyperparameters()
        self.rollout_stage = TaskRolloutStage(rollout, roles, task_options or {}, advantage, validation)
        self.behaviour_correction = ppo.correction_for(rollout.max_staleness)

    def update(self, step: RLStep) -> None:
        exp = step.experience
        metrics = dict(step.metrics)
        if not exp.trained:
            metrics["train/skipped_empty_batch"] = 1.0
            self.log_dict(metrics, on_step=True, batch_size=1)
            return
        if self.behaviour_correction == "decoupled":
            check_behaviour_logprobs(exp.trajectories, exp.trained)
        batch = PolicyBatch.from_tensors(exp.tensors, trained=list(exp.trained), n_slots=len(exp.trained))
        metrics.update(self.train_on(batch).metrics)
        self.log_dict(metrics, on_step=True, batch_size=len(exp.trained))

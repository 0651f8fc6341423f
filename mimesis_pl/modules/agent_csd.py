"""``AgentCSD``: GRPO plus coached on-policy self-distillation (CSD).

For coached turns the same policy re-scores its own sampled tokens with a coaching note spliced into
its exact token prefix (the teacher row); a gated token-level loss pulls the student towards tokens
the coached teacher prefers. Total loss per micro-batch: ``L_pg + csd.coef · L_csd``. The teacher
forward uses the current weights, under ``no_grad``, in the same mode as the student, inside the
micro-batch loop (so it moves with the student across mini-batches).

A step's stages run in a declared order: the rollout stage, then the coach stage, which adds the
step's :class:`~mimesis_pl.rollout.step.TeacherBatch`; the update reads it from the step it is given.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..chat import pad_id_of
from ..csd.evidence import lapse_turns
from ..rl.csd_term import CSDSettings, CSDTerm, TrainingHooks
from ..rl.teacher_forward import check_no_dropout
from ..rollout.coaching import CoachingSettings, CoachStage
from ..rollout.settings import AdvantageSettings, RolloutSettings
from ..rollout.step import RLStep
from ..rollout.validation import ValidationSettings
from .agent_grpo import DEFAULT_ADVANTAGE, DEFAULT_PPO, DEFAULT_ROLLOUT, REFERENCE_RL_OPTIM, AgentGRPO
from .ppo_module import ExtraLoss
from .settings import ModelSettings, OptimSettings, PPOSettings

DEFAULT_CSD, DEFAULT_COACHING = CSDSettings(), CoachingSettings()


class AgentCSD(AgentGRPO):
    """The agent trained with GRPO + CSD: a rollout stage, then a coach stage, then the update.

    Args (beyond :class:`AgentGRPO`):
        csd: the CSD term (coefficient, estimator, gate, teacher forward).
        coaching: the coach and how teacher rows are built.
    """

    def __init__(
        self,
        policy: ModelSettings,
        rollout: RolloutSettings = DEFAULT_ROLLOUT,
        advantage: AdvantageSettings = DEFAULT_ADVANTAGE,
        ppo: PPOSettings = DEFAULT_PPO,
        csd: CSDSettings = DEFAULT_CSD,
        coaching: CoachingSettings = DEFAULT_COACHING,
        optim: OptimSettings = REFERENCE_RL_OPTIM,
        validation: ValidationSettings | None = None,
    ) -> None:
        super().__init__(
            policy=policy, rollout=rollout, advantage=advantage, ppo=ppo, optim=optim, validation=validation
        )
        self.save_hyperparameters()
        self.csd = csd
        self.coach_stage = CoachStage(coaching)

    def configure_model(self) -> None:
        super().configure_model()
        check_no_dropout(self.model.config, where=f"{self.model_path}/config.json")

    # -- stages ------------------------------------------------------------------------------------

    def stages(self) -> list[tuple[str, Any]]:
        return [*super().stages(), ("coach", self.coach_stage)]

    def setup(self, stage: str) -> None:
        super().setup(stage)
        if stage == "fit":  # after the rollout stage: the coach must not share the users' endpoint
            self.coach_stage.setup(self.tokenizer, user_shim_url=self.rollout_stage.user_shim_url)
            self.coach_stage.notes_path = coach_notes_path(self.trainer)
            rollout = self.rollout_stage
            if self.max_staleness >= 1:  # notes in each background job (A91)
                coach = self.coach_stage
                rollout.job_notes = lambda chosen, rows: coach.write_notes(chosen, rows, rollout.privileged_source())
                coach.run_on = rollout.run_on_loop

    def collect(self, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        step = super().collect(batch, batch_idx)
        if step.notes is not None:  # written in the rollouts' background job
            exp = step.experience
            chosen = [exp.trajectories[i] for i in exp.trained]
            teacher = self.coach_stage.teacher_from_notes(chosen, *step.notes, global_step=int(self.global_step))
            return replace(step, teacher=teacher)
        teacher = self.coach_stage.teacher(
            step, batch, self.rollout_stage.privileged_source(), global_step=int(self.global_step)
        )
        return replace(step, teacher=teacher)

    # -- the update --------------------------------------------------------------------------------

    def extra_loss(self, step: RLStep) -> ExtraLoss | None:
        if step.teacher is None:
            if step.experience.trained:
                raise RuntimeError(
                    "AgentCSD.update needs the step's teacher rows (RLStep.teacher, from the coach stage)"
                )
            return None
        exp = step.experience
        lapses = [lapse_turns(exp.trajectories[i].messages) for i in exp.trained]
        return CSDTerm(self.csd, step.teacher, self._csd_hooks(), lapses)

    def _csd_hooks(self) -> TrainingHooks:
        return TrainingHooks(
            model=self.model,
            pad_id=pad_id_of(self.tokenizer),
            device=self.device,
            global_step=lambda: int(self.global_step),
            equalize_forwards=self._equalize_forwards,
            empty_microbatch=self._csd_empty_microbatch,
        )

    def _csd_empty_microbatch(self) -> None:
        student = self._dummy_logprobs()
        self._equalize_forwards(0)
        self.manual_backward(student.sum() * 0.0)


def coach_notes_path(trainer: Any) -> Path | None:
    """``<run folder>/coach_notes.jsonl`` (``coach_notes.rank<r>.jsonl`` on rank r > 0); ``None`` without a
    trainer or run folder."""
    if trainer is None or not (trainer.log_dir or trainer.default_root_dir):
        return None
    rank = trainer.global_rank
    name = "coach_notes.jsonl" if rank == 0 else f"coach_notes.rank{rank}.jsonl"
    return Path(trainer.log_dir or trainer.default_root_dir) / name

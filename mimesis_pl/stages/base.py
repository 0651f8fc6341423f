"""The lifecycle the stages of an RL step share, and the validation both rollout stages follow.

A module's stages run in a declared order (``PPOModule.stages()``): a :class:`CollectStage` first (the
agent's :class:`~mimesis_pl.stages.agent.RolloutStage` or simulator RL's
:class:`~mimesis_pl.stages.simulator.TaskRolloutStage`), then optional stages that add to its
:class:`~mimesis_pl.rollout.step.RLStep` (CSD's coach stage). The module drives every :class:`Stage` the same
way: its state goes into the checkpoint under its name and it is torn down in reverse order.
:class:`ValidatingStage` holds what the two rollout stages share: the best checkpoint (their checkpointed state)
and one rule for when they validate (docs/decisions.md D13).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..rollout.validation import BestCheckpoint, ValidationSettings, is_last_step, validation_due

if TYPE_CHECKING:
    import lightning.pytorch as pl

    from ..rollout.step import RLStep


@runtime_checkable
class Stage(Protocol):
    """What a module does with each of its stages: checkpoint its state, tear it down."""

    def teardown(self) -> None:
        """Stop what the stage started (servers, engines, event loops); safe to call twice."""

    def state_dict(self) -> dict[str, Any]:
        """The stage's checkpointed state (saved under ``checkpoint["rl_stages"][name]``)."""

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""


@runtime_checkable
class CollectStage(Stage, Protocol):
    """The first stage of an RL step: the batch's rows in, the step's scored :class:`RLStep` out.

    The module calls :meth:`setup` from ``setup("fit")``, :meth:`collect` from ``training_step`` and
    :meth:`after_batch` at the end of each batch (before checkpoint callbacks save).
    """

    def setup(self, module: pl.LightningModule) -> None:
        """Start what the stage's rollouts need (the engine may wait for the first step: weights load later)."""

    def collect(self, module: pl.LightningModule, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        """Run and score the batch's rows (validating first when a fresh run's schedule says so)."""

    def after_batch(self, module: pl.LightningModule, batch_idx: int) -> None:
        """End-of-batch work: validation when the schedule says so."""


class ValidatingStage:
    """Base of the rollout stages: the best validation checkpoint and when to validate.

    Subclasses implement :meth:`validate_after` (validation after ``steps_done`` steps, on their engine) and call
    :meth:`validates_first` at the start of :meth:`collect`.
    """

    def __init__(self, validation: ValidationSettings | None) -> None:
        if validation is not None:
            validation.check()
        self.validation = validation
        self.best = (
            BestCheckpoint(validation.best_metric, validation.best_mode)
            if validation and validation.best_metric
            else None
        )

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best.state_dict()} if self.best is not None else {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if self.best is not None and "best" in state_dict:
            self.best.load_state_dict(state_dict["best"])

    def validates_first(self, module: pl.LightningModule) -> bool:
        """Whether to validate before this step: a fresh run's first step, with ``val_before_train`` on (D13)."""
        v = self.validation
        return v is not None and module.trainer.fit_loop.total_batch_idx == 0 and validation_due(0, v)

    def after_batch(self, module: pl.LightningModule, batch_idx: int) -> None:
        """Validate when the schedule says so (after every N steps and/or the last)."""
        v = self.validation
        if v is None:
            return
        trainer = module.trainer
        steps_done = trainer.fit_loop.total_batch_idx + 1
        if validation_due(steps_done, v, is_last=is_last_step(trainer, batch_idx)):
            self.validate_after(module, steps_done)

    def validate_after(self, module: pl.LightningModule, steps_done: int) -> None:
        """Validate on the current weights after ``steps_done`` training steps."""
        raise NotImplementedError

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

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..rollout.engines.settings import EngineSettings, EngineTarget
from ..rollout.event_loop import shutdown_loop
from ..rollout.pipeline import ResumeInflight
from ..rollout.validation import BestCheckpoint, ValidationSettings, is_last_step, validation_due
from .ahead import AheadRollouts
from .policy_module import PolicyModule

if TYPE_CHECKING:
    import lightning.pytorch as pl
    import torch

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

    def setup(self, module: PolicyModule) -> None:
        """Start what the stage's rollouts need (the engine may wait for the first step: weights load later)."""

    def collect(self, module: PolicyModule, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        """Run and score the batch's rows (validating first when a fresh run's schedule says so)."""

    def after_batch(self, module: PolicyModule, batch_idx: int) -> None:
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

    def validates_first(self, module: PolicyModule) -> bool:
        """Whether to validate before this step: a fresh run's first step, with ``val_before_train`` on (D13)."""
        v = self.validation
        return v is not None and module.trainer.fit_loop.total_batch_idx == 0 and validation_due(0, v)

    def after_batch(self, module: PolicyModule, batch_idx: int) -> None:
        """Validate when the schedule says so (after every N steps and/or the last)."""
        v = self.validation
        if v is None:
            return
        trainer = module.trainer
        steps_done = trainer.fit_loop.total_batch_idx + 1
        if validation_due(steps_done, v, is_last=is_last_step(trainer, batch_idx)):
            self.validate_after(module, steps_done)

    def validate_after(self, module: PolicyModule, steps_done: int) -> None:
        """Validate on the current weights after ``steps_done`` training steps."""
        raise NotImplementedError


class EngineStage(ValidatingStage):
    """Base of both rollout stages: the engine's lifecycle (built on the policy or a copy, synced per weights
    version) and the rollouts ahead of the update (``rollout.max_staleness >= 1``: a background pipeline whose
    in-flight positions go into the stage's checkpoint), one way for the agent and simulator RL.

    Subclasses implement :meth:`ahead_job` and :meth:`finish_ahead` (:class:`~mimesis_pl.stages.ahead.AheadStage`).
    """

    def __init__(self, validation: ValidationSettings | None) -> None:
        super().__init__(validation)
        self.engine = None
        self._engine_version = -1
        self._shares_weights = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the synchronous step's loop (max_staleness 0)
        self._ahead: AheadRollouts | None = None  # max_staleness >= 1: rollouts on a background thread
        self._ahead_state: dict[str, Any] | None = None

    # -- the engine ------------------------------------------------------------------------------

    def build_engine(self, module: PolicyModule, engine: EngineSettings, *, max_staleness: int) -> Any:
        """Build the rollout engine for ``module``. The HF engine generates on the training weights themselves in
        one process at ``max_staleness`` 0; with several processes (sharded forwards would have to run in
        lockstep) or rollouts ahead of the update (the update must not change the weights under a generation) it
        generates on its own full copy, synced after each optimiser step."""
        trainer = module.trainer
        world = trainer.world_size if trainer is not None else 1
        model = None
        if engine.generates_on_policy_weights:
            self._shares_weights = world == 1 and max_staleness == 0
            model = module.model if self._shares_weights else generation_copy(module)
        target = EngineTarget(
            model_path=module.model_path,
            tokenizer=module.tokenizer,
            model=model,
            ranks_per_device=ranks_per_device(trainer),
            lora_rank=module.lora.r if getattr(module, "lora", None) is not None else None,
        )
        self.engine = engine.build(target)
        return self.engine

    def sync_weights(self, module: PolicyModule) -> None:
        """Load the module's weights into the engine when they changed (a collective under FSDP: ranks reach it
        together, with equal versions)."""
        version = module.weights_version
        if not self._shares_weights and version != self._engine_version:
            self.engine.update_weights(module.model)
        self._engine_version = version

    def close_engine(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    # -- the event loop and the rollouts ahead ----------------------------------------------------

    def start_loop(
        self,
        module: PolicyModule,
        *,
        max_staleness: int,
        wait_timeout_s: float | None,
        resume_inflight: ResumeInflight = "regenerate",
    ) -> None:
        """The synchronous step's event loop, or (``max_staleness >= 1``) the background pipeline."""
        if max_staleness < 1:
            self._loop = asyncio.new_event_loop()
            return
        check_lookahead(module, max_staleness)
        self._ahead = AheadRollouts(max_staleness, wait_timeout_s, resume_inflight)
        if self._ahead_state is not None:
            self._ahead.load_state_dict(self._ahead_state)

    def run_on_loop(self, coro: Coroutine) -> Any:
        """Run ``coro`` to its end on the stage's loop (the background one with rollouts ahead)."""
        if self._ahead is not None:
            return self._ahead.pipeline.run(coro)
        return self._loop.run_until_complete(coro)

    def stop_ahead(self) -> None:
        """Cancel the jobs in flight and end the pipeline's thread (first in teardown: they use the engine)."""
        if self._ahead is not None:
            self._ahead.stop()
            self._ahead = None

    def stop_loop(self) -> None:
        if self._loop is not None:
            shutdown_loop(self._loop)
            self._loop = None

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if self._ahead is not None:
            state["pipeline"] = self._ahead.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._ahead_state = state_dict.get("pipeline")
        if self._ahead is not None and self._ahead_state is not None:
            self._ahead.load_state_dict(self._ahead_state)


def check_lookahead(module: PolicyModule, k: int) -> None:
    """Rollouts ahead of the loader need a data module that gives a future batch's rows."""
    trainer = module.trainer
    dm = trainer.datamodule if trainer is not None else None
    if dm is None or not callable(getattr(dm, "batch_rows", None)):
        raise ValueError(
            f"model.init_args.rollout.max_staleness={k} starts rollouts ahead of the data loader: "
            f"the data module ({type(dm).__name__}) must give a future batch's rows (batch_rows)"
        )


def generation_copy(module: PolicyModule) -> torch.nn.Module:
    """A full, unsharded copy of the policy for this rank's generation (weights synced before use; a LoRA policy
    syncs its merged weights into it: docs/decisions.md A93)."""
    from ..causal_lm import load_causal_lm

    copy = load_causal_lm(module.model_path, dtype=module.dtype_name)
    return copy.to(module.device).eval().requires_grad_(False)


def ranks_per_device(trainer: pl.Trainer | None) -> int:
    """Processes sharing one accelerator's memory: all local ranks on CPU, one per GPU otherwise."""
    if trainer is None:
        return 1
    from lightning.pytorch.accelerators import CPUAccelerator

    return max(1, trainer.num_devices) if isinstance(trainer.accelerator, CPUAccelerator) else 1

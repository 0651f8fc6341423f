"""Both rollout stages' steps at ``rollout.max_staleness = k >= 1``: batch N + k rolls out while batch N trains.

Per step N (the Lightning thread; :class:`AheadRollouts` is owned by a rollout stage — the agent's
:class:`~mimesis_pl.stages.agent.RolloutStage` or simulator RL's
:class:`~mimesis_pl.stages.simulator.TaskRolloutStage`):

1. first step of a fresh or resumed fit: sync the engine, validate first when due, submit batch N and the k after;
2. wait for batch N's job (usually done), check its rows are Lightning's batch;
3. sync the engine to the weights of step N (with k = 1 nothing is in flight then; with k >= 2 later turns of
   running episodes sample on the new weights: versions only grow, so the bound holds);
4. submit the next batch not yet in flight (it rolls out while this step's update runs);
5. score batch N on this thread (the stage's :meth:`AheadStage.finish_ahead`) and assert every trained turn's
   staleness is within 0..k.

What a job runs is the stage's (:meth:`AheadStage.ahead_job`); the schedule, the checkpointed positions and the
staleness bound are this module's, one for both stages. RL validation drains first (waits for the jobs in flight,
keeping their results). The stage's checkpoint records the positions in flight; a resume regenerates them from the
data position Lightning restores, under the loaded weights, or (``rollout.resume_inflight: restore``) trains the
finished rollouts the checkpoint kept.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from ..rl.behaviour import staleness
from ..rollout.pipeline import BatchPos, Job, ResumeInflight, RolloutPipeline
from ..rollout.step import RLStep
from .policy_module import PolicyModule

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: The shim keeps the privileged entries of at most this many episodes (shim/store.py StoreLimits.max_episodes).
SHIM_MAX_EPISODES = 4096


class AheadStage(Protocol):
    """What :class:`AheadRollouts` needs from the rollout stage that owns it."""

    def sync_weights(self, module: PolicyModule) -> None:
        """Bring the engine to the module's current weights (a collective under FSDP)."""

    def validates_first(self, module: PolicyModule) -> bool:
        """Whether a fresh run validates before its first step."""

    def validate_after(self, module: PolicyModule, steps_done: int) -> None:
        """Validate on the current weights (draining the jobs in flight first)."""

    def ahead_job(self, module: PolicyModule, pos: BatchPos, rows: list[dict[str, Any]]) -> Coroutine:
        """The coroutine that rolls out (and may score) the batch at ``pos`` on the pipeline's loop."""

    def finish_ahead(self, module: PolicyModule, batch: list[dict[str, Any]], job: Job, result: Any) -> RLStep:
        """The step of a finished job, on the trainer's thread (failure checks, foreground scoring, metrics)."""


class AheadRollouts:
    """The background pipeline of one rollout stage and the schedule that feeds it (``k = max_staleness``)."""

    def __init__(self, k: int, wait_timeout_s: float | None, resume: ResumeInflight = "regenerate") -> None:
        self.k = k
        self.resume = resume
        self.pipeline = RolloutPipeline(wait_timeout_s)
        self._started = False
        self._resumed: list[list[int]] | None = None
        self._restored: dict[BatchPos, tuple[list[dict[str, Any]], int, Any]] = {}

    # -- checkpoint ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The positions in flight; with ``resume_inflight: restore`` also their finished rollouts (waited for)."""
        state: dict[str, Any] = {"max_staleness": self.k, "inflight": [p.as_list() for p in self.pipeline.positions()]}
        if self.resume == "restore":
            kept = [(pos.as_list(), job.rows, job.version, result) for pos, job, result in self.pipeline.finished()]
            state["rollouts"] = pickle.dumps(kept)  # bytes: loads under torch.load(weights_only=True) too
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._resumed = [list(p) for p in state.get("inflight", [])]
        self._restored = {}
        if self.resume != "restore":
            return
        if "rollouts" not in state:
            log.warning(
                "rollout.resume_inflight is restore but the checkpoint kept no rollouts (saved with regenerate): "
                "the batches it had in flight, %s, roll out again under the loaded weights",
                self._resumed,
            )
            return
        for pos, rows, version, result in pickle.loads(state["rollouts"]):
            self._restored[BatchPos(*pos)] = (rows, version, result)

    def stop(self) -> None:
        self.pipeline.stop()

    # -- the step ------------------------------------------------------------------------------

    def collect(self, stage: AheadStage, module: PolicyModule, batch: list[dict[str, Any]], batch_idx: int):
        trainer = module.trainer
        pos = BatchPos(trainer.current_epoch, batch_idx)
        version = trainer.fit_loop.total_batch_idx  # RL steps done: the weights this step's update starts from
        if not self._started:
            self._start(stage, module, pos, version)
        t0 = time.perf_counter()
        job, result = self.pipeline.take(pos, batch)
        waited = time.perf_counter() - t0
        t0 = time.perf_counter()
        stage.sync_weights(module)
        synced = time.perf_counter() - t0
        self._submit_ahead(stage, module, pos, version)
        step = stage.finish_ahead(module, batch, job, result)
        trajectories = step.experience.trajectories
        for t in trajectories:
            t.turn_versions = [job.version] * t.num_turns
        stale_mean, stale_max = staleness(version, [job.version] * sum(t.num_turns for t in trajectories), self.k)
        step.metrics.update(
            {
                "time/wait_rollout_s": waited,
                "time/weight_sync_s": synced,
                "async/staleness_mean": stale_mean,
                "async/staleness_max": stale_max,
                "async/inflight_batches": float(len(self.pipeline.jobs)),
            }
        )
        return step

    def drain(self) -> None:
        """Wait for the jobs in flight (before validation: no episode races it for the engine)."""
        self.pipeline.drain()

    def _start(self, stage: AheadStage, module: PolicyModule, pos: BatchPos, version: int) -> None:
        stage.sync_weights(module)
        if stage.validates_first(module):
            stage.validate_after(module, steps_done=0)
        ahead = [pos, *self._ahead_of(module, pos)]
        if self._resumed:
            want = [p.as_list() for p in ahead]  # the first batch this run trains is the first one in flight then
            if self._resumed != want[: len(self._resumed)]:
                raise RuntimeError(
                    f"resume: the checkpoint had batches {self._resumed} in flight, this run would start {want} "
                    "after the restored data position (data order or rollout.max_staleness changed?)"
                )
        for p in ahead:
            if p in self._restored:
                self.pipeline.restore(p, *self._restored.pop(p))
            else:
                self._submit(stage, module, p, version)
        self._started = True

    def _submit_ahead(self, stage: AheadStage, module: PolicyModule, pos: BatchPos, version: int) -> None:
        for p in self._ahead_of(module, pos):
            if p not in self.pipeline.jobs:
                self._submit(stage, module, p, version)

    def _ahead_of(self, module: PolicyModule, pos: BatchPos) -> list[BatchPos]:
        """The k positions after ``pos`` that this run will train (across an epoch's end, within max_epochs)."""
        trainer = module.trainer
        dm = trainer.datamodule
        max_epochs = trainer.max_epochs if trainer.max_epochs not in (None, -1) else None
        out: list[BatchPos] = []
        epoch, index = pos.epoch, pos.index
        while len(out) < self.k:
            index += 1
            if dm.batch_rows(epoch, index) is None:
                epoch, index = epoch + 1, 0
                if (max_epochs is not None and epoch >= max_epochs) or dm.batch_rows(epoch, index) is None:
                    break
            out.append(BatchPos(epoch, index))
        return out

    def _submit(self, stage: AheadStage, module: PolicyModule, pos: BatchPos, version: int) -> None:
        rows = module.trainer.datamodule.batch_rows(pos.epoch, pos.index)
        self.pipeline.submit(pos, rows, version, stage.ahead_job(module, pos, rows))


def check_ahead_settings(rollout: Any) -> None:
    """Set-up cross-checks of ``rollout.max_staleness >= 1``, each naming the YAML key that conflicts."""
    k = rollout.max_staleness
    if k < 1:
        return
    key = f"model.init_args.rollout.max_staleness={k}"
    engine = rollout.engine
    if getattr(engine, "enable_sleep_mode", False) or getattr(engine, "enable_memory_saver", False):
        which = "enable_sleep_mode" if getattr(engine, "enable_sleep_mode", False) else "enable_memory_saver"
        raise ValueError(
            f"{key} keeps the engine generating while the update runs: turn off "
            f"model.init_args.rollout.engine.init_args.{which} (the engine cannot sleep during the update)"
        )


def check_shim_capacity(k: int, episodes_per_step: int, where: str) -> None:
    """(k + 1) steps of episodes must fit the shim's store, or the coach reads evicted entries."""
    need = (k + 1) * episodes_per_step
    if need > SHIM_MAX_EPISODES:
        raise ValueError(
            f"model.init_args.rollout.max_staleness={k}: {k + 1} batches × {episodes_per_step} episodes ({where}) "
            f"= {need} in flight, more than the shim store's {SHIM_MAX_EPISODES}; lower max_staleness or the batch"
        )

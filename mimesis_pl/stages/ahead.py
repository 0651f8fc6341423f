"""The agent rollout stage's steps at ``rollout.max_staleness = k >= 1``: batch N + k rolls out while batch N trains.

Per step N (the Lightning thread; :class:`AheadRollouts` is owned by a
:class:`~mimesis_pl.stages.agent.RolloutStage`):

1. first step of a fresh or resumed fit: sync the engine, validate first when due, submit batch N and the k after;
2. wait for batch N's job (usually done), check its rows are Lightning's batch;
3. sync the engine to the weights of step N (with k = 1 nothing is in flight then; with k >= 2 later turns of
   running episodes sample on the new weights: versions only grow, so the bound holds);
4. submit the next batch not yet in flight (it rolls out while this step's update runs);
5. score batch N on this thread and assert every trained turn's staleness is within 0..k.

RL validation drains first (waits for the jobs in flight, keeping their results). The stage's checkpoint records the
positions in flight; a resume regenerates them from the data position Lightning restores, under the loaded weights.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..chat import pad_id_of
from ..rl.behaviour import staleness
from ..rollout.experience import build_experience
from ..rollout.pipeline import BatchPos, RolloutPipeline
from ..rollout.step import RLStep

if TYPE_CHECKING:
    import lightning.pytorch as pl

# The owning stage (stages/agent.py RolloutStage) is typed ``Any`` here: importing it back would close a circle.
RolloutStage = Any

#: The shim keeps the privileged entries of at most this many episodes (shim/store.py StoreLimits.max_episodes).
SHIM_MAX_EPISODES = 4096


class AheadRollouts:
    """The background pipeline of one rollout stage and the schedule that feeds it (``k = max_staleness``)."""

    def __init__(self, k: int, wait_timeout_s: float | None) -> None:
        self.k = k
        self.pipeline = RolloutPipeline(wait_timeout_s)
        self._started = False
        self._resumed: list[list[int]] | None = None

    # -- checkpoint ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"max_staleness": self.k, "inflight": [p.as_list() for p in self.pipeline.positions()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._resumed = [list(p) for p in state.get("inflight", [])]

    def stop(self) -> None:
        self.pipeline.stop()

    # -- the step ------------------------------------------------------------------------------

    def collect(self, stage: RolloutStage, module: pl.LightningModule, batch: list[dict[str, Any]], batch_idx: int):
        trainer = module.trainer
        pos = BatchPos(trainer.current_epoch, batch_idx)
        version = trainer.fit_loop.total_batch_idx  # RL steps done: the weights this step's update starts from
        timings: dict[str, float] = {}
        if not self._started:
            self._start(stage, module, pos, version)
        t0 = time.perf_counter()
        job, (experience, rt, notes, reward_s) = self.pipeline.take(pos, batch)
        trajectories = experience.trajectories
        stage._check_failures(trajectories, f"step {module.trainer.global_step}")  # A76, as the synchronous step
        timings["time/wait_rollout_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        stage._sync_weights(module)
        timings["time/weight_sync_s"] = time.perf_counter() - t0
        self._submit_ahead(stage, module, pos, version)
        versions = [job.version] * sum(t.num_turns for t in trajectories)
        stale_mean, stale_max = staleness(version, versions, self.k)
        for t in trajectories:
            t.turn_versions = [job.version] * t.num_turns
        timings.update(
            {"time/rollout_s": rt.rollout, "time/generate_s": rt.generate, "time/environment_s": rt.environment}
        )
        timings["time/reward_s"] = reward_s
        metrics = {
            **experience.metrics,
            **timings,
            "rollout/prompts_global": float(len(batch) * trainer.world_size),
            "async/staleness_mean": stale_mean,
            "async/staleness_max": stale_max,
            "async/inflight_batches": float(len(self.pipeline.jobs)),
        }
        return RLStep(experience=experience, metrics=metrics, notes=notes)

    def drain(self) -> None:
        """Wait for the jobs in flight (before validation: no episode races it for the engine)."""
        self.pipeline.drain()

    def _start(self, stage: RolloutStage, module: pl.LightningModule, pos: BatchPos, version: int) -> None:
        stage._sync_weights(module)
        if stage.validates_first(module):
            stage._validate(module, steps_done=0)
        ahead = [pos, *self._ahead_of(module, pos)]
        if self._resumed:
            want = [p.as_list() for p in ahead]  # the first batch this run trains is the first one in flight then
            if self._resumed != want[: len(self._resumed)]:
                raise RuntimeError(
                    f"resume: the checkpoint had batches {self._resumed} in flight, this run would start {want} "
                    "after the restored data position (data order or rollout.max_staleness changed?)"
                )
        for p in ahead:
            self._submit(stage, module, p, version)
        self._started = True

    def _submit_ahead(self, stage: RolloutStage, module: pl.LightningModule, pos: BatchPos, version: int) -> None:
        for p in self._ahead_of(module, pos):
            if p not in self.pipeline.jobs:
                self._submit(stage, module, p, version)

    def _ahead_of(self, module: pl.LightningModule, pos: BatchPos) -> list[BatchPos]:
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

    def _submit(self, stage: RolloutStage, module: pl.LightningModule, pos: BatchPos, version: int) -> None:
        trainer = module.trainer
        rows = trainer.datamodule.batch_rows(pos.epoch, pos.index)
        first = trainer.global_rank * len(rows)
        group_ids = [f"e{pos.epoch}-b{pos.index}-p{first + i}" for i in range(len(rows))]
        n = stage.settings.n_samples
        # seeds derived from (run seed, group id, sample) in run_batch (D20): no RNG is touched on either thread
        coro = _job(stage, rows, n, group_ids, None, pad_id_of(module.tokenizer))
        self.pipeline.submit(pos, rows, version, coro)


async def _job(stage: RolloutStage, rows: list[dict[str, Any]], n: int, group_ids, seeds, pad_id: int):
    """One batch's background work: its episodes, their scores, then the coach's notes when a coach asked."""
    trajectories, rt = await stage.rollout.run_batch(rows, n, group_ids=group_ids, seeds=seeds)
    t0 = time.perf_counter()
    experience = build_experience(trajectories, stage.advantage, pad_id=pad_id)
    reward_s = time.perf_counter() - t0
    notes = None
    if stage.job_notes is not None:
        notes = await stage.job_notes([trajectories[i] for i in experience.trained], rows)
    return experience, rt, notes, reward_s


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

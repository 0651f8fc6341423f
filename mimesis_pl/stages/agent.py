"""``RolloutStage``: the first stage of an agent RL step — sync weights, run the episodes, score them.

The module that owns the stage calls, in order:

- :meth:`RolloutStage.setup` (from ``LightningModule.setup("fit")``): starts the simulated users and the
  shim, builds the episode manager;
- :meth:`RolloutStage.collect` (from ``training_step``): returns the step's :class:`~mimesis_pl.rollout.step.RLStep`;
- :meth:`RolloutStage.after_batch` (from ``on_train_batch_end``): RL validation when due, on the same engine;
- :meth:`RolloutStage.teardown`: stops what ``setup`` started and closes the engine.

It implements :class:`~mimesis_pl.stages.base.CollectStage`; its checkpointed state (the best validation
checkpoint) and validation schedule come from :class:`~mimesis_pl.stages.base.ValidatingStage`, shared with
simulator RL's stage.

With several processes, the HF engine generates with a full copy of the policy on each rank, loaded
from the gathered shards after each optimiser step (so ranks generate independently); that costs one
more copy of the weights per rank: use vLLM or SGLang for large models.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Any

from ..chat import pad_id_of
from ..envs.success import SuccessRule
from ..rollout.engines import SamplingParams
from ..rollout.experience import build_experience
from ..rollout.failures import AGENT_FAILURES, check_failure_share
from ..rollout.loop import MultiTurnRollout
from ..rollout.pipeline import BatchPos, Job
from ..rollout.services import SimulatorServices, TimedUsers
from ..rollout.settings import AdvantageSettings, RolloutSettings
from ..rollout.step import RLStep
from ..rollout.validation import ValidationEpisode, ValidationSettings, report_validation, shard_rows
from .ahead import check_ahead_settings, check_shim_capacity
from .base import EngineStage
from .policy_module import PolicyModule


class RolloutStage(EngineStage):
    """Runs ``rollout.n_samples`` episodes per prompt row of a batch and scores them into an :class:`RLStep`.

    Args:
        rollout: engine, users, episode and sampling settings.
        advantage: how trajectories are scored and turned into per-token advantages.
        validation: greedy episodes on the DataModule's ``val_rows`` (off when ``None``).

    The module must expose ``model`` (a HF causal LM), ``tokenizer``, ``model_path`` and ``weights_version``
    (bumped after each optimiser step).
    """

    def __init__(
        self, rollout: RolloutSettings, advantage: AdvantageSettings, validation: ValidationSettings | None = None
    ) -> None:
        super().__init__(validation)
        self.settings = rollout
        self.advantage = advantage
        self.services: SimulatorServices | None = None
        self.rollout: MultiTurnRollout | None = None
        self.val_rollout: MultiTurnRollout | None = None
        self._users: TimedUsers | None = None
        # async (trained trajectories, rows) -> the coach's (notes, counts), run inside each background job (CSD)
        self.job_notes: Any = None

    # -- lifecycle -----------------------------------------------------------------------------

    def setup(self, module: PolicyModule) -> None:
        """Start the simulated users (and their shim) and the episode manager; the engine comes at the first step."""
        if self.services is not None:
            return
        s = self.settings
        self.services = SimulatorServices(s.user_settings).start()
        self._users = TimedUsers(self.services.users())
        self._manager = s.episode.manager(self._users, self.services.shim_url, self.services.shim_token)
        if s.max_staleness >= 1:
            check_ahead_settings(s)
            trainer = module.trainer
            per_rank = getattr(trainer.datamodule, "batch_size", 0) // max(1, trainer.world_size)
            where = "data.init_args.batch_size × rollout.n_samples"
            check_shim_capacity(s.max_staleness, per_rank * s.n_samples, where)
        self.start_loop(
            module, max_staleness=s.max_staleness, wait_timeout_s=s.wait_timeout_s, resume_inflight=s.resume_inflight
        )
        self._sampling = SamplingParams(
            max_new_tokens=s.max_new_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k,
            stop_token_ids=(module.tokenizer.eos_token_id,),
        )

    def teardown(self) -> None:
        self.stop_ahead()  # cancel the jobs first: they use the users and the engine
        if self.services is not None:
            self.services.stop()
            self.services = None
        self.close_engine()
        self.stop_loop()
        self.rollout = None
        self.val_rollout = None

    def privileged_source(self) -> Any:
        """Where a coach reads the users' privileged entries: the shim's URL, a client that sends its
        token, or ``None`` (no shim: in-process scripted users)."""
        services = self.services
        if services is None or services.shim_url is None:
            return None
        token = services.shim_token
        if token is None:
            return services.shim_url
        from ..shim.client import ShimClient

        return ShimClient(services.shim_url, token=token)

    @property
    def user_shim_url(self) -> str | None:
        return self.services.shim_url if self.services is not None else None

    def _ensure_engine(self, module: PolicyModule) -> None:
        if self.rollout is not None:
            return
        s = self.settings
        self.build_engine(module, s.engine, max_staleness=s.max_staleness)
        # rollouts on the background thread get their own tokenizer: fast tokenizers refuse concurrent use
        tokenizer = module.tokenizer if self._ahead is None else copy.deepcopy(module.tokenizer)
        self.rollout = MultiTurnRollout(
            self.engine,
            tokenizer,
            self._manager,
            self._sampling,
            max_length=s.max_length,
            template_kwargs=s.template_kwargs,
            max_concurrency=s.max_concurrency,
        )
        v = self.validation
        if v is not None:
            greedy = replace(
                self._sampling, temperature=v.temperature, max_new_tokens=v.max_new_tokens or s.max_new_tokens
            )
            self.val_rollout = MultiTurnRollout(
                self.engine,
                tokenizer,
                self._manager,
                greedy,
                max_length=s.max_length,
                template_kwargs=s.template_kwargs,
                max_concurrency=s.max_concurrency,
            )

    # -- per step --------------------------------------------------------------------------------

    def collect(self, module: PolicyModule, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        """Sync the engine's weights, validate first when the schedule says so, run and score the episodes."""
        trainer = module.trainer
        self._ensure_engine(module)
        if self._ahead is not None:
            return self._ahead.collect(self, module, batch, batch_idx)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        self.sync_weights(module)
        timings["time/weight_sync_s"] = time.perf_counter() - t0
        if self.validates_first(module):  # only with val_before_train, as simulator RL (docs/decisions.md D13)
            self._validate(module, steps_done=0)

        self.engine.wake_up()
        first = trainer.global_rank * len(batch)  # prompt ids are global: ranks hold consecutive shares
        group_ids = [f"s{trainer.global_step}-b{batch_idx}-p{first + i}" for i in range(len(batch))]
        user_seconds = self._users.seconds
        trajectories, rt = self._loop.run_until_complete(
            self.rollout.run_batch(batch, self.settings.n_samples, group_ids=group_ids)
        )
        self.engine.sleep()
        self._check_failures(trajectories, f"step {trainer.global_step}")
        timings.update(
            {"time/rollout_s": rt.rollout, "time/generate_s": rt.generate, "time/environment_s": rt.environment}
        )
        timings["time/user_simulator_s"] = self._users.seconds - user_seconds  # summed over concurrent episodes
        t0 = time.perf_counter()
        experience = build_experience(trajectories, self.advantage, pad_id=pad_id_of(module.tokenizer))
        timings["time/reward_s"] = time.perf_counter() - t0
        metrics = {**experience.metrics, **timings, "rollout/prompts_global": float(len(batch) * trainer.world_size)}
        return RLStep(experience=experience, metrics=metrics)

    def _check_failures(self, trajectories: list[Any], what: str) -> None:
        check_failure_share(
            [t.status for t in trajectories],
            [t.error for t in trajectories],
            failures=AGENT_FAILURES,
            max_share=self.settings.max_failed_share,
            what=what,
            services=self.services.describe() if self.services is not None else "the user simulator",
        )

    def validate_after(self, module: PolicyModule, steps_done: int) -> None:
        if self._ahead is not None:
            self._ahead.drain()
        self.sync_weights(module)
        self._validate(module, steps_done)

    # -- rollouts ahead of the update (rollout.max_staleness >= 1; the schedule: stages/ahead.py) ---------

    def ahead_job(self, module: PolicyModule, pos: BatchPos, rows: list[dict[str, Any]]):
        """Batch ``pos``'s background work: its episodes, their scores, then the coach's notes when a coach asked."""
        first = module.trainer.global_rank * len(rows)
        group_ids = [f"e{pos.epoch}-b{pos.index}-p{first + i}" for i in range(len(rows))]
        pad_id = pad_id_of(module.tokenizer)
        n = self.settings.n_samples

        async def job():
            # seeds derived from (run seed, group id, sample) in run_batch (D20): no RNG is touched on either thread
            trajectories, rt = await self.rollout.run_batch(rows, n, group_ids=group_ids)
            t0 = time.perf_counter()
            experience = build_experience(trajectories, self.advantage, pad_id=pad_id)
            reward_s = time.perf_counter() - t0
            notes = None
            if self.job_notes is not None:
                notes = await self.job_notes([trajectories[i] for i in experience.trained], rows)
            return experience, rt, notes, reward_s

        return job()

    def finish_ahead(self, module: PolicyModule, batch: list[dict[str, Any]], job: Job, result: Any) -> RLStep:
        experience, rt, notes, reward_s = result
        self._check_failures(experience.trajectories, f"step {module.trainer.global_step}")  # A76, as at k = 0
        metrics = {
            **experience.metrics,
            "time/rollout_s": rt.rollout,
            "time/generate_s": rt.generate,
            "time/environment_s": rt.environment,
            "time/reward_s": reward_s,
            "rollout/prompts_global": float(len(batch) * module.trainer.world_size),
        }
        return RLStep(experience=experience, metrics=metrics, notes=notes)

    # -- weights and validation --------------------------------------------------------------------

    def _validate(self, module: PolicyModule, steps_done: int) -> None:
        """Greedy episodes on this rank's share of the val prompts; ``val/*`` over all ranks; best checkpoint."""
        trainer = module.trainer
        v = self.validation
        rows = list(getattr(trainer.datamodule, "val_rows", None) or [])
        if not rows:
            raise ValueError(
                "RL validation needs val prompts: set data.init_args.val_files (or drop model.init_args.validation)"
            )
        mine = shard_rows(rows, v, trainer.global_rank, trainer.world_size)
        started = time.perf_counter()
        group_ids = [f"val{steps_done}-r{trainer.global_rank}-p{i}" for i in range(len(mine))]
        self.engine.wake_up()
        trajectories, _ = self.run_on_loop(self.val_rollout.run_batch(mine, v.n_samples, group_ids=group_ids))
        self.engine.sleep()
        self._check_failures(trajectories, f"the validation after {steps_done} steps")
        rule = SuccessRule(threshold=self.advantage.success_threshold)  # the evaluation's rule too
        records = [
            ValidationEpisode(
                data_source=str(mine[k // v.n_samples].get("data_source", "unknown")),
                reward=sum(t.turn_rewards),
                success=not t.failed and rule.success(sum(t.turn_rewards)),
                turns=t.num_turns,
                status=t.status,
                scored=not t.failed,
            )
            for k, t in enumerate(trajectories)
        ]
        report_validation(
            trainer, module, records, steps_done, self.best, extra={"time/validation_s": time.perf_counter() - started}
        )

"""The rollout stage of simulator RL: task rows through their tasks, FoldGRPO experience, validation.

Per step (:meth:`TaskRolloutStage.collect`): the batch's rows run ``n_samples`` times each through their
tasks (token-in/token-out on the rollout engine); rows a task could not score fairly (``judge_failed``,
``no_turns``, ``task_error``) are counted and dropped; FoldGRPO advantages (group = row, rollouts
deduplicated by ``gen_uid``, single-rollout groups get 0) make the step's
:class:`~mimesis_pl.rollout.step.RLStep`. Validation follows the shared schedule of
:mod:`mimesis_pl.rollout.validation` (before training, every N steps, at the end), with the tasks' own
``val-core``/``val-aux`` metrics and one transcript JSON per row. It implements
:class:`~mimesis_pl.stages.base.CollectStage`, beside the agent's :class:`~mimesis_pl.stages.agent.RolloutStage`,
and shares its validation rule and checkpointed state through :class:`~mimesis_pl.stages.base.ValidatingStage`.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..chat import pad_id_of
from ..rl.advantages import foldgrpo_advantages
from ..rollout.engines import SamplingParams
from ..rollout.experience import Experience
from ..rollout.failures import check_failure_share
from ..rollout.pipeline import BatchPos, Job
from ..rollout.settings import SamplingSettings
from ..rollout.step import RLStep
from ..rollout.trajectory import collate_trajectories
from ..rollout.validation import ValidationSettings, shard_rows
from ..tasks.base import TaskContext, TaskResult
from ..tasks.clients import RoleSettings
from ..tasks.conversation import Policy
from ..tasks.options import check_task_options
from ..tasks.roles import build_roles
from ..tasks.runner import run_rows, step_metrics, validation_metrics, with_eval_context
from ..tasks.transcripts import write_transcript
from .ahead import check_ahead_settings
from .base import EngineStage
from .policy_module import PolicyModule
from .simulator_checks import check_best_metric, has_val_rows

log = logging.getLogger(__name__)


@dataclass
class SimRolloutSettings(SamplingSettings):
    """How the simulator is sampled (reference: vLLM, n 8, 8,192 prompt + 16,384 response tokens, T = 1); the engine,
    sampling and pipeline fields are :class:`~mimesis_pl.rollout.settings.SamplingSettings`' (the engine defaults to
    the policy's ``model_path``; validation's temperature is ``validation.temperature``).

    Args:
        enable_thinking: thinking for tasks that follow the global setting (single-turn QA always thinks).
        min_think_tokens: the format gate's reasoning floor.
        row_timeout_s: deadline per rollout (spec simulator.md defect D29); past it the rollout is a ``task_error``.
        max_empty_batches: consecutive batches with no scored rollout before the run stops with an error
            (an unreachable judge must not spin forever without an update).
    """

    max_new_tokens: int = 16384
    max_length: int = 24576
    max_concurrency: int = 256
    enable_thinking: bool = True
    min_think_tokens: int = 4
    row_timeout_s: float | None = 1800.0
    max_empty_batches: int = 20

    advantage_name: ClassVar[str] = "FoldGRPO"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_empty_batches < 1:
            raise ValueError(f"model.init_args.rollout.max_empty_batches must be >= 1, got {self.max_empty_batches}")


@dataclass
class SimValidationSettings(ValidationSettings):
    """Simulator-RL validation (reference: before training, then every 50 RL steps, n = 1, T = 1, no format gate).

    Args:
        val_every_n_steps: validate after every N RL steps (training batches; each may take several optimiser
            steps); ``None``: never during training.
        val_before_train: validate once before the first RL step of a fresh run.
        val_at_end: validate after the last RL step.
        n_samples: runs per val row (must be 1: the task metrics are ``mean@1``).
        temperature: validation sampling temperature (honoured, unlike the reference: D11).
        max_new_tokens: per-turn cap; ``None`` takes the training rollout's.
        max_prompts: validate on the first N val rows only (``None``: all).
        best_metric: a logged validation scalar (e.g. ``val-core/all/score``) that picks the best checkpoint;
            ``None``: keep no best.
        best_mode: ``max`` or ``min``.
        dump_transcripts: write ``conversations/<data_source>-<index>.json`` per validation row (§5.12).
        transcript_dir: where; default ``<log_dir>/conversations``.
    """

    val_every_n_steps: int | None = 50
    val_before_train: bool = True
    val_at_end: bool = True
    temperature: float = 1.0
    best_metric: str | None = None
    dump_transcripts: bool = True
    transcript_dir: str | None = None

    metric_prefixes: ClassVar[tuple[str, ...]] = ("val-core/", "val-aux/")

    def check_best_metric(self, name: str) -> None:
        check_best_metric(name)

    def check(self) -> None:
        super().check()
        if self.n_samples != 1:
            raise ValueError(
                f"validation.n_samples must be 1 for simulator RL (metrics are mean@1), got {self.n_samples}"
            )


@dataclass
class FoldAdvantageSettings:
    """FoldGRPO's normalisation.

    Args:
        norm_by_std: divide by the group's standard deviation.
        eps: added to the standard deviation.
    """

    norm_by_std: bool = True
    eps: float = 1e-6


class TaskRolloutStage(EngineStage):
    """Runs task rows through the simulator and scores them into an :class:`RLStep`; validates on the same engine.

    Args:
        rollout: engine and sampling. roles: judge, partner and support agent.
        task_options: per data_source task settings. advantage: FoldGRPO normalisation.
        validation: when and how to validate (``None``: never).
    """

    def __init__(
        self,
        rollout: SimRolloutSettings,
        roles: RoleSettings,
        task_options: dict[str, dict[str, Any]],
        advantage: FoldAdvantageSettings,
        validation: SimValidationSettings | None,
    ) -> None:
        super().__init__(validation)
        check_task_options(task_options)
        self.settings = rollout
        self.roles = roles
        # Built here, before any weights load, so that a misconfigured role (a served judge without a URL)
        # fails at construction; the clients open their connections on first use.
        self._roles = build_roles(roles)
        self.task_options = dict(task_options)
        self.advantage = advantage
        self._ctx: TaskContext | None = None
        self._empty_batches = 0

    # -- lifecycle -------------------------------------------------------------------------------

    def setup(self, module: PolicyModule) -> None:
        """Check that validation has rows to run on (off, with a warning, without val files); the engine and
        the task context come at the first step, once the weights have loaded."""
        if self.validation is not None and not has_val_rows(module.trainer.datamodule):
            self.validation = None
        s = self.settings
        if self._loop is not None or self._ahead is not None:
            return
        check_ahead_settings(s)
        self.start_loop(
            module, max_staleness=s.max_staleness, wait_timeout_s=s.wait_timeout_s, resume_inflight=s.resume_inflight
        )

    def _context(self, module: PolicyModule) -> TaskContext:
        if self._ctx is not None:
            return self._ctx
        s = self.settings
        if self._loop is None and self._ahead is None:  # validate() or fit without setup("fit")
            self.start_loop(module, max_staleness=0, wait_timeout_s=None)
        self.build_engine(module, s.engine, max_staleness=s.max_staleness)
        sampling = SamplingParams(
            max_new_tokens=s.max_new_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k,
            stop_token_ids=(module.tokenizer.eos_token_id,),
        )
        judge, partner, support_agent = self._roles
        # rollouts on the background thread get their own tokenizer: fast tokenizers refuse concurrent use
        tokenizer = module.tokenizer if self._ahead is None else copy.deepcopy(module.tokenizer)
        self._ctx = TaskContext(
            policy=Policy(self.engine, tokenizer, sampling, max_length=s.max_length),
            judge=judge,
            partner=partner,
            support_agent=support_agent,
            min_think_tokens=s.min_think_tokens,
            enable_think=s.enable_thinking,
            options=self.task_options,
        )
        return self._ctx

    def teardown(self) -> None:
        if self._ahead is not None:
            self._ahead.pipeline.cancel()  # the jobs use the clients and the engine
        if self._ctx is not None and (self._loop is not None or self._ahead is not None):
            for client in (self._ctx.judge, self._ctx.partner, self._ctx.support_agent):
                if hasattr(client, "aclose"):
                    self.run_on_loop(client.aclose())  # on the loop their connections were opened on
        if self._ctx is not None:
            self._roles = build_roles(self.roles)  # fresh clients for a later fit/validate on this module
        self.stop_ahead()
        self.stop_loop()
        self.close_engine()
        self._ctx = None

    def _run(self, rows: list[dict[str, Any]], n: int, ctx: TaskContext, prefix: str) -> list[TaskResult]:
        group_ids = [f"{prefix}-p{i}" for i in range(len(rows))]
        self.engine.wake_up()
        try:
            return self.run_on_loop(
                run_rows(rows, n, ctx, group_ids, self.settings.row_timeout_s, self.settings.max_concurrency)
            )
        finally:
            self.engine.sleep()

    # -- per step --------------------------------------------------------------------------------

    def collect(self, module: PolicyModule, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        """Validate first when due before training, then run and score the batch's rows."""
        ctx = self._context(module)
        if self._ahead is not None:
            return self._ahead.collect(self, module, batch, batch_idx)
        if self.validates_first(module):
            self.validate(module)
        self.sync_weights(module)
        started = time.perf_counter()
        ctx.global_step = int(module.global_step)
        prefix = f"s{module.global_step}-b{batch_idx}-r{module.trainer.global_rank}"  # the rank: distinct seeds (D20)
        results = self._run(batch, self.settings.n_samples, ctx, prefix)
        return self._score(module, results, rollout_s=time.perf_counter() - started)

    def _score(self, module: PolicyModule, results: list[TaskResult], *, rollout_s: float) -> RLStep:
        """The step of a batch's results: failure check, metrics, FoldGRPO experience (or an empty step)."""
        self._check_failures(results, f"step {module.global_step}")
        metrics = step_metrics(results)
        metrics["time/rollout_s"] = rollout_s
        scored = [r for r in results if r.trained]
        metrics["rollout/trained_fraction"] = len(scored) / max(1, len(results))
        if not scored:
            self._empty_batches += 1
            if self._empty_batches >= self.settings.max_empty_batches:
                statuses = sorted({r.status for r in results})
                raise RuntimeError(
                    f"{self._empty_batches} batches in a row had no scored rollout (statuses {statuses}; first error: "
                    f"{next((r.error for r in results if r.error), 'none')}); is the judge or support agent down?"
                )
            return RLStep(experience=Experience(trajectories=[], tensors={}, metrics={}, trained=[]), metrics=metrics)
        self._empty_batches = 0
        rows = [traj for r in scored for traj in [r.trajectory, *r.extra_trajectories]]
        t = fold_experience(
            scored, pad_id_of(module.tokenizer), norm_by_std=self.advantage.norm_by_std, eps=self.advantage.eps
        )
        metrics["train/advantage_abs_mean"] = (
            t["advantages"].abs().sum() / t["response_mask"].sum().clamp(min=1)
        ).item()
        experience = Experience(trajectories=rows, tensors=t, metrics={}, trained=list(range(len(rows))))
        return RLStep(experience=experience, metrics=metrics)

    # -- rollouts ahead of the update (rollout.max_staleness >= 1; the schedule: stages/ahead.py) ---------

    def ahead_job(self, module: PolicyModule, pos: BatchPos, rows: list[dict[str, Any]]):
        """Batch ``pos``'s rows through their tasks on the pipeline's loop (the shared context is not mutated)."""
        prefix = f"e{pos.epoch}-b{pos.index}-r{module.trainer.global_rank}"
        group_ids = [f"{prefix}-p{i}" for i in range(len(rows))]
        s = self.settings

        async def job():
            started = time.perf_counter()
            results = await run_rows(rows, s.n_samples, self._ctx, group_ids, s.row_timeout_s, s.max_concurrency)
            return results, time.perf_counter() - started

        return job()

    def finish_ahead(self, module: PolicyModule, batch: list[dict[str, Any]], job: Job, result: Any) -> RLStep:
        results, rollout_s = result
        return self._score(module, results, rollout_s=rollout_s)

    def validate_after(self, module: PolicyModule, steps_done: int) -> None:
        if self._ahead is not None:
            self._ahead.drain()
        self.validate(module)

    def _check_failures(self, results: list[TaskResult], what: str) -> None:
        check_failure_share(
            [r.status for r in results],
            [r.error for r in results],
            failures=frozenset({"task_error"}),
            max_share=self.settings.max_failed_share,
            what=what,
            services="a partner, support agent or environment of the tasks (model.init_args.roles)",
        )

    # -- validation --------------------------------------------------------------------------------

    def validate(self, module: PolicyModule) -> dict[str, float]:
        """Run the val rows once each without the format gate; log and return the metrics."""
        trainer = module.trainer
        v = self.validation
        rows = shard_rows(list(getattr(trainer.datamodule, "val_rows", []) or []), v, rank=0, world_size=1)
        if not rows:
            return {}
        ctx = with_eval_context(self._context(module))
        sampling = replace(
            ctx.policy.sampling,
            temperature=v.temperature,
            max_new_tokens=v.max_new_tokens or ctx.policy.sampling.max_new_tokens,
        )
        ctx.policy = Policy(ctx.policy.engine, ctx.policy.tokenizer, sampling, ctx.policy.max_length)
        self.sync_weights(module)
        started = time.perf_counter()
        results = self._run(rows, v.n_samples, ctx, f"val{module.global_step}")
        self._check_failures(results, f"the validation at step {module.global_step}")
        metrics = validation_metrics(results)
        metrics["time/validation_s"] = time.perf_counter() - started
        for logger in module.loggers:
            logger.log_metrics(metrics, step=int(module.global_step))
        if v.dump_transcripts:
            folder = Path(v.transcript_dir or Path(trainer.log_dir or ".") / "conversations")
            for row, result in zip(rows, results):
                write_transcript(
                    folder,
                    row,
                    result,
                    experiment_name=getattr(module.logger, "name", ""),
                    global_step=int(module.global_step),
                )
        if self.best is not None:
            dirpath = trainer.strategy.broadcast(str(Path(trainer.log_dir or ".") / "checkpoints"))
            self.best.update(trainer, metrics, dirpath)
        log.info(
            "validation at step %d: %s",
            module.global_step,
            {k: round(val, 4) for k, val in metrics.items() if k.startswith("val-core")},
        )
        return metrics


def fold_experience(results: list[TaskResult], pad_id: int, norm_by_std: bool = True, eps: float = 1e-6) -> dict:
    """Training tensors of scored rollouts with ``advantages [B, L]`` from FoldGRPO.

    Groups are the rows (``trajectory.group_id``); rollouts are deduplicated by ``gen_uid``; a group with
    a single scored rollout gets advantage 0 (spec simulator.md defect D19). Unscored rollouts must already be
    filtered out, so they never enter a group's mean or deviation (spec defect D3).
    """
    rows = [
        (r, traj) for r in results for traj in [r.trajectory, *r.extra_trajectories]
    ]  # a rollout may fold into many
    t = collate_trajectories([traj for _, traj in rows], pad_id)
    t["advantages"] = foldgrpo_advantages(
        torch.tensor([r.reward for r, _ in rows], dtype=torch.float32),
        [traj.group_id for _, traj in rows],
        [r.gen_uid for r, _ in rows],
        t["response_mask"],
        norm_by_std=norm_by_std,
        eps=eps,
    )
    return t

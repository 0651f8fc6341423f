"""``SimulatorRL``: stage 3 — the ThoughtTrace simulator trained by RL over the task mixture.

Per step: the batch's rows run ``n_samples`` times each through their tasks (token-in/token-out on
the rollout engines of the agent side); rows a task could not score fairly (``judge_failed``,
``no_turns``, ``task_error``) are counted and dropped; FoldGRPO advantages (group = row, rollouts
deduplicated by ``gen_uid``, single-rollout groups get 0) feed the PPO update of
:class:`~mimesis_pl.modules.AgentGRPO` (clip 0.2 / 0.28, dual clip 10, manual optimisation).
Validation runs inside the module: before the first step and every ``val_every_n_steps``, n = 1,
no format gate, with one transcript JSON per row.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from ..chat import pad_id_of
from ..rl.advantages import foldgrpo_advantages
from ..rollout.engines import SamplingParams, build_engine
from ..rollout.event_loop import shutdown_loop
from ..rollout.trajectory import collate_trajectories
from ..tasks.base import TaskContext, TaskResult
from ..tasks.clients import RoleSettings
from ..tasks.conversation import Policy
from ..tasks.roles import build_roles
from ..tasks.runner import run_rows, step_metrics, validation_metrics, with_eval_context
from ..tasks.transcripts import write_transcript
from .agent_grpo import AgentGRPO
from .settings import LoraSettings, OptimSettings

log = logging.getLogger(__name__)


@dataclass
class SimRolloutSettings:
    """How the simulator is sampled (reference: vLLM, n 8, 8,192 prompt + 16,384 response tokens, T = 1).

    Args:
        engine: ``hf`` (in-process on the training weights), ``vllm``, ``sglang`` or ``openai``.
        engine_kwargs: constructor arguments of the engine (``model_path``, ``dtype`` …).
        n_samples: rollouts per row in training (validation uses 1).
        max_new_tokens: cap per generated turn.
        max_length: cap on a whole trajectory (prompt + every turn).
        temperature, top_p, top_k: training sampling.
        val_temperature: validation sampling temperature (honoured, unlike the reference: S11 in docs/decisions.md).
        enable_thinking: thinking for tasks that follow the global setting (single-turn QA always thinks).
        min_think_tokens: the format gate's reasoning floor.
        max_concurrency: rollouts in flight.
        row_timeout_s: deadline per rollout (S29); past it the rollout is a ``task_error``.
        max_empty_batches: consecutive batches with no scored rollout before the run stops with an error
            (an unreachable judge must not spin forever without an update).
    """

    engine: str = "hf"
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    n_samples: int = 8
    max_new_tokens: int = 16384
    max_length: int = 24576
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    val_temperature: float = 1.0
    enable_thinking: bool = True
    min_think_tokens: int = 4
    max_concurrency: int = 256
    row_timeout_s: float | None = 1800.0
    max_empty_batches: int = 20


@dataclass
class SimValidationSettings:
    """Validation inside the module (reference: before training, then every 50 steps, n = 1).

    Args:
        before_train: validate before the first RL step.
        every_n_steps: validate after every n RL steps (training batches; each may take several optimiser
            steps) and at the end of training; 0 = only before training.
        dump_transcripts: write ``conversations/<data_source>-<index>.json`` per validation row (eval only).
        transcript_dir: where; default ``<log_dir>/conversations``.
    """

    before_train: bool = True
    every_n_steps: int = 50
    dump_transcripts: bool = True
    transcript_dir: str | None = None


class SimulatorRL(AgentGRPO):
    """The simulator trained with FoldGRPO on the task mixture; the update is AgentGRPO's.

    Args:
        model_path, lora, optim, gradient_checkpointing, dtype, attn_implementation, loss_chunk_size:
            as for :class:`~mimesis_pl.modules.AgentGRPO` (reference optimiser: lr 8e-6, constant).
        ppo_mini_batch_size: trajectories per optimiser step (reference: 16 prompts × 8 = 128).
        micro_batch_size, ppo_epochs, clip_low, clip_high, dual_clip, loss_agg, grad_clip: the PPO update.
        rollout: sampling and limits. validation: when and how to validate.
        roles: judge, partner and support-agent endpoints (``scripted`` stand-ins or served models).
        task_options: per data_source settings, e.g. ``{usersim-behavior: {abcd_dir: /data/abcd}}`` (the real
            ABCD ``guidelines.json`` + ``kb.json``; default: the bundled synthetic stand-in).
        norm_by_std, eps: FoldGRPO normalisation.
    """

    def __init__(
        self,
        model_path: str,
        lora: LoraSettings | None = None,
        optim: OptimSettings = OptimSettings(lr=8e-6, weight_decay=0.01, schedule="constant"),
        ppo_mini_batch_size: int = 128,
        micro_batch_size: int = 2,
        ppo_epochs: int = 1,
        clip_low: float = 0.2,
        clip_high: float = 0.28,
        dual_clip: float | None = 10.0,
        loss_agg: str = "token-mean",
        grad_clip: float = 1.0,
        rollout: SimRolloutSettings = SimRolloutSettings(),
        validation: SimValidationSettings = SimValidationSettings(),
        roles: RoleSettings = RoleSettings(),
        task_options: dict[str, dict[str, Any]] | None = None,
        norm_by_std: bool = True,
        eps: float = 1e-6,
        gradient_checkpointing: bool = False,
        dtype: str | None = None,
        attn_implementation: str | None = "sdpa",
        trust_remote_code: bool = False,
        loss_chunk_size: int | None = None,
        log_entropy: bool = True,
        chat_template: str | None = None,
    ) -> None:
        super().__init__(
            model_path=model_path, lora=lora, optim=optim, ppo_mini_batch_size=ppo_mini_batch_size,
            micro_batch_size=micro_batch_size, ppo_epochs=ppo_epochs, clip_low=clip_low, clip_high=clip_high,
            dual_clip=dual_clip, loss_agg=loss_agg, grad_clip=grad_clip, gradient_checkpointing=gradient_checkpointing,
            dtype=dtype, attn_implementation=attn_implementation, trust_remote_code=trust_remote_code,
            loss_chunk_size=loss_chunk_size, log_entropy=log_entropy, chat_template=chat_template,
        )
        self.save_hyperparameters()
        self.rollout_settings = rollout
        self.validation = validation
        self.roles = roles
        self.task_options = dict(task_options or {})
        self.norm_by_std = norm_by_std
        self.eps = eps
        self.engine = None
        self._engine_version = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ctx: TaskContext | None = None
        self._last_validated: int | None = None
        self._empty_batches = 0

    # -- lifecycle -------------------------------------------------------------------------------

    def _context(self) -> TaskContext:
        if self._ctx is not None:
            return self._ctx
        s = self.rollout_settings
        kwargs = dict(s.engine_kwargs)
        if s.engine == "hf":
            if self.trainer is not None and self.trainer.world_size > 1:
                raise ValueError("engine 'hf' generates on the training weights in one process; use vllm or sglang")
            kwargs.setdefault("model", self.model)
            kwargs.setdefault("tokenizer_or_pad_id", self.tokenizer)
        self.engine = build_engine(s.engine, **kwargs)
        sampling = SamplingParams(
            max_new_tokens=s.max_new_tokens, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k,
            stop_token_ids=(self.tokenizer.eos_token_id,),
        )
        self._loop = asyncio.new_event_loop()
        judge, partner, support_agent = build_roles(self.roles)
        self._ctx = TaskContext(
            policy=Policy(self.engine, self.tokenizer, sampling, max_length=s.max_length),
            judge=judge,
            partner=partner,
            support_agent=support_agent,
            min_think_tokens=s.min_think_tokens,
            enable_think=s.enable_thinking,
            options=self.task_options,
        )
        return self._ctx

    def teardown(self, stage: str) -> None:
        if self._loop is not None:
            for client in (self._ctx.judge, self._ctx.partner, self._ctx.support_agent):
                if hasattr(client, "aclose"):
                    self._loop.run_until_complete(client.aclose())
            shutdown_loop(self._loop)
            self._loop = None
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        self._ctx = None

    def _sync_engine(self) -> None:
        if self.rollout_settings.engine != "hf" and self.weights_version != self._engine_version:
            self.engine.update_weights(self.model)
        self._engine_version = self.weights_version

    def _run(self, rows: list[dict[str, Any]], n: int, ctx: TaskContext, prefix: str) -> list[TaskResult]:
        group_ids = [f"{prefix}-p{i}" for i in range(len(rows))]
        self.engine.wake_up()
        try:
            return self._loop.run_until_complete(
                run_rows(rows, n, ctx, group_ids, self.rollout_settings.row_timeout_s, self.rollout_settings.max_concurrency)
            )
        finally:
            self.engine.sleep()

    # -- training ----------------------------------------------------------------------------------

    def training_step(self, batch: list[dict[str, Any]], batch_idx: int) -> None:
        ctx = self._context()
        self._maybe_validate(final=False)
        self._sync_engine()
        started = time.perf_counter()
        ctx.global_step = int(self.global_step)
        results = self._run(batch, self.rollout_settings.n_samples, ctx, f"s{self.global_step}-b{batch_idx}")
        metrics = step_metrics(results)
        metrics["time/rollout_s"] = time.perf_counter() - started
        trained = [r for r in results if r.trained]
        metrics["rollout/trained_fraction"] = len(trained) / max(1, len(results))
        if not trained:
            self._empty_batches += 1
            if self._empty_batches >= self.rollout_settings.max_empty_batches:
                statuses = sorted({r.status for r in results})
                raise RuntimeError(
                    f"{self._empty_batches} batches in a row had no scored rollout (statuses {statuses}; first error: "
                    f"{next((r.error for r in results if r.error), 'none')}); is the judge or support agent down?"
                )
            metrics["train/skipped_empty_batch"] = 1.0
            self.log_dict(metrics, on_step=True, batch_size=max(1, len(results)))
            return
        self._empty_batches = 0
        t = fold_experience(trained, pad_id_of(self.tokenizer), norm_by_std=self.norm_by_std, eps=self.eps)
        metrics["train/advantage_abs_mean"] = (t["advantages"].abs().sum() / t["response_mask"].sum().clamp(min=1)).item()
        rows = int(t["input_ids"].shape[0])
        self.train_on(t, n_slots=rows, trained=list(range(rows)), metrics=metrics)
        self.log_dict(metrics, on_step=True, batch_size=len(trained))

    def on_train_end(self) -> None:
        self._maybe_validate(final=True)

    # -- validation --------------------------------------------------------------------------------

    def _rl_steps_done(self, final: bool) -> int:
        """RL steps (training batches) completed; one RL step may hold several optimiser steps."""
        progress = self.trainer.fit_loop.epoch_loop.batch_progress.total
        return int(progress.completed if final else max(0, progress.ready - 1))

    def _maybe_validate(self, final: bool) -> None:
        v = self.validation
        step = self._rl_steps_done(final)
        if self._last_validated == step or v.every_n_steps < 0:
            return
        due = (step == 0 and v.before_train) or (step > 0 and v.every_n_steps > 0 and step % v.every_n_steps == 0)
        if not (due or (final and step > 0 and v.every_n_steps > 0)):
            return
        rows = list(getattr(self.trainer.datamodule, "val_rows", []) or [])
        if not rows:
            return
        self._last_validated = step
        self.validate_rows(rows)

    def validate_rows(self, rows: list[dict[str, Any]]) -> dict[str, float]:
        """Run every validation row once without the format gate; log and return the metrics."""
        ctx = with_eval_context(self._context())
        ctx.policy = Policy(ctx.policy.engine, ctx.policy.tokenizer, _with_temperature(ctx.policy.sampling,
                            self.rollout_settings.val_temperature), ctx.policy.max_length)
        self._sync_engine()
        started = time.perf_counter()
        results = self._run(rows, 1, ctx, f"val{self.global_step}")
        metrics = validation_metrics(results)
        metrics["time/validation_s"] = time.perf_counter() - started
        for logger in self.loggers:
            logger.log_metrics(metrics, step=int(self.global_step))
        if self.validation.dump_transcripts:
            self._dump(rows, results)
        log.info("validation at step %d: %s", self.global_step, {k: round(v, 4) for k, v in metrics.items() if k.startswith("val-core")})
        return metrics

    def _dump(self, rows: list[dict[str, Any]], results: list[TaskResult]) -> None:
        folder = Path(self.validation.transcript_dir or Path(self.trainer.log_dir or ".") / "conversations")
        for row, result in zip(rows, results):
            write_transcript(folder, row, result, experiment_name=getattr(self.logger, "name", ""),
                             global_step=int(self.global_step))


def fold_experience(results: list[TaskResult], pad_id: int, norm_by_std: bool = True, eps: float = 1e-6) -> dict:
    """Training tensors of scored rollouts with ``advantages [B, L]`` from FoldGRPO.

    Groups are the rows (``trajectory.group_id``); rollouts are deduplicated by ``gen_uid``; a group with
    a single scored rollout gets advantage 0 (docs/decisions.md S19). Unscored rollouts must already be
    filtered out, so they never enter a group's mean or deviation (S3).
    """
    rows = [(r, traj) for r in results for traj in [r.trajectory, *r.extra_trajectories]]  # a rollout may fold into many
    t = collate_trajectories([traj for _, traj in rows], pad_id)
    t["advantages"] = foldgrpo_advantages(
        torch.tensor([r.reward for r, _ in rows], dtype=torch.float32), [traj.group_id for _, traj in rows],
        [r.gen_uid for r, _ in rows], t["response_mask"], norm_by_std=norm_by_std, eps=eps,
    )
    return t


def _with_temperature(params: SamplingParams, temperature: float) -> SamplingParams:
    return replace(params, temperature=temperature)

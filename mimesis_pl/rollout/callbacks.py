"""``RolloutCallback``: before each training batch, sync weights, run the episodes, score them, and
hand the experience (trajectories, tensors, per-token advantages) to the module."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import lightning.pytorch as pl
import torch

from ..chat import pad_id_of
from ..envs import EnvironmentManager
from ..rl.advantages import grpo_multiturn_advantages, trajectory_score
from .engines import SamplingParams, build_engine
from .engines.base import AGENT_TURN_TOKENS
from .event_loop import shutdown_loop
from .loop import MultiTurnRollout
from .progress import groups_with_signal
from .services import SimulatorServices, TimedUsers, UserSimSettings
from .trajectory import Trajectory, collate_trajectories
from .validation import (
    BestCheckpoint,
    EpisodeRecord,
    ValidationSettings,
    is_last_step,
    report_validation,
    shard_rows,
    validation_due,
)

log = logging.getLogger(__name__)


@dataclass
class RolloutSettings:
    """Sampling and episode limits (reference defaults: n 8, 16 turns, 1152 + 8192 tokens, T = 1)."""

    engine: str = "hf"
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    n_samples: int = 8
    max_turns: int = 16
    max_new_tokens: int = AGENT_TURN_TOKENS
    max_length: int = 9344
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    enable_thinking: bool | None = None
    max_concurrency: int = 128
    gym_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    step_timeout_s: float = 300.0
    show_reward: bool = False


@dataclass
class AdvantageSettings:
    """Multi-turn GRPO (reference: γ 0.8 per turn, R2G credits, R2G trajectory score)."""

    gamma: float = 0.8
    credit: str = "r2g"
    score: str = "r2g"
    norm_by_std: bool = True
    eps: float = 1e-6
    zero_credit: str = "uniform"
    mask_failures: bool = True
    success_threshold: float = 1.0


DEFAULT_ROLLOUT, DEFAULT_USERS, DEFAULT_ADVANTAGE = RolloutSettings(), UserSimSettings(), AdvantageSettings()


@dataclass
class Experience:
    """One batch of rollouts, ready for the policy update."""

    trajectories: list[Trajectory]
    tensors: dict[str, torch.Tensor]  # collate_trajectories(...) of the trained trajectories, + "advantages"
    metrics: dict[str, float]
    trained: list[int]  # indices into ``trajectories`` that are trained on (failures masked out)


class RolloutCallback(pl.Callback):
    """Runs rollouts for each batch of prompt rows and stores an :class:`Experience` on the module.

    The module must expose ``model`` (a HF causal LM), ``tokenizer`` and ``weights_version`` (bumped
    after each optimiser step), and read ``experience`` in ``training_step``.

    ``validation`` (off when ``None``) runs greedy episodes on the DataModule's ``val_rows`` before
    training and/or every N training steps, logs ``val/*`` and keeps the best checkpoint
    (see :mod:`~mimesis_pl.rollout.validation`).

    With several processes, engine ``hf`` generates with a full copy of the policy on each rank,
    loaded from the gathered shards after each optimiser step (so ranks generate independently);
    that costs one more copy of the weights per rank: use vllm or sglang for large models.
    """

    def __init__(
        self,
        rollout: RolloutSettings = DEFAULT_ROLLOUT,
        users: UserSimSettings = DEFAULT_USERS,
        advantage: AdvantageSettings = DEFAULT_ADVANTAGE,
        validation: ValidationSettings | None = None,
    ) -> None:
        self.settings = rollout
        self.user_settings = users
        self.advantage = advantage
        self.validation = validation
        if validation is not None:
            validation.check()
        self.best = BestCheckpoint(validation.best_metric, validation.best_mode) if validation and validation.best_metric else None
        self.val_rollout: MultiTurnRollout | None = None
        self._shares_weights = False
        self.services: SimulatorServices | None = None
        self.engine = None
        self.rollout: MultiTurnRollout | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine_version = -1

    # -- lifecycle -----------------------------------------------------------------------------

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit" or self.rollout is not None:
            return
        s = self.settings
        tokenizer = pl_module.tokenizer
        self.services = SimulatorServices(self.user_settings, coach_url=getattr(pl_module, "coach_shim_url", None)).start()
        self._users = TimedUsers(self.services.users())
        manager = EnvironmentManager(
            users=self._users, shim_url=self.services.shim_url, gym_options=s.gym_options,
            max_turns=s.max_turns, step_timeout_s=s.step_timeout_s, show_reward=s.show_reward,
        )
        self._loop = asyncio.new_event_loop()
        sampling = SamplingParams(
            max_new_tokens=s.max_new_tokens, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k,
            stop_token_ids=(tokenizer.eos_token_id,),
        )
        template_kwargs = {} if s.enable_thinking is None else {"enable_thinking": s.enable_thinking}
        self._sampling, self._manager, self._template_kwargs = sampling, manager, template_kwargs

    def _ensure_engine(self, pl_module: pl.LightningModule) -> None:
        if self.rollout is not None:
            return
        s = self.settings
        kwargs = dict(s.engine_kwargs)
        world = pl_module.trainer.world_size if pl_module.trainer is not None else 1
        if s.engine == "hf":
            # One process: generate on the training weights themselves. Several: sharded forwards
            # would have to run in lockstep across ranks, so each rank generates with its own full copy.
            self._shares_weights = world == 1
            kwargs.setdefault("model", pl_module.model if world == 1 else _generation_copy(pl_module))
            kwargs.setdefault("tokenizer_or_pad_id", pl_module.tokenizer)
        elif s.engine in ("vllm", "sglang"):
            kwargs.setdefault("ranks_per_device", _ranks_per_device(pl_module.trainer))
        self.engine = build_engine(s.engine, **kwargs)
        self.rollout = MultiTurnRollout(
            self.engine, pl_module.tokenizer, self._manager, self._sampling, max_length=s.max_length,
            template_kwargs=self._template_kwargs, max_concurrency=s.max_concurrency,
        )
        v = self.validation
        if v is not None:
            greedy = replace(self._sampling, temperature=v.temperature, max_new_tokens=v.max_new_tokens or s.max_new_tokens)
            self.val_rollout = MultiTurnRollout(
                self.engine, pl_module.tokenizer, self._manager, greedy, max_length=s.max_length,
                template_kwargs=self._template_kwargs, max_concurrency=s.max_concurrency,
            )

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self.services is not None:
            self.services.stop()
            self.services = None
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        if self._loop is not None:
            shutdown_loop(self._loop)
            self._loop = None
        self.rollout = None
        self.val_rollout = None

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best.state_dict()} if self.best is not None else {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if self.best is not None and "best" in state_dict:
            self.best.load_state_dict(state_dict["best"])

    # -- per batch -------------------------------------------------------------------------------

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int) -> None:
        self._ensure_engine(pl_module)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        self._sync_weights(pl_module)
        timings["time/weight_sync_s"] = time.perf_counter() - t0
        if self.validation is not None and trainer.fit_loop.total_batch_idx == 0:
            self._validate(trainer, pl_module, steps_done=0)

        self.engine.wake_up()
        first = trainer.global_rank * len(batch)  # prompt ids are global: ranks hold consecutive shares
        group_ids = [f"s{trainer.global_step}-b{batch_idx}-p{first + i}" for i in range(len(batch))]
        user_seconds = self._users.seconds
        trajectories, rt = self._loop.run_until_complete(
            self.rollout.run_batch(batch, self.settings.n_samples, group_ids=group_ids)
        )
        self.engine.sleep()
        timings.update({"time/rollout_s": rt.rollout, "time/generate_s": rt.generate, "time/environment_s": rt.environment})
        timings["time/user_simulator_s"] = self._users.seconds - user_seconds  # summed over concurrent episodes
        t0 = time.perf_counter()
        pl_module.experience = self.build_experience(trajectories, pad_id=pad_id_of(pl_module.tokenizer))
        timings["time/reward_s"] = time.perf_counter() - t0
        pl_module.experience.metrics.update(timings)
        pl_module.experience.metrics["rollout/prompts_global"] = float(len(batch) * trainer.world_size)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self.validation is None:
            return
        steps_done = trainer.fit_loop.total_batch_idx + 1
        if validation_due(steps_done, self.validation, is_last=is_last_step(trainer, batch_idx)):
            self._sync_weights(pl_module)
            self._validate(trainer, pl_module, steps_done)

    # -- weights and validation --------------------------------------------------------------------

    def _sync_weights(self, pl_module: pl.LightningModule) -> None:
        # A collective under FSDP (the shards are gathered): ranks reach it together, with equal versions.
        version = getattr(pl_module, "weights_version", 0)
        if not self._shares_weights and version != self._engine_version:
            self.engine.update_weights(pl_module.model)
        self._engine_version = version

    def _validate(self, trainer: pl.Trainer, pl_module: pl.LightningModule, steps_done: int) -> None:
        """Greedy episodes on this rank's share of the val prompts; ``val/*`` over all ranks; best checkpoint."""
        v = self.validation
        rows = list(getattr(trainer.datamodule, "val_rows", None) or [])
        if not rows:
            raise ValueError("RolloutCallback validation needs val prompts: set data.init_args.val_files "
                             "(or drop trainer.callbacks.init_args.validation)")
        mine = shard_rows(rows, v, trainer.global_rank, trainer.world_size)
        started = time.perf_counter()
        group_ids = [f"val{steps_done}-r{trainer.global_rank}-p{i}" for i in range(len(mine))]
        self.engine.wake_up()
        trajectories, _ = self._loop.run_until_complete(self.val_rollout.run_batch(mine, v.n_samples, group_ids=group_ids))
        self.engine.sleep()
        threshold = self.advantage.success_threshold
        records = [
            EpisodeRecord(
                data_source=str(mine[k // v.n_samples].get("data_source", "unknown")), reward=sum(t.turn_rewards),
                success=not t.failed and sum(t.turn_rewards) >= threshold - 1e-6, turns=t.num_turns, status=t.status,
            )
            for k, t in enumerate(trajectories)
        ]
        report_validation(trainer, pl_module, records, steps_done, self.best,
                          extra={"time/validation_s": time.perf_counter() - started})

    def build_experience(self, trajectories: list[Trajectory], pad_id: int) -> Experience:
        """Score trajectories, mask infrastructure failures, compute per-token advantages."""
        a = self.advantage
        for t in trajectories:
            t.reward = float(trajectory_score(t.turn_rewards, a.score, a.gamma)) if t.turn_rewards else 0.0
        trained = [i for i, t in enumerate(trajectories) if not (a.mask_failures and t.failed) and t.num_turns > 0]
        metrics = rollout_metrics(trajectories, a.success_threshold)
        metrics["rollout/trained_fraction"] = len(trained) / max(1, len(trajectories))
        metrics["rollout/groups_with_signal"] = groups_with_signal(trajectories)
        tensors: dict[str, torch.Tensor] = {}
        if trained:
            chosen = [trajectories[i] for i in trained]
            tensors = collate_trajectories(chosen, pad_id)
            tensors["advantages"] = grpo_multiturn_advantages(
                tensors["turn_index"], [t.turn_rewards for t in chosen], [t.group_id for t in chosen], gamma=a.gamma,
                credit=a.credit, score=a.score, norm_by_std=a.norm_by_std, eps=a.eps, zero_credit=a.zero_credit,
            )
        return Experience(trajectories=trajectories, tensors=tensors, metrics=metrics, trained=trained)


def rollout_metrics(trajectories: list[Trajectory], success_threshold: float) -> dict[str, float]:
    """Reward, success, length and termination statistics of a batch (all trajectories)."""
    rewards = torch.tensor([sum(t.turn_rewards) for t in trajectories], dtype=torch.float32)
    ok = [t for t in trajectories if not t.failed]
    metrics = {
        "rollout/episode_reward_mean": rewards.mean().item() if len(rewards) else 0.0,
        "rollout/episode_reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
        "rollout/score_mean": sum(t.reward for t in trajectories) / max(1, len(trajectories)),
        "rollout/success_rate": sum(sum(t.turn_rewards) >= success_threshold - 1e-6 for t in ok) / max(1, len(ok)),
        "rollout/turns_mean": sum(t.num_turns for t in trajectories) / max(1, len(trajectories)),
        "rollout/response_tokens_mean": sum(t.response_length for t in trajectories) / max(1, len(trajectories)),
        "rollout/sequence_tokens_mean": sum(len(t.input_ids) for t in trajectories) / max(1, len(trajectories)),
    }
    for status, n in Counter(t.status for t in trajectories).items():
        metrics[f"rollout/status/{status}"] = float(n)
    tool_errors = sum(t.counters.get("tool_errors", 0) for t in trajectories)
    metrics["rollout/tool_errors_per_episode"] = tool_errors / max(1, len(trajectories))
    return metrics


def _generation_copy(pl_module: pl.LightningModule) -> torch.nn.Module:
    """A full, unsharded copy of the policy for this rank's generation (weights synced before use)."""
    if getattr(pl_module, "lora", None) is not None:
        raise ValueError("engine 'hf' with several processes keeps a full copy for generation and cannot sync a "
                         "LoRA adapter into it; use engine vllm (adapter sync) or train on one process")
    from ..models import load_causal_lm

    copy = load_causal_lm(pl_module.model_path, dtype=getattr(pl_module, "dtype_name", None))
    return copy.to(pl_module.device).eval().requires_grad_(False)


def _ranks_per_device(trainer: pl.Trainer | None) -> int:
    """Processes sharing one accelerator's memory: all local ranks on CPU, one per GPU otherwise."""
    if trainer is None:
        return 1
    from lightning.pytorch.accelerators import CPUAccelerator

    return max(1, trainer.num_devices) if isinstance(trainer.accelerator, CPUAccelerator) else 1

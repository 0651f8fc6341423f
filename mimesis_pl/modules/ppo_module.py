"""``PPOModule``: what every RL module shares — its step stages and the clipped policy update (manual optimisation).

A training step is ``self.update(self.collect(batch, batch_idx))``: ``collect`` runs the module's declared
stages (its :class:`~mimesis_pl.stages.base.CollectStage` ``rollout_stage``, then optionally coaching) into one
typed :class:`~mimesis_pl.rollout.step.RLStep`; ``update`` takes it as its argument. The rollout stage starts in
``setup("fit")``; every :class:`~mimesis_pl.stages.base.Stage` stops in ``teardown`` and its checkpointed state
rides in the checkpoint under ``"rl_stages"``.

The update: old log-probs are recomputed under the current weights (the engine's log-probs are compared with
them, and weight each token by π_prox / π_behav with ``ppo.behaviour_correction: decoupled``, docs/decisions.md
A90); then ``ppo.epochs`` passes over mini-batches of
trajectories, each mini-batch one optimiser step of the clipped policy loss, accumulated over
micro-batches so that ``token-mean`` means the mean over every response token of the mini-batch.
A step whose gradient norm is not finite is skipped and counted. The update takes a typed
:class:`~mimesis_pl.rl.policy_batch.PolicyBatch` and returns its metrics (an ``UpdateResult``).
"""

from __future__ import annotations

import math
import time
from typing import Any, Literal, Protocol

import lightning.pytorch as pl
import torch

from ..chat import load_tokenizer, pad_id_of
from ..rl.behaviour import apply_behaviour_weights
from ..rl.losses import policy_loss
from ..rl.policy_batch import LossInputs, PolicyBatch, PolicyUpdate, UpdateResult
from ..rl.token_ops import HeadLogprobs, model_token_logprobs
from ..rollout.step import RLStep
from ..rollout.trajectory import Trajectory
from ..scale import per_rank_share, plan_minibatches
from ..stages.base import CollectStage, Stage
from .base import HFCausalLMModule
from .settings import ModelSettings, OptimSettings, PPOSettings


class ExtraLoss(Protocol):
    """A term added to the policy loss of every micro-batch (CSD's): built per step, passed to the update."""

    metrics: dict[str, float]
    # how the term of each micro-batch is weighted in the mini-batch's gradient (see `extra_term_weight`)
    weighting: Literal["micro_batch", "pg_token_share"]
    # whether it reads other tokens' log-probs from the student's forward (the `head` of its call)
    needs_head: bool

    def __call__(
        self, rows: torch.Tensor, logprobs: torch.Tensor, width: int, inputs: LossInputs, head: HeadLogprobs | None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """``(term, metrics)`` for the micro-batch ``rows`` (student ``logprobs [b, width]``; ``head`` scores any
        token ids at the same columns, with gradient, when ``needs_head``)."""

    def empty_microbatch(self) -> None:
        """Keep ranks in step on a micro-batch with no trajectory on this rank."""


def extra_term_weight(
    weighting: Literal["micro_batch", "pg_token_share"], pg_weight: torch.Tensor | float, accumulation: int
) -> torch.Tensor | float:
    """Factor an extra term (a per-micro-batch mean) is multiplied by before backward.

    ``pg_token_share``: the policy-gradient term's own factor ``pg_weight`` (the micro-batch's share of the
    global mini-batch's tokens × world size). ``micro_batch``: ``1 / accumulation``, the reference's loss
    aggregation (each of a rank's ``accumulation`` micro-batches counts equally; data parallelism then
    averages the ranks), so every micro-batch's token-mean weighs the same however many PG tokens it holds
    (docs/decisions.md A63).
    """
    if accumulation < 1:
        raise ValueError(f"accumulation={accumulation} must be >= 1")
    if weighting == "pg_token_share":
        return pg_weight
    if weighting == "micro_batch":
        return 1.0 / accumulation
    raise ValueError(f"weighting must be 'micro_batch' or 'pg_token_share', got {weighting!r}")


class _StageHooks(pl.Callback):
    """Calls the module's :meth:`PPOModule.after_batch` at the end of each training batch.

    A module's own ``on_train_batch_end`` runs after every callback, so after ``ModelCheckpoint`` has saved;
    Lightning orders checkpoint callbacks last, so this one runs before them and a step's validation (and
    its best-checkpoint state) is in that step's checkpoint (docs/decisions.md, "RL step data").
    """

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        pl_module.after_batch(batch_idx)


class PPOModule(HFCausalLMModule):
    """Base of the RL modules: stage lifecycle, log-probs under data parallelism, the PPO update.

    Subclasses set ``rollout_stage`` (a :class:`~mimesis_pl.stages.base.CollectStage`), add later stages to
    :meth:`stages` and :meth:`collect` when they have some, and implement :meth:`update`.
    """

    rollout_stage: CollectStage

    def __init__(self, *, policy: ModelSettings, ppo: PPOSettings, optim: OptimSettings) -> None:
        super().__init__(settings=policy, optim=optim, model_path_key="model.init_args.policy.model_path")
        self.automatic_optimization = False
        self.policy = policy
        self.ppo = ppo
        # Stages need it before configure_model; rollouts, the coach and the export all use this one.
        self.tokenizer = load_tokenizer(
            policy.model_path, policy.chat_template, trust_remote_code=policy.trust_remote_code
        )
        self.weights_version = 0
        self.skipped_steps = 0
        self.empty_steps = 0  # optimiser steps skipped for an all-zero gradient (ppo.skip_empty_steps)
        # "decoupled": the PG and extra terms weight each token by π_prox / π_behav (set by subclasses that
        # know rollout.max_staleness; PPOSettings.correction_for)
        self.behaviour_correction = ppo.correction_for(0)

    # -- the step ---------------------------------------------------------------------------------

    def stages(self) -> list[tuple[str, Stage]]:
        """The module's stages in the order they run, by name (the names key their checkpointed state)."""
        return [("rollout", self.rollout_stage)]

    def setup(self, stage: str) -> None:
        if stage == "fit":
            self.rollout_stage.setup(self)

    def collect(self, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        """Run the stages on ``batch``: the step's typed data for :meth:`update`."""
        return self.rollout_stage.collect(self, batch, batch_idx)

    def update(self, step: RLStep) -> None:
        """The policy update on one step's data, and its logging."""
        raise NotImplementedError

    def after_batch(self, batch_idx: int) -> None:
        """End-of-batch stage work (RL validation); runs before checkpoint callbacks save."""
        self.rollout_stage.after_batch(self, batch_idx)

    def configure_callbacks(self) -> list[pl.Callback]:
        return [_StageHooks()]

    def training_step(self, batch: Any, batch_idx: int) -> None:
        # Rollouts ran outside the precision plugin's autocast when they were a callback's; keep it so.
        with torch.autocast(device_type=self.device.type, enabled=False):
            step = self.collect(batch, batch_idx)
        self.update(step)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["rl_stages"] = {name: stage.state_dict() for name, stage in self.stages()}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        saved = checkpoint.get("rl_stages", {})
        for name, stage in self.stages():
            if name in saved:
                stage.load_state_dict(saved[name])

    def teardown(self, stage: str) -> None:
        for _, s in reversed(self.stages()):
            s.teardown()

    # -- log-probs -------------------------------------------------------------------------------

    def _logprobs(self, batch: PolicyBatch, rows: torch.Tensor, entropy: bool = False, head: bool = False):
        """``[b, w-1]`` log-probs of ids 1.. of ``rows`` on response positions (0 elsewhere), the entropy
        there when asked, the padded width ``w`` of these rows, and the forward's `HeadLogprobs` when asked."""
        ids = batch.input_ids[rows].to(self.device)
        attn = batch.attention_mask[rows].to(self.device)
        width = int(attn.sum(-1).max())
        ids, attn = ids[:, :width], attn[:, :width]
        targets = batch.response_mask[rows, 1:width].to(self.device)
        chunk = self.loss_chunk_size
        out = model_token_logprobs(
            self.model, ids, attn, chunk_size=chunk, target_mask=targets, return_entropy=entropy, return_head=head
        )
        return out.logprobs, out.entropy, width, out.head

    def _has_dropout(self) -> bool:
        """Train-mode forwards are stochastic with dropout: then old log-probs need their own eval pass."""
        from ..rl.teacher_forward import check_no_dropout

        try:
            check_no_dropout(self.model.config)
        except ValueError:
            return True
        return False

    @torch.no_grad()
    def _old_logprobs(self, policy_batch: PolicyBatch) -> torch.Tensor:
        batch, length = policy_batch.input_ids.shape
        out = torch.zeros(batch, length - 1, device=self.device)
        was_training = self.model.training
        self.model.eval()  # old log-probs must not see dropout noise
        n_forwards = 0
        for start in range(0, batch, self.ppo.micro_batch_size):
            rows = torch.arange(start, min(start + self.ppo.micro_batch_size, batch))
            logprobs, _, width, _ = self._logprobs(policy_batch, rows)
            out[rows, : width - 1] = logprobs.float()
            n_forwards += 1
        self._equalize_forwards(n_forwards)
        self.model.train(was_training)
        return out

    # -- data parallelism ----------------------------------------------------------------------------

    def _world_size(self) -> int:
        trainer = self._trainer
        return trainer.world_size if trainer is not None else 1

    def _all_reduce(self, values: torch.Tensor, op: str = "sum") -> torch.Tensor:
        if self._world_size() == 1:
            return values
        reduce_op = {"sum": torch.distributed.ReduceOp.SUM, "max": torch.distributed.ReduceOp.MAX}[op]
        torch.distributed.all_reduce(values, op=reduce_op)
        return values

    def _equalize_forwards(self, n_forwards: int) -> None:
        """Under data parallelism every rank must run as many forwards as the busiest one (FSDP
        gathers weights inside each forward): ranks with fewer run dummy forwards."""
        if self._world_size() == 1:
            return
        most = self._all_reduce(torch.tensor([n_forwards], device=self.device), op="max")
        with torch.no_grad():
            for _ in range(int(most.item()) - n_forwards):
                self._dummy_logprobs()

    def _dummy_logprobs(self) -> torch.Tensor:
        """Log-probs of a two-token row: a forward that keeps ranks in step and trains nothing."""
        ids = torch.tensor([[pad_id_of(self.tokenizer)] * 2], device=self.device)
        ones = torch.ones_like(ids)
        return model_token_logprobs(
            self.model, ids, ones, chunk_size=self.loss_chunk_size, target_mask=ones[:, 1:]
        ).logprobs

    def _empty_microbatch(self, extra: ExtraLoss | None) -> None:
        """A micro-batch with no trained trajectory on this rank while others have some: forward and
        backward a zero loss so that every rank joins the same gathers and gradient reductions."""
        if extra is not None:
            extra.empty_microbatch()
            return
        self.manual_backward(self._dummy_logprobs().sum() * 0.0)

    def _plan(self, n_slots: int, trained: list[int]) -> list[list[list[int]]]:
        share = per_rank_share(self.ppo.mini_batch_size, self._world_size(), "model.init_args.ppo.mini_batch_size")
        return plan_minibatches(
            n_slots,
            list(trained),
            share,
            self.ppo.micro_batch_size,
            epochs=self.ppo.epochs,
            seed=int(self.global_step),
            pad=self._world_size() > 1,
        )

    # -- the update --------------------------------------------------------------------------------

    def train_on(self, batch: PolicyBatch, *, extra: ExtraLoss | None = None) -> UpdateResult:
        """One RL step's PPO update on this rank's ``batch``; ``trained=False`` when no rank had anything to train.

        ``extra`` adds a term to every micro-batch's loss (CSD). The result's metrics are the update's own; the
        caller merges them with the step's rollout figures.
        """
        metrics: dict[str, float] = {}
        trained = list(batch.trained)
        plan = self._plan(batch.n_slots, trained)
        response = batch.response_mask[:, 1:].to(self.device).float()
        # Global sizes of each mini-batch (response tokens, trajectories) and the number trained
        # everywhere: the loss of a mini-batch is normalised over all ranks, as on one process.
        sizes = torch.zeros(len(plan) + 1, 2, device=self.device)
        for m, micro in enumerate(plan):
            rows = [r for mc in micro for r in mc]
            sizes[m, 0] = response[rows].sum() if rows else 0.0
            sizes[m, 1] = len(rows)
        sizes[-1, 1] = len(trained)
        sizes = self._all_reduce(sizes)
        if int(sizes[-1, 1]) == 0:
            return UpdateResult(trained=False, metrics={"train/skipped_empty_batch": 1.0})
        # On-policy (one epoch, one mini-batch): the old log-probs *are* the first forward's, detached,
        # so the separate no-grad pass is skipped.
        on_policy = self.ppo.epochs == 1 and len(plan) == 1 and not self._has_dropout()
        started = time.perf_counter()
        old = None
        if not on_policy:
            old = self._old_logprobs(batch) if trained else torch.zeros_like(response)
            if not trained:
                self._equalize_forwards(0)
        metrics["time/old_logprobs_s"] = time.perf_counter() - started
        advantages = batch.advantages[:, 1:].to(self.device) if trained else response
        inputs = LossInputs(batch=batch, response_mask=response, advantages=advantages, old_logprobs=old)
        started = time.perf_counter()
        update = self.update_policy(inputs, plan=plan, sizes=sizes, extra=extra)
        metrics.update(update.metrics)
        metrics["time/update_s"] = time.perf_counter() - started
        if trained:
            rollout_lp = batch.rollout_logprobs[:, 1:].to(self.device)
            used = update.old_logprobs
            mismatch = ((used - rollout_lp).abs() * response).sum().item() / max(1.0, response.sum().item())
            metrics["train/logprob_mismatch_abs"] = mismatch
        return UpdateResult(trained=True, metrics=metrics)

    def update_policy(
        self, inputs: LossInputs, *, plan: list[list[list[int]]], sizes: torch.Tensor, extra: ExtraLoss | None = None
    ) -> PolicyUpdate:
        """PPO passes over the mini-batches of ``plan``: the old log-probs used (``[B, T-1]``) and the metrics.

        ``inputs.old_logprobs=None`` means on-policy: each micro-batch's own log-probs, detached, are the old
        ones. ``sizes[m]`` holds mini-batch ``m``'s response tokens and trajectories summed over all ranks.
        """
        opt = self.optimizers()
        sched = self.lr_schedulers()
        world = self._world_size()
        ppo = self.ppo
        response, old = inputs.response_mask, inputs.old_logprobs
        metrics: dict[str, float] = dict(extra.metrics) if extra is not None else {}
        sums: dict[str, float] = {}
        n_updates = 0
        used = torch.zeros_like(response) if old is None else old
        for m, micro_batches in enumerate(plan):
            global_tokens, global_rows = sizes[m, 0].clamp(min=1), sizes[m, 1].clamp(min=1)
            opt.zero_grad(set_to_none=True)
            n_micro = len(micro_batches)
            for k, rows_list in enumerate(micro_batches):
                if not rows_list:
                    self._empty_microbatch(extra)
                    continue
                rows = torch.tensor(rows_list)
                want_entropy = ppo.log_entropy and n_updates == 0 and k == 0
                want_head = extra is not None and extra.needs_head
                logprobs, entropy, width, head = self._logprobs(inputs.batch, rows, want_entropy, want_head)
                w = width - 1
                mask = response[rows, :w]
                if old is None:
                    old_rows = logprobs.detach()
                    used[rows, :w] = old_rows
                else:
                    old_rows = old[rows, :w]
                # token-mean over the whole global mini-batch, not the mean of micro-batch means
                share = mask.sum() / global_tokens if ppo.loss_agg == "token-mean" else len(rows) / global_rows
                loss, mb_metrics = self._microbatch_loss(
                    inputs, rows, logprobs, old_rows, share=share, world=world, n_micro=n_micro, extra=extra, head=head
                )
                self.manual_backward(loss)
                for key, value in mb_metrics.items():
                    sums[key] = sums.get(key, 0.0) + float(value)
                sums["_count"] = sums.get("_count", 0.0) + 1
                if entropy is not None:
                    metrics["train/entropy"] = ((entropy * mask).sum() / mask.sum().clamp(min=1)).item()
            metrics["train/grad_norm"] = self._optimizer_step(opt, sched)
            n_updates += 1
        count = sums.pop("_count", 1.0)
        metrics.update({f"train/{k}": v / count for k, v in sums.items()})
        metrics["train/updates"] = float(n_updates)
        metrics["train/skipped_steps"] = float(self.skipped_steps)
        metrics["train/empty_steps"] = float(self.empty_steps)
        metrics["train/lr"] = opt.param_groups[0]["lr"]
        return PolicyUpdate(old_logprobs=used, metrics=metrics)

    def _microbatch_loss(
        self,
        inputs: LossInputs,
        rows: torch.Tensor,
        logprobs: torch.Tensor,
        old_rows: torch.Tensor,
        *,
        share: torch.Tensor | float,
        world: int,
        n_micro: int,
        extra: ExtraLoss | None,
        head: HeadLogprobs | None = None,
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """The micro-batch's loss to backward (its ``share`` of the global mini-batch, × ``world`` because data
        parallelism averages the ranks' gradients; plus the extra term, given the student forward's ``head``) and
        its metrics."""
        ppo, w = self.ppo, logprobs.shape[1]
        mask = inputs.response_mask[rows, :w]
        behaviour: dict[str, float] = {}
        if self.behaviour_correction == "decoupled":  # π_behav: the engine's log-probs of the sampled tokens
            behav = inputs.batch.rollout_logprobs[rows, 1 : w + 1].to(logprobs.device)
            cap, mode = ppo.behaviour_weight_cap, ppo.behaviour_weight_mode
            logprobs, behaviour = apply_behaviour_weights(logprobs, old_rows, behav, mask, cap=cap, mode=mode)
        loss, metrics = policy_loss(
            logprobs,
            old_rows,
            inputs.advantages[rows, :w],
            mask,
            clip_low=ppo.clip_low,
            clip_high=ppo.clip_high,
            dual_clip=ppo.dual_clip,
            agg=ppo.loss_agg,
        )
        metrics = {**metrics, **behaviour, "pg_loss": loss.detach()}
        loss = loss * share * world
        if extra is not None:
            extra_loss, extra_metrics = extra(rows, logprobs, w, inputs, head)
            loss = loss + extra_loss * extra_term_weight(extra.weighting, share * world, n_micro)
            metrics = {**metrics, **extra_metrics}
        return loss, metrics

    def _optimizer_step(self, opt: Any, sched: Any) -> float:
        """Clip the gradient and step (skipped and counted when its norm is not finite, or is 0 with
        ``ppo.skip_empty_steps``); the norm."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        norm = torch.nn.utils.clip_grad_norm_(params, self.ppo.grad_clip)
        norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
        if not math.isfinite(norm):
            self.skipped_steps += 1
            opt.zero_grad(set_to_none=True)
        elif norm == 0.0 and self.ppo.skip_empty_steps:  # no signal: Adam would still move on momentum (A98)
            self.empty_steps += 1
            opt.zero_grad(set_to_none=True)
            opt.step()  # every gradient is None: torch's optimisers leave those weights and moments alone
        else:
            opt.step()
            self.weights_version += 1
        sched.step()
        return norm


def check_behaviour_logprobs(trajectories: list[Trajectory], trained: list[int] | tuple[int, ...]) -> None:
    """The off-policy correction reads each trained token's rollout-time log-prob: refuse a trajectory without them
    (zeros would weight every token by exp(π_prox))."""
    missing = [trajectories[i].episode_id for i in trained if trajectories[i].rollout_logprobs is None]
    if missing:
        raise ValueError(
            f"model.init_args.ppo.behaviour_correction is decoupled but the engine returned no log-probs for "
            f"{len(missing)} trained episode(s) (e.g. {missing[0]}): use an engine that returns them or set it to none"
        )

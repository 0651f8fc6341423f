"""``AgentGRPO``: multi-turn GRPO on the experience the ``RolloutCallback`` produces (manual optimisation).

Per batch: old log-probs are recomputed under the current weights (the engine's log-probs are only
compared with them, as the train/inference mismatch); then ``ppo_epochs`` passes over mini-batches
of trajectories, each mini-batch one optimiser step of the clipped policy loss, accumulated over
micro-batches so that ``token-mean`` means the mean over every response token of the mini-batch.
A step whose gradient norm is not finite is skipped and counted.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from torchmetrics import MeanMetric

from ..chat import load_tokenizer, pad_id_of
from ..rl.losses import policy_loss
from ..scale import per_rank_share, plan_minibatches
from .base import HFCausalLMModule
from .settings import LoraSettings, OptimSettings
from .token_ops import model_token_logprobs

# The reference's actor optimiser: AdamW lr 1e-6, constant, weight decay 0.01 (torch's betas and eps).
REFERENCE_RL_OPTIM = OptimSettings(lr=1e-6, weight_decay=0.01, schedule="constant")


class AgentGRPO(HFCausalLMModule):
    """The agent policy trained with GRPO against simulated users.

    Args:
        model_path, lora, gradient_checkpointing, dtype, attn_implementation, loss_chunk_size:
            see :class:`~mimesis_pl.modules.CausalLMSFT`.
        optim: AdamW; the reference uses lr 1e-6 constant with weight decay 0.01.
        ppo_mini_batch_size: trajectories per optimiser step over all processes (reference: 8
            prompts × 8 = 64); each rank takes ``ppo_mini_batch_size / world_size`` of them.
        micro_batch_size: trajectories per forward/backward pass (per rank).
        ppo_epochs: passes over the batch.
        clip_low, clip_high, dual_clip: PPO clipping (dual-clip bounds negative-advantage ratios).
        loss_agg: ``token-mean``, ``seq-mean-token-sum`` or ``seq-mean-token-mean``.
        grad_clip: max gradient norm.
        log_entropy: compute the policy entropy on response tokens (from the same head projection as the log-probs).
        chat_template: the template rollouts render with and the export carries: a name shipped in
            ``mimesis_pl/chat/templates/`` or a ``.jinja`` path; ``None`` keeps the tokenizer's own.
    """

    def __init__(
        self,
        model_path: str,
        lora: LoraSettings | None = None,
        optim: OptimSettings = REFERENCE_RL_OPTIM,
        ppo_mini_batch_size: int = 64,
        micro_batch_size: int = 2,
        ppo_epochs: int = 1,
        clip_low: float = 0.2,
        clip_high: float = 0.2,
        dual_clip: float | None = 3.0,
        loss_agg: str = "token-mean",
        grad_clip: float = 1.0,
        gradient_checkpointing: bool = False,
        dtype: str | None = None,
        attn_implementation: str | None = "sdpa",
        trust_remote_code: bool = False,
        loss_chunk_size: int | None = None,
        log_entropy: bool = True,
        chat_template: str | None = None,
    ) -> None:
        super().__init__(
            model_path, lora, optim, gradient_checkpointing, dtype, attn_implementation, trust_remote_code, loss_chunk_size
        )
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.ppo_mini_batch_size = ppo_mini_batch_size
        self.micro_batch_size = micro_batch_size
        self.ppo_epochs = ppo_epochs
        self.clip = (clip_low, clip_high, dual_clip)
        self.loss_agg = loss_agg
        self.grad_clip = grad_clip
        self.log_entropy = log_entropy
        # Callbacks need it before configure_model; rollouts, the coach and the export all use this one.
        self.tokenizer = load_tokenizer(model_path, chat_template, trust_remote_code=trust_remote_code)
        self.experience = None
        self.weights_version = 0
        self.skipped_steps = 0
        self.reward_mean = MeanMetric()

    # -- log-probs -------------------------------------------------------------------------------

    def _logprobs(self, t: dict[str, torch.Tensor], rows: torch.Tensor, entropy: bool = False):
        """``[b, w-1]`` log-probs of ids 1.. of ``rows`` on response positions (0 elsewhere), the entropy
        there when asked, and the padded width ``w`` of these rows."""
        ids = t["input_ids"][rows].to(self.device)
        attn = t["attention_mask"][rows].to(self.device)
        width = int(attn.sum(-1).max())
        ids, attn = ids[:, :width], attn[:, :width]
        targets = t["response_mask"][rows, 1:width].to(self.device)
        out = model_token_logprobs(
            self.model, ids, attn, chunk_size=self.loss_chunk_size, target_mask=targets, return_entropy=entropy
        )
        return out.logprobs, out.entropy, width

    def _has_dropout(self) -> bool:
        """Train-mode forwards are stochastic with dropout: then old log-probs need their own eval pass."""
        from .teacher_forward import check_no_dropout

        try:
            check_no_dropout(self.model.config)
        except ValueError:
            return True
        return False

    @torch.no_grad()
    def _old_logprobs(self, t: dict[str, torch.Tensor]) -> torch.Tensor:
        batch, length = t["input_ids"].shape
        out = torch.zeros(batch, length - 1, device=self.device)
        was_training = self.model.training
        self.model.eval()  # old log-probs must not see dropout noise
        n_forwards = 0
        for start in range(0, batch, self.micro_batch_size):
            rows = torch.arange(start, min(start + self.micro_batch_size, batch))
            logprobs, _, width = self._logprobs(t, rows)
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
        ids = torch.tensor([[self._pad_id()] * 2], device=self.device)
        ones = torch.ones_like(ids)
        return model_token_logprobs(
            self.model, ids, ones, chunk_size=self.loss_chunk_size, target_mask=ones[:, 1:]
        ).logprobs

    def _empty_microbatch(self) -> None:
        """A micro-batch with no trained trajectory on this rank while others have some: forward and
        backward a zero loss so that every rank joins the same gathers and gradient reductions."""
        self.manual_backward(self._dummy_logprobs().sum() * 0.0)

    def _pad_id(self) -> int:
        return pad_id_of(self.tokenizer)

    def _plan(self, n_slots: int, trained: list[int]) -> list[list[list[int]]]:
        share = per_rank_share(self.ppo_mini_batch_size, self._world_size(), "model.init_args.ppo_mini_batch_size")
        return plan_minibatches(
            n_slots, list(trained), share, self.micro_batch_size, epochs=self.ppo_epochs,
            seed=int(self.global_step), pad=self._world_size() > 1,
        )

    # -- the update --------------------------------------------------------------------------------

    def training_step(self, batch: Any, batch_idx: int) -> None:
        exp = self.experience
        if exp is None:
            raise RuntimeError("AgentGRPO needs a RolloutCallback in trainer.callbacks (no experience for this batch)")
        self.experience = None
        metrics = dict(exp.metrics)
        if not self.train_on(exp.tensors, n_slots=len(exp.trajectories), trained=list(exp.trained), metrics=metrics):
            self._step_without_update(metrics)
            return
        self._log(metrics, exp)

    def train_on(self, t: dict[str, torch.Tensor], *, n_slots: int, trained: list[int], metrics: dict[str, float]) -> bool:
        """One RL step's PPO update on this rank's experience; ``False`` when no rank had anything to train.

        ``t`` holds the collated trained trajectories (row ``k`` is slot ``trained[k]`` of the ``n_slots``
        this rank rolled out) with their ``advantages``; ``metrics`` receives the update's figures.
        """
        plan = self._plan(n_slots, trained)
        response = t["response_mask"][:, 1:].to(self.device).float() if trained else torch.zeros(0, 1, device=self.device)
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
            metrics["train/skipped_empty_batch"] = 1.0
            return False
        # On-policy (one epoch, one mini-batch): the old log-probs *are* the first forward's, detached,
        # so the separate no-grad pass is skipped.
        on_policy = self.ppo_epochs == 1 and len(plan) == 1 and not self._has_dropout()
        started = time.perf_counter()
        old = None
        if not on_policy:
            old = self._old_logprobs(t) if trained else torch.zeros_like(response)
            if not trained:
                self._equalize_forwards(0)
        metrics["time/old_logprobs_s"] = time.perf_counter() - started
        advantages = t["advantages"][:, 1:].to(self.device) if trained else response
        started = time.perf_counter()
        self.update_policy(t, old, advantages, response, metrics, plan=plan, sizes=sizes)
        metrics["time/update_s"] = time.perf_counter() - started
        if trained:
            rollout_lp = t["rollout_logprobs"][:, 1:].to(self.device)
            used = self._old_used if old is None else old
            mismatch = ((used - rollout_lp).abs() * response).sum().item() / max(1.0, response.sum().item())
            metrics["train/logprob_mismatch_abs"] = mismatch
        return True

    def update_policy(self, t, old, advantages, response, metrics, extra_loss=None, plan=None, sizes=None) -> None:
        """PPO passes over the mini-batches of ``plan``; ``extra_loss(rows, logprobs, width) -> (loss, metrics)``
        adds a term (CSD).

        ``old=None`` means on-policy: each micro-batch's own log-probs, detached, are the old ones.
        ``sizes[m]`` holds mini-batch ``m``'s response tokens and trajectories summed over all ranks.
        """
        opt = self.optimizers()
        sched = self.lr_schedulers()
        world = self._world_size()
        sums: dict[str, float] = {}
        n_updates = 0
        if old is None:
            self._old_used = torch.zeros_like(response)
        for m, micro_batches in enumerate(plan):
            global_tokens, global_rows = sizes[m, 0].clamp(min=1), sizes[m, 1].clamp(min=1)
            opt.zero_grad(set_to_none=True)
            for k, rows_list in enumerate(micro_batches):
                if not rows_list:
                    self._empty_microbatch()
                    continue
                rows = torch.tensor(rows_list)
                want_entropy = self.log_entropy and n_updates == 0 and k == 0
                logprobs, entropy, width = self._logprobs(t, rows, entropy=want_entropy)
                w = width - 1
                mask = response[rows, :w]
                if old is None:
                    old_rows = logprobs.detach()
                    self._old_used[rows, :w] = old_rows
                else:
                    old_rows = old[rows, :w]
                loss, mb_metrics = policy_loss(
                    logprobs, old_rows, advantages[rows, :w], mask, clip_low=self.clip[0],
                    clip_high=self.clip[1], dual_clip=self.clip[2], agg=self.loss_agg,
                )
                mb_metrics = {**mb_metrics, "pg_loss": loss.detach()}
                if extra_loss is not None:
                    extra, extra_metrics = extra_loss(rows, logprobs, w)
                    loss = loss + extra
                    mb_metrics = {**mb_metrics, **extra_metrics}
                # token-mean over the whole global mini-batch, not the mean of micro-batch means; × world
                # because data parallelism averages the ranks' gradients
                share = mask.sum() / global_tokens if self.loss_agg == "token-mean" else len(rows) / global_rows
                self.manual_backward(loss * share * world)
                for key, value in mb_metrics.items():
                    sums[key] = sums.get(key, 0.0) + float(value)
                sums["_count"] = sums.get("_count", 0.0) + 1
                if entropy is not None:
                    metrics["train/entropy"] = ((entropy * mask).sum() / mask.sum().clamp(min=1)).item()
            params = [p for p in self.model.parameters() if p.requires_grad]
            norm = torch.nn.utils.clip_grad_norm_(params, self.grad_clip)
            norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
            if not math.isfinite(norm):
                self.skipped_steps += 1
                opt.zero_grad(set_to_none=True)
            else:
                opt.step()
                self.weights_version += 1
            sched.step()
            metrics["train/grad_norm"] = norm
            n_updates += 1
        count = sums.pop("_count", 1.0)
        metrics.update({f"train/{k}": v / count for k, v in sums.items()})
        metrics["train/updates"] = float(n_updates)
        metrics["train/skipped_steps"] = float(self.skipped_steps)
        metrics["train/lr"] = opt.param_groups[0]["lr"]

    def _step_without_update(self, metrics: dict[str, float]) -> None:
        # Every trajectory failed or had no turn: nothing to learn from; the counts are still logged.
        self.log_dict(metrics, on_step=True)

    def _log(self, metrics: dict[str, float], exp) -> None:
        rewards = torch.tensor([sum(t.turn_rewards) for t in exp.trajectories], dtype=torch.float32)
        self.reward_mean(rewards)  # forward, not update: Lightning logs a metric's step value from its forward
        self.log("rollout/reward", self.reward_mean, on_step=True, on_epoch=False, prog_bar=True, batch_size=len(rewards))
        self.log_dict(metrics, on_step=True, batch_size=len(rewards))

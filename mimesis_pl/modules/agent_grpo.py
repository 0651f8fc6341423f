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

from ..rl.losses import policy_loss
from .base import HFCausalLMModule
from .settings import LoraSettings, OptimSettings
from .token_ops import model_token_logprobs


class AgentGRPO(HFCausalLMModule):
    """The agent policy trained with GRPO against simulated users.

    Args:
        model_path, lora, gradient_checkpointing, dtype, attn_implementation, loss_chunk_size:
            see :class:`~mimesis_pl.modules.CausalLMSFT`.
        optim: AdamW; the reference uses lr 1e-6 constant with weight decay 0.01.
        ppo_mini_batch_size: trajectories per optimiser step (reference: 8 prompts × 8 = 64).
        micro_batch_size: trajectories per forward/backward pass.
        ppo_epochs: passes over the batch.
        clip_low, clip_high, dual_clip: PPO clipping (dual-clip bounds negative-advantage ratios).
        loss_agg: ``token-mean``, ``seq-mean-token-sum`` or ``seq-mean-token-mean``.
        grad_clip: max gradient norm.
        log_entropy: compute the policy entropy on response tokens (one extra pass over the head).
    """

    def __init__(
        self,
        model_path: str,
        lora: LoraSettings | None = None,
        optim: OptimSettings = OptimSettings(lr=1e-6, weight_decay=0.01, schedule="constant"),
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
        loss_chunk_size: int = 4096,
        log_entropy: bool = True,
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
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)  # callbacks need it before configure_model
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
        logprobs, ent = model_token_logprobs(
            self.model, ids, attn, chunk_size=self.loss_chunk_size, target_mask=targets, return_entropy=True
        ) if entropy else (
            model_token_logprobs(self.model, ids, attn, chunk_size=self.loss_chunk_size, target_mask=targets),
            None,
        )
        return logprobs, ent, width

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
        for start in range(0, batch, self.micro_batch_size):
            rows = torch.arange(start, min(start + self.micro_batch_size, batch))
            logprobs, _, width = self._logprobs(t, rows)
            out[rows, : width - 1] = logprobs.float()
        self.model.train(was_training)
        return out

    # -- the update --------------------------------------------------------------------------------

    def training_step(self, batch: Any, batch_idx: int) -> None:
        exp = self.experience
        if exp is None:
            raise RuntimeError("AgentGRPO needs a RolloutCallback in trainer.callbacks (no experience for this batch)")
        self.experience = None
        metrics = dict(exp.metrics)
        if not exp.trained:
            metrics["train/skipped_empty_batch"] = 1.0
            self._step_without_update(metrics)
            return
        t = exp.tensors
        response = t["response_mask"][:, 1:].to(self.device).float()
        # On-policy (one epoch, one mini-batch): the old log-probs *are* the first forward's, detached,
        # so the separate no-grad pass is skipped.
        on_policy = self.ppo_epochs == 1 and self.ppo_mini_batch_size >= response.shape[0] and not self._has_dropout()
        started = time.perf_counter()
        old = None if on_policy else self._old_logprobs(t)
        metrics["time/old_logprobs_s"] = time.perf_counter() - started
        advantages = t["advantages"][:, 1:].to(self.device)
        started = time.perf_counter()
        self.update_policy(t, old, advantages, response, metrics)
        metrics["time/update_s"] = time.perf_counter() - started
        rollout_lp = t["rollout_logprobs"][:, 1:].to(self.device)
        used = self._old_used if old is None else old
        metrics["train/logprob_mismatch_abs"] = ((used - rollout_lp).abs() * response).sum().item() / max(1.0, response.sum().item())
        self._log(metrics, exp)

    def update_policy(self, t, old, advantages, response, metrics, extra_loss=None) -> None:
        """PPO passes over mini-batches; ``extra_loss(rows, logprobs, width) -> (loss, metrics)`` adds a term (CSD).

        ``old=None`` means on-policy: each micro-batch's own log-probs, detached, are the old ones.
        """
        opt = self.optimizers()
        sched = self.lr_schedulers()
        batch = t["input_ids"].shape[0]
        generator = torch.Generator().manual_seed(int(self.global_step))
        sums: dict[str, float] = {}
        n_updates = 0
        if old is None:
            self._old_used = torch.zeros_like(response)
        for _ in range(self.ppo_epochs):
            order = torch.randperm(batch, generator=generator)
            for mb_start in range(0, batch, self.ppo_mini_batch_size):
                mini = order[mb_start : mb_start + self.ppo_mini_batch_size]
                mini_tokens = response[mini].sum().clamp(min=1)
                opt.zero_grad(set_to_none=True)
                for mc_start in range(0, len(mini), self.micro_batch_size):
                    rows = mini[mc_start : mc_start + self.micro_batch_size]
                    want_entropy = self.log_entropy and n_updates == 0 and mc_start == 0
                    logprobs, entropy, width = self._logprobs(t, rows, entropy=want_entropy)
                    w = width - 1
                    mask = response[rows, :w]
                    if old is None:
                        old_rows = logprobs.detach()
                        self._old_used[rows, :w] = old_rows
                    else:
                        old_rows = old[rows, :w]
                    loss, m = policy_loss(
                        logprobs, old_rows, advantages[rows, :w], mask, clip_low=self.clip[0],
                        clip_high=self.clip[1], dual_clip=self.clip[2], agg=self.loss_agg,
                    )
                    m = {**m, "pg_loss": loss.detach()}
                    if extra_loss is not None:
                        extra, extra_metrics = extra_loss(rows, logprobs, w)
                        loss = loss + extra
                        m = {**m, **extra_metrics}
                    # token-mean over the whole mini-batch, not the mean of micro-batch means
                    scale = mask.sum() / mini_tokens if self.loss_agg == "token-mean" else len(rows) / len(mini)
                    self.manual_backward(loss * scale)
                    for key, value in m.items():
                        sums[key] = sums.get(key, 0.0) + float(value)
                    sums["_count"] = sums.get("_count", 0.0) + 1
                    if entropy is not None:
                        metrics["train/entropy"] = ((entropy * mask).sum() / mask.sum().clamp(min=1)).item()
                params = [p for p in self.model.parameters() if p.requires_grad]
                norm = torch.nn.utils.clip_grad_norm_(params, self.grad_clip)
                if not math.isfinite(float(norm)):
                    self.skipped_steps += 1
                    opt.zero_grad(set_to_none=True)
                else:
                    opt.step()
                    self.weights_version += 1
                sched.step()
                metrics["train/grad_norm"] = float(norm)
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

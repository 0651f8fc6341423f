"""``AgentCSD``: GRPO plus coached on-policy self-distillation (CSD).

For coached turns the same policy re-scores its own sampled tokens with a coaching note spliced into
its exact token prefix (the teacher row); a gated token-level loss pulls the student towards tokens
the coached teacher prefers. Total loss per micro-batch: ``L_pg + csd_coef · L_csd``. The teacher
forward uses the current weights, under ``no_grad``, in the same mode as the student, inside the
micro-batch loop (so it moves with the student across mini-batches).
"""

from __future__ import annotations

import torch

from ..rl.losses import csd_loss
from ..rl.teacher import pack_teacher_rows
from .agent_grpo import REFERENCE_RL_OPTIM, AgentGRPO
from .settings import LoraSettings, OptimSettings
from .teacher_forward import (
    check_no_dropout,
    teacher_logprobs,
    teacher_logprobs_prefix_cached,
)

ESTIMATORS = ("sdar", "ref", "k3")


class AgentCSD(AgentGRPO):
    """The agent trained with GRPO + CSD; needs a ``CoachCallback`` after the ``RolloutCallback``.

    Args (beyond :class:`AgentGRPO`):
        csd_coef: α, the weight of the CSD loss (reference 0.01).
        estimator: ``sdar`` (σ(β·Δ)-gated imitation, default), ``ref`` or ``k3``.
        beta: gate sharpness of ``sdar`` (reference 5.0).
        csd_warmup_steps: optimiser steps with the CSD term off.
        adv_gate: keep only coached tokens with ``|advantage| <= adv_gate`` (``None``: off).
        teacher_chunk_rows: teacher rows per forward (``packed`` mode).
        teacher_mode: ``prefix_cache`` (default) forwards each coached trajectory's prefix once and
            reuses its KV cache for every teacher row (real and placebo), so a row costs only its note
            and turn; ``packed`` forwards whole left-padded rows in chunks.
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
        csd_coef: float = 0.01,
        estimator: str = "sdar",
        beta: float = 5.0,
        csd_warmup_steps: int = 0,
        adv_gate: float | None = None,
        teacher_chunk_rows: int = 4,
        teacher_mode: str = "prefix_cache",
        chat_template: str | None = None,
    ) -> None:
        if teacher_mode not in ("prefix_cache", "packed"):
            raise ValueError(f"teacher_mode must be 'prefix_cache' or 'packed', got {teacher_mode!r}")
        if estimator not in ESTIMATORS:
            raise ValueError(
                f"estimator {estimator!r} is not supported by AgentCSD; choose one of {ESTIMATORS} "
                "(the top-k 'distill' estimator exists in mimesis_pl.rl.losses but needs student top-k log-probs)"
            )
        super().__init__(
            model_path=model_path, lora=lora, optim=optim, ppo_mini_batch_size=ppo_mini_batch_size,
            micro_batch_size=micro_batch_size, ppo_epochs=ppo_epochs, clip_low=clip_low, clip_high=clip_high,
            dual_clip=dual_clip, loss_agg=loss_agg, grad_clip=grad_clip, gradient_checkpointing=gradient_checkpointing,
            dtype=dtype, attn_implementation=attn_implementation, trust_remote_code=trust_remote_code,
            loss_chunk_size=loss_chunk_size, log_entropy=log_entropy, chat_template=chat_template,
        )
        self.save_hyperparameters()
        self.csd_coef = csd_coef
        self.estimator = estimator
        self.beta = beta
        self.csd_warmup_steps = csd_warmup_steps
        self.adv_gate = adv_gate
        self.teacher_chunk_rows = teacher_chunk_rows
        self.teacher_mode = teacher_mode

    def configure_model(self) -> None:
        super().configure_model()
        check_no_dropout(self.model.config, where=f"{self.model_path}/config.json")

    def training_step(self, batch, batch_idx: int) -> None:
        exp = self.experience
        teacher = getattr(exp, "teacher", None) if exp is not None else None
        if exp is not None and exp.trained and teacher is None:
            raise RuntimeError("AgentCSD needs a CoachCallback after the RolloutCallback in trainer.callbacks")
        self._csd_teacher = teacher
        super().training_step(batch, batch_idx)

    def update_policy(self, t, old, advantages, response, metrics, extra_loss=None, plan=None, sizes=None) -> None:
        teacher = self._csd_teacher
        if teacher is not None:
            metrics.update(teacher.metrics)

            def csd_term(rows: torch.Tensor, logprobs: torch.Tensor, width: int):
                return self._csd_term(teacher, t, rows, logprobs, width, advantages, response)

            extra_loss = csd_term
        super().update_policy(t, old, advantages, response, metrics, extra_loss, plan=plan, sizes=sizes)

    def _empty_microbatch(self) -> None:
        # as a real micro-batch: student forward, the teacher forwards of the busiest rank, backward
        if self._csd_teacher is None:
            return super()._empty_microbatch()
        student = self._dummy_logprobs()
        self._equalize_forwards(0)
        self.manual_backward(student.sum() * 0.0)

    def _csd_term(self, teacher, t, rows, logprobs, width, advantages, response):
        """``(α · L_csd, metrics)`` for the trajectories ``rows`` of the batch (student ``logprobs [b, width]``)."""
        length = t["input_ids"].shape[1]
        real = [teacher.real[int(i)] for i in rows]
        placebo = [teacher.placebo[int(i)] for i in rows] if teacher.placebo is not None else None
        n_forwards = self._teacher_forwards(real, placebo)
        self._equalize_forwards(n_forwards)
        if n_forwards == 0:
            zero = logprobs.sum() * 0.0  # keep the graph identical across micro-batches
            return zero, {"csd/tokens": 0.0}
        if self.teacher_mode == "prefix_cache":
            teacher_full, placebo_full, mask_full = self._teacher_prefix_cached(t, rows, real, placebo, length, teacher)
        else:
            teacher_full, placebo_full, mask_full = self._teacher_packed(real, placebo, length)
        teacher_lp = teacher_full[:, 1 : width + 1]  # maps are absolute; student column j scores token j + 1
        mask = mask_full[:, 1 : width + 1].to(logprobs.device) & response[rows, :width].bool()
        placebo_lp = placebo_full[:, 1 : width + 1] if placebo_full is not None else None
        if self.global_step < self.csd_warmup_steps:
            mask = torch.zeros_like(mask)
        if self.adv_gate is not None:
            mask = mask & (advantages[rows, :width].abs() <= self.adv_gate)
        loss, m = csd_loss(
            logprobs, teacher_lp.to(logprobs.dtype), mask.to(logprobs.dtype), estimator=self.estimator, beta=self.beta,
            placebo_logprobs=None if placebo_lp is None else placebo_lp.to(logprobs.dtype),
        )
        metrics = {f"csd/{k}": float(v) for k, v in m.items()}
        metrics["csd/tokens"] = float(mask.sum())
        metrics["csd/loss"] = float(loss.detach())
        return self.csd_coef * torch.nan_to_num(loss), metrics

    def _teacher_forwards(self, real, placebo) -> int:
        n_rows = sum(len(r.rows) for r in real) + (sum(len(p.rows) for p in placebo) if placebo else 0)
        if self.teacher_mode == "packed":
            return -(-sum(len(r.rows) for r in real) // self.teacher_chunk_rows) + (
                -(-sum(len(p.rows) for p in placebo) // self.teacher_chunk_rows) if placebo else 0
            )
        prefixes = sum(1 for k, r in enumerate(real) if r.rows or (placebo and placebo[k].rows))
        return n_rows + prefixes if n_rows else 0

    def _teacher_packed(self, real, placebo, length):
        packed = pack_teacher_rows(real, response_length=length, pad_id=self._pad_id())
        teacher_full = teacher_logprobs(self.model, packed, self.teacher_chunk_rows)
        placebo_full = None
        if placebo is not None and any(p.rows for p in placebo):
            packed_p = pack_teacher_rows(placebo, response_length=length, pad_id=self._pad_id())
            placebo_full = teacher_logprobs(self.model, packed_p, self.teacher_chunk_rows, fill=float("nan"))
        return teacher_full, placebo_full, packed.teacher_mask

    def _teacher_prefix_cached(self, t, rows, real, placebo, length, teacher):
        b = len(rows)
        teacher_full = torch.zeros(b, length, device=self.device)
        placebo_full = torch.full((b, length), float("nan"), device=self.device) if placebo is not None else None
        mask_full = torch.zeros(b, length, dtype=torch.bool)
        for k, i in enumerate(rows.tolist()):
            sets = [real[k]] + ([placebo[k]] if placebo is not None else [])
            if not any(s.rows for s in sets):
                continue
            n = int(t["attention_mask"][i].sum())
            fills = (0.0, float("nan"))[: len(sets)]
            outs = teacher_logprobs_prefix_cached(self.model, t["input_ids"][i, :n], teacher.spans[i], sets, fill=fills)
            teacher_full[k, :n] = outs[0]
            if placebo_full is not None:
                placebo_full[k, :n] = outs[1]
            mask_full[k, : real[k].teacher_mask.numel()] = real[k].teacher_mask
        return teacher_full, placebo_full, mask_full

"""Typed settings shared by the LightningModules (each field is a YAML key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class LoraSettings:
    """LoRA through peft. ``target_modules="all-linear"`` adapts every linear layer but the head."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str | list[str] = "all-linear"


@dataclass
class OptimSettings:
    """AdamW with linear warm-up then ``schedule`` decay to ``min_lr_ratio × lr``.

    ``warmup_steps`` wins over ``warmup_ratio`` when both are set; ratios are of the total
    optimiser steps Lightning estimates for the run. Defaults are the references' where they agree:
    both the SFT reference (HF Trainer via LLaMA-Factory) and the RL reference (verl's actor) use
    torch's AdamW betas (0.9, 0.999) and eps 1e-8. Per stage:

    - SFT reference: lr 1e-5, cosine, warm-up ratio 0.1, no weight decay — the defaults here but
      the warm-up, which ``configs/agent_sft.yaml`` sets (RL has none, and the default must not add one);
    - RL reference: lr 1e-6, constant, no warm-up, weight decay 0.01 — ``AgentGRPO``'s default
      (``REFERENCE_RL_OPTIM``).

    One deliberate difference: weight decay skips 1-D parameters (norm gains, biases), as HF Trainer
    does and verl does not; decaying norm gains towards 0 is never wanted.
    """

    lr: float = 1e-5
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    warmup_steps: int | None = None
    warmup_ratio: float = 0.0
    schedule: Literal["cosine", "linear", "constant"] = "cosine"
    min_lr_ratio: float = 0.0

    def __post_init__(self) -> None:
        where = "model.init_args.optim"
        checks = {
            "lr": self.lr > 0,
            "weight_decay": self.weight_decay >= 0,
            "betas": len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas),
            "eps": self.eps > 0,
            "warmup_steps": self.warmup_steps is None or self.warmup_steps >= 0,
            "warmup_ratio": 0 <= self.warmup_ratio < 1,
            "min_lr_ratio": 0 <= self.min_lr_ratio <= 1,
        }
        wanted = {
            "lr": "> 0",
            "weight_decay": ">= 0",
            "betas": "two values in [0, 1)",
            "eps": "> 0",
            "warmup_steps": ">= 0 or null",
            "warmup_ratio": "in [0, 1)",
            "min_lr_ratio": "in [0, 1]",
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"{where}.{name} must be {wanted[name]}, got {getattr(self, name)!r}")


@dataclass
class ModelSettings:
    """The policy's weights and how they are loaded (``model.init_args.policy``).

    Args:
        model_path: HF model folder (or hub id where downloads are allowed); rollout engines that load
            their own copy (vLLM, SGLang) start from it unless they name another.
        lora: LoRA settings; ``None`` trains every weight.
        dtype: storage dtype of the weights (``None`` = float32 master weights; use the Trainer's
            ``precision: bf16-mixed`` for bf16 compute).
        attn_implementation: passed to ``from_pretrained`` (``sdpa``, ``flash_attention_2``, ``eager``).
        trust_remote_code: allow the checkpoint's own modelling code.
        gradient_checkpointing: recompute decoder activations in the backward pass.
        chat_template: the template rollouts render with and the export carries: a name shipped in
            ``mimesis_pl/chat/templates/`` or a ``.jinja`` path; ``None`` keeps the tokenizer's own.
        loss_chunk_size: positions projected to the vocabulary at once (bounds logits memory); ``None``
            sizes it from the vocabulary (see :mod:`~mimesis_pl.modules.fused_head`).
    """

    model_path: str
    lora: LoraSettings | None = None
    dtype: str | None = None
    attn_implementation: str | None = "sdpa"
    trust_remote_code: bool = False
    gradient_checkpointing: bool = False
    chat_template: str | None = None
    loss_chunk_size: int | None = None


@dataclass
class PPOSettings:
    """The clipped policy update of every RL step (reference: verl's actor, dual-clip PPO).

    Args:
        mini_batch_size: trajectories per optimiser step over all processes (reference: 8 prompts × 8 = 64);
            each rank takes ``mini_batch_size / world_size`` of them.
        micro_batch_size: trajectories per forward/backward pass (per rank).
        epochs: passes over the step's trajectories.
        clip_low: lower clip of the ratio (1 - clip_low).
        clip_high: upper clip of the ratio (1 + clip_high).
        dual_clip: bound on negative-advantage ratios (``None``: off).
        loss_agg: ``token-mean`` (over every response token of the mini-batch), ``seq-mean-token-sum`` or
            ``seq-mean-token-mean``.
        grad_clip: max gradient norm.
        log_entropy: log the policy entropy on response tokens (from the same head projection as the log-probs).
    """

    mini_batch_size: int = 64
    micro_batch_size: int = 2
    epochs: int = 1
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = 3.0
    loss_agg: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"] = "token-mean"
    grad_clip: float = 1.0
    log_entropy: bool = True

    def __post_init__(self) -> None:
        where = "model.init_args.ppo"
        for name in ("mini_batch_size", "micro_batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{where}.{name} must be >= 1, got {getattr(self, name)!r}")


@dataclass
class CSDSettings:
    """Coached self-distillation: the weight and shape of the CSD term and how the teacher forward runs.

    Args:
        coef: α, the weight of the CSD loss (reference 0.01).
        estimator: ``sdar`` (σ(β·Δ)-gated imitation), ``ref`` or ``k3``. The top-k ``distill`` estimator of
            :mod:`mimesis_pl.rl.losses` is not selectable: the update does not compute the student's top-k
            log-probs it needs (docs/decisions.md A7).
        beta: gate sharpness of ``sdar`` (reference 5.0).
        warmup_steps: optimiser steps with the CSD term off.
        adv_gate: keep only coached tokens with ``|advantage| <= adv_gate`` (``None``: off).
        teacher_chunk_rows: teacher rows per forward (``packed`` mode).
        teacher_mode: ``prefix_cache`` forwards each coached trajectory's prefix once and reuses its KV cache
            for every teacher row (real and placebo); ``packed`` forwards whole left-padded rows in chunks.
        placebo_missing: a coached token without a placebo inside a trajectory that has placebos is
            ``drop``-ped (the reference's AND mask) or scored on the ``raw`` gap (docs/decisions.md A62).
        weighting: how each micro-batch's CSD token-mean enters the gradient: ``micro_batch`` (the
            reference's loss aggregation: 1 / the number of micro-batches of the mini-batch) or
            ``pg_token_share`` (the micro-batch's share of the mini-batch's policy-gradient tokens, as the
            PG term; docs/decisions.md A63).
    """

    coef: float = 0.01
    estimator: Literal["sdar", "ref", "k3"] = "sdar"
    beta: float = 5.0
    warmup_steps: int = 0
    adv_gate: float | None = None
    teacher_chunk_rows: int = 4
    teacher_mode: Literal["prefix_cache", "packed"] = "prefix_cache"
    placebo_missing: Literal["drop", "raw"] = "drop"
    weighting: Literal["micro_batch", "pg_token_share"] = "micro_batch"

    def __post_init__(self) -> None:
        where = "model.init_args.csd"
        choices = {
            "teacher_mode": ("prefix_cache", "packed"),
            "placebo_missing": ("drop", "raw"),
            "weighting": ("micro_batch", "pg_token_share"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{where}.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.estimator not in ("sdar", "ref", "k3"):
            raise ValueError(
                f"{where}.estimator {self.estimator!r} is not supported by AgentCSD; "
                "choose sdar, ref or k3 "
                "(the top-k 'distill' estimator exists in mimesis_pl.rl.losses but needs student top-k log-probs)"
            )

"""Typed settings shared by the LightningModules (each field is a YAML key).

:class:`LoraSettings` and :class:`OptimSettings` live beside the loading code that reads them
(:mod:`mimesis_pl.causal_lm`, below every module) and are re-exported here, their name in configs and tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mimesis_pl.causal_lm import LoraSettings, OptimSettings
from mimesis_pl.rl.csd_term import CSDSettings

__all__ = ["CSDSettings", "LoraSettings", "ModelSettings", "OptimSettings", "PPOSettings"]


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
            sizes it from the vocabulary (see :mod:`~mimesis_pl.rl.fused_head`).
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
        behaviour_correction: ``decoupled`` weights each trained token's PG and CSD terms by π_prox / π_behav from
            the engine's rollout-time log-probs (off-policy correction of stale rollouts, or of an inference
            engine's numerics); ``none``: today's update; ``null``: ``none`` at ``rollout.max_staleness: 0``,
            ``decoupled`` above (where ``none`` is refused). docs/decisions.md A90.
        behaviour_weight_cap: the weights' cap (>= 1).
        behaviour_weight_mode: ``truncate`` (w = min(w, cap)) or ``mask`` (w = 0 past the cap).
        skip_empty_steps: skip (and count, ``train/empty_steps``) an optimiser step whose gradient is exactly zero —
            a mini-batch where every advantage is 0 and no extra term applies. The reference (verl) steps anyway,
            and Adam then keeps moving every weight on its momentum and decays it; with a sparse reward most
            mini-batches carry no signal and a small policy drifts off its format (docs/decisions.md A98).
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
    behaviour_correction: Literal["none", "decoupled"] | None = None
    behaviour_weight_cap: float = 5.0
    behaviour_weight_mode: Literal["truncate", "mask"] = "truncate"
    skip_empty_steps: bool = False

    def __post_init__(self) -> None:
        where = "model.init_args.ppo"
        for name in ("mini_batch_size", "micro_batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{where}.{name} must be >= 1, got {getattr(self, name)!r}")
        if not self.behaviour_weight_cap >= 1.0:
            raise ValueError(f"{where}.behaviour_weight_cap must be >= 1, got {self.behaviour_weight_cap!r}")

    def correction_for(self, max_staleness: int) -> Literal["none", "decoupled"]:
        """The behaviour correction the update applies with ``rollout.max_staleness = max_staleness``."""
        if self.behaviour_correction is None:
            return "decoupled" if max_staleness >= 1 else "none"
        if self.behaviour_correction == "none" and max_staleness >= 1:
            raise ValueError(
                f"model.init_args.ppo.behaviour_correction: none with model.init_args.rollout.max_staleness="
                f"{max_staleness}: stale rollouts need the off-policy correction (set it to decoupled or null)"
            )
        return self.behaviour_correction

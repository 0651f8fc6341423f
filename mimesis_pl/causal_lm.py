"""Loading HF causal LMs (optionally with LoRA), building AdamW + schedule, and sharding with FSDP2, with the
settings they read (:class:`LoraSettings`, :class:`OptimSettings`; YAML keys of the modules' ``lora`` / ``optim``).

No Lightning here: the LightningModules (:mod:`mimesis_pl.modules`), the rollout callbacks and the
agent eval backend all load models through these helpers.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch

from mimesis_pl.checks import check_choice

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


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


def load_causal_lm(
    model_path: str,
    dtype: str | None = None,
    attn_implementation: str | None = "sdpa",
    trust_remote_code: bool = False,
    gradient_checkpointing: bool = False,
    lora: LoraSettings | None = None,
):
    """``AutoModelForCausalLM.from_pretrained(model_path)`` in train mode, plus LoRA if asked.

    ``dtype`` is the *storage* dtype of the weights (``None`` keeps float32 master weights, which is
    what mixed precision wants); autocast comes from the Trainer's ``precision``.
    """
    from transformers import AutoModelForCausalLM

    if dtype is not None and dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)} or null, got {dtype!r}")
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code, "dtype": _DTYPES.get(dtype, torch.float32)}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    model = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=lora.target_modules,
            task_type="CAUSAL_LM",
        )
        if gradient_checkpointing:
            model.enable_input_require_grads()
        model = get_peft_model(model, config)
    model.train()  # from_pretrained returns eval mode
    return model


def lr_multiplier(step: int, total_steps: int, warmup_steps: int, schedule: str, min_lr_ratio: float) -> float:
    """Learning-rate factor at optimiser ``step`` (0-based): linear warm-up, then the decay."""
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    check_choice("schedule", schedule, ("cosine", "linear", "constant"))
    if schedule == "constant":
        return 1.0
    decay_steps = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / decay_steps)
    shape = 0.5 * (1.0 + math.cos(math.pi * progress)) if schedule == "cosine" else 1.0 - progress
    return min_lr_ratio + (1.0 - min_lr_ratio) * shape


def build_optimizer(module: torch.nn.Module, settings: OptimSettings, total_steps: int):
    """AdamW (no weight decay on 1-D parameters: norms and biases) and a per-step LambdaLR."""
    decay, no_decay = [], []
    for p in module.parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=settings.lr, betas=tuple(settings.betas), eps=settings.eps)
    warmup = settings.warmup_steps if settings.warmup_steps is not None else int(settings.warmup_ratio * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_multiplier(step, total_steps, warmup, settings.schedule, settings.min_lr_ratio)
    )
    return optimizer, scheduler


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks of a HF causal LM (through a peft wrapper too)."""
    decoder = model.get_decoder()
    layers = getattr(decoder, "layers", None)
    if layers is None:
        raise ValueError(f"cannot find decoder layers on {type(decoder).__name__} to shard")
    return list(layers)


def shard_fsdp2(model: torch.nn.Module, mesh) -> None:
    """FSDP2: shard each decoder layer, then the root (embeddings, norm, head)."""
    from torch.distributed.fsdp import fully_shard

    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """``model`` in eval mode; each submodule's own flag restored afterwards (a part kept in eval stays in eval)."""
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, training in modes:
            module.training = training

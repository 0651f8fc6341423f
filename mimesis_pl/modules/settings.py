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
        wanted = {"lr": "> 0", "weight_decay": ">= 0", "betas": "two values in [0, 1)", "eps": "> 0",
                  "warmup_steps": ">= 0 or null", "warmup_ratio": "in [0, 1)", "min_lr_ratio": "in [0, 1]"}
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"{where}.{name} must be {wanted[name]}, got {getattr(self, name)!r}")

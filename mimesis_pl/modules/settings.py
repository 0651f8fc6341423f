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
    optimiser steps Lightning estimates for the run.
    """

    lr: float = 1e-5
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.95)
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

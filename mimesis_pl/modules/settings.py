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

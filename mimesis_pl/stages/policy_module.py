"""The declared interface between a training module and its stages: what a stage may read from the module.

A stage is handed the module at each call (``setup``, ``collect``, ``after_batch`` …) and reads only what
:class:`PolicyModule` declares; ``tests/stages/test_policy_module.py`` holds every stage to it, so a reader can see in
one place what an RL step's stages depend on, and a module of your own knows what to provide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import lightning.pytorch as pl
    import torch


class PolicyModule(Protocol):
    """What the stages read from the training module: the whole interface between a module and its stages (a test
    holds that no stage reads anything else). ``AgentGRPO``, ``AgentCSD`` and ``SimulatorRL`` provide it."""

    trainer: pl.Trainer  # world size and rank, the data module (look-ahead), the fit loop's position, the log dir
    tokenizer: Any
    model: torch.nn.Module
    model_path: str
    lora: Any  # the LoRA settings (None: full weights): an engine that syncs only the adapter sizes its slots
    dtype_name: str
    weights_version: int  # optimiser steps since the engine's weights were synced
    loggers: list[Any]
    logger: Any

    @property
    def device(self) -> torch.device: ...

    @property
    def global_step(self) -> int: ...

    def log_dict(self, metrics: dict[str, float], **kwargs: Any) -> None: ...

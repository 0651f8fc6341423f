"""LightningModules (thin glue over ``rl/`` and ``chat/``) and their shared helpers."""

from .causal_lm_sft import CausalLMSFT
from .export import HFExportCallback, export_hf
from .settings import LoraSettings, OptimSettings

__all__ = ["CausalLMSFT", "HFExportCallback", "LoraSettings", "OptimSettings", "export_hf"]

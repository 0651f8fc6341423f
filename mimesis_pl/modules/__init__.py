"""LightningModules (thin glue over ``rl/`` and ``chat/``) and their shared helpers."""

from .agent_csd import AgentCSD
from .agent_grpo import AgentGRPO
from .causal_lm_sft import CausalLMSFT
from .export import HFExportCallback, export_hf
from .settings import CSDSettings, LoraSettings, ModelSettings, OptimSettings, PPOSettings
from .simulator_rl import SimulatorRL

__all__ = [
    "AgentCSD",
    "AgentGRPO",
    "CSDSettings",
    "CausalLMSFT",
    "HFExportCallback",
    "LoraSettings",
    "ModelSettings",
    "OptimSettings",
    "PPOSettings",
    "SimulatorRL",
    "export_hf",
]


def __getattr__(name: str):
    from mimesis_pl.moved import moved_attribute

    return moved_attribute(__name__, name)

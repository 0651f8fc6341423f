"""LightningModules (thin glue over ``rl/`` and ``chat/``) and their shared helpers."""

from .agent_csd import AgentCSD
from .agent_grpo import AgentGRPO
from .simulator_rl import SimulatorRL
from .causal_lm_sft import CausalLMSFT
from .export import HFExportCallback, export_hf
from .settings import LoraSettings, OptimSettings

__all__ = ["AgentCSD", "AgentGRPO", "CausalLMSFT", "HFExportCallback", "LoraSettings", "OptimSettings", "SimulatorRL", "export_hf"]

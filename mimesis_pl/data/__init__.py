"""DataModules: SFT over conversations (generic JSONL, role-swap parquet mixtures, ThoughtTrace)."""

from .chat_sft import BadSample, ChatSFTDataModule, Conversation, JsonlChatSFTDataModule
from .roleswap import RoleSwapSFTDataModule
from .thoughttrace import ThoughtTraceDataModule
from .truncation import LengthLimits

__all__ = [
    "BadSample",
    "ChatSFTDataModule",
    "Conversation",
    "JsonlChatSFTDataModule",
    "LengthLimits",
    "RoleSwapSFTDataModule",
    "ThoughtTraceDataModule",
]

"""Pick an engine class by name, so a YAML value (``engine: hf|vllm|sglang|openai``) selects it.

The vLLM and SGLang classes import their backend in the constructor, so naming ``hf`` never
imports them and an uninstalled backend fails only when it is built, with its install hint.
"""

from __future__ import annotations

from typing import Any

from .base import RolloutEngine
from .hf import HFEngine
from .openai import OpenAIEngine
from .sglang import SGLangEngine
from .vllm import VLLMEngine

ENGINES: dict[str, type] = {
    "hf": HFEngine,
    "vllm": VLLMEngine,
    "sglang": SGLangEngine,
    "openai": OpenAIEngine,
}


def engine_class(name: str) -> type:
    """The class registered under ``name`` (case-insensitive)."""
    key = name.strip().lower()
    if key not in ENGINES:
        raise ValueError(f"unknown rollout engine {name!r}; expected one of {sorted(ENGINES)}")
    return ENGINES[key]


def build_engine(name: str, **kwargs: Any) -> RolloutEngine:
    """Construct the engine registered under ``name`` with its constructor arguments.

    ``build_engine("hf", model=model, tokenizer_or_pad_id=tokenizer)``,
    ``build_engine("vllm", model_path="assets/tiny-qwen3", dtype="float32")``,
    ``build_engine("openai", base_url="http://127.0.0.1:8000", model="sim")``.
    """
    return engine_class(name)(**kwargs)

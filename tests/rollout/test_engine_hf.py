"""HFEngine on the tiny Qwen3: batching, raw logprobs, stops, lengths, modes, seeds and weights."""

from __future__ import annotations

import asyncio
import copy
import math

import pytest
import torch
from torch import nn

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.rollout.engines import HFEngine, SamplingParams

QUESTIONS = [
    "Hi",
    "Can you book a table for two at eight?",
    "What is the refund policy for a kettle that stopped working after a week?",
    "ok",
    "Please summarise our conversation so far in one short sentence.",
    "Tell me a joke about databases.",
]


@pytest.fixture(scope="module")
def model(tiny_model_path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_path)


@pytest.fixture(scope="module")
def prompts(tiny_tokenizer) -> list[list[int]]:
    renderer = ChatRenderer(tiny_tokenizer)
    return [renderer.prompt_ids([{"role": "user", "content": q}]) for q in QUESTIONS]


@pytest.fixture
def engine(model, tiny_tokenizer):
    engine = HFEngine(model, tiny_tokenizer, max_batch_size=64, batch_wait_ms=2.0)
    yield engine
    engine.close()


def run_all(engine, requests):
    async def main():
        return await asyncio.gather(*[engine.generate(ids, p) for ids, p in requests])

    return asyncio.run(main())


def forward_logprobs(model, prompt_ids, completion_ids) -> torch.Tensor:
    """log p(completion[i] | prompt, completion[:i]) from one plain forward pass."""
    ids = torch.tensor([prompt_ids + completion_ids], device=next(model.parameters()).device)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    positions = torch.arange(len(prompt_ids) - 1, len(prompt_ids) + len(completion_ids) - 1)
    logprobs = torch.log_softmax(logits[positions].cpu(), dim=-1)
    return logprobs.gather(1, torch.tensor(completion_ids)[:, None]).squeeze(1)


def test_greedy_batch_equals_one_at_a_time(engine, prompts):
    greedy = SamplingParams(max_new_tokens=24, temperature=0.0)
    batched = run_all(engine, [(p, greedy) for p in prompts])
    assert engine.batches_run == 1
    for prompt, together in zip(prompts, batched):
        alone = asyncio.run(engine.generate(prompt, greedy))
        assert together.token_ids == alone.token_ids
        assert together.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
        assert together.finish_reason == alone.finish_reason == "length"
        assert len(together.token_ids) == 24


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(max_new_tokens=20, temperature=0.0),
        SamplingParams(max_new_tokens=20, temperature=1.3, top_p=0.8, top_k=40, seed=11),
        SamplingParams(max_new_tokens=20, temperature=0.5, seed=12),
    ],
    ids=["greedy", "top-p-top-k-hot", "cold"],
)
def test_logprobs_are_raw_logprobs_of_the_sampled_tokens(engine, model, prompts, params):
    results = run_all(engine, [(p, params) for p in prompts])
    for prompt, result in zip(prompts, results):
        expected = forward_logprobs(model, prompt, result.token_ids)
        assert torch.allclose(torch.tensor(result.logprobs), expected, atol=1e-4), (result.logprobs, expected)


def test_64_concurrent_requests_take_ceil_64_over_max_batch_size_batches(model, tiny_tokenizer, prompts):
    params = SamplingParams(max_new_tokens=4, temperature=1.0, seed=0)
    requests = [(prompts[i % len(prompts)], params) for i in range(64)]
    for max_batch_size in (64, 16):
        engine = HFEngine(model, tiny_tokenizer, max_batch_size=max_batch_size)
        results = run_all(engine, requests)
        assert len(results) == 64 and all(len(r.token_ids) == 4 for r in results)
        assert engine.batches_run <= math.ceil(64 / max_batch_size)
        engine.close()


def test_stops_at_a_stop_token_and_keeps_it(engine, prompts):
    free = asyncio.run(engine.generate(prompts[1], SamplingParams(max_new_tokens=24, temperature=0.0)))
    stop_id = free.token_ids[5]
    first = free.token_ids.index(stop_id)
    stopped = asyncio.run(
        engine.generate(prompts[1], SamplingParams(max_new_tokens=24, temperature=0.0, stop_token_ids=(stop_id,)))
    )
    assert stopped.token_ids == free.token_ids[: first + 1]
    assert stopped.token_ids[-1] == stop_id and stopped.finish_reason == "stop"
    assert stopped.logprobs == pytest.approx(free.logprobs[: first + 1], abs=1e-5)


def test_rows_keep_their_own_stops_and_lengths_in_one_batch(engine, prompts):
    free = asyncio.run(engine.generate(prompts[2], SamplingParams(max_new_tokens=16, temperature=0.0)))
    mixed = [
        (prompts[2], SamplingParams(max_new_tokens=16, temperature=0.0, stop_token_ids=(free.token_ids[3],))),
        (prompts[2], SamplingParams(max_new_tokens=5, temperature=0.0)),
        (prompts[0], SamplingParams(max_new_tokens=16, temperature=0.0)),
        (prompts[3], SamplingParams(max_new_tokens=9, temperature=0.9, seed=4)),
    ]
    batches_before = engine.batches_run
    together = run_all(engine, mixed)
    assert engine.batches_run == batches_before + 1
    alone = [asyncio.run(engine.generate(ids, p)) for ids, p in mixed]
    assert [r.token_ids for r in together] == [r.token_ids for r in alone]
    assert [r.finish_reason for r in together] == ["stop", "length", "length", "length"]
    assert [len(r.token_ids) for r in together][1:] == [5, 16, 9]


def test_max_new_tokens_gives_finish_reason_length(engine, prompts):
    result = asyncio.run(engine.generate(prompts[0], SamplingParams(max_new_tokens=3, temperature=0.0)))
    assert len(result.token_ids) == len(result.logprobs) == 3 and result.finish_reason == "length"


def test_model_eos_is_not_an_implicit_stop(engine, tiny_tokenizer, prompts):
    # Make EOS the first greedy token of a copy of the model; unless it is a stop id, generation goes on.
    eos = tiny_tokenizer.eos_token_id
    model = copy.deepcopy(engine.model)
    with torch.no_grad():
        model.lm_head.weight[eos] = model.lm_head.weight.abs().max(dim=0).values * 50
    eos_engine = HFEngine(model, tiny_tokenizer)
    free = asyncio.run(eos_engine.generate(prompts[0], SamplingParams(max_new_tokens=4, temperature=0.0)))
    stopped = asyncio.run(
        eos_engine.generate(prompts[0], SamplingParams(max_new_tokens=4, temperature=0.0, stop_token_ids=(eos,)))
    )
    assert free.token_ids[0] == eos and len(free.token_ids) == 4 and free.finish_reason == "length"
    assert stopped.token_ids == [eos] and stopped.finish_reason == "stop"


def test_generation_runs_in_eval_without_grad_and_restores_each_module_mode(model, tiny_tokenizer, prompts):
    seen = []
    hook = model.register_forward_pre_hook(lambda module, args: seen.append((module.training, torch.is_grad_enabled())))
    model.train()
    model.model.layers[1].eval()  # a frozen part training keeps in eval
    try:
        asyncio.run(
            HFEngine(model, tiny_tokenizer).generate(prompts[0], SamplingParams(max_new_tokens=3, temperature=0.0))
        )
    finally:
        hook.remove()
    assert seen and all(state == (False, False) for state in seen)
    assert model.training and model.model.layers[0].training and not model.model.layers[1].training
    assert torch.is_grad_enabled()
    model.eval()


def test_event_loop_stays_responsive_while_generating(engine, prompts):
    async def main():
        ticks = 0
        task = asyncio.ensure_future(
            asyncio.gather(*[engine.generate(p, SamplingParams(max_new_tokens=64, temperature=0.0)) for p in prompts])
        )
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.001)
        await task
        return ticks

    assert asyncio.run(main()) > 5


def test_sampling_is_deterministic_given_seed_whatever_the_batch(engine, prompts):
    params = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.95, seed=1234)
    alone = asyncio.run(engine.generate(prompts[1], params))
    crowd = run_all(
        engine, [(prompts[1], params)] + [(p, SamplingParams(max_new_tokens=16, seed=i)) for i, p in enumerate(prompts)]
    )
    again = asyncio.run(engine.generate(prompts[1], params))
    assert alone.token_ids == crowd[0].token_ids == again.token_ids
    other = asyncio.run(
        engine.generate(prompts[1], SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.95, seed=4321))
    )
    assert other.token_ids != alone.token_ids


def test_unseeded_sampling_follows_torch_manual_seed(engine, prompts):
    params = SamplingParams(max_new_tokens=12, temperature=1.0)
    torch.manual_seed(0)
    first = run_all(engine, [(p, params) for p in prompts])
    torch.manual_seed(0)
    second = run_all(engine, [(p, params) for p in prompts])
    assert [r.token_ids for r in first] == [r.token_ids for r in second]
    assert len({tuple(r.token_ids) for r in first}) > 1


def test_top_k_and_top_p_restrict_the_support(engine, model, prompts):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompts[2]])).logits[0, -1]
    top3 = set(logits.topk(3).indices.tolist())
    firsts = {
        r.token_ids[0]
        for r in run_all(
            engine,
            [(prompts[2], SamplingParams(max_new_tokens=1, temperature=2.0, top_k=3, seed=s)) for s in range(40)],
        )
    }
    assert firsts <= top3 and len(firsts) > 1
    greedy_first = int(logits.argmax())
    for params in (
        SamplingParams(max_new_tokens=1, top_k=1, seed=1),
        SamplingParams(max_new_tokens=1, top_p=1e-6, seed=2),
    ):
        assert asyncio.run(engine.generate(prompts[2], params)).token_ids == [greedy_first]


class Wrapper(nn.Module):
    """Stands in for the LightningModule that owns the policy."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model


def test_update_weights_is_a_no_op_for_the_own_model_and_copies_other_weights(tiny_model_path, tiny_tokenizer, prompts):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    engine = HFEngine(model, tiny_tokenizer)
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    before = asyncio.run(engine.generate(prompts[1], greedy))
    weight = model.lm_head.weight
    engine.update_weights(model)
    engine.update_weights(Wrapper(model))
    assert model.lm_head.weight is weight

    torch.manual_seed(0)
    perturbed = {k: v + 0.05 * torch.randn_like(v) for k, v in model.state_dict().items()}
    engine.update_weights(perturbed)
    after = asyncio.run(engine.generate(prompts[1], greedy))
    reference = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    reference.load_state_dict(perturbed)
    expected = asyncio.run(HFEngine(reference, tiny_tokenizer).generate(prompts[1], greedy))
    assert after.token_ids == expected.token_ids != before.token_ids
    with pytest.raises(RuntimeError, match="Missing key"):
        engine.update_weights({"lm_head.weight": perturbed["lm_head.weight"]})


def test_pad_id_from_tokenizer_or_int(model, tiny_tokenizer):
    assert HFEngine(model, tiny_tokenizer).pad_id == tiny_tokenizer.pad_token_id
    assert HFEngine(model, 7).pad_id == 7
    with pytest.raises(TypeError, match="generate"):
        HFEngine(nn.Linear(2, 2), 0)


@pytest.mark.gpu
def test_on_cuda_batched_greedy_equals_one_at_a_time_and_logprobs_are_raw(tiny_model_path, tiny_tokenizer, prompts):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32).cuda()
    engine = HFEngine(model, tiny_tokenizer)
    requests = [(p, SamplingParams(max_new_tokens=16, temperature=0.0)) for p in prompts]
    requests += [
        (p, SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.9, seed=i)) for i, p in enumerate(prompts)
    ]
    together = run_all(engine, requests)
    for (prompt, params), result in zip(requests, together):
        assert result.token_ids == asyncio.run(engine.generate(prompt, params)).token_ids
        expected = forward_logprobs(model, prompt, result.token_ids).cpu()
        assert torch.allclose(torch.tensor(result.logprobs), expected, atol=1e-4)

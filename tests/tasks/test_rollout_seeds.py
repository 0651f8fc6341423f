"""Simulator-RL rollouts sample with seeds that are a function of the run's seed, not of timing (A74): each
rollout draws its seed up front in (row, sample) order, and turn t of its conversation c samples with
``turn_seed(turn_seed(seed, c), t)``, so partner replies arriving in another order change no sample."""

from __future__ import annotations

import asyncio

import torch
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.rollout.engines.base import GenerationResult, SamplingParams, with_drawn_seed
from mimesis_pl.rollout.loop import turn_seed
from mimesis_pl.tasks.clients import ScriptedPartner
from mimesis_pl.tasks.conversation import Policy, PolicyConversation
from mimesis_pl.tasks.runner import run_row, run_rows

FAMILIES = ("sotopia", "mirrorbench", "coser")


class EchoSeedEngine:
    """Says the seed it sampled with (drawn from torch's global RNG when none is set, like the HF engine)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.seeds: list[int] = []

    async def generate(self, prompt_ids, params):
        params = with_drawn_seed(params)
        self.seeds.append(params.seed)
        text = f'{{"action_type": "speak", "argument": "Message: Query: seed {params.seed}"}}'
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][: params.max_new_tokens - 1]
        return GenerationResult(ids + [params.stop_token_ids[0]], [-0.5] * (len(ids) + 1), "stop")


class DelayedPartner(ScriptedPartner):
    """A scripted partner whose ``k``-th reply takes ``delay(k)`` seconds, so replies come back in a chosen order."""

    def __init__(self, delay) -> None:
        super().__init__()
        self.delay, self.calls = delay, 0

    async def complete(self, messages):
        k, self.calls = self.calls, self.calls + 1
        await asyncio.sleep(self.delay(k))
        return await super().complete(messages)


def _samples(tokenizer, delay) -> dict[str, list[str]]:
    torch.manual_seed(0)
    ctx = make_context(tokenizer, lambda p, k: "", enable_think=False, max_new_tokens=96)
    ctx.policy.engine = EchoSeedEngine(tokenizer)
    ctx.partner = DelayedPartner(delay)
    rows = [reference_row(s) for s in FAMILIES]
    results = asyncio.run(run_rows(rows, 2, ctx, [f"g{i}" for i in range(len(rows))]))
    assert all(r.trajectory is not None for r in results), [r.error for r in results]
    return {
        r.gen_uid: [
            m["content"] for t in [r.trajectory, *r.extra_trajectories] for m in t.messages if m["role"] == "assistant"
        ]
        for r in results
    }


def test_samples_do_not_depend_on_the_order_partner_replies_come_back(tiny_tokenizer):
    forward = _samples(tiny_tokenizer, lambda k: 0.001 * (k % 6))
    backward = _samples(tiny_tokenizer, lambda k: 0.001 * (5 - k % 6))  # later turns reach the engine reordered
    assert forward == backward
    texts = [text for texts in forward.values() for text in texts]
    assert len(texts) > len(forward) and len(set(texts)) == len(texts)  # several turns, every turn its own seed


def test_turn_t_of_conversation_c_samples_with_the_derived_seed(tiny_tokenizer):
    engine = EchoSeedEngine(tiny_tokenizer)
    ctx = make_context(tiny_tokenizer, lambda p, k: "", enable_think=False)
    policy = Policy(engine, tiny_tokenizer, ctx.policy.sampling).for_episode(41)
    first = PolicyConversation(policy, [{"role": "user", "content": "hi"}], False, sample="a")
    second = PolicyConversation(policy, [{"role": "user", "content": "hi"}], False, sample="b")
    asyncio.run(first.step())
    asyncio.run(second.step())
    first.append([{"role": "user", "content": "and?"}])
    asyncio.run(first.step())
    assert engine.seeds == [
        turn_seed(turn_seed(41, 0), 0),
        turn_seed(turn_seed(41, 1), 0),
        turn_seed(turn_seed(41, 0), 1),
    ]


def test_a_fixed_sampling_seed_is_used_for_every_turn(tiny_tokenizer):
    engine = EchoSeedEngine(tiny_tokenizer)
    ctx = make_context(tiny_tokenizer, lambda p, k: "", enable_think=False)
    fixed = SamplingParams(max_new_tokens=96, stop_token_ids=(tiny_tokenizer.eos_token_id,), seed=7)
    ctx.policy = Policy(engine, tiny_tokenizer, fixed)
    result = asyncio.run(run_row(reference_row("sotopia"), ctx, "g", "g-0", None))
    assert result.trajectory is not None and set(engine.seeds) == {7} and len(engine.seeds) > 1
